//! The time axis (`commlens::cost`) on hand-made graphs whose schedule is worked out here step
//! by step, on the committed example's plan, and on every dump the test suite has: the step
//! simulation's arithmetic, the planned variant's buckets, the one-pass and two-pass routes,
//! snapshots of `commlens cost`'s JSON and text, and no panic on any input.
//!
//! The model's numbers themselves (collective bytes and times, FLOPs, roofline) are checked
//! against torch in-process by `python/tests/test_cost.py`. Snapshots live in
//! `tests/snapshots/cost/`; `UPDATE_SNAPSHOTS=1 cargo test -p commlens --test cost` rewrites
//! them.

mod common;

use commlens::cost::{
    CollectiveType, CostModel, CostReport, GpuGeneration, GraphWork, GraphWorkBuilder, Hardware,
};
use commlens::{read_and_plan, read_dump, Graph, TagMode};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/cost").join(name)
}

fn model(path: &Path, hardware: Hardware) -> (Graph, commlens::BucketPlan, CostModel) {
    let (graph, plan) = read_and_plan(common::read(path), None, None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let model = CostModel::new(&graph, hardware, &plan.group_ranks);
    (graph, plan, model)
}

fn node_us(graph: &Graph, model: &CostModel, name: &str) -> f64 {
    model.timing.node_us[graph.find(name).expect(name)]
}

fn comm(graph: &Graph, model: &CostModel, name: &str) -> usize {
    model
        .work
        .comm_at(graph.find(name).expect(name))
        .unwrap_or_else(|| panic!("{name} is no collective"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// `overlap.json`, scheduled by hand: `ag` (stream dp) and `ar` (stream tp) start at 0; `m1`,
/// `m2` run; `wait_ag` stalls until `ag` ends; `m3`; `rs` is issued on dp behind `ag`;
/// `wait_ar` stalls until `ar` ends; `m4`; `wait_rs` stalls until `rs` ends.
#[test]
fn overlap_schedule_worked_out_by_hand() {
    let fast = Hardware::preset(GpuGeneration::Hopper);
    let mut slow = fast.clone();
    // 0.5 GB/s: a 1024-element multiply moves 12 KiB and takes about 25 µs, longer than the
    // collectives, which then hide behind it.
    slow.roofline.dram_gbps = 0.5;
    let mut regimes = Vec::new();
    for hardware in [fast, slow] {
        let (graph, _, model) = model(&fixture("overlap.json"), hardware);
        let t = &model.timing;
        let us = |name| node_us(&graph, &model, name);
        let dur = |name| t.comms[comm(&graph, &model, name)].time.us;
        let (ag, ar, rs) = (dur("ag"), dur("ar"), dur("rs"));
        assert!(ag > 0.0 && ar > 0.0 && rs > 0.0);

        let mut clock = us("m1") + us("m2");
        let exposed_ag = (ag - clock).max(0.0);
        clock = clock.max(ag) + us("m3");
        let rs_end = clock.max(ag) + rs;
        let exposed_ar = (ar - clock).max(0.0);
        clock = clock.max(ar) + us("m4");
        let exposed_rs = (rs_end - clock).max(0.0);
        clock = clock.max(rs_end);
        let compute = us("m1") + us("m2") + us("m3") + us("m4");

        let step = model.unbucketed();
        let s = step.summary;
        assert!(close(s.step_us, clock), "{} vs {clock}", s.step_us);
        assert!(close(s.compute_us, compute));
        assert!(close(s.comm_us, ag + ar + rs));
        assert!(close(
            s.exposed_comm_us,
            exposed_ag + exposed_ar + exposed_rs
        ));
        let launch = |name| step.exposed_us[comm(&graph, &model, name)];
        assert!(close(launch("ag"), exposed_ag));
        assert!(close(launch("ar"), exposed_ar));
        assert!(close(launch("rs"), exposed_rs));
        regimes.push((exposed_ag, exposed_rs));
    }
    // Fast memory: both dp collectives are exposed; slow memory: the all-gather hides behind
    // the two multiplies and the reduce-scatter behind the add.
    assert!(regimes[0].0 > 0.0 && regimes[0].1 > 0.0, "{regimes:?}");
    assert_eq!(regimes[1], (0.0, 0.0));
}

/// `coalesced.json`: a wait through `getitem` blocks on the coalesced collective; the
/// broadcast and the all-reduce on a group of unknown size cost 0; the expanded row is read
/// once.
#[test]
fn coalesced_waits_unmodelled_collectives_and_broadcast_reads() {
    let (graph, _, model) = model(
        &fixture("coalesced.json"),
        Hardware::preset(GpuGeneration::Ampere),
    );
    let agc = comm(&graph, &model, "agc");
    let work = &model.work.comms[agc];
    assert_eq!(work.coll, CollectiveType::AllGather);
    // Inputs (256x4 bf16, 100 f32) and outputs (512x4 bf16, 200 f32).
    assert_eq!(work.bytes, 256 * 4 * 2 + 100 * 4 + 512 * 4 * 2 + 200 * 4);
    let waits: Vec<&str> = model
        .work
        .waits
        .iter()
        .filter(|(_, c)| *c as usize == agc)
        .map(|(n, _)| graph.node(*n).name.as_str())
        .collect();
    assert_eq!(waits, ["wait", "wait_1"]);
    let time = model.timing.comms[agc];
    assert_eq!(time.group_size, Some(2));
    assert!(time.time.us > 0.0 && time.time.algo.is_some());

    let bc = model.timing.comms[comm(&graph, &model, "bc")];
    assert_eq!(
        (bc.group_size, bc.time.us, bc.time.algo),
        (Some(2), 0.0, None)
    );
    let ar = model.timing.comms[comm(&graph, &model, "ar")];
    assert_eq!((ar.group_size, ar.time.us, ar.time.algo), (None, 0.0, None));

    let compute = |name: &str| {
        let id = graph.find(name).unwrap();
        *model.work.compute.iter().find(|c| c.node == id).unwrap()
    };
    // `add` reads the waited 512x4 and the broadcast row once (4 elements), writes 512x4.
    assert_eq!(compute("add").bytes, 512 * 4 * 2 + 4 * 2 + 512 * 4 * 2);
    assert_eq!(compute("add").flops, Some(0));
    assert_eq!(compute("mm").flops, Some(512 * 512 * 2 * 4));
    // Views launch nothing and are not costed.
    for view in ["getitem", "expand", "t"] {
        let id = graph.find(view).unwrap();
        assert!(model.work.compute.iter().all(|c| c.node != id), "{view}");
    }
}

/// Non-functional `c10d` ops (an eager FSDP2 trace) are listed as collectives that the model
/// cannot time; they stall nothing.
#[test]
fn c10d_ops_are_listed_untimed() {
    let path = root().join("tests/fixtures/identity/cases/c10d_collectives.json");
    let (graph, _, model) = model(&path, Hardware::default());
    let names: Vec<(&str, Option<CollectiveType>)> = model
        .work
        .comms
        .iter()
        .zip(&model.timing.comms)
        .map(|(c, t)| {
            assert_eq!((t.time.us, t.time.algo), (0.0, None));
            (graph.node(c.node).name.as_str(), Some(c.coll))
        })
        .collect();
    assert_eq!(
        names,
        [
            ("ag", Some(CollectiveType::Unsupported)),
            ("rs", Some(CollectiveType::ReduceScatter))
        ]
    );
    assert_eq!(model.unbucketed().summary.exposed_comm_us, 0.0);
}

/// The example's plan: each bucket is one collective of its members' tensors together, issued
/// after its latest input and waited before its earliest consumer; the other collectives stay.
#[test]
fn planned_buckets_on_the_committed_example() {
    let path = root().join("examples/mlp_fsdp.json");
    let (graph, plan, model) = model(&path, Hardware::preset(GpuGeneration::Hopper));
    let planned = model.planned(&plan);
    assert_eq!(planned.buckets.len(), plan.buckets.len());
    assert!(plan.buckets.iter().any(|b| b.members.len() > 1));
    let mut members = std::collections::HashSet::new();
    for (cost, bucket) in planned.buckets.iter().zip(&plan.buckets) {
        let bytes: u64 = bucket
            .members
            .iter()
            .map(|m| model.work.comms[model.work.comm_at(m.launch).unwrap()].bytes)
            .sum();
        assert_eq!(cost.bytes, bytes);
        assert_eq!(cost.issue_at, bucket.latest_input() + 1);
        assert_eq!(cost.block_at, bucket.earliest_consumer());
        let expected = commlens::cost::collective_time(
            bytes,
            bucket.members[0].key.ranks.len() as u64,
            cost.coll,
            &model.hardware.network,
        );
        assert_eq!(cost.time, expected);
        members.extend(bucket.members.iter().map(|m| m.launch));
    }
    let kept: f64 = model
        .work
        .comms
        .iter()
        .zip(&model.timing.comms)
        .filter(|(c, _)| !members.contains(&c.node))
        .map(|(_, t)| t.time.us)
        .sum();
    let buckets: f64 = planned.buckets.iter().map(|b| b.time.us).sum();
    let s = planned.step.summary;
    assert!(close(s.comm_us, kept + buckets));
    assert!(close(s.step_us, s.compute_us + s.exposed_comm_us));
    let exposed: f64 = planned.step.exposed_us.iter().sum();
    assert!(close(exposed, s.exposed_comm_us));
    // Fewer, larger launches: less communication time on this latency-bound graph.
    assert!(s.comm_us < model.unbucketed().summary.comm_us);
    let _ = graph;
}

/// The reader's ride-along pass gathers exactly what a second pass over the graph does.
#[test]
fn one_pass_and_two_pass_work_agree() {
    let mut dumps = vec![
        fixture("overlap.json"),
        fixture("coalesced.json"),
        root().join("examples/mlp_fsdp.json"),
        root().join("examples/llama_fsdp.json.gz"),
    ];
    dumps.extend(identity_fixtures());
    for path in dumps {
        let bytes = common::read(&path);
        let mut builder = GraphWorkBuilder::default();
        let planner: commlens::planner::Planner<Graph> =
            commlens::planner::read_prepared_with(&bytes, &mut builder).unwrap();
        let graph = planner.graph();
        assert_eq!(builder.len(), graph.len());
        assert_eq!(
            builder.finish_for(graph),
            GraphWork::new(graph),
            "{}",
            path.display()
        );
    }
    let synth = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(3000));
    let mut builder = GraphWorkBuilder::default();
    let planner: commlens::planner::Planner<Graph> =
        commlens::planner::read_prepared_with(synth.as_bytes(), &mut builder).unwrap();
    let work = builder.finish_for(planner.graph());
    assert_eq!(work, GraphWork::new(planner.graph()));
    assert!(work.comms.len() > 100 && work.compute.len() > 100);
}

fn identity_fixtures() -> Vec<PathBuf> {
    let dir = root().join("tests/fixtures/identity");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
}

fn every_dump() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut stack = vec![root().join("tests/fixtures"), root().join("examples")];
    let conformance = common::shared_dir().join("conformance/cases");
    if conformance.is_dir() {
        stack.push(conformance);
    }
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.to_string_lossy();
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".json") || name.ends_with(".json.gz") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// Every dump the suite has (fixtures, examples, the conformance corpus), on every
/// generation: nothing panics, every number is finite, and the step adds up.
#[test]
fn every_dump_costs_without_panicking() {
    let mut costed = 0;
    for path in every_dump() {
        let bytes = common::read(&path);
        let Ok(dump) = read_dump(&bytes) else {
            continue; // reader error fixtures
        };
        let graph = Graph::new(dump);
        let Ok(plan) = commlens::plan(&graph, &commlens::resolve_args(&graph, None)) else {
            continue; // invalid planner arguments
        };
        for gpu in GpuGeneration::ALL {
            let report = commlens::cost::cost_report(&graph, &plan, Hardware::preset(gpu));
            for s in [report.unbucketed, report.planned] {
                for x in [s.step_us, s.compute_us, s.comm_us, s.exposed_comm_us] {
                    assert!(x.is_finite() && x >= 0.0, "{}: {s:?}", path.display());
                }
                assert!(close(s.step_us, s.compute_us + s.exposed_comm_us));
            }
            assert!(report.collectives.iter().all(|c| c.us.is_finite()));
            assert!(report.compute.iter().all(|c| c.us.is_finite()));
            let text = report.to_json();
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(json["format"], "commlens.cost");
            // Printed a row at a time (natively on two threads once there are more rows than
            // a chunk), it is serde_json's pretty text of its value.
            assert_eq!(
                text,
                serde_json::to_string_pretty(&json).unwrap() + "\n",
                "{}",
                path.display()
            );
            assert!(!report.to_text().is_empty());
        }
        costed += 1;
    }
    assert!(costed > 20, "only {costed} dumps costed");
}

/// `commlens cost`'s JSON and text, as snapshots.
#[test]
fn snapshots() {
    let cases: [(&str, PathBuf, GpuGeneration); 3] = [
        ("overlap", fixture("overlap.json"), GpuGeneration::Hopper),
        ("coalesced", fixture("coalesced.json"), GpuGeneration::Volta),
        (
            "mlp_fsdp",
            root().join("examples/mlp_fsdp.json"),
            GpuGeneration::Ampere,
        ),
    ];
    let mut failures = Vec::new();
    for (name, path, gpu) in cases {
        let costed = commlens::cost_report(
            common::read(&path),
            None,
            None,
            TagMode::Dump,
            Hardware::preset(gpu),
        )
        .unwrap();
        let report: CostReport = costed.report();
        for (ext, text) in [("json", report.to_json()), ("txt", report.to_text())] {
            if let Err(e) =
                common::check_snapshot(&format!("tests/snapshots/cost/{name}.{ext}"), &text)
            {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The JSON form has the keys the issue fixes, in that order, and nothing else.
#[test]
fn json_keys_are_stable() {
    let costed = commlens::cost_report(
        common::read(&fixture("overlap.json")),
        None,
        None,
        TagMode::Dump,
        Hardware::default(),
    )
    .unwrap();
    let report = costed.report();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&json),
        [
            "format",
            "version",
            "hardware",
            "collectives",
            "compute",
            "buckets",
            "summary"
        ]
    );
    assert_eq!(
        keys(&json["collectives"][0]),
        ["node", "coll", "bytes", "group_size", "us", "algo"]
    );
    assert_eq!(keys(&json["compute"][0]), ["node", "target", "flops", "us"]);
    assert_eq!(keys(&json["summary"]), ["unbucketed", "planned"]);
    assert_eq!(
        keys(&json["summary"]["planned"]),
        ["step_us", "compute_us", "comm_us", "exposed_comm_us"]
    );
    let mlp = commlens::cost_report(
        common::read(&root().join("examples/mlp_fsdp.json")),
        None,
        None,
        TagMode::Dump,
        Hardware::default(),
    )
    .unwrap();
    let mlp = mlp.report();
    let json: serde_json::Value = serde_json::from_str(&mlp.to_json()).unwrap();
    assert_eq!(keys(&json["buckets"][0]), ["bucket_id", "bytes", "us"]);
}

/// The cost model reads each target once per string it is shared as: nodes whose targets are
/// each their own string (so nothing is remembered from one to the next) get the same work
/// as the dump read, where one string serves every node of a target.
#[test]
fn work_is_the_same_whether_targets_are_shared_or_not() {
    let mut compared = 0;
    for path in every_dump() {
        let bytes = common::read(&path);
        let Ok(dump) = read_dump(&bytes) else {
            continue; // reader error fixtures
        };
        let mut unshared = dump.clone();
        for node in &mut unshared.nodes {
            node.target = commlens::dump::Target::from(node.target.as_str().to_string());
        }
        let shared = GraphWork::new(&Graph::new(dump));
        assert_eq!(
            shared,
            GraphWork::new(&Graph::new(unshared)),
            "{}",
            path.display()
        );
        compared += 1;
    }
    assert!(compared > 20, "only {compared} dumps compared");
}
