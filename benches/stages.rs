mod support;
use commlens::planner::{read_prepared, Planner};
use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{read_dump, resolve_args, Graph};
use support::{best, ms};
fn main() {
    for target in support::sizes_from_args() {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        let runs: usize = std::env::var("RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(3);
        let read = best(1, || read_dump(&bytes).unwrap()).0;
        let (fused, planner) = best(1, || read_prepared::<Graph>(&bytes).unwrap());
        let graph = planner.graph();
        let args = resolve_args(graph, None);
        let validated = commlens::planner::args::validate(&args, &graph.dump.modules).unwrap();
        let (prep, _) = best(3, || Planner::new(graph));
        let (pl, _) = best(runs, || planner.plan_validated(&validated));
        println!(
            "{} nodes: read {:.1} | read_prepared {:.1} | prepare {:.1} | plan {:.1} ms",
            graph.len(),
            ms(read),
            ms(fused),
            ms(prep),
            ms(pl)
        );
    }
}
