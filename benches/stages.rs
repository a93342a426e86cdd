mod support;
use commlens::planner::Planner;
use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{read_dump, resolve_args, Graph};
use support::{best, ms};
fn main() {
    for target in support::sizes_from_args() {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        let dump = read_dump(&bytes).expect("dump");
        drop(bytes);
        let start = std::time::Instant::now();
        let graph = Graph::new(dump);
        let graph_ms = ms(start.elapsed());
        let args = resolve_args(&graph, None);
        let validated = commlens::planner::args::validate(&args, &graph.dump.modules).unwrap();
        let runs: usize = std::env::var("RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(5);
        let (prep, planner) = best(runs, || Planner::new(&graph));
        let (pl, _) = best(runs, || planner.plan_validated(&validated));
        let report = planner.plan_validated(&validated);
        eprintln!(
            "tagged {} candidates {} buckets {} decisions {} Candidate {} B",
            report.summary.tagged_collectives,
            report.summary.candidate_collectives,
            report.buckets.len(),
            report.decisions.len(),
            std::mem::size_of::<commlens::planner::Candidate>()
        );
        println!(
            "{} nodes: graph {:.1} ms, prepare {:.1} ms, plan {:.1} ms",
            graph.len(),
            graph_ms,
            ms(prep),
            ms(pl)
        );
    }
}
#[allow(dead_code)]
fn sizes() {}
