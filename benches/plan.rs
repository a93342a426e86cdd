//! Planning at scale: synthetic Llama-like FSDP dumps of about 10k, 100k and 1M nodes
//! (`commlens::synth`). Reports parse and plan times, nodes per second, plan time as a ratio
//! of the bare `serde_json` parse of the same bytes, and how each cost grows with size
//! (near-linear means 10x nodes costs about 10x time).
//!
//! `cargo bench --bench plan` (all sizes) or `cargo bench --bench plan -- 10000 100000`.

mod support;

use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{plan, read_dump, resolve_args, Graph};
use std::time::{Duration, Instant};
use support::{best, ms};

struct Row {
    nodes: usize,
    bytes: usize,
    serde: Duration,
    read: Duration,
    graph: Duration,
    plan: Duration,
    replan: Duration,
    buckets: usize,
}

fn main() {
    let sizes = support::sizes_from_args();
    let mut rows = Vec::new();
    for target in sizes {
        let text = synthetic_dump(SynthSpec::with_nodes(target));
        let bytes = text.into_bytes();
        let runs = if target >= 1_000_000 { 2 } else { 5 };
        if std::env::var_os("COMMLENS_BENCH_PLAN_ONLY").is_some() {
            // For profiling the planner alone.
            let graph = Graph::new(read_dump(&bytes).expect("dump"));
            let args = resolve_args(&graph, None);
            let (t, _) = best(20, || plan(&graph, &args).expect("plan"));
            eprintln!("plan {:.1} ms", ms(t));
            continue;
        }
        let (serde, _) = best(runs, || {
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
        });
        let (read, dump) = best(runs, || read_dump(&bytes).expect("dump"));
        let start = Instant::now();
        let graph = Graph::new(dump);
        let graph_time = start.elapsed();
        let args = resolve_args(&graph, None);
        let (plan_time, report) = best(runs, || plan(&graph, &args).expect("plan"));
        let planner = commlens::planner::Planner::new(&graph);
        let (replan_time, _) = best(runs, || planner.plan(&args).expect("plan"));
        if std::env::var_os("COMMLENS_BENCH_DETAIL").is_some() {
            let (sig, _) = best(runs, || commlens::planner::report::graph_signature(&graph));
            let (report_time, _) = best(runs, || {
                commlens::planner::report::plan_to_json(&report, &graph)
            });
            eprintln!(
                "{} nodes: signature {:.1} ms, report json {:.1} ms",
                graph.len(),
                ms(sig),
                ms(report_time)
            );
        }
        rows.push(Row {
            nodes: graph.len(),
            bytes: bytes.len(),
            serde,
            read,
            graph: graph_time,
            plan: plan_time,
            replan: replan_time,
            buckets: report.buckets.len(),
        });
    }
    println!(
        "| nodes | dump MB | serde_json parse ms | read_dump ms | graph ms | plan ms | re-plan ms | plan Mnodes/s | plan / serde parse | buckets |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.3} | {} |",
            r.nodes,
            r.bytes as f64 / 1e6,
            ms(r.serde),
            ms(r.read),
            ms(r.graph),
            ms(r.plan),
            ms(r.replan),
            r.nodes as f64 / r.plan.as_secs_f64() / 1e6,
            r.plan.as_secs_f64() / r.serde.as_secs_f64(),
            r.buckets
        );
    }
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let growth = b.nodes as f64 / a.nodes as f64;
        println!(
            "growth {} -> {} nodes ({:.1}x): plan {:.1}x, re-plan {:.1}x, read_dump {:.1}x",
            a.nodes,
            b.nodes,
            growth,
            b.plan.as_secs_f64() / a.plan.as_secs_f64(),
            b.replan.as_secs_f64() / a.replan.as_secs_f64(),
            b.read.as_secs_f64() / a.read.as_secs_f64()
        );
    }
}
