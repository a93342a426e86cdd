//! `commlens roles` and `commlens audit` as a user runs them: exit codes and messages.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/identity")
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run commlens")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn roles_json_on_a_traced_fixture() {
    let path = fixtures().join("fsdp_tp_annotated.json");
    let out = run(&["roles", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["format"], "commlens.roles");
    let collectives = value["collectives"].as_array().unwrap();
    assert_eq!(collectives.len(), 3);
    for c in collectives {
        for key in [
            "node",
            "transport",
            "role",
            "source",
            "producer",
            "phase",
            "evidence",
        ] {
            assert!(c.get(key).is_some(), "missing {key}");
        }
    }
    let diags = value["diagnostics"].as_array().unwrap();
    assert_eq!(diags[0]["code"], "heuristic_mismatch");
    assert_eq!(diags[0]["nodes"][0], "all_gather_into_tensor_1");
}

#[test]
fn roles_text_lists_roles_and_diagnostics() {
    let path = fixtures().join("fsdp_tp_annotated.json");
    let out = run(&["roles", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("tp.weight_gather"));
    assert!(stdout.contains("heuristic_mismatch"));
    assert!(stdout.contains("coverage: 3 collectives: 3 explicit"));
}

#[test]
fn audit_json_reports_lost_identity() {
    let cases = fixtures().join("cases");
    let before = cases.join("audit_lost.before.json");
    let after = cases.join("audit_lost.after.json");
    let out = run(&[
        "audit",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["format"], "commlens.audit");
    assert_eq!(value["entries"][0]["status"], "lost");
    assert!(value["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "identity_lost"));
}

#[test]
fn unreadable_dump_names_node_and_field() {
    let dir = std::env::temp_dir().join(format!("commlens-roles-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"format": "commlens.graph", "version": 1, "nodes": [
            {"name": "ag", "op": "call_function", "target": "_c10d_functional.all_gather_into_tensor",
             "args": [{"node": "w"}, 2, "fsdp"]}]}"#,
    )
    .unwrap();
    let out = run(&["roles", bad.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("node 0 (\"ag\")"), "{stderr}");
    assert!(stderr.contains("field \"args[0]\""), "{stderr}");
    assert!(out.stdout.is_empty());

    let good = fixtures().join("fsdp_tp_untagged.json");
    let out = run(&["audit", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with(bad.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("field \"args[0]\""), "{stderr}");

    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let out = run(&["roles", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not valid JSON at line 1"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["roles"]).status.code(), Some(2));
    assert_eq!(run(&["roles", "a.json", "--bogus"]).status.code(), Some(2));
    assert_eq!(run(&["audit", "a.json"]).status.code(), Some(2));
    assert_eq!(run(&["audit", "a", "b", "c"]).status.code(), Some(2));
    let out = run(&["roles", "/nonexistent/dump.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/dump.json"));
}
