//! The time axis at scale: synthetic Llama-like FSDP dumps (`commlens::synth`) of about 10k,
//! 100k and 1M nodes. Reports, per size, what the app pays for the cost model and when:
//!
//! - the graph's work (which nodes compute or communicate, FLOPs, bytes), once per graph:
//!   riding along the reader (`read_prepared_with` and a `GraphWorkBuilder`), timed inside
//!   the reader's pass; or in a second pass (`GraphWork::new`) over a graph already read,
//!   where each node's metadata is fetched from memory again (wall and CPU time: the CPU time
//!   leaves out what other jobs on a shared machine take);
//! - `Timing::new`: once per hardware choice (microseconds per node and per collective);
//! - `CostModel::unbucketed` and `CostModel::planned`: on every re-plan (the simulated step);
//!
//! each warm (best of repeated runs) and as a ratio to the plan itself (the floor: a re-plan
//! already costs the plan), and how each grows with size.
//!
//! `cargo bench --bench cost` (all sizes) or `cargo bench --bench cost -- 100000`.

mod support;

use commlens::cost::{CostModel, GpuGeneration, GraphWork, GraphWorkBuilder, Hardware, Timing};
use commlens::graph::{FactsSink, NodeFacts};
use commlens::planner::{read_prepared, read_prepared_with};
use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{resolve_args, Graph};
use std::time::{Duration, Instant};
use support::{best, best_time, ms};

/// CPU time this thread has run: on a machine shared with other jobs, wall time also counts
/// the time the scheduler gives to others.
fn cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    ok.then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Best of `runs` CPU times of `f` (`Duration::ZERO` where the platform does not tell).
fn best_cpu<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = cpu_time();
        let value = f();
        let end = cpu_time();
        drop(value);
        match (start, end) {
            (Some(a), Some(b)) => best = best.min(b.saturating_sub(a)),
            _ => return Duration::ZERO,
        }
    }
    best
}

/// A ride-along pass, with the wall time spent in it.
struct Timed<S> {
    sink: S,
    spent: Duration,
}

impl<S> Timed<S> {
    fn new(sink: S) -> Timed<S> {
        Timed {
            sink,
            spent: Duration::ZERO,
        }
    }
}

impl<S: FactsSink> FactsSink for Timed<S> {
    fn begin(&mut self) {
        self.sink.begin();
        self.spent = Duration::ZERO;
    }

    fn node(&mut self, index: usize, node: &commlens::dump::Node, facts: NodeFacts) {
        let start = Instant::now();
        self.sink.node(index, node, facts);
        self.spent += start.elapsed();
    }
}

struct Row {
    nodes: usize,
    collectives: usize,
    compute: usize,
    plan: Duration,
    read: Duration,
    read_with_work: Duration,
    work: Duration,
    work_cpu: Duration,
    timing: Duration,
    unbucketed: Duration,
    planned: Duration,
}

fn main() {
    let sizes = support::sizes_from_args();
    let mut rows = Vec::new();
    for target in sizes {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        let planner = read_prepared::<Graph>(&bytes).expect("dump");
        let graph = planner.graph();
        let args = resolve_args(graph, None);
        let (plan, report) = best(9, || planner.plan(&args).expect("plan"));
        let runs = if target >= 1_000_000 { 3 } else { 9 };
        let hardware = Hardware::preset(GpuGeneration::Hopper);
        // The ride-along work, timed inside the reader's pass (the clock's own cost taken out
        // by timing an empty pass the same way).
        let (mut read, mut read_with_work) = (Duration::MAX, Duration::MAX);
        for _ in 0..if target >= 1_000_000 { 2 } else { 5 } {
            let mut empty = Timed::new(());
            read_prepared_with::<Graph>(&bytes, &mut empty).expect("dump");
            read = read.min(empty.spent);
            let mut builder = Timed::new(GraphWorkBuilder::default());
            read_prepared_with::<Graph>(&bytes, &mut builder).expect("dump");
            read_with_work = read_with_work.min(builder.spent);
        }
        let (work_time, work) = best(runs, || GraphWork::new(graph));
        let work_cpu = best_cpu(runs, || GraphWork::new(graph));
        let timing = best_time(runs, || Timing::new(&work, &hardware, &report.group_ranks));
        let model = CostModel::new(graph, hardware, &report.group_ranks);
        let unbucketed = best_time(runs, || model.unbucketed());
        let planned = best_time(runs, || model.planned(&report));
        rows.push(Row {
            nodes: graph.len(),
            collectives: work.comms.len(),
            compute: work.compute.len(),
            plan,
            read,
            read_with_work,
            work: work_time,
            work_cpu,
            timing,
            unbucketed,
            planned,
        });
    }
    println!(
        "| nodes | collectives | compute nodes | plan ms | riding work ms | second-pass work ms (CPU ms) | timing ms | unbucketed step ms | planned step ms | planned / plan | riding work / plan |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} ({:.2}) | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            r.nodes,
            r.collectives,
            r.compute,
            ms(r.plan),
            ms(r.read_with_work.saturating_sub(r.read)),
            ms(r.work),
            ms(r.work_cpu),
            ms(r.timing),
            ms(r.unbucketed),
            ms(r.planned),
            r.planned.as_secs_f64() / r.plan.as_secs_f64(),
            r.read_with_work.saturating_sub(r.read).as_secs_f64() / r.plan.as_secs_f64(),
        );
    }
    let ratio = |b: Duration, a: Duration| b.as_secs_f64() / a.as_secs_f64();
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        println!(
            "growth {} -> {} nodes ({:.1}x): graph work {:.1}x, timing {:.1}x, planned step {:.1}x",
            a.nodes,
            b.nodes,
            b.nodes as f64 / a.nodes as f64,
            ratio(b.work, a.work),
            ratio(b.timing, a.timing),
            ratio(b.planned, a.planned),
        );
    }
}
