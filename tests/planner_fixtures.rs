//! One hand-built fixture dump per planner reason (`tests/fixtures/planner/<reason>.json`,
//! made by `make_fixtures.py` there). Each dump carries its planner arguments in `planner` and
//! the decisions it must produce in `source.expect`; the plan in plain words is snapshot-tested
//! (`tests/snapshots/planner/<reason>.txt`), so a reviewer reads what a user reads.

mod common;

use commlens::planner::report::{plan_to_json, plan_to_text};
use commlens::planner::Reason;
use commlens::{plan, read_dump, resolve_args, Graph};
use std::path::PathBuf;

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/planner");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_reason_has_a_fixture_that_produces_it() {
    let files = fixtures();
    let mut failures = Vec::new();
    for file in &files {
        let reason = file.file_stem().unwrap().to_string_lossy().into_owned();
        let graph = Graph::new(read_dump(&common::read(file)).expect("fixture reads"));
        let args = resolve_args(&graph, None);
        let plan = plan(&graph, &args).expect("fixture plans");
        let report: serde_json::Value =
            serde_json::from_str(&plan_to_json(&plan, &graph)).expect("report JSON");
        let source = graph.dump.source.clone().expect("fixture source");
        for expected in source["expect"].as_array().expect("source.expect") {
            let found = report["decisions"].as_array().unwrap().iter().any(|d| {
                expected
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| &d[k] == v)
            });
            if !found {
                failures.push(format!("{reason}: missing decision {expected}"));
            }
        }
        if let Err(e) = common::check_snapshot(
            &format!("tests/snapshots/planner/{reason}.txt"),
            &plan_to_text(&plan, &graph),
        ) {
            failures.push(e);
        }
    }
    // Every reachable reason has its fixture (incompatible_key cannot be reached through the
    // planner: candidates are grouped by key before keys are compared).
    for reason in Reason::SKIPS
        .iter()
        .chain(Reason::SPLITS.iter())
        .chain([Reason::Oversized].iter())
    {
        if *reason == Reason::IncompatibleKey {
            continue;
        }
        if !files
            .iter()
            .any(|f| f.file_stem().unwrap() == reason.as_str())
        {
            failures.push(format!("no fixture for {}", reason.as_str()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
