//! The CLI contract of `../shared/spec/conformance-contract.md`, through the real binary:
//! `commlens plan DUMP --args ARGS.json` prints the reference's report byte for byte (or the
//! reference's `ValueError` message on stderr with a non-zero exit) for every conformance case;
//! `commlens validate` agrees with every validate case, in both of its forms.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn shared() -> PathBuf {
    match std::env::var_os("COMMLENS_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
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

#[test]
fn validate_matches_every_validate_case_in_both_forms() {
    let cases = dirs(&shared().join("conformance/validate"));
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected = json(&case.join("expected.json"));
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
        let direct: Vec<&str> = direct.iter().map(String::as_str).collect();
        for out in [
            run(&["validate", manifest_path.to_str().unwrap()]),
            run(&direct),
        ] {
            let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
            let ok = match expected["ok"].as_bool() {
                Some(true) => out.status.success(),
                _ => !out.status.success() && Some(stderr.as_str()) == expected["message"].as_str(),
            };
            if !ok {
                failures.push(format!(
                    "{name}: expected {expected}, got {:?} {stderr:?}",
                    out.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
