//! `commlens render`: a textual snapshot of one conformance case's timeline, and the counts
//! of bars, split marks and skip marks against the case's recorded report.
//! `UPDATE_SNAPSHOTS=1 cargo test -p commlens-cli --test render` rewrites the snapshot.

use std::path::PathBuf;
use std::process::Command;

/// A conformance case: required (the test fails without the corpus unless
/// `COMMLENS_ALLOW_MISSING_SHARED=1`, when it says it skipped).
fn case_dir(name: &str) -> Option<PathBuf> {
    commlens_testkit::shared(&format!("conformance/cases/{name}"), name)
}

fn render(case: &str, extra: &[&str]) -> Option<(String, serde_json::Value)> {
    let dir = case_dir(case)?;
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let out = std::env::temp_dir().join(format!(
        "commlens-render-{case}-{}-{n}.svg",
        std::process::id()
    ));
    let status = Command::new(env!("CARGO_BIN_EXE_commlens"))
        .arg("render")
        .arg(dir.join("dump.json"))
        .arg("--args")
        .arg(dir.join("args.json"))
        .arg("-o")
        .arg(&out)
        .args(extra)
        .status()
        .expect("run commlens");
    assert!(status.success(), "commlens render {case} failed");
    let svg = std::fs::read_to_string(&out).expect("read svg");
    let _ = std::fs::remove_file(&out);
    let plan = serde_json::from_slice(&std::fs::read(dir.join("plan.json")).expect("plan.json"))
        .expect("json");
    Some((svg, plan))
}

fn count_decisions(plan: &serde_json::Value, action: &str) -> usize {
    plan["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["action"] == action)
        .count()
}

#[test]
fn snapshot_mlp_capacity() {
    let Some((svg, _)) = render("mlp_capacity", &[]) else {
        return;
    };
    commlens_testkit::check_snapshot("tests/snapshots/mlp_capacity.timeline.svg", &svg)
        .unwrap_or_else(|e| panic!("commlens render: {e}"));
}

#[test]
fn counts_match_reports() {
    for case in [
        "mlp_capacity",
        "mlp_unmatched_paths",
        "llama2_attention_ffn_groups",
        "llama2_capacity",
        "gated_ffn_groups",
    ] {
        let Some((svg, plan)) = render(case, &[]) else {
            return;
        };
        assert_eq!(
            svg.matches("<g data-bucket=").count(),
            plan["buckets"].as_array().unwrap().len(),
            "{case} bars"
        );
        assert_eq!(
            svg.matches("<g data-split=").count(),
            count_decisions(&plan, "split"),
            "{case} splits"
        );
        assert_eq!(
            svg.matches("<g data-skip=").count(),
            count_decisions(&plan, "skip"),
            "{case} skips"
        );
        assert_eq!(
            svg.matches("data-singleton=").count(),
            count_decisions(&plan, "singleton"),
            "{case} singletons"
        );
    }
}

#[test]
fn render_options_are_checked() {
    let dump = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/mlp_fsdp.json");
    let dump = dump.to_str().unwrap();
    let stderr = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_commlens"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(stderr(&["render", dump, "--from", "30", "--to", "3"])
        .contains("--from 30 must be less than --to 3"));
    assert!(stderr(&["render", dump, "--from", "100000"]).contains("past the end of the graph"));
    for width in ["0", "18446744073709551616", "-5", "wide"] {
        assert!(
            stderr(&["render", dump, "--width", width]).contains("--width"),
            "{width}"
        );
    }
    let help = Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(["render", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for option in ["--width", "--from", "--to", "--trace", "[OPTIONS] <DUMP>"] {
        assert!(help.contains(option), "{option} missing from:\n{help}");
    }
}

#[test]
fn usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(["render"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(["render", "/nonexistent/dump.json", "-o", "/tmp/x.svg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_svg_and_trace_record_the_settings_they_were_made_with() {
    let Some(dir) = case_dir("mlp_capacity") else {
        return;
    };
    let trace =
        std::env::temp_dir().join(format!("commlens-render-trace-{}.json", std::process::id()));
    let (svg, _) = render(
        "mlp_capacity",
        &[
            "--from",
            "2",
            "--to",
            "30",
            "--trace",
            trace.to_str().unwrap(),
        ],
    )
    .unwrap();
    let args: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("args.json")).unwrap()).unwrap();
    let start = svg
        .find("<metadata id=\"commlens-settings\">")
        .expect("<metadata>")
        + "<metadata id=\"commlens-settings\">".len();
    let end = start + svg[start..].find("</metadata>").unwrap();
    let text = svg[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    let meta: serde_json::Value = serde_json::from_str(&text).expect("metadata is JSON");
    assert_eq!(meta["format"], "commlens.settings");
    assert_eq!(meta["args"], args);
    assert_eq!(meta["dump"], "dump.json");
    assert_eq!(meta["viewport"]["from"], 2.0);
    assert_eq!(meta["viewport"]["to"], 30.0);
    let title = &svg[svg.find("<title>").unwrap()..svg.find("</title>").unwrap()];
    assert!(
        title.contains("dump.json") && title.contains("cap_bytes"),
        "{title}"
    );
    let written = std::fs::read(&trace);
    let _ = std::fs::remove_file(&trace);
    let trace: serde_json::Value = serde_json::from_slice(&written.unwrap()).unwrap();
    assert_eq!(trace["otherData"]["args"], args);
}
