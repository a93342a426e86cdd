//! `validate_group_plans` with findings people can act on (`commlens::planner::validate`):
//!
//! - every validate case of the conformance corpus keeps the reference's verdict and message,
//!   and its explanation and JSON form are snapshot-tested (`tests/snapshots/validate/`);
//! - damaged copies of real rank reports reach every finding (missing field, not an object,
//!   a group listed as null, a member field, a missing bucket, digests that differ only in the
//!   wire records), with the reference's message and an explanation that never says `None`;
//! - reports are loaded one at a time, once per distinct rank, in bounded time.

mod common;

use commlens::planner::validate::{
    agreement_json, agreement_text, validate_reports, Failure, Finding, RankReport, ReportRef,
    ValidationError,
};
use commlens::PyValue;
use serde_json::{json, Value};
use std::path::Path;

fn validate_dir() -> std::path::PathBuf {
    common::shared_dir().join("conformance/validate")
}

/// The manifest's entries, files named as the manifest writes them (stable in snapshots).
fn entries(case: &Path) -> (String, Vec<ReportRef>) {
    let manifest = common::json(&case.join("validate.json"));
    let entries = manifest["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| ReportRef {
            rank: PyValue::from_plain_json(&p[0]),
            file: Some(p[1].as_str().unwrap().to_string()),
        })
        .collect();
    (manifest["group"].as_str().unwrap().to_string(), entries)
}

fn run(
    group: &str,
    entries: &[ReportRef],
    reports: &dyn Fn(&str) -> Value,
) -> Result<(), ValidationError> {
    validate_reports(group, entries, |i| {
        let file = entries[i].file.as_deref().unwrap();
        RankReport::from_json(reports(file).to_string().as_bytes(), group)
    })
    .map_err(|f| match f {
        Failure::Invalid(e) => e,
        Failure::Load(e) => panic!("load: {e}"),
    })
}

fn check_explanation(e: &ValidationError) {
    let text = e.explain();
    assert!(!text.contains("None"), "Python's None in {text:?}");
    let json = e.to_json_value();
    assert_eq!(json["ok"], json!(false));
    assert_eq!(json["error"], json!("ValueError"));
    assert_eq!(json["message"], json!(e.message));
    assert_eq!(json["explanation"], json!(text));
    if !matches!(*e.finding, Finding::NoReports) {
        let file = json["file"].as_str().expect("a finding names a file");
        assert!(text.contains(file), "{text:?} does not name {file}");
    }
}

#[test]
fn conformance_cases_keep_the_reference_message_and_explain_it() {
    let cases = common::case_dirs(&validate_dir());
    assert!(!cases.is_empty(), "no validate cases: is shared/ there?");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected = common::json(&case.join("expected.json"));
        let (group, entries) = entries(case);
        let outcome = run(&group, &entries, &|file| common::json(&case.join(file)));
        let snapshot = match (&outcome, expected["ok"].as_bool()) {
            (Ok(()), Some(true)) => {
                agreement_text(&group, &entries) + &agreement_json(&group, &entries)
            }
            (Err(e), Some(false)) if Some(e.message.as_str()) == expected["message"].as_str() => {
                check_explanation(e);
                format!("{}\n\n{}", e.explain(), e.to_json())
            }
            (outcome, _) => {
                failures.push(format!("{name}: expected {expected}, got {outcome:?}"));
                continue;
            }
        };
        if let Err(e) =
            common::check_snapshot(&format!("tests/snapshots/validate/{name}.txt"), &snapshot)
        {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two copies of a real agreeing rank report, the second changed by `edit`.
fn damaged(edit: impl Fn(&mut Value)) -> Result<(), ValidationError> {
    let case = validate_dir().join("ok_two_ranks");
    let (group, entries) = entries(&case);
    let reference = common::json(&case.join("rank_0.json"));
    let mut other = common::json(&case.join("rank_1.json"));
    edit(&mut other);
    run(&group, &entries, &|file| {
        if file == "rank_1.json" {
            other.clone()
        } else {
            reference.clone()
        }
    })
}

/// How a case damages a report.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn damaged_reports_reach_every_finding() {
    let mut snapshot = String::new();
    let cases: Vec<(&str, &str, Edit)> = vec![
        (
            "digest_only",
            "Bucket plans disagree for group fsdp",
            Box::new(|r| r["group_digests"]["fsdp"] = json!("0123456789abcdef0123")),
        ),
        (
            "member_field",
            "Bucket plans disagree for group fsdp",
            Box::new(|r| {
                r["buckets"][1]["members"][0]["dtype"] = json!("torch.bfloat16");
                r["group_digests"]["fsdp"] = json!("changed");
            }),
        ),
        (
            "bucket_missing",
            "Bucket plans disagree for group fsdp",
            Box::new(|r| {
                let buckets = r["buckets"].as_array_mut().unwrap();
                buckets.pop();
                r["group_digests"]["fsdp"] = json!("changed");
            }),
        ),
        (
            "digest_missing",
            "Bucket plans disagree for group fsdp",
            Box::new(|r| {
                r["group_digests"].as_object_mut().unwrap().remove("fsdp");
            }),
        ),
        (
            "no_group_digests",
            "A rank report has no \"group_digests\" (expected BucketPlan.to_dict() reports)",
            Box::new(|r| {
                r.as_object_mut().unwrap().remove("group_digests");
            }),
        ),
        (
            "not_an_object",
            "A rank report has no \"group_ranks\" (expected BucketPlan.to_dict() reports)",
            Box::new(|r| *r = json!([1, 2])),
        ),
        (
            "group_missing_in_ranks",
            "Bucket plans disagree for group fsdp",
            Box::new(|r| {
                r["group_ranks"].as_object_mut().unwrap().remove("fsdp");
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (name, message, edit) in cases {
        match damaged(edit) {
            Ok(()) => failures.push(format!("{name}: validated")),
            Err(e) => {
                if e.message != message {
                    failures.push(format!("{name}: message {:?}", e.message));
                }
                check_explanation(&e);
                snapshot.push_str(&format!("== {name}\n{}\n{}\n", e.explain(), e.to_json()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    common::check_snapshot("tests/snapshots/validate/damaged.txt", &snapshot).unwrap();
}

#[test]
fn odd_ranks_and_groups_never_print_none() {
    let case = validate_dir().join("ok_two_ranks");
    let report = common::json(&case.join("rank_0.json"));
    let mut null_group = report.clone();
    null_group["group_ranks"]["fsdp"] = Value::Null;
    let entries = |ranks: &[Value]| -> Vec<ReportRef> {
        ranks
            .iter()
            .map(|r| ReportRef {
                rank: PyValue::from_plain_json(r),
                file: Some("r.json".into()),
            })
            .collect()
    };
    // The group's ranks are null: the reference says "ranks None".
    let e = run("fsdp", &entries(&[json!(0), json!(1)]), &|_| {
        null_group.clone()
    })
    .unwrap_err();
    assert_eq!(e.message, "Expected reports for group fsdp ranks None");
    check_explanation(&e);
    assert!(
        e.explain().contains("lists null for fsdp"),
        "{}",
        e.explain()
    );
    // Ranks that are not integers.
    let e = run("fsdp", &entries(&[Value::Null, json!(1.5)]), &|_| {
        report.clone()
    })
    .unwrap_err();
    assert_eq!(e.message, "Expected reports for group fsdp ranks [0, 1]");
    check_explanation(&e);
    assert!(
        e.explain().contains("ranks null, 1.5 are not in the group"),
        "{}",
        e.explain()
    );
    // 1.0 and true are rank 1, as Python's dict keys.
    assert!(run("fsdp", &entries(&[json!(0), json!(1.0)]), &|_| report
        .clone())
    .is_ok());
    assert!(
        run("fsdp", &entries(&[json!(false), json!(true)]), &|_| report
            .clone())
        .is_ok()
    );
}

#[test]
fn each_distinct_rank_is_loaded_once_in_bounded_time() {
    let case = validate_dir().join("ok_two_ranks");
    let bytes = common::read(&case.join("rank_0.json"));
    let count = std::cell::Cell::new(0usize);
    // 20,000 listings of two ranks: two loads, the last listing of each rank.
    let listed: Vec<ReportRef> = (0..20_000)
        .map(|i| ReportRef {
            rank: PyValue::int(i % 2),
            file: Some(format!("listing {i}")),
        })
        .collect();
    let mut loaded = Vec::new();
    let outcome = validate_reports("fsdp", &listed, |i| {
        count.set(count.get() + 1);
        loaded.push(i);
        RankReport::from_json(&bytes, "fsdp")
    });
    assert!(outcome.is_ok());
    assert_eq!(loaded, [19_998, 19_999]);
    // 200,000 distinct ranks against a group of two: found without comparing every pair
    // (a scan per rank would take minutes here), and only the first report is read.
    count.set(0);
    let listed: Vec<ReportRef> = (0..200_000)
        .map(|i| ReportRef {
            rank: PyValue::int(i),
            file: None,
        })
        .collect();
    let start = std::time::Instant::now();
    let e = match validate_reports("fsdp", &listed, |_| {
        count.set(count.get() + 1);
        RankReport::from_json(&bytes, "fsdp")
    }) {
        Err(Failure::Invalid(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(e.message, "Expected reports for group fsdp ranks [0, 1]");
    assert!(
        e.explain()
            .contains("ranks 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 199988 more are not in the group"),
        "{}",
        e.explain()
    );
    assert_eq!(count.get(), 1);
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}
