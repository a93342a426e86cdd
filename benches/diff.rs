//! Plan diffs at scale: a synthetic Llama-like dump (`commlens::synth`) of about 10k, 100k
//! and 1M nodes, planned with its own arguments (one bucket group per transformer block) and
//! with two other settings: a capacity cap (`policy`: part of the buckets split) and no module
//! plans (every parameter its own scope: every collective regrouped). Per size and setting:
//!
//! - `sides`: both plans as `PlanSide`s (`PlanSide::from_plan`, what the app does);
//! - `diff`: `PlanDiff::new`, the comparison itself (the figure the 200 ms browser budget is
//!   about), in ns per collective and as a ratio to one plan of the same graph (its floor: a
//!   diff reads what two plans wrote);
//! - `json`, `text`: the two renderings; `report`: reading the other plan's report JSON.
//!
//! `cargo bench --bench diff` (all sizes) or `cargo bench --bench diff -- 100000`.

mod support;

use commlens::diff::{PlanDiff, PlanSide};
use commlens::planner::{read_prepared, report::plan_to_json};
use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{parse_args_json, resolve_args, Graph};
use std::time::{Duration, Instant};
use support::{best, best_time, ms};

fn main() {
    println!("| nodes | after | collectives (before / after) | regrouped | plan ms | sides ms | diff ms | diff ns/collective | diff / plan | json ms (MB) | text ms | report read ms |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for target in support::sizes_from_args() {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        let planner = read_prepared::<Graph>(&bytes).expect("dump");
        let graph = planner.graph();
        let own = resolve_args(graph, None);
        let (plan_time, before_plan) = best(7, || planner.plan(&own).expect("plan"));
        for (label, args) in [
            ("capacity cap", r#"{"policy": {"cap_bytes": 1000000}}"#),
            (
                "no module plans",
                r#"{"block_module_types": null, "module_bucket_plans": null}"#,
            ),
        ] {
            let map = parse_args_json(args.as_bytes()).expect("args");
            let after_plan = planner
                .plan(&resolve_args(graph, Some(&map)))
                .expect("plan");
            let runs = if target >= 1_000_000 { 3 } else { 9 };
            // Each run makes both sides, then compares them: the two steps timed apart, the
            // best of each kept.
            let mut sides = Duration::MAX;
            let mut diff_time = Duration::MAX;
            let mut last = None;
            for _ in 0..runs {
                let start = Instant::now();
                let b = PlanSide::from_plan(&before_plan, graph);
                let a = PlanSide::from_plan(&after_plan, graph);
                sides = sides.min(start.elapsed());
                let start = Instant::now();
                let diff = PlanDiff::new(b, a);
                diff_time = diff_time.min(start.elapsed());
                last = Some(diff);
            }
            let diff = last.expect("a run");
            let (json_time, json) = best(runs, || diff.to_json());
            let text_time = best_time(runs, || diff.to_text());
            let report = plan_to_json(&after_plan, graph);
            let report_time = best_time(runs, || {
                PlanSide::from_report_json(report.as_bytes()).expect("report")
            });
            let collectives = diff.collectives.len();
            println!(
                "| {} | {label} | {} / {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.2} | {:.1} ({:.1}) | {:.1} | {:.1} |",
                graph.len(),
                diff.before.members.len(),
                diff.after.members.len(),
                diff.counts().regrouped,
                ms(plan_time),
                ms(sides),
                ms(diff_time),
                diff_time.as_secs_f64() * 1e9 / collectives.max(1) as f64,
                diff_time.as_secs_f64() / plan_time.as_secs_f64(),
                ms(json_time),
                json.len() as f64 / 1e6,
                ms(text_time),
                ms(report_time),
            );
        }
    }
}
