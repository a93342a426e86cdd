//! Reading at scale: synthetic Llama-like FSDP dumps of about 10k, 100k and 1M nodes
//! (`commlens::synth`). Reports the bare `serde_json::Value` parse of the dump's bytes,
//! `read_dump`, `Graph::new`, their ratio to the bare parse, and throughput, as a markdown
//! table (best of N runs).
//!
//! `cargo bench --bench read` (all sizes) or `cargo bench --bench read -- 10000 100000`.
//! `COMMLENS_BENCH_RUNS=N` overrides the number of runs per measurement;
//! `COMMLENS_BENCH_ONLY=serde|read|graph` runs only that step (for profiling).

mod support;

use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{read_dump, Graph};
use std::time::{Duration, Instant};
use support::{best_time as best, ms};

struct Row {
    nodes: usize,
    bytes: usize,
    serde: Duration,
    read: Duration,
    graph: Duration,
}

fn main() {
    let sizes = support::sizes_from_args();
    let runs_override = std::env::var("COMMLENS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let mut rows = Vec::new();
    for target in sizes {
        let bytes = synthetic_dump(SynthSpec::with_nodes(target)).into_bytes();
        let runs = runs_override.unwrap_or(if target >= 1_000_000 {
            3
        } else if target >= 100_000 {
            7
        } else {
            15
        });
        if let Ok(step) = std::env::var("COMMLENS_BENCH_ONLY") {
            let time = match step.as_str() {
                "serde" => best(runs, || {
                    serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
                }),
                "read" => best(runs, || read_dump(&bytes).expect("dump")),
                _ => {
                    let dumps: Vec<_> = (0..runs)
                        .map(|_| read_dump(&bytes).expect("dump"))
                        .collect();
                    let mut dumps = dumps.into_iter();
                    best(runs, || Graph::new(dumps.next().expect("dump")))
                }
            };
            eprintln!("{step}: {:.1} ms", ms(time));
            continue;
        }
        let serde = best(runs, || {
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
        });
        let read = best(runs, || read_dump(&bytes).expect("dump"));
        let dump = read_dump(&bytes).expect("dump");
        let nodes = dump.nodes.len();
        // Graph::new consumes its dump: clone outside the timed region.
        let mut graph = Duration::MAX;
        for _ in 0..runs {
            let copy = dump.clone();
            let start = Instant::now();
            let g = Graph::new(copy);
            graph = graph.min(start.elapsed());
            drop(g);
        }
        rows.push(Row {
            nodes,
            bytes: bytes.len(),
            serde,
            read,
            graph,
        });
    }
    if rows.is_empty() {
        return;
    }
    println!(
        "| nodes | dump MB | serde_json Value ms | read_dump ms | Graph::new ms | read+graph ms | read / serde | (read+graph) / serde | serde MB/s | read_dump MB/s | read+graph MB/s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let mb = r.bytes as f64 / 1e6;
        let total = r.read + r.graph;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} |",
            r.nodes,
            mb,
            ms(r.serde),
            ms(r.read),
            ms(r.graph),
            ms(total),
            r.read.as_secs_f64() / r.serde.as_secs_f64(),
            total.as_secs_f64() / r.serde.as_secs_f64(),
            mb / r.serde.as_secs_f64(),
            mb / r.read.as_secs_f64(),
            mb / total.as_secs_f64(),
        );
    }
}
