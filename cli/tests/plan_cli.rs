//! The CLI contract of `../shared/spec/conformance-contract.md`, through the real binary:
//! `commlens plan DUMP --args ARGS.json` prints the reference's report byte for byte (or the
//! reference's `ValueError` message on stderr with a non-zero exit) for every conformance case;
//! `commlens validate` agrees with every validate case, in both of its forms.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `shared/`, found by the shared test helper (its tests fail when it is missing).
fn shared() -> PathBuf {
    commlens_testkit::shared_path()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(args)
        .output()
        .expect("run commlens")
}

fn dirs(path: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn plan_matches_every_conformance_case() {
    let cases = dirs(&shared().join("conformance/cases"));
    assert!(
        !cases.is_empty(),
        "no conformance cases under {}",
        shared().display()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let dump = case.join("dump.json");
        let args = case.join("args.json");
        let out = run(&[
            "plan",
            dump.to_str().unwrap(),
            "--args",
            args.to_str().unwrap(),
        ]);
        let expected_bytes = std::fs::read(case.join("plan.json")).unwrap();
        let expected: serde_json::Value = serde_json::from_slice(&expected_bytes).unwrap();
        match expected.get("message").and_then(|m| m.as_str()) {
            Some(message) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                if out.status.success() || stderr.trim_end() != message {
                    failures.push(format!(
                        "{name}: expected failure {message:?}, got {:?} {stderr:?}",
                        out.status.code()
                    ));
                }
            }
            None => {
                if !out.status.success() || out.stdout != expected_bytes {
                    failures.push(format!(
                        "{name}: exit {:?}, stdout differs from plan.json ({})",
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every validate case, in both forms (manifest, and `--group`/`--rank`): `--json` prints the
/// reference's verdict (`ok`, and on failure `error` and `message` verbatim) with exit 0 or 1;
/// without it, a failure exits 1 with a message that names the report's file and never
/// Python's `None`.
#[test]
fn validate_matches_every_validate_case_in_both_forms() {
    let cases = dirs(&shared().join("conformance/validate"));
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected = json(&case.join("expected.json"));
        let expected_ok = expected["ok"].as_bool().unwrap();
        let manifest_path = case.join("validate.json");
        let manifest = json(&manifest_path);
        let mut direct = vec![
            "validate".to_string(),
            "--group".into(),
            manifest["group"].as_str().unwrap().into(),
        ];
        for entry in manifest["plans"].as_array().unwrap() {
            direct.push("--rank".into());
            direct.push(format!(
                "{}={}",
                entry[0],
                case.join(entry[1].as_str().unwrap()).display()
            ));
        }
        let by_manifest = vec!["validate".to_string(), manifest_path.display().to_string()];
        for (form, command) in [("manifest", by_manifest), ("--rank", direct)] {
            let mut with_json: Vec<&str> = command.iter().map(String::as_str).collect();
            with_json.push("--json");
            let out = run(&with_json);
            let verdict: serde_json::Value = match serde_json::from_slice(&out.stdout) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{name} ({form}): --json printed no JSON: {e}"));
                    continue;
                }
            };
            let agrees = verdict["ok"] == expected["ok"]
                && out.status.success() == expected_ok
                && (expected_ok
                    || (verdict["error"] == expected["error"]
                        && verdict["message"] == expected["message"]));
            if !agrees {
                failures.push(format!(
                    "{name} ({form}): expected {expected}, got exit {:?} {verdict}",
                    out.status.code()
                ));
            }
            let plain: Vec<&str> = command.iter().map(String::as_str).collect();
            let out = run(&plain);
            let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
            let helpful = match verdict["file"].as_str() {
                _ if expected_ok => out.status.success(),
                Some(file) => out.status.code() == Some(1) && stderr.contains(file),
                None => out.status.code() == Some(1) && !stderr.is_empty(),
            };
            if !helpful || stderr.contains("None") {
                failures.push(format!(
                    "{name} ({form}): exit {:?}, stderr {stderr:?}",
                    out.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A manifest listing one 50 KB report 20,000 times (issue 13): the reports are read when
/// compared, once per distinct rank, so this runs in a fraction of the memory cap (keeping
/// every report read would need gigabytes).
#[test]
fn validate_reads_reports_one_at_a_time() {
    let case = shared().join("conformance/cases/llama2_capacity");
    let report = case.join("plan.json");
    assert!(std::fs::metadata(&report).unwrap().len() > 40_000);
    let dir = std::env::temp_dir().join(format!("commlens-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plans: Vec<serde_json::Value> = (0..20_000)
        .map(|i| serde_json::json!([i % 4, report.display().to_string()]))
        .collect();
    let manifest = dir.join("manifest.json");
    std::fs::write(
        &manifest,
        serde_json::json!({"group": "fsdp", "plans": plans}).to_string(),
    )
    .unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000 && exec \"$0\" validate \"$1\" --json")
        .arg(env!("CARGO_BIN_EXE_commlens"))
        .arg(&manifest)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        verdict,
        serde_json::json!({"ok": true, "group": "fsdp", "ranks": [0, 1, 2, 3]})
    );
}

#[test]
fn plan_errors_name_what_is_wrong() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let bad = fixtures.join("reader/unknown_reference.json");
    let out = run(&["plan", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "invalid dump: node 1 (\"all_gather_into_tensor\"), field \"args[0]\": refers to node \"primals_1\", which does not stand earlier in \"nodes\" (an argument must name an earlier node)"
    );
    let out = run(&["plan", "/nonexistent/dump.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("cannot read /nonexistent/dump.json"));
    let out = run(&["plan"]);
    assert_eq!(out.status.code(), Some(2));
    let good = fixtures.join("planner/capacity.json");
    let out = run(&["plan", good.to_str().unwrap(), "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["plan", good.to_str().unwrap(), "--format", "text"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("split ag_l1_bias from ag_l1_weight: capacity"));
}

#[test]
fn plan_with_args_file_errors() {
    let good =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/planner/capacity.json");
    let dir = std::env::temp_dir().join(format!("commlens-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = dir.join("args.json");
    std::fs::write(&args, "[1, 2]").unwrap();
    let out = run(&[
        "plan",
        good.to_str().unwrap(),
        "--args",
        args.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "invalid planner arguments: expected a JSON object, found an array"
    );
    std::fs::write(&args, r#"{"policy": {"cap_bytes": 0}}"#).unwrap();
    let out = run(&[
        "plan",
        good.to_str().unwrap(),
        "--args",
        args.to_str().unwrap(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "cap_bytes must be None or a non-negative integer (cap_bytes must be positive)"
    );
    std::fs::write(&args, r#"{"policy": {"cap": 10}}"#).unwrap();
    let out = run(&[
        "plan",
        good.to_str().unwrap(),
        "--args",
        args.to_str().unwrap(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "BucketPolicy.__init__() got an unexpected keyword argument 'cap'"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-o` onto a file that is already there (a previous run's report) leaves exactly the new
/// output, whether the old file was longer or shorter (it is written over in place and cut,
/// not emptied first); a failed run leaves it as it was; `/dev/null`, which cannot be cut,
/// is written as it is.
#[test]
fn output_written_over_an_old_file_is_exactly_the_new_output() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let good = fixtures.join("planner/capacity.json");
    let good = good.to_str().unwrap();
    let expected = run(&["plan", good]);
    assert!(expected.status.success());
    let text_expected = run(&["plan", good, "--format", "text"]);
    assert!(expected.stdout.len() > 100);
    let dir = std::env::temp_dir().join(format!("commlens-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("plan.json");
    for old_len in [0, 10, expected.stdout.len(), 3 * expected.stdout.len() + 7] {
        std::fs::write(&out, vec![b'x'; old_len]).unwrap();
        let ran = run(&["plan", good, "-o", out.to_str().unwrap()]);
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            expected.stdout,
            "old file of {old_len} bytes"
        );
        let text = run(&[
            "plan",
            good,
            "--format",
            "text",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(text.status.success());
        assert_eq!(std::fs::read(&out).unwrap(), text_expected.stdout);
    }
    let failed = run(&[
        "plan",
        "/nonexistent/dump.json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        text_expected.stdout,
        "left as it was"
    );
    if cfg!(unix) {
        let devnull = run(&["plan", good, "-o", "/dev/null"]);
        let stderr = String::from_utf8_lossy(&devnull.stderr);
        assert!(devnull.status.success(), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
