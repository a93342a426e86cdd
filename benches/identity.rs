//! Semantic-identity classification at scale: synthetic Llama-like FSDP dumps of about 10k,
//! 100k and 1M nodes (`commlens::synth`). Reports the classify time (best of N), nodes per
//! second, classify time as a ratio of the bare `serde_json` parse of the same bytes, and how
//! the cost grows with size (near-linear means 10x nodes costs about 10x time). Each size is
//! measured twice: with the FSDP pass's `comm_type` tags (roles explicit), and with the tags
//! stripped (every role inferred by the structural heuristics).
//!
//! `cargo bench --bench identity` (all sizes) or `cargo bench --bench identity -- 10000 100000`.
//! `COMMLENS_BENCH_RUNS=n` overrides the number of timed classify runs per measurement;
//! `COMMLENS_BENCH_CLASSIFY_ONLY=1` skips the parse and the table (for profiling).

use commlens::identity::classify;
mod support;

use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::{read_dump, Graph};
use std::time::Duration;
use support::{best, ms};

struct Row {
    variant: &'static str,
    nodes: usize,
    bytes: usize,
    collectives: usize,
    explicit: usize,
    inferred: usize,
    serde: Duration,
    classify: Duration,
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

fn measure(variant: &'static str, bytes: &[u8], runs: usize) -> Row {
    // The parse is the yardstick, not the subject: fewer runs at large sizes.
    let (serde, _) = best(runs.min(3), || {
        serde_json::from_slice::<serde_json::Value>(bytes).expect("json")
    });
    let graph = Graph::new(read_dump(bytes).expect("dump"));
    let (time, c) = best(runs, || classify(&graph));
    Row {
        variant,
        nodes: graph.len(),
        bytes: bytes.len(),
        collectives: c.collectives.len(),
        explicit: c.coverage.all.explicit,
        inferred: c.coverage.all.inferred,
        serde,
        classify: time,
    }
}

fn main() {
    let sizes = support::sizes_from_args();
    let runs_override: Option<usize> = std::env::var("COMMLENS_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok());
    eprintln!("load average before: {}", load_average());
    let mut rows = Vec::new();
    for &target in &sizes {
        let text = synthetic_dump(SynthSpec::with_nodes(target));
        // Without the FSDP pass's tags every role comes from the heuristics.
        let untagged = text.replace("\"comm_type\"", "\"comm_type_x\"");
        let runs = runs_override.unwrap_or(if target >= 1_000_000 { 7 } else { 15 });
        if std::env::var_os("COMMLENS_BENCH_CLASSIFY_ONLY").is_some() {
            // For profiling the classifier alone.
            for (variant, bytes) in [
                ("tagged", text.as_bytes()),
                ("untagged", untagged.as_bytes()),
            ] {
                let graph = Graph::new(read_dump(bytes).expect("dump"));
                let (t, _) = best(runs, || classify(&graph));
                eprintln!("{variant} {} nodes: classify {:.1} ms", graph.len(), ms(t));
            }
            continue;
        }
        rows.push(measure("tagged", text.as_bytes(), runs));
        rows.push(measure("untagged", untagged.as_bytes(), runs));
    }
    eprintln!("load average after: {}", load_average());
    println!(
        "| variant | nodes | dump MB | collectives | explicit | inferred | serde_json parse ms | classify ms | classify Mnodes/s | classify / serde parse |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} | {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.3} |",
            r.variant,
            r.nodes,
            r.bytes as f64 / 1e6,
            r.collectives,
            r.explicit,
            r.inferred,
            ms(r.serde),
            ms(r.classify),
            r.nodes as f64 / r.classify.as_secs_f64() / 1e6,
            r.classify.as_secs_f64() / r.serde.as_secs_f64(),
        );
    }
    println!();
    for variant in ["tagged", "untagged"] {
        let of: Vec<&Row> = rows.iter().filter(|r| r.variant == variant).collect();
        for pair in of.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            println!(
                "growth ({variant}) {} -> {} nodes ({:.1}x): classify {:.1}x",
                a.nodes,
                b.nodes,
                b.nodes as f64 / a.nodes as f64,
                b.classify.as_secs_f64() / a.classify.as_secs_f64(),
            );
        }
    }
}
