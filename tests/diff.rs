//! Plan diffs (`commlens::diff`) on the conformance corpus:
//!
//! - pairs of plans of the same dump under different arguments (policies, module plans,
//!   modes) and of different dumps, each side read both as a dump (planned with its
//!   `args.json`) and as the reference's `plan.json`: both routes give the same bytes, and the
//!   JSON equals a diff computed here, independently and simply, from the two reports;
//! - a plan in memory and its report give the same side, for every case;
//! - readable snapshots of the text and JSON forms (`tests/snapshots/diff/`);
//! - inputs that are neither a dump nor a report get errors that say so.

mod common;

use commlens::diff::{read_side, Change, PlanDiff, PlanSide};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn cases() -> PathBuf {
    common::shared_dir().join("conformance/cases")
}

fn case(name: &str) -> PathBuf {
    cases().join(name)
}

/// Whether a case plans (its `plan.json` is a report, not a recorded `ValueError`).
fn plans(case: &Path) -> bool {
    common::json(&case.join("plan.json")).get("error").is_none()
}

fn side_from_dump(case: &Path) -> PlanSide {
    let dump = common::read(&case.join("dump.json"));
    let args = common::read(&case.join("args.json"));
    read_side(&dump, Some(&args)).unwrap_or_else(|e| panic!("{}: {e}", case.display()))
}

fn side_from_report(case: &Path) -> PlanSide {
    read_side(&common::read(&case.join("plan.json")), None)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
}

// ---- an independent diff over two report JSON values ----

type Key = (String, String, i64);

fn member_key(member: &Value) -> Key {
    (
        member["kind"].as_str().unwrap().to_string(),
        member["param_name"].as_str().unwrap().to_string(),
        member["state_idx"].as_i64().unwrap(),
    )
}

/// Each collective of a report's buckets, in plan order: its key, its bucket (index and id),
/// and the other members of its bucket, sorted.
fn placements(report: &Value) -> Vec<(Key, Value, Vec<Key>)> {
    let mut out = Vec::new();
    for (index, bucket) in report["buckets"].as_array().unwrap().iter().enumerate() {
        let keys: Vec<Key> = bucket["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(member_key)
            .collect();
        for (i, key) in keys.iter().enumerate() {
            let mut with: Vec<Key> = keys
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, k)| k.clone())
                .collect();
            with.sort();
            let place = json!({"bucket": index, "bucket_id": bucket["bucket_id"]});
            out.push((key.clone(), place, with));
        }
    }
    out
}

/// A side's placements of one collective: its bucket id and the collectives bucketed with it.
type Placements = Vec<(Value, Vec<Key>)>;

fn independent_diff(before: &Value, after: &Value) -> Value {
    let mut by_key: BTreeMap<Key, (Placements, Placements)> = BTreeMap::new();
    for (key, id, with) in placements(before) {
        by_key.entry(key).or_default().0.push((id, with));
    }
    for (key, id, with) in placements(after) {
        by_key.entry(key).or_default().1.push((id, with));
    }
    let placement = |p: Option<&(Value, Vec<Key>)>| match p {
        None => Value::Null,
        Some((place, _)) => place.clone(),
    };
    let mut collectives = Vec::new();
    for ((kind, param, idx), (b, a)) in &by_key {
        for n in 0..b.len().max(a.len()) {
            let change = match (b.get(n), a.get(n)) {
                (Some(x), Some(y)) if x.1 == y.1 => "same",
                (Some(_), Some(_)) => "regrouped",
                (Some(_), None) => "only_before",
                _ => "only_after",
            };
            collectives.push(json!({
                "kind": kind, "param_name": param, "state_idx": idx,
                "before": placement(b.get(n)), "after": placement(a.get(n)),
                "change": change,
            }));
        }
    }
    let minus = |from: &Value, other: &Value| -> Vec<Value> {
        let mut left: Vec<Value> = other.as_array().unwrap().clone();
        let mut out = Vec::new();
        for d in from.as_array().unwrap() {
            match left.iter().position(|x| x == d) {
                Some(i) => {
                    left.remove(i);
                }
                None => out.push(d.clone()),
            }
        }
        out
    };
    let side = |r: &Value| {
        json!({
            "signature": r["signature"],
            "buckets": r["buckets"].as_array().unwrap().iter().map(|b| json!({
                "bucket_id": b["bucket_id"],
                "members": b["members"].as_array().unwrap().iter().map(|m| {
                    let (k, p, s) = member_key(m);
                    json!([k, p, s])
                }).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "reason_counts": r["summary"]["reason_counts"],
        })
    };
    json!({
        "format": "commlens.plan-diff",
        "version": 2,
        "same_graph": before["signature"] == after["signature"],
        "before": side(before),
        "after": side(after),
        "collectives": collectives,
        "decisions": {
            "removed": minus(&before["decisions"], &after["decisions"]),
            "added": minus(&after["decisions"], &before["decisions"]),
        },
    })
}

/// One side of a pair: a case's dump planned with a case's arguments.
#[derive(Clone)]
struct Planned {
    dump: PathBuf,
    args: PathBuf,
    label: String,
}

impl Planned {
    fn of(dump_case: &Path, args_case: &Path) -> Planned {
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        Planned {
            dump: dump_case.join("dump.json"),
            args: args_case.join("args.json"),
            label: if dump_case == args_case {
                name(dump_case)
            } else {
                format!("{} with {}'s args", name(dump_case), name(args_case))
            },
        }
    }

    /// The plan report, as `commlens plan` writes it (the conformance suite pins these bytes
    /// to the reference's for a case's own dump and arguments).
    fn report(&self) -> String {
        commlens::plan_report_json(&common::read(&self.dump), Some(&common::read(&self.args)))
            .unwrap_or_else(|e| panic!("{}: {e}", self.label))
    }

    fn side(&self) -> PlanSide {
        read_side(&common::read(&self.dump), Some(&common::read(&self.args)))
            .unwrap_or_else(|e| panic!("{}: {e}", self.label))
    }
}

/// Pairs of plans: each dump of a graph that several cases share, planned with its own
/// arguments and with the next case's (other policies, module plans, modes); and chosen pairs
/// of different graphs, each with its own arguments.
fn pairs() -> Vec<(Planned, Planned)> {
    let mut by_graph: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for dir in common::case_dirs(&cases()) {
        let report = common::json(&dir.join("plan.json"));
        if let Some(signature) = report.get("signature").and_then(Value::as_str) {
            by_graph.entry(signature.to_string()).or_default().push(dir);
        }
    }
    let mut out = Vec::new();
    for group in by_graph.values() {
        for (i, x) in group.iter().enumerate() {
            let y = &group[(i + 1) % group.len()];
            if x != y {
                out.push((Planned::of(x, x), Planned::of(x, y)));
            }
        }
    }
    for (a, b) in [
        ("mlp_default", "mlp_fp16"),
        ("mlp_default", "frozen_mlp"),
        ("mlp_default", "mlp_wait_mutations"),
        ("mlp_default", "mlp_identity_mutations"),
        ("mlp_default", "mlp_hsdp_graph_as_fsdp"),
        ("gated_ffn_groups", "gated_ffn_split_paths"),
        ("llama2_blocks", "llama2_bf16_blocks"),
        ("llama2_blocks", "llama2_mixed_bf16_blocks"),
        ("llama2_blocks", "llama2_repeated_parameter"),
        ("llama2_repeated_parameter", "llama2_default"),
        ("llama2_blocks", "llama2_fields_stripped"),
        ("llama1_dropout_blocks", "llama1_gzip_dump"),
        ("llama2_default", "mlp_default"),
    ] {
        out.push((
            Planned::of(&case(a), &case(a)),
            Planned::of(&case(b), &case(b)),
        ));
    }
    out
}

#[test]
fn conformance_pairs_match_an_independent_diff_by_both_routes() {
    let pairs = pairs();
    assert!(
        pairs.len() > 30,
        "too few pairs ({}): is shared/ there?",
        pairs.len()
    );
    let mut failures = Vec::new();
    let mut seen = BTreeMap::new();
    for (b, a) in &pairs {
        let label = format!("{} -> {}", b.label, a.label);
        let (report_b, report_a) = (b.report(), a.report());
        let from_dumps = PlanDiff::new(b.side(), a.side());
        let from_reports = PlanDiff::new(
            read_side(report_b.as_bytes(), None).unwrap(),
            read_side(report_a.as_bytes(), None).unwrap(),
        );
        let json = from_dumps.to_json();
        if json != from_reports.to_json() {
            failures.push(format!("{label}: dumps and reports give different diffs"));
        }
        if from_dumps.to_text() != from_reports.to_text() {
            failures.push(format!("{label}: dumps and reports give different texts"));
        }
        let expected = independent_diff(
            &serde_json::from_str(&report_b).unwrap(),
            &serde_json::from_str(&report_a).unwrap(),
        );
        let actual: Value = serde_json::from_str(&json).unwrap();
        if actual != expected {
            failures.push(format!(
                "{label}: differs from the independent diff\n  expected {expected}\n  actual   {actual}"
            ));
        }
        for c in &from_dumps.collectives {
            *seen.entry(c.change.as_str()).or_insert(0) += 1;
        }
        *seen.entry("decisions removed").or_insert(0) += from_dumps.removed.len();
        *seen.entry("decisions added").or_insert(0) += from_dumps.added.len();
        *seen
            .entry(if from_dumps.same_graph() {
                "same graph"
            } else {
                "other graph"
            })
            .or_insert(0) += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The pairs exercise every kind of change.
    for what in [
        "same",
        "regrouped",
        "only_before",
        "only_after",
        "decisions removed",
        "decisions added",
        "same graph",
        "other graph",
    ] {
        assert!(
            seen.get(what).copied().unwrap_or(0) > 0,
            "no pair shows {what}: {seen:?}"
        );
    }
}

#[test]
fn a_plan_and_its_report_are_the_same_side() {
    let mut checked = 0;
    for dir in common::case_dirs(&cases()) {
        if !plans(&dir) {
            continue;
        }
        assert_eq!(
            side_from_dump(&dir),
            side_from_report(&dir),
            "{}",
            dir.display()
        );
        checked += 1;
    }
    assert!(checked > 30, "only {checked} cases");
}

#[test]
fn repeated_identities_are_matched_in_plan_order() {
    // Two collectives of one identity (kind, param_name, state_idx), as a graph that gathers a
    // parameter twice has: they pair up in plan order.
    let report = |buckets: Value| {
        json!({"buckets": buckets, "decisions": [], "signature": "s",
               "summary": {"reason_counts": {"skip": {}, "split": {}, "singleton": {}}}})
    };
    let member = |name: &str, idx: i64| json!({"kind": "fsdp_all_gather", "param_name": name, "state_idx": idx});
    let before = report(json!([
        {"bucket_id": "b0", "members": [member("w", 0), member("b", 1)]},
        {"bucket_id": "b1", "members": [member("w", 0)]},
    ]));
    let after = report(json!([
        {"bucket_id": "a0", "members": [member("w", 0)]},
        {"bucket_id": "a1", "members": [member("w", 0), member("b", 1)]},
        {"bucket_id": "a2", "members": [member("w", 0)]},
    ]));
    let side = |v: &Value| read_side(v.to_string().as_bytes(), None).unwrap();
    let diff = PlanDiff::new(side(&before), side(&after));
    let actual: Value = serde_json::from_str(&diff.to_json()).unwrap();
    assert_eq!(actual, independent_diff(&before, &after));
    let changes: Vec<&str> = diff.collectives.iter().map(|c| c.change.as_str()).collect();
    assert_eq!(changes, ["same", "regrouped", "regrouped", "only_after"]);
}

#[test]
fn changed_buckets_mark_the_buckets_of_changed_collectives() {
    let diff = PlanDiff::new(
        side_from_report(&case("mlp_default")),
        side_from_report(&case("mlp_capacity")),
    );
    let before = diff.changed_buckets(false);
    let after = diff.changed_buckets(true);
    assert_eq!(before.len(), diff.before.buckets.len());
    assert_eq!(after.len(), diff.after.buckets.len());
    for c in &diff.collectives {
        let changed = c.change != Change::Same;
        if let Some(b) = c.before.and_then(|m| diff.before.bucket_of(m)) {
            assert!(!changed || before[b]);
        }
        if let Some(a) = c.after.and_then(|m| diff.after.bucket_of(m)) {
            assert!(!changed || after[a]);
        }
    }
    assert!(before.iter().any(|&c| c) && before.iter().any(|&c| !c));
}

#[test]
fn snapshots_of_text_and_json() {
    let mut failures = Vec::new();
    for (name, b, a) in [
        ("policy_capacity", "mlp_default", "mlp_capacity"),
        (
            "module_plans",
            "mlp_explicit_all",
            "mlp_block_types_unknown",
        ),
        ("nothing_selected", "mlp_default", "mlp_empty_plans"),
        ("other_graph", "mlp_default", "mlp_identity_mutations"),
    ] {
        let diff = PlanDiff::new(side_from_dump(&case(b)), side_from_dump(&case(a)));
        assert!(
            !diff.collectives.is_empty() || !diff.added.is_empty(),
            "{name}: nothing to show"
        );
        for (ext, text) in [("txt", diff.to_text()), ("json", diff.to_json())] {
            if let Err(e) =
                common::check_snapshot(&format!("tests/snapshots/diff/{name}.{ext}"), &text)
            {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn inputs_that_are_not_plans_are_named() {
    let report = common::read(&case("mlp_default").join("plan.json"));
    let args = common::read(&case("mlp_default").join("args.json"));
    let err = |bytes: &[u8], args: Option<&[u8]>| read_side(bytes, args).unwrap_err().to_string();
    assert_eq!(
        err(&report, Some(&args)),
        "planner arguments apply to a dump, and this is a plan report (already planned)"
    );
    let failed = common::read(&case("err_policy_cap_zero").join("plan.json"));
    assert_eq!(
        err(&failed, None),
        "the record of a failed plan (ValueError: cap_bytes must be None or a non-negative integer (cap_bytes must be positive)), not a plan report"
    );
    // Not JSON, and JSON of another kind: the dump reader says what is wrong.
    assert!(err(b"garbage", None).starts_with("invalid dump: not valid JSON at line 1"));
    assert_eq!(
        err(br#"{"format": "commlens.plan-diff", "version": 1}"#, None),
        "invalid dump: field \"format\": expected \"commlens.graph\", found \"commlens.plan-diff\""
    );
    // A damaged report names what is wrong and where.
    let text = String::from_utf8(report).unwrap();
    let bad_kind = text.replacen("\"fsdp_all_gather\"", "\"fsdp_all_to_all\"", 1);
    let message = err(bad_kind.as_bytes(), None);
    assert!(
        message.starts_with(
            "invalid plan report: \"fsdp_all_to_all\" is not a planned collective kind"
        ) && message.contains(" at line "),
        "{message}"
    );
    let bad_idx = text.replacen("\"state_idx\": 0", "\"state_idx\": 0.5", 1);
    let message = err(bad_idx.as_bytes(), None);
    assert!(
        message.starts_with("invalid plan report: state_idx must be an integer, found 0.5 at line"),
        "{message}"
    );
    let no_signature = text.replacen("\"signature\"", "\"signature_\"", 1);
    assert!(err(no_signature.as_bytes(), None).contains("missing field `signature`"));
    // Truncated anywhere: an error, never a panic.
    for cut in (0..text.len()).step_by(text.len() / 97 + 1) {
        let _ = read_side(&text.as_bytes()[..cut], None);
    }
}

/// The app draws a graph side itself and hands only plan documents to `read_side`: the two
/// must agree on which is which.
#[test]
fn plan_documents_are_told_from_graphs() {
    use commlens::diff::is_plan_document;
    for name in ["mlp_default", "llama2_capacity", "llama1_gzip_dump"] {
        let dir = case(name);
        let dump = std::fs::read(dir.join("dump.json"))
            .or_else(|_| std::fs::read(dir.join("dump.json.gz")))
            .unwrap();
        assert!(!is_plan_document(&dump), "{name}: its dump is a graph");
        assert!(
            is_plan_document(&common::read(&dir.join("plan.json"))),
            "{name}: its report"
        );
    }
    assert!(is_plan_document(&common::read(
        &case("err_policy_cap_zero").join("plan.json")
    )));
    assert!(
        !is_plan_document(b"garbage"),
        "undecided input goes the dump's way"
    );
}

#[test]
fn a_gzip_report_reads_as_its_json() {
    use std::io::Write;
    let report = common::read(&case("mlp_capacity").join("plan.json"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&report).unwrap();
    let zipped = gz.finish().unwrap();
    assert_eq!(
        read_side(&zipped, None).unwrap(),
        read_side(&report, None).unwrap()
    );
}

#[test]
fn a_side_assembled_by_hand_never_panics() {
    // Members outside every bucket (pushed past `push_bucket`) compare as bucketless.
    let mut side = side_from_report(&case("mlp_default"));
    let extra = side.members[0].clone();
    side.members.push(extra);
    let diff = PlanDiff::new(side.clone(), side_from_report(&case("mlp_capacity")));
    assert!(!diff.to_json().is_empty() && !diff.to_text().is_empty());
    let diff = PlanDiff::new(side_from_report(&case("mlp_capacity")), side);
    assert!(!diff.to_json().is_empty() && !diff.to_text().is_empty());
}

/// `commlens diff` reads a dump in a file as it streams once its first keys say it is one:
/// every conformance dump starts as a dump (plain and gzipped), no report or failed plan
/// does, and the side read from the file equals the side read from its bytes.
#[test]
fn dumps_are_told_by_their_start_and_read_as_they_stream() {
    use commlens::diff::{read_dump_side, starts_as_dump};
    let mut read = 0;
    for entry in std::fs::read_dir(cases()).unwrap() {
        let case = entry.unwrap().path();
        let dump = common::read(&case.join("dump.json"));
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
            e.write_all(&dump).unwrap();
            e.finish().unwrap();
        }
        assert!(
            starts_as_dump(&dump[..dump.len().min(1 << 20)]),
            "{}",
            case.display()
        );
        // (A case whose dump is gzip already is gzip twice here: not a dump's start.)
        assert_eq!(
            starts_as_dump(&gz),
            !dump.starts_with(&[0x1f, 0x8b]),
            "{}",
            case.display()
        );
        assert!(
            !starts_as_dump(&common::read(&case.join("plan.json"))),
            "{}",
            case.display()
        );
        let args = common::read(&case.join("args.json"));
        let file = std::fs::File::open(case.join("dump.json")).unwrap();
        let input = commlens::input::Input::file(file).unwrap();
        // Errors too (the cases whose arguments the planner rejects): the same message.
        let streamed = read_dump_side(input, None, Some(&args), commlens::TagMode::Dump)
            .map_err(|e| e.to_string());
        let whole = read_side(&dump, Some(&args)).map_err(|e| e.to_string());
        assert_eq!(streamed, whole, "{}", case.display());
        read += 1;
    }
    assert!(read >= 72, "{read} cases");
    for text in [
        "",
        "not json",
        "[1, 2]",
        "{\"error\": \"ValueError\"}",
        "{\"buckets\": []}",
    ] {
        assert!(!starts_as_dump(text.as_bytes()), "{text:?}");
    }
}
