//! Every way a dump can be unreadable, one fixture each (`tests/fixtures/reader/`), with the
//! exact message a user sees snapshot-tested in `tests/snapshots/reader/<fixture>.txt`. The
//! messages name the node (index and name) and the field, or the JSON line and column.

mod common;

use commlens::read_dump;
use std::path::PathBuf;

#[test]
fn each_bad_dump_gives_its_message() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reader");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "reader fixtures missing");
    let mut failures = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let stem = name.split('.').next().unwrap().to_string();
        let outcome = read_dump(&common::read(&file));
        let text = match (&outcome, stem.starts_with("ok_")) {
            (Ok(dump), true) => format!(
                "ok: {} nodes, warnings: {:?}\n",
                dump.nodes.len(),
                dump.warnings
            ),
            (Err(e), false) => format!("{e}\n"),
            (Ok(_), false) => {
                failures.push(format!("{name}: read without error"));
                continue;
            }
            (Err(e), true) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if let Err(e) = common::check_snapshot(&format!("tests/snapshots/reader/{stem}.txt"), &text)
        {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Truncating a real dump anywhere, or flipping bytes in it, gives an error value, never a
/// panic; and whatever a damaged dump still says, reading it for planning in one pass plans
/// exactly as reading it, building the graph and preparing the planner in turn.
#[test]
fn truncated_and_corrupted_dumps_never_panic() {
    let path = common::shared_dir().join("conformance/cases/mlp_default/dump.json");
    let bytes = common::read(&path);
    for cut in (0..bytes.len()).step_by(97) {
        assert!(read_dump(&bytes[..cut]).is_err());
        assert!(commlens::planner::read_prepared::<commlens::Graph>(&bytes[..cut]).is_err());
    }
    let mut rng = common::Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..400 {
        let mut copy = bytes.clone();
        for _ in 0..4 {
            let state = rng.next();
            let at = (state as usize) % copy.len();
            copy[at] = (state >> 32) as u8;
        }
        let one_pass = commlens::plan_report_json(&copy, None);
        match read_dump(&copy) {
            Ok(dump) => {
                let graph = commlens::Graph::new(dump);
                let two_pass = commlens::plan(&graph, &commlens::resolve_args(&graph, None))
                    .map(|plan| commlens::planner::report::plan_to_json(&plan, &graph));
                match (one_pass, two_pass) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b),
                    (Err(commlens::PlanFailure::Args(a)), Err(b)) => assert_eq!(a, b),
                    (a, b) => panic!("one pass {:?}, two passes {:?}", a.is_ok(), b.is_ok()),
                }
            }
            Err(e) => match one_pass {
                Err(commlens::PlanFailure::Dump(one)) => assert_eq!(one, e),
                other => panic!("read_dump failed ({e}) but reading for planning gave {other:?}"),
            },
        }
    }
}
