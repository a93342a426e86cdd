//! Trace logs (`TORCH_TRACE`) read as graphs.
//!
//! * `tests/fixtures/tracelog/simple_fsdp.log.gz` is a real log of `torch.compile` on tiny
//!   SimpleFSDP-style models (FSDP, HSDP, activation checkpointing, Inductor's bucketing, bf16
//!   with dynamic sizes and annotations), and `dumps/` holds the exporter's dumps of the same
//!   graphs (`make_fixtures.py` writes both): every graph of the log must give the exporter's
//!   nodes, targets, arguments, shapes and roles.
//! * `tests/fixtures/tracelog/errors/` holds one small log per reader error and per note, with
//!   what a user sees snapshot-tested in `tests/snapshots/tracelog/`.

mod common;

use commlens::dump::Dump;
use commlens::identity::json::RolesReport;
use commlens::input::{self, InputError};
use commlens::tracelog::{graphs_text, TRUNCATED_KEY};
use commlens::value::PyValue;
use commlens::{read_dump, Graph};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tracelog")
}

struct Case {
    graph: usize,
    scenario: String,
    dump: Dump,
}

/// The real log and the exporter's dump of each of its graphs.
fn real_log() -> (Vec<u8>, Vec<Case>) {
    let dir = fixtures();
    let manifest = common::json(&dir.join("graphs.json"));
    let log = common::read(&dir.join(manifest["log"].as_str().unwrap()));
    let cases = manifest["graphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| Case {
            graph: g["graph"].as_u64().unwrap() as usize,
            scenario: g["scenario"].as_str().unwrap().to_string(),
            dump: read_dump(&common::read(&dir.join(g["dump"].as_str().unwrap()))).unwrap(),
        })
        .collect::<Vec<_>>();
    assert_eq!(cases.len(), 10, "five scenarios, forward and backward each");
    (log, cases)
}

/// What the printed graph cannot say of a value: a tuple's (only its `getitem`s are annotated),
/// an opaque object's, the output's.
fn unprintable(val: Option<&PyValue>) -> bool {
    matches!(
        val,
        None | Some(PyValue::List(_) | PyValue::Opaque(_) | PyValue::None)
    )
}

#[test]
fn log_graphs_equal_the_exporter_dumps_node_by_node() {
    let (log, cases) = real_log();
    let mut failures = Vec::new();
    let mut cut_payloads = 0;
    let mut vals = 0;
    for case in &cases {
        let from_log = input::read(&log, Some(case.graph)).unwrap();
        let at = |what: &str, node: &str| {
            format!("graph {} ({}) {node}: {what}", case.graph, case.scenario)
        };
        let names = |d: &Dump| d.nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>();
        if names(&from_log) != names(&case.dump) {
            failures.push(at("node names differ", ""));
            continue;
        }
        for (got, want) in from_log.nodes.iter().zip(&case.dump.nodes) {
            let name = want.name.as_str();
            if (got.op, &got.target, &got.args, &got.kwargs)
                != (want.op, &want.target, &want.args, &want.kwargs)
            {
                failures.push(at(&format!("{got:?}\n  vs {want:?}"), name));
            }
            match got.meta("val") {
                Some(val) => {
                    vals += 1;
                    if Some(val) != want.meta("val") {
                        failures.push(at(&format!("val {val:?} vs {:?}", want.meta("val")), name));
                    }
                }
                None if unprintable(want.meta("val")) => {}
                None => failures.push(at("val missing", name)),
            }
            if want.op == commlens::dump::Op::Placeholder {
                // A placeholder's metadata is not printed; only its annotation is.
                continue;
            }
            for key in ["autograd_backward", "recompute", "ac_graph_id"] {
                if got.meta(key) != want.meta(key) {
                    failures.push(at(
                        &format!("meta {key}: {:?} vs {:?}", got.meta(key), want.meta(key)),
                        name,
                    ));
                }
            }
            let cut: Vec<&str> = got
                .meta(TRUNCATED_KEY)
                .and_then(PyValue::as_list)
                .map(|l| l.iter().filter_map(PyValue::as_str).collect())
                .unwrap_or_default();
            let custom =
                |n: &commlens::dump::Node| n.meta("custom").and_then(PyValue::as_dict).cloned();
            match (custom(got), custom(want)) {
                (Some(g), Some(w)) => {
                    for (key, value) in &w {
                        let printed = g.get(key.as_str());
                        if cut.contains(&key.as_str()) {
                            // `str(value)[:40] + "..."`, exactly.
                            let full = value.py_str();
                            let prefix: String = full.chars().take(40).collect();
                            cut_payloads += 1;
                            if printed != Some(&PyValue::Str(format!("{prefix}..."))) {
                                failures
                                    .push(at(&format!("cut {key}: {printed:?} vs {full}"), name));
                            }
                        } else if printed != Some(value) {
                            failures
                                .push(at(&format!("custom {key}: {printed:?} vs {value:?}"), name));
                        }
                    }
                }
                (None, None) => {}
                // `torch.fx` prints no `Annotation:` for an empty dict.
                (None, Some(w)) if w.is_empty() => {}
                (g, w) => failures.push(at(&format!("custom {g:?} vs {w:?}"), name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(vals > 100, "only {vals} values compared");
    assert!(
        cut_payloads >= 4,
        "the annotated scenario's cut payloads were not seen"
    );
}

/// Drops `meta["custom"]["distributed.comm_semantics"]`: what the log cannot carry.
fn without_payloads(mut dump: Dump) -> Dump {
    for node in &mut dump.nodes {
        if let Some(PyValue::Dict(custom)) = node.meta.get_mut("custom") {
            std::sync::Arc::make_mut(custom).shift_remove(commlens::identity::PAYLOAD_KEY);
        }
    }
    dump
}

fn roles(dump: Dump) -> Value {
    serde_json::from_str(&RolesReport::new(Graph::new(dump)).to_json()).unwrap()
}

/// `roles` on a log's graph equals `roles` on the exporter's dump of it, collective by
/// collective: role, source, producer, phase, recompute, rule, evidence, heuristic, waits,
/// group. Provenance (`meta["from_node"]`) is not in the log, so it is `null` there; an
/// annotated identity is cut by PyTorch, so it is compared with the dump without it, and the
/// log says why in a diagnostic on every collective that carried one.
#[test]
fn roles_of_log_graphs_equal_roles_of_the_exporter_dumps() {
    let (log, cases) = real_log();
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in &cases {
        let annotated = case.scenario == "fsdp_annotated";
        let got = roles(input::read(&log, Some(case.graph)).unwrap());
        let dump = if annotated {
            without_payloads(case.dump.clone())
        } else {
            case.dump.clone()
        };
        let want = roles(dump);
        let (g, w) = (
            got["collectives"].as_array().unwrap(),
            want["collectives"].as_array().unwrap(),
        );
        if g.len() != w.len() {
            failures.push(format!(
                "graph {}: {} vs {} collectives",
                case.graph,
                g.len(),
                w.len()
            ));
            continue;
        }
        for (a, b) in g.iter().zip(w) {
            compared += 1;
            assert_eq!(a["provenance"], Value::Null);
            let mut b = b.clone();
            b["provenance"] = Value::Null;
            if *a != b {
                failures.push(format!("graph {}:\n  log:  {a}\n  dump: {b}", case.graph));
            }
        }
        for key in ["memory_events", "buckets", "coverage"] {
            if got[key] != want[key] {
                failures.push(format!(
                    "graph {} {key}: {} vs {}",
                    case.graph, got[key], want[key]
                ));
            }
        }
        let diagnostics = got["diagnostics"].as_array().unwrap();
        if annotated {
            assert!(
                !diagnostics.is_empty(),
                "graph {}: no diagnostic for cut payloads",
                case.graph
            );
            for d in diagnostics {
                assert_eq!(d["code"], "malformed_payload", "{d}");
                assert_eq!(d["rule"], "payload.truncated", "{d}");
                assert!(
                    d["message"]
                        .as_str()
                        .unwrap()
                        .contains("at most 40 characters"),
                    "{d}"
                );
            }
            // With its payloads the dump says explicit; the log cannot.
            let explicit = roles(case.dump.clone())["coverage"]["explicit"]
                .as_u64()
                .unwrap();
            assert!(case.graph % 2 == 1 || explicit > 0, "graph {}", case.graph);
            assert_eq!(got["coverage"]["explicit"], 0);
        } else if got["diagnostics"] != want["diagnostics"] {
            failures.push(format!("graph {} diagnostics differ", case.graph));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 20, "only {compared} collectives compared");
}

#[test]
fn the_real_log_lists_its_graphs() {
    let (log, _) = real_log();
    let graphs = input::graphs(&log).unwrap();
    let text = graphs_text(&graphs);
    common::check_snapshot("tests/snapshots/tracelog/simple_fsdp.graphs.txt", &text).unwrap();
    common::check_snapshot(
        "tests/snapshots/tracelog/simple_fsdp.graphs.json",
        &commlens::tracelog::graphs_json(&graphs),
    )
    .unwrap();
    // The schedule Inductor logged is kept with the graph and on its collectives.
    let dump = input::read(&log, Some(0)).unwrap();
    let schedule = &dump.source.as_ref().unwrap()["inductor_collective_schedule"];
    assert_eq!(schedule.as_array().map(Vec::len), Some(4), "{schedule}");
    let positions: Vec<_> = dump
        .nodes
        .iter()
        .filter_map(|n| n.meta(commlens::tracelog::SCHEDULE_POSITION_KEY))
        .collect();
    assert_eq!(positions, [&PyValue::int(0), &PyValue::int(2)]);
    assert_eq!(
        dump.source.as_ref().unwrap()["group_sizes"],
        serde_json::json!({"0": 4})
    );
}

/// Each fixture under `errors/`: what `read` and `graphs` say (an `ok_` fixture: the notes
/// and the graph as a dump), snapshot-tested.
#[test]
fn each_bad_log_gives_its_message() {
    let dir = fixtures().join("errors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "error fixtures missing");
    let mut failures = Vec::new();
    for file in &files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = common::read(file);
        let text = if stem.starts_with("ok_") {
            match input::read(&bytes, Some(0)) {
                Ok(dump) => {
                    let mut text = String::new();
                    for note in &dump.warnings {
                        text.push_str(&format!("note: {note}\n"));
                    }
                    text.push('\n');
                    text.push_str(&commlens::dump_writer::write_dump(&dump));
                    text
                }
                Err(e) => {
                    failures.push(format!("{stem}: {e}"));
                    continue;
                }
            }
        } else {
            let read = match input::read(&bytes, None) {
                Ok(_) => {
                    failures.push(format!("{stem}: read without error"));
                    continue;
                }
                Err(e) => format!("read: {e}"),
            };
            let graphs = match input::graphs(&bytes) {
                Ok(graphs) => graphs_text(&graphs),
                Err(e) => format!("{e}\n"),
            };
            format!("{read}\n\ngraphs:\n{graphs}")
        };
        if let Err(e) =
            common::check_snapshot(&format!("tests/snapshots/tracelog/{stem}.txt"), &text)
        {
            failures.push(e);
        }
    }
    let several = common::read(&dir.join("several_graphs.log"));
    let out_of_range = input::read(&several, Some(7)).unwrap_err();
    assert!(matches!(&out_of_range, InputError::TraceLog(_)));
    if let Err(e) = common::check_snapshot(
        "tests/snapshots/tracelog/several_graphs.out_of_range.txt",
        &format!("{out_of_range}\n"),
    ) {
        failures.push(e);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A graph read from a log, written as a dump and read back, is the same graph.
#[test]
fn log_graphs_round_trip_through_the_dump_format() {
    let (log, cases) = real_log();
    let forms = common::read(&fixtures().join("errors/ok_syntax_forms.log"));
    let mut graphs: Vec<Dump> = cases
        .iter()
        .map(|c| input::read(&log, Some(c.graph)).unwrap())
        .collect();
    graphs.push(input::read(&forms, None).unwrap());
    for dump in graphs {
        let text = commlens::dump_writer::write_dump(&dump);
        let back = read_dump(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(format!("{:?}", back.nodes), format!("{:?}", dump.nodes));
        assert_eq!(back.source, dump.source);
        let graph = Graph::new(dump);
        assert_eq!(
            back.signature,
            Some(commlens::signature::graph_signature(&graph))
        );
    }
}

/// Reading a log's graph ready to plan in one pass (each node handed to the graph builder, the
/// planner's checks and the signature hash as it is read) plans exactly as reading it, then
/// building the graph and preparing the planner.
#[test]
fn one_pass_preparation_plans_as_two_passes() {
    let (log, cases) = real_log();
    let mut inputs: Vec<(Vec<u8>, usize)> = cases.iter().map(|c| (log.clone(), c.graph)).collect();
    for name in [
        "ok_syntax_forms",
        "ok_placeholder_rename",
        "ok_notes",
        "ok_schedule",
    ] {
        inputs.push((
            common::read(&fixtures().join(format!("errors/{name}.log"))),
            0,
        ));
    }
    let args = commlens::PlannerArgs::resolve(None, None, None);
    for (bytes, k) in inputs {
        let one: commlens::planner::Planner<Graph> = input::read_prepared(&bytes, Some(k)).unwrap();
        let graph = Graph::new(input::read(&bytes, Some(k)).unwrap());
        let two = commlens::planner::Planner::new(&graph);
        let a = one.plan(&args).unwrap();
        let b = two.plan(&args).unwrap();
        assert_eq!(
            commlens::planner::report::plan_to_json(&a, one.graph()),
            commlens::planner::report::plan_to_json(&b, &graph)
        );
        assert_eq!(
            one.graph().dump.signature,
            Some(commlens::signature::graph_signature(&graph))
        );
        assert_eq!(
            format!("{:?}", one.graph().nodes()),
            format!("{:?}", graph.nodes())
        );
    }
    // A renamed placeholder is read under its new name.
    let renamed = input::read(
        common::read(&fixtures().join("errors/ok_placeholder_rename.log")),
        None,
    )
    .unwrap();
    let names: Vec<_> = renamed
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.target.as_str()))
        .collect();
    assert_eq!(names[..2], [("x_1", "x"), ("y_1", "y")]);
}

/// Truncating the real log anywhere or damaging its bytes gives a graph or an error value,
/// never a panic.
#[test]
fn damaged_logs_never_panic() {
    let (log, _) = real_log();
    let text = commlens::dump::gunzip(&log).unwrap();
    let step = text.len() / 120;
    for cut in (0..text.len()).step_by(step.max(1)) {
        let bytes = &text[..cut];
        let _ = input::read(bytes, Some(cut % 10));
    }
    let mut rng = common::Rng(0x9e37_79b9_7f4a_7c15);
    let noise = b"\t\n ()[]{},:'\"=#.-0x\xff";
    for _ in 0..120 {
        let mut bytes = text.clone();
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(bytes.len());
            bytes[at] = noise[rng.below(noise.len())];
        }
        let _ = input::read(&bytes, Some(rng.below(10)));
    }
    let _ = input::graphs(&text[..text.len() / 2]);
}

/// The fixtures the tests above read are in place.
#[test]
fn fixture_files_exist() {
    for path in ["graphs.json", "simple_fsdp.log.gz", "make_fixtures.py"] {
        assert!(Path::new(&fixtures().join(path)).is_file(), "{path}");
    }
}
