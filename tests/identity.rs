//! Semantic identity of collectives (`semantic-identity.md`): snapshot tests of the `roles`
//! and `audit` JSON on the traced fixtures (`tests/fixtures/identity/*.json`, made by
//! `make_fixtures.py` from real torch traces) and on the one-rule-per-file cases
//! (`tests/fixtures/identity/cases/`, made by `make_cases.py`), plus direct checks of the
//! RFC's validation case and of the precedence rules.
//!
//! Snapshots live in `tests/snapshots/identity/<name>.json` and are compared textually;
//! `UPDATE_SNAPSHOTS=1 cargo test -p commlens --test identity` rewrites them.

use commlens::identity::json::{AuditReport, RolesReport};
use commlens::identity::{classify, Code, Role, Source};
use commlens::{read_dump, Graph};
use std::path::{Path, PathBuf};

// The allocator the CLI ships with (the scale figure is measured with it).
#[cfg(not(target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/identity")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn graph(path: &Path) -> Graph {
    Graph::new(read_dump(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Compares `actual` with the snapshot `name` (the shared snapshot helper); returns a failure
/// description.
fn check_snapshot(name: &str, actual: &str) -> Option<String> {
    commlens_testkit::check_snapshot(format!("tests/snapshots/identity/{name}.json"), actual).err()
}

fn roles_json(path: &Path) -> String {
    RolesReport::from_dump(&read(path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_json()
}

#[test]
fn snapshots() {
    let mut failures = Vec::new();
    let mut seen = 0;
    // Traced fixtures.
    for name in [
        "fsdp_tp_untagged",
        "fsdp_tp_annotated",
        "fsdp_tp_annotated_raw",
        "hsdp_all_reduce",
    ] {
        let path = fixtures().join(format!("{name}.json"));
        failures.extend(check_snapshot(name, &roles_json(&path)));
        seen += 1;
    }
    // The HSDP graph without its producer tags: the heuristics miss the replicate all-reduce.
    let mut hsdp: serde_json::Value =
        serde_json::from_slice(&read(&fixtures().join("hsdp_all_reduce.json"))).unwrap();
    for node in hsdp["nodes"].as_array_mut().unwrap() {
        if let Some(meta) = node.get_mut("meta").and_then(|m| m.as_object_mut()) {
            meta.shift_remove("comm_type");
        }
    }
    let bytes = serde_json::to_vec(&hsdp).unwrap();
    failures.extend(check_snapshot(
        "hsdp_all_reduce_untagged",
        &RolesReport::from_dump(&bytes).unwrap().to_json(),
    ));
    // One-rule cases.
    let cases = fixtures().join("cases");
    let mut names: Vec<String> = std::fs::read_dir(&cases)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    for file in names {
        let stem = file.trim_end_matches(".json");
        if stem.ends_with(".after") {
            continue;
        }
        if let Some(case) = stem.strip_suffix(".before") {
            let before = read(&cases.join(&file));
            let after = read(&cases.join(format!("{case}.after.json")));
            let report = AuditReport::from_dumps(&before, &after).unwrap();
            failures.extend(check_snapshot(&format!("audit_{case}"), &report.to_json()));
        } else {
            failures.extend(check_snapshot(stem, &roles_json(&cases.join(&file))));
        }
        seen += 1;
    }
    assert!(seen > 20, "only {seen} cases found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The RFC's validation case, on real traces: the TP all-gather of a weight fools the
/// all-gather heuristic; explicit identity attached with `fx.traceback.annotate` survives
/// tracing and the dump, stands, and the mismatch is reported.
#[test]
fn tensor_parallel_gather_fools_the_heuristic_unless_explicit() {
    let untagged = graph(&fixtures().join("fsdp_tp_untagged.json"));
    let c = classify(&untagged);
    let tp: Vec<_> = c
        .collectives
        .iter()
        .filter(|x| x.group.as_deref() == Some("tp"))
        .collect();
    assert_eq!(tp.len(), 1);
    assert_eq!(tp[0].role, Some(Role::ParamUnshard));
    assert_eq!(tp[0].source, Some(Source::Inferred));
    assert_eq!(
        tp[0].evidence.as_ref().unwrap().rule,
        "ag_single_placeholder"
    );
    assert!(c
        .collectives
        .iter()
        .all(|x| x.source == Some(Source::Inferred)));

    let annotated = graph(&fixtures().join("fsdp_tp_annotated.json"));
    let c = classify(&annotated);
    let tp = c
        .collectives
        .iter()
        .find(|x| x.group.as_deref() == Some("tp"))
        .unwrap();
    assert_eq!(tp.role.as_ref().map(Role::as_str), Some("tp.weight_gather"));
    assert_eq!(tp.source, Some(Source::Explicit));
    assert_eq!(tp.producer.as_deref(), Some("tp"));
    assert_eq!(
        tp.heuristic.as_ref().map(|h| &h.0),
        Some(&Role::ParamUnshard)
    );
    let mismatches: Vec<_> = c
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::HeuristicMismatch)
        .collect();
    assert_eq!(mismatches.len(), 1);
    assert_eq!(mismatches[0].nodes, vec![tp.name.clone()]);
    // The FSDP collectives are explicit too, straight from annotate → trace → dump.
    assert!(c
        .collectives
        .iter()
        .all(|x| x.source == Some(Source::Explicit)));

    // As traced, PyTorch copied the forward role onto the backward reduce-scatter: a real
    // role/transport conflict, reported and ignored (the heuristic decides, inferred).
    let raw = graph(&fixtures().join("fsdp_tp_annotated_raw.json"));
    let c = classify(&raw);
    assert!(c
        .diagnostics
        .iter()
        .any(|d| d.code == Code::RoleTransportConflict));
    let rs = c
        .collectives
        .iter()
        .find(|x| &*x.op == "reduce_scatter_tensor")
        .unwrap();
    assert_eq!(rs.role, Some(Role::GradReduceShard));
    assert_eq!(rs.source, Some(Source::Inferred));
}

#[test]
fn hsdp_replicate_all_reduce_is_explicit_from_comm_type() {
    let g = graph(&fixtures().join("hsdp_all_reduce.json"));
    let c = classify(&g);
    let ars: Vec<_> = c
        .collectives
        .iter()
        .filter(|x| &*x.op == "all_reduce")
        .collect();
    assert!(!ars.is_empty());
    for ar in ars {
        assert_eq!(ar.role, Some(Role::GradReplicateReduce));
        assert_eq!(ar.source, Some(Source::Explicit));
        assert_eq!(ar.group.as_deref(), Some("dp_replicate"));
        // Group transitivity misses the replicate group (no FSDP all-gather on it).
        assert!(ar.heuristic.is_none());
    }
}

/// Every conformance dump classifies without panicking, and every collective the FSDP pass
/// tagged with a compatible `comm_type` is explicit with the table's role.
#[test]
fn conformance_dumps_classify() {
    // Required: without the corpus this test fails (unless COMMLENS_ALLOW_MISSING_SHARED=1).
    let Some(dir) = commlens_testkit::shared("conformance/cases", "conformance_dumps_classify")
    else {
        return;
    };
    let entries = std::fs::read_dir(&dir).unwrap();
    let mut count = 0;
    for entry in entries.flatten() {
        let Ok(bytes) = std::fs::read(entry.path().join("dump.json")) else {
            continue;
        };
        let Ok(dump) = read_dump(&bytes) else {
            continue;
        };
        let g = Graph::new(dump);
        let c = classify(&g);
        for x in &c.collectives {
            let tag = g.node(x.node).meta_str("comm_type");
            let expected = match tag {
                Some("fsdp_all_gather" | "fsdp_all_gather_backward")
                    if x.op.starts_with("all_gather") =>
                {
                    Some(Role::ParamUnshard)
                }
                Some("fsdp_reduce_scatter") if x.op.starts_with("reduce_scatter") => {
                    Some(Role::GradReduceShard)
                }
                Some("dp_all_reduce") if x.op.starts_with("all_reduce") => {
                    Some(Role::GradReplicateReduce)
                }
                _ => None,
            };
            if let Some(role) = expected {
                assert_eq!(
                    x.role.as_ref(),
                    Some(&role),
                    "{:?} {}",
                    entry.path(),
                    x.name
                );
                assert_eq!(x.source, Some(Source::Explicit));
            }
        }
        assert_eq!(c.coverage.all.total(), c.collectives.len());
        count += 1;
    }
    assert!(count > 30);
}

/// Classification does not panic on odd metadata anywhere.
#[test]
fn no_panic_on_odd_metadata() {
    let odd = r#"{"format": "commlens.graph", "version": 1, "nodes": [
      {"name": "w", "op": "placeholder", "target": "w"},
      {"name": "ag", "op": "call_function", "target": "_c10d_functional.all_gather_into_tensor",
       "args": [{"node": "w"}, 2, 7],
       "meta": {"custom": [1, 2], "comm_semantics": {"version": 1.0, "role": null},
                "comm_type": 5, "from_node": {"weird": true}, "bucketing_ag_sources": "ag",
                "fsdp_bucket_members": [1, "a", "a"], "val": [1, {"tensor": 3}]}},
      {"name": "rs", "op": "call_function", "target": "_c10d_functional.reduce_scatter_tensor",
       "args": [], "kwargs": {"group_name": 3}, "meta": {"from_node": [{"name": "rs"}, {"name": "nowhere"}]}},
      {"name": "wait", "op": "call_function", "target": "_c10d_functional.wait_tensor",
       "args": [{"node": "ag"}], "meta": {"custom": {"distributed.comm_semantics": []}}},
      {"name": "fused", "op": "call_function", "target": "symm_mem.fused_matmul_reduce_scatter",
       "args": [{"node": "wait"}], "meta": {"from_node": ["ag", "rs", "missing"]}},
      {"name": "output", "op": "output", "target": "output", "args": [[{"node": "fused"}]]}
    ]}"#;
    let report = RolesReport::from_dump(odd.as_bytes()).unwrap();
    let json = report.to_json();
    assert!(json.contains("malformed_payload"));
    let _ = report.to_text();
    let audit = AuditReport::from_dumps(odd.as_bytes(), odd.as_bytes()).unwrap();
    let _ = audit.to_json();
    let _ = audit.to_text();
}

/// Scale: classification of a ~1M-node synthetic dump (`commlens::synth`, the FSDP pass's
/// tags on a Llama-like joint graph). Run in release:
/// `cargo test --release -p commlens --test identity -- --ignored --nocapture scale`.
#[test]
#[ignore]
fn scale_classify_1m_nodes() {
    use commlens::synth::{synthetic_dump, SynthSpec};
    use std::time::Instant;
    let nodes = std::env::var("COMMLENS_SCALE_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let text = synthetic_dump(SynthSpec::with_nodes(nodes));
    let t = Instant::now();
    let g = Graph::new(read_dump(text.as_bytes()).unwrap());
    let read = t.elapsed();
    // Strip the producer tags from a copy so the heuristics do all the work too.
    let mut untagged = g.dump.clone();
    for node in &mut untagged.nodes {
        node.meta.shift_remove("comm_type");
    }
    let untagged = Graph::new(untagged);
    for (label, graph) in [("tagged", &g), ("untagged", &untagged)] {
        let mut best = f64::MAX;
        let mut c = None;
        let rounds: usize = std::env::var("COMMLENS_SCALE_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3);
        for _ in 0..rounds {
            drop(c.take());
            let t = Instant::now();
            let result = classify(graph);
            best = best.min(t.elapsed().as_secs_f64());
            c = Some(result);
        }
        let c = c.unwrap();
        println!(
            "{label}: {} nodes, {} collectives ({} explicit, {} inferred, {} unclassified): classify {:.3} s (best of {rounds}); read+graph {:.2} s",
            graph.len(),
            c.collectives.len(),
            c.coverage.all.explicit,
            c.coverage.all.inferred,
            c.coverage.all.unclassified,
            best,
            read.as_secs_f64()
        );
    }
}
