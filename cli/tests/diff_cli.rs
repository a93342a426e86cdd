//! `commlens diff` through the real binary: dumps (with `--args-before/--args-after`) and plan
//! reports give the same diff, equal to the snapshots the core's tests check
//! (`tests/snapshots/diff/`); bad inputs exit 1 naming the file, usage errors exit 2.

use std::path::PathBuf;
use std::process::{Command, Output};

/// `shared/`, found by the shared test helper (its tests fail when it is missing).
fn shared() -> PathBuf {
    commlens_testkit::shared_path()
}

fn case(name: &str, file: &str) -> String {
    shared()
        .join("conformance/cases")
        .join(name)
        .join(file)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(args)
        .output()
        .expect("run commlens")
}

fn snapshot(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/snapshots/diff")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn dumps_and_reports_give_the_snapshot_diff() {
    let dumps = [
        "diff",
        &case("mlp_default", "dump.json"),
        &case("mlp_capacity", "dump.json"),
        "--args-before",
        &case("mlp_default", "args.json"),
        "--args-after",
        &case("mlp_capacity", "args.json"),
    ]
    .map(str::to_string);
    let reports = [
        "diff",
        &case("mlp_default", "plan.json"),
        &case("mlp_capacity", "plan.json"),
    ]
    .map(str::to_string);
    let mixed = [
        "diff",
        &case("mlp_default", "plan.json"),
        &case("mlp_capacity", "dump.json"),
        "--args-after",
        &case("mlp_capacity", "args.json"),
    ]
    .map(str::to_string);
    for command in [&dumps[..], &reports[..], &mixed[..]] {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            snapshot("policy_capacity.txt")
        );
        args.push("--json");
        let out = run(&args);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            snapshot("policy_capacity.json")
        );
    }
}

#[test]
fn bad_inputs_name_the_file() {
    let report = case("mlp_default", "plan.json");
    let args = case("mlp_default", "args.json");
    let out = run(&["diff", &report, &report, "--args-after", &args]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!("{report}: planner arguments apply to a dump, and this is a plan report (already planned)")
    );
    let failed = case("err_plans_not_list", "plan.json");
    let out = run(&["diff", &report, &failed]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(&format!(
        "{failed}: the record of a failed plan (ValueError: "
    )));
    let out = run(&["diff", &report, "/nonexistent/after.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("cannot read /nonexistent/after.json"));
    // A dump whose arguments the planner rejects: the reference's message, after the file.
    let dump = case("err_policy_cap_zero", "dump.json");
    let bad_args = case("err_policy_cap_zero", "args.json");
    let out = run(&["diff", &dump, &report, "--args-before", &bad_args]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "{dump}: cap_bytes must be None or a non-negative integer (cap_bytes must be positive)"
        )
    );
    assert_eq!(run(&["diff", &report]).status.code(), Some(2));
}

#[test]
fn tags_from_roles_apply_to_dump_sides() {
    let dump = case("mlp_default", "dump.json");
    let out = run(&["diff", &dump, &dump, "--tags", "roles", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["same_graph"], true);
    let collectives = diff["collectives"].as_array().unwrap();
    assert!(!collectives.is_empty());
    assert!(collectives.iter().all(|c| c["change"] == "same"));
    assert_eq!(
        run(&["diff", &dump, &dump, "--tags", "inferred"])
            .status
            .code(),
        Some(2)
    );
}
