//! TORCH_TRACE logs on the command line: every command that reads a dump reads a log, `--graph
//! K` picks its graph, `commlens graphs` lists them, and mistakes exit 1 with a message that
//! says what there is.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tracelog")
}

fn log() -> String {
    fixtures()
        .join("simple_fsdp.log.gz")
        .to_string_lossy()
        .into_owned()
}

fn dump(k: usize) -> String {
    fixtures()
        .join(format!("dumps/graph_{k:03}.json.gz"))
        .to_string_lossy()
        .into_owned()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(args)
        .output()
        .expect("run commlens")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(args: &[&str]) -> Output {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    out
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn roles_of_a_log_graph_equal_roles_of_its_dump_but_for_provenance() {
    for k in ["1", "3", "5", "7"] {
        let from_log = ok(&["roles", &log(), "--graph", k, "--json"]);
        assert!(
            text(&from_log.stderr).contains("note: ")
                && text(&from_log.stderr).contains("group sizes"),
            "{}",
            text(&from_log.stderr)
        );
        let from_dump = json(&ok(&["roles", &dump(k.parse().unwrap()), "--json"]));
        let mut from_log = json(&from_log);
        let collectives = from_log["collectives"].as_array_mut().unwrap();
        assert!(!collectives.is_empty());
        for (a, b) in collectives
            .iter_mut()
            .zip(from_dump["collectives"].as_array().unwrap())
        {
            a["provenance"] = b["provenance"].clone();
        }
        assert_eq!(
            from_log["collectives"], from_dump["collectives"],
            "graph {k}"
        );
        assert_eq!(from_log["coverage"], from_dump["coverage"], "graph {k}");
    }
}

#[test]
fn graphs_lists_and_exports() {
    let listing = text(&ok(&["graphs", &log()]).stdout);
    assert!(
        listing.starts_with("graph  compile  rank  kind"),
        "{listing}"
    );
    assert_eq!(listing.lines().count(), 11, "{listing}");
    let listed = json(&ok(&["graphs", &log(), "--json"]));
    assert_eq!(listed["format"], "commlens.graphs");
    assert_eq!(listed["graphs"][3]["kind"], "backward");
    assert_eq!(listed["graphs"][3]["collectives"], 4);

    let dir = std::env::temp_dir().join(format!("commlens-tracelog-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exported = dir.join("graph3.json");
    let exported = exported.to_str().unwrap();
    ok(&["graphs", &log(), "--graph", "3", "--export", exported]);
    // The exported dump plans and classifies as the log's graph does.
    assert_eq!(
        ok(&["plan", exported]).stdout,
        ok(&["plan", &log(), "--graph", "3"]).stdout
    );
    assert_eq!(
        ok(&["roles", exported, "--json"]).stdout,
        ok(&["roles", &log(), "--graph", "3", "--json"]).stdout
    );
    // A dump lists as one graph.
    let one = text(&ok(&["graphs", exported]).stdout);
    assert_eq!(one.lines().count(), 2, "{one}");
    let _ = std::fs::remove_dir_all(&dir);
    // --export needs --graph.
    assert_eq!(
        run(&["graphs", &log(), "--export", "x.json"]).status.code(),
        Some(2)
    );
}

#[test]
fn every_graph_reading_command_takes_a_log() {
    let dir = std::env::temp_dir().join(format!("commlens-tracelog-cmds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("t.svg");
    ok(&[
        "render",
        &log(),
        "--graph",
        "5",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let text_plan = text(&ok(&["plan", &log(), "--graph", "1", "--format", "text"]).stdout);
    assert!(text_plan.starts_with("plan of 15 nodes"), "{text_plan}");
    let audit = json(&ok(&["audit", &log(), &log(), "--graph", "6", "--json"]));
    assert_eq!(audit["entries"][0]["status"], "kept");
    ok(&["audit", &dump(6), &log(), "--after-graph", "6"]);
    // diff: a log's graph against itself and against another, with the tags derived from
    // roles (a log has no FSDP pass tags).
    let same = json(&ok(&[
        "diff",
        &log(),
        &log(),
        "--graph",
        "3",
        "--tags",
        "roles",
        "--json",
    ]));
    assert_eq!(same["format"], "commlens.plan-diff");
    assert!(same["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["change"] == "same"));
    assert!(!same["collectives"].as_array().unwrap().is_empty());
    let diffed = text(
        &ok(&[
            "diff",
            &log(),
            &log(),
            "--before-graph",
            "1",
            "--after-graph",
            "3",
            "--tags",
            "roles",
        ])
        .stdout,
    );
    assert!(diffed.starts_with("plan diff of two graphs"), "{diffed}");
    // validate: ranks given by their logs are planned (group ranks come from --args).
    let args = dir.join("args.json");
    std::fs::write(&args, r#"{"group_ranks": {"0": [0, 1]}}"#).unwrap();
    let args = args.to_str().unwrap();
    let report = dir.join("rank0.json");
    std::fs::write(
        &report,
        ok(&["plan", &log(), "--graph", "1", "--args", args]).stdout,
    )
    .unwrap();
    let rank0 = format!("0={}", report.to_str().unwrap());
    let rank1 = format!("1={}", log());
    let validated = ok(&[
        "validate", "--group", "0", "--rank", &rank0, "--rank", &rank1, "--graph", "1", "--args",
        args,
    ]);
    assert!(text(&validated.stdout).starts_with("ok: 2 rank reports agree"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mistakes_say_what_there_is() {
    let out = run(&["roles", &log()]);
    assert_eq!(out.status.code(), Some(1));
    let message = text(&out.stderr);
    assert!(
        message.contains("holds 10 post-grad graphs; choose one with --graph K"),
        "{message}"
    );
    assert!(
        message.contains("9      0/0      0     backward"),
        "{message}"
    );

    let out = run(&["plan", &log(), "--graph", "10"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr)
        .contains("--graph 10 is out of range: the trace log holds 10 post-grad graphs (0 to 9)"));

    let out = run(&["roles", &dump(0), "--graph", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the input is a graph dump, which holds one graph"));
    ok(&["roles", &dump(0), "--graph", "0"]);

    let no_graph = fixtures().join("errors/no_graph.log");
    let out = run(&["render", no_graph.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no inductor_post_grad_graph artifact"));
    assert!(text(&out.stderr).contains("chromium_event ×2"));

    let bad = fixtures().join("errors/unknown_node.log");
    let out = run(&["graphs", bad.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "listing shows the unreadable graph"
    );
    assert!(text(&out.stdout).contains("line 16, column 65"));
    assert_eq!(
        run(&["roles", "--graph", "-1", &log()]).status.code(),
        Some(2)
    );
}
