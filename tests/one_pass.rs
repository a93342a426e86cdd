//! Reading for planning in one pass (`planner::read_prepared`: the reader hands each node to
//! the graph builder and the planner's node-local checks while it is in cache) must plan
//! exactly as the two-pass route (`read_dump`, `Graph::new`, `Planner::new`). The conformance
//! test compares the two on every case; this one damages the tagged collectives of real dumps
//! (wrong tags, identities, phases, specs, signatures, groups) so that every skip reason's
//! path is taken, and compares them there.

mod common;

use commlens::planner::report::plan_to_json;
use commlens::{plan, plan_report_json, read_dump, resolve_args, Graph, PlanFailure};
use common::Rng;
use serde_json::{json, Value};

/// Damages one tagged node in one way.
fn damage(node: &mut Value, rng: &mut Rng) {
    let meta = &mut node["meta"];
    match rng.below(10) {
        0 => {
            meta["comm_type"] = rng.pick(&[
                json!("fsdp_all_gather"),
                json!("fsdp_all_gather_backward"),
                json!("fsdp_reduce_scatter"),
                json!("fsdp_reshard_free"),
                json!("tp_all_reduce"),
                json!(3),
                Value::Null,
            ])
        }
        1 => meta["param_name"] = rng.pick(&[json!(""), json!("x.weight"), json!(5), Value::Null]),
        2 => {
            meta["state_idx"] = rng.pick(&[json!(-1), json!(0), json!(7), json!("3"), json!(true)])
        }
        3 => meta["autograd_backward"] = rng.pick(&[json!(true), json!(false), json!(0), json!(1)]),
        4 => meta["comm_group"] = rng.pick(&[json!("other"), json!(1), Value::Null]),
        5 => {
            let spec = &mut meta["fsdp_bucket_spec"];
            if !spec.is_object() {
                *spec = json!({});
            }
            match rng.below(4) {
                0 => *spec = json!("not a dict"),
                1 => spec["input_shape"] = json!([]),
                2 => {
                    spec["dtype"] =
                        rng.pick(&[json!({"dtype": "torch.int8"}), json!("torch.float32")])
                }
                _ => spec["device"] = rng.pick(&[json!("gpu:0"), json!("cuda:01"), json!(0)]),
            }
        }
        6 => meta["fsdp_bucket_members"] = rng.pick(&[json!(["a"]), json!([]), json!(1)]),
        7 => {
            if let Some(args) = node["args"].as_array_mut() {
                if !args.is_empty() {
                    let at = rng.below(args.len());
                    args[at] = rng.pick(&[json!("sum"), json!("max"), json!(2), json!("other")]);
                }
            }
        }
        8 => {
            if let Some(args) = node["args"].as_array_mut() {
                args.pop();
            }
        }
        _ => node["kwargs"] = json!({"async_op": true}),
    }
}

#[test]
fn damaged_dumps_plan_the_same_in_one_pass_and_two() {
    let cases = common::shared_dir().join("conformance/cases");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut compared = 0;
    let mut changed = 0;
    for case in ["mlp_default", "frozen_mlp", "gated_ffn_groups"] {
        let original: Value = common::json(&cases.join(case).join("dump.json"));
        let tagged: Vec<usize> = original["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .enumerate()
            .filter(|(_, n)| n["meta"]["comm_type"].is_string())
            .map(|(i, _)| i)
            .collect();
        assert!(!tagged.is_empty(), "{case} has tagged collectives");
        let undamaged =
            plan_report_json(&serde_json::to_vec(&original).expect("json"), None).expect("plan");
        for _ in 0..60 {
            let mut dump = original.clone();
            for _ in 0..1 + rng.below(3) {
                let at = tagged[rng.below(tagged.len())];
                damage(&mut dump["nodes"][at], &mut rng);
            }
            let bytes = serde_json::to_vec(&dump).expect("json");
            let one_pass = plan_report_json(&bytes, None);
            let two_pass = read_dump(&bytes).map(Graph::new).map(|graph| {
                plan(&graph, &resolve_args(&graph, None)).map(|p| plan_to_json(&p, &graph))
            });
            match (one_pass, two_pass) {
                (Ok(a), Ok(Ok(b))) => {
                    assert_eq!(a, b, "{case}");
                    changed += (a != undamaged) as usize;
                }
                (Err(PlanFailure::Args(a)), Ok(Err(b))) => assert_eq!(a, b, "{case}"),
                (Err(PlanFailure::Dump(a)), Err(b)) => assert_eq!(a, b, "{case}"),
                (a, b) => panic!("{case}: one pass {a:?}, two passes {b:?}"),
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 180);
    // The damage must reach the planner's decisions, not only the reader's checks.
    assert!(
        changed > 90,
        "only {changed} damaged dumps planned differently"
    );
}

/// The graph built as its nodes are read (`input::read_graph`: each node's inputs and facts
/// found while it is in cache) is the graph built after the read (`Graph::new`): node by
/// node, the same inputs, users and facts, the same signature and errors. So is the graph read
/// without the nodes' reprs (`input::read_graph_without_repr`, and prepared for planning,
/// `read_prepared_without_repr`), whose nodes are otherwise the same and keep no repr. Every conformance dump, reader fixture and example, from its
/// file, its bytes and gzipped, and the damaged argument lists of real dumps.
#[test]
fn graphs_built_while_reading_are_built_as_after_it() {
    use commlens::input::{read_graph, read_graph_without_repr, Input};
    use std::path::PathBuf;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/reader"))
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.extend(
        common::case_dirs(&common::shared_dir().join("conformance/cases"))
            .iter()
            .map(|c| c.join("dump.json")),
    );
    paths.push(root.join("examples/mlp_fsdp.json"));
    paths.push(root.join("examples/llama_fsdp.json.gz"));
    // Nodes whose repr the other reads kept and this one let go.
    let reprs_dropped = std::cell::Cell::new(0);
    let same = |what: &str, built: Result<Graph, commlens::InputError>, bytes: &[u8]| {
        let after = commlens::input::read(bytes, None).map(Graph::new);
        let lean = read_graph_without_repr(bytes, None);
        // Prepared for planning without reprs (`read_and_plan`): the same graph as `lean`.
        let prepared = commlens::input::read_prepared_without_repr::<Graph>(bytes, None);
        match (&prepared, &lean) {
            (Ok(prepared), Ok(lean)) => {
                assert_eq!(
                    prepared.signature(),
                    lean.dump.signature.as_deref().unwrap_or("")
                );
                assert_eq!(
                    format!("{:?}", prepared.graph().nodes()),
                    format!("{:?}", lean.nodes())
                );
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
            (a, b) => panic!("{what}: prepared {:?}, read {:?}", a.is_ok(), b.is_ok()),
        }
        match (&lean, &after) {
            (Ok(lean), Ok(after)) => {
                assert_eq!(lean.dump.signature, after.dump.signature, "{what}");
                assert!(lean.nodes().iter().all(|n| n.repr.is_none()), "{what}");
                let kept = after.nodes().iter().filter(|n| n.repr.is_some()).count();
                reprs_dropped.set(reprs_dropped.get() + kept);
                for (id, (a, b)) in lean.nodes().iter().zip(after.nodes()).enumerate() {
                    let mut b = b.clone();
                    b.repr = None;
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}: node {id}");
                    assert_eq!(lean.inputs(id), after.inputs(id), "{what}: node {id}");
                    assert_eq!(lean.facts(id), after.facts(id), "{what}: node {id}");
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
            (a, b) => panic!(
                "{what}: without repr {:?}, after {:?}",
                a.is_ok(),
                b.is_ok()
            ),
        }
        match (built, after) {
            (Ok(built), Ok(after)) => {
                assert_eq!(built.dump.signature, after.dump.signature, "{what}");
                assert_eq!(built.len(), after.len(), "{what}");
                for id in 0..after.len() {
                    assert_eq!(built.inputs(id), after.inputs(id), "{what}: node {id}");
                    assert_eq!(built.users(id), after.users(id), "{what}: node {id}");
                    assert_eq!(built.facts(id), after.facts(id), "{what}: node {id}");
                }
                after.len()
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{what}");
                0
            }
            (a, b) => panic!("{what}: while reading {:?}, after {:?}", a.err(), b.err()),
        }
    };
    let mut nodes = 0;
    for path in &paths {
        let what = path.display().to_string();
        let bytes = common::read(path);
        let file = std::fs::File::open(path).expect("open");
        let from_file = Input::file(file).map_err(|e| panic!("{e}"));
        nodes += same(&what, from_file.and_then(|i| read_graph(i, None)), &bytes);
        same(&what, read_graph(bytes.as_slice(), None), &bytes);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &bytes).expect("gzip");
        let gz = gz.finish().expect("gzip");
        same(&what, read_graph(gz.as_slice(), None), &gz);
    }
    // Argument lists damaged: references dropped, replaced, pointing later or at themselves.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let cases = common::shared_dir().join("conformance/cases");
    for case in ["mlp_default", "gated_ffn_groups"] {
        let original: Value = common::json(&cases.join(case).join("dump.json"));
        let names: Vec<String> = original["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| n["name"].as_str().expect("name").to_string())
            .collect();
        for _ in 0..40 {
            let mut dump = original.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(names.len());
                let node = &mut dump["nodes"][at];
                let name = rng.pick(&names);
                node["args"] = match rng.below(4) {
                    0 => json!([]),
                    1 => json!([{"node": name}, {"node": name}]),
                    2 => json!([[{"node": names[at]}], {"dtype": "torch.float32"}]),
                    _ => json!([{"node": "no_such_node"}]),
                };
            }
            let bytes = serde_json::to_vec(&dump).expect("json");
            nodes += same(case, read_graph(bytes.as_slice(), None), &bytes);
        }
    }
    assert!(paths.len() > 70 && nodes > 10_000, "{nodes} nodes compared");
    assert!(
        reprs_dropped.get() > 10_000,
        "{} reprs",
        reprs_dropped.get()
    );
}
