//! Planning at scale: synthetic Llama-like FSDP dumps of about 10k, 100k and 1M nodes
//! (`commlens::synth`). Reports, per size:
//!
//! - the bare `serde_json::Value` parse of the bytes, for scale;
//! - `read_dump` alone, and `read_prepared`: the same read with the graph's facts and input
//!   lists and the planner's node-local checks taken while each node is in cache (what the
//!   CLI and the app do);
//! - for comparison, the same per-graph work done after a plain read, in two passes
//!   (`Graph::new`, then `Planner::new`);
//! - the plan itself on the prepared graph (the first plan and every re-plan cost the same),
//!   in nodes per second and as a ratio of the serde parse: warm (best of repeated plans,
//!   where a small graph's data stays cached from one plan to the next) and cold (each plan
//!   started with the CPU caches flushed);
//! - how each cost grows with size (near-linear means 10x nodes costs about 10x time).
//!
//! `cargo bench --bench plan` (all sizes) or `cargo bench --bench plan -- 10000 100000`.

mod support;

use commlens::planner::{read_prepared, Planner};
use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{read_dump, resolve_args, Graph};
use std::time::{Duration, Instant};
use support::{best, best_cold_time, best_time, eviction_buffer, ms};

struct Row {
    nodes: usize,
    bytes: usize,
    serde: Duration,
    read: Duration,
    read_prepared: Duration,
    graph: Duration,
    prepare: Duration,
    plan: Duration,
    cold_plan: Duration,
    buckets: usize,
}

fn main() {
    let sizes = support::sizes_from_args();
    let mut rows = Vec::new();
    let mut evict = eviction_buffer();
    for target in sizes {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        // Reading a 1M-node dump takes seconds: fewer runs there; planning takes
        // milliseconds, so it gets more runs to see past this machine's noise.
        let reads = if target >= 1_000_000 { 2 } else { 5 };
        let serde = best_time(if target >= 1_000_000 { 1 } else { 3 }, || {
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
        });
        let read = best_time(reads, || read_dump(&bytes).expect("dump"));
        let (read_prepared, planner) =
            best(reads, || read_prepared::<Graph>(&bytes).expect("dump"));
        let graph = planner.graph();
        // The two-pass route, on a clone of the read dump (cloned outside the timing).
        let mut graph_time = Duration::MAX;
        let mut prepare = Duration::MAX;
        for _ in 0..if target >= 1_000_000 { 1 } else { 3 } {
            let dump = graph.dump.clone();
            let start = Instant::now();
            let two_pass = Graph::new(dump);
            graph_time = graph_time.min(start.elapsed());
            prepare = prepare.min(best_time(3, || Planner::new(&two_pass)));
        }
        let args = resolve_args(graph, None);
        let (plan, report) = best(15, || planner.plan(&args).expect("plan"));
        let cold_plan = best_cold_time(7, &mut evict, || planner.plan(&args).expect("plan"));
        rows.push(Row {
            nodes: graph.len(),
            bytes: bytes.len(),
            serde,
            read,
            read_prepared,
            graph: graph_time,
            prepare,
            plan,
            cold_plan,
            buckets: report.buckets.len(),
        });
    }
    println!(
        "| nodes | dump MB | serde_json parse ms | read_dump ms | read_prepared ms | two-pass graph + prepare ms | plan ms (warm) | plan ms (cold) | plan Mnodes/s | plan / serde parse | buckets |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} + {:.1} | {:.2} | {:.2} | {:.2} | {:.4} | {} |",
            r.nodes,
            r.bytes as f64 / 1e6,
            ms(r.serde),
            ms(r.read),
            ms(r.read_prepared),
            ms(r.graph),
            ms(r.prepare),
            ms(r.plan),
            ms(r.cold_plan),
            r.nodes as f64 / r.plan.as_secs_f64() / 1e6,
            r.plan.as_secs_f64() / r.serde.as_secs_f64(),
            r.buckets
        );
    }
    let ratio = |b: Duration, a: Duration| b.as_secs_f64() / a.as_secs_f64();
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        println!(
            "growth {} -> {} nodes ({:.1}x): plan {:.1}x warm, {:.1}x cold; read_prepared {:.1}x, read_dump {:.1}x, two-pass prepare {:.1}x",
            a.nodes,
            b.nodes,
            b.nodes as f64 / a.nodes as f64,
            ratio(b.plan, a.plan),
            ratio(b.cold_plan, a.cold_plan),
            ratio(b.read_prepared, a.read_prepared),
            ratio(b.read, a.read),
            ratio(b.prepare, a.prepare),
        );
    }
}
