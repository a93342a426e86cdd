//! Reading a TORCH_TRACE log against reading a dump of the same graph, per byte.
//!
//! The graph is the synthetic Llama-like FSDP graph (`commlens::synth`), printed as
//! `torch.fx` prints it in a log (`synthetic_trace_log`). Two logs of about the same size
//! (100 MB by default): one holding nothing but the graph (every byte is parsed: the worst case
//! per byte), and one where the graph sits among what a real log holds around it (timing
//! events, the graph before post-grad passes, the runnable graph, the output code). Each is
//! read with `input::read` (scan the log, parse the chosen graph, notes), and compared with
//! `read_dump` of the dump of the same graph, as MB/s and as the ratio of the two; then both
//! read ready to plan (`input::read_prepared` against `planner::read_prepared`: the graph's
//! structure, the planner's preparation and the graph signature included).
//!
//! `cargo bench --bench tracelog` or `cargo bench --bench tracelog -- 100` (target MB);
//! `COMMLENS_BENCH_ONLY=log` times only the log (for profiling).

mod support;

use commlens::synth::{synthetic_dump, synthetic_trace_log, SynthSpec};
use commlens::{input, read_dump};
use std::time::Duration;
use support::{best_time as best, ms};

fn main() {
    let target_mb: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100.0);
    let runs = std::env::var("COMMLENS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(5);
    // Bytes per node of each log, from a small sample.
    let sample = SynthSpec::with_nodes(10_000);
    let per_node = |context: bool| {
        let log = synthetic_trace_log(sample, context);
        log.len() as f64 / (sample.layers * SynthSpec::NODES_PER_LAYER) as f64
    };
    println!(
        "| log | nodes | log MB | input::read ms | log MB/s | dump MB | read_dump ms | dump MB/s | log MB/s / dump MB/s | log Mnodes/s | dump Mnodes/s | log read_prepared ms | dump read_prepared ms | prepared MB/s ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, context) in [
        ("graph only", false),
        ("graph in a real log's context", true),
    ] {
        let nodes = (target_mb * 1e6 / per_node(context)) as usize;
        let spec = SynthSpec::with_nodes(nodes);
        let log = synthetic_trace_log(spec, context).into_bytes();
        let dump = synthetic_dump(spec).into_bytes();
        if std::env::var("COMMLENS_BENCH_ONLY").is_ok_and(|v| v == "log") {
            let read_log = best(runs, || input::read(&log, Some(0)).expect("log"));
            eprintln!("{label}: {:.1} ms", ms(read_log));
            continue;
        }
        // The machine is shared: the log and the dump are timed in turn, run by run, so a
        // change of load hits both alike; each keeps its best run.
        let (mut read_log, mut read, mut prepared_log, mut prepared_dump) =
            (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..runs {
            read_log = read_log.min(best(1, || input::read(&log, Some(0)).expect("log")));
            read = read.min(best(1, || read_dump(&dump).expect("dump")));
            prepared_log = prepared_log.min(best(1, || {
                input::read_prepared::<commlens::Graph>(&log, Some(0)).expect("log")
            }));
            prepared_dump = prepared_dump.min(best(1, || {
                commlens::planner::read_prepared::<commlens::Graph>(&dump).expect("dump")
            }));
        }
        let count = read_dump(&dump).expect("dump").nodes.len();
        let mbs = |bytes: usize, t: Duration| bytes as f64 / 1e6 / t.as_secs_f64();
        let log_rate = mbs(log.len(), read_log);
        let dump_rate = mbs(dump.len(), read);
        println!(
            "| {label} | {count} | {:.1} | {:.1} | {:.0} | {:.1} | {:.1} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} |",
            log.len() as f64 / 1e6,
            ms(read_log),
            log_rate,
            dump.len() as f64 / 1e6,
            ms(read),
            dump_rate,
            log_rate / dump_rate,
            count as f64 / 1e6 / read_log.as_secs_f64(),
            count as f64 / 1e6 / read.as_secs_f64(),
            ms(prepared_log),
            ms(prepared_dump),
            mbs(log.len(), prepared_log) / mbs(dump.len(), prepared_dump),
        );
    }
}
