//! Reading at scale, against the floor: synthetic Llama-like FSDP dumps of about 10k, 100k and
//! 1M nodes (`commlens::synth`), gzipped as dumps are shipped, each in three shapes: as
//! `synthetic_dump` writes it (about 450 bytes a node), `lean` (`synth::lean_dump`: the
//! exporter's layout without `val`, about 340 bytes a node, the shape issue 14 measured), on
//! which costs that go with the nodes weigh more against the floor, and `traced` (lean with a
//! stack trace in every node, as the exporter writes with `--with-stack-trace`: about 840
//! bytes a node).
//!
//! The floor is what reading cannot avoid: gunzip, then a validating serde_json pass that keeps
//! nothing (`IgnoredAny`). Each step is reported with its ratio to the floor measured in the
//! same run, in process (best of N) and as a whole process:
//!
//! - in process: the floor; `read_dump` (gunzip included); `read_prepared` (what `plan` reads
//!   through: the graph's facts and the planner's checks ride along).
//! - peak memory: each step run once in a child process of this bench (peak resident set, from
//!   the kernel), over the JSON's size.
//! - whole CLI: `commlens plan`, `roles --json`, `render` as processes on the same gzipped
//!   file, wall time (best of N) and peak memory, against the floor run as a process.
//!   Needs the CLI built (`cargo xtask cli`, profile-guided, else `cargo build --release -p
//!   commlens-cli`; `COMMLENS_BIN` overrides where it is looked for), and skipped without it.
//!
//! `cargo bench --bench read` (all sizes) or `cargo bench --bench read -- 10000 100000`.
//! `COMMLENS_BENCH_RUNS=N` overrides the number of runs per measurement;
//! `COMMLENS_BENCH_ONLY=floor|read|prepared` runs only that step (for profiling).

mod support;

use commlens::planner::Planner;
use commlens::synth::{lean_dump, lean_dump_with_stack_traces, synthetic_dump, SynthSpec};
use commlens::{read_dump, Graph};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{best_time as best, ms};

/// The dump shapes, each measured at every size.
const SHAPES: [&str; 3] = ["synthetic", "lean", "traced"];

/// The steps timed in process and in a child process.
const STEPS: [&str; 3] = ["floor", "read", "prepared"];

/// The CLI commands timed as whole processes, with the arguments after the dump.
const COMMANDS: [(&str, &[&str]); 3] = [
    ("plan", &["-o", "/dev/null"]),
    ("roles", &["--json"]),
    ("render", &["-o", "/dev/null"]),
];

/// What a step made (dropped outside the timed region; a child process never drops it, as
/// the CLI does not).
#[allow(dead_code)]
enum Made {
    Nothing,
    Dump(Box<commlens::Dump>),
    Prepared(Box<Planner<Graph>>),
}

/// Runs `step` once on the gzipped dump `gz`.
fn run_step(step: &str, gz: &[u8]) -> Made {
    match step {
        "floor" => {
            let json = commlens::dump::gunzip(gz).expect("gzip");
            let mut de = serde_json::Deserializer::from_slice(&json);
            IgnoredAny::deserialize(&mut de).expect("json");
            de.end().expect("json");
            Made::Nothing
        }
        "read" => Made::Dump(Box::new(read_dump(gz).expect("dump"))),
        "prepared" => Made::Prepared(Box::new(
            commlens::planner::read_prepared(gz).expect("dump"),
        )),
        other => panic!("unknown step {other}"),
    }
}

/// A process's wall time and peak resident set (bytes), or why it could not run.
fn run_process(mut command: Command) -> Result<(Duration, u64), String> {
    let start = Instant::now();
    let child = command
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed();
    if pid < 0 || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{command:?} failed (status {status})"));
    }
    Ok((elapsed, usage.ru_maxrss as u64 * 1024))
}

/// Best wall time and least peak memory of `runs` runs of a process.
fn best_process(runs: usize, make: impl Fn() -> Command) -> Result<(Duration, u64), String> {
    let mut best = (Duration::MAX, u64::MAX);
    for _ in 0..runs.max(1) {
        let (time, peak) = run_process(make())?;
        best = (best.0.min(time), best.1.min(peak));
    }
    Ok(best)
}

/// This bench run as a child that does one step on a file.
fn step_process(step: &str, file: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("bench path"));
    command
        .env("COMMLENS_BENCH_CHILD", step)
        .env("COMMLENS_BENCH_FILE", file);
    command
}

/// The CLI timed: `COMMLENS_BIN`, else the profile-guided build (`cargo xtask cli`), else the
/// plain release build.
fn cli_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("COMMLENS_BIN") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    ["cli/commlens", "release/commlens"]
        .iter()
        .map(|built| target.join(built))
        .find(|path| path.is_file())
}

/// The whitespace-separated numbers a child printed.
fn numbers<const N: usize>(text: &str) -> [usize; N] {
    let values: Vec<usize> = text
        .split_whitespace()
        .map(|v| v.parse().expect("a number"))
        .collect();
    values.try_into().expect("the numbers a child prints")
}

struct Row {
    shape: &'static str,
    nodes: usize,
    json_bytes: usize,
    gz_bytes: usize,
    /// In process: floor, read, prepared.
    times: [Duration; 3],
    /// Whole process: wall time and peak memory of floor, read, prepared.
    processes: [(Duration, u64); 3],
    /// Whole CLI runs: plan, roles, render.
    cli: Option<[(Duration, u64); 3]>,
}

/// This bench run as a child that writes a gzipped synthetic dump of about `target` nodes
/// to `file`; its node count, JSON size and gzipped size.
fn write_dump(target: usize, shape: &str, file: &Path) -> (usize, usize, usize) {
    let text = synthetic_dump(SynthSpec::with_nodes(target));
    let json = match shape {
        "lean" => lean_dump(&text).expect("a lean dump"),
        "traced" => lean_dump_with_stack_traces(&text).expect("a traced dump"),
        _ => text,
    }
    .into_bytes();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&json).expect("gzip");
    let gz = encoder.finish().expect("gzip");
    std::fs::write(file, &gz).expect("write the dump");
    let nodes = read_dump(&json).expect("dump").nodes.len();
    (nodes, json.len(), gz.len())
}

/// Runs a child mode of this bench and returns what it printed.
fn child_output(mode: &str, file: &Path, extra: &str) -> String {
    let output = Command::new(std::env::current_exe().expect("bench path"))
        .env("COMMLENS_BENCH_CHILD", mode)
        .env("COMMLENS_BENCH_FILE", file)
        .env("COMMLENS_BENCH_EXTRA", extra)
        .output()
        .expect("bench child");
    assert!(output.status.success(), "bench child {mode} failed");
    String::from_utf8(output.stdout).expect("utf-8")
}

fn main() {
    // Child modes: the parent stays small, so that a child's peak memory (which the kernel
    // starts from its parent's when it is spawned) is its own.
    if let Ok(mode) = std::env::var("COMMLENS_BENCH_CHILD") {
        let file = PathBuf::from(std::env::var_os("COMMLENS_BENCH_FILE").expect("file"));
        let extra = std::env::var("COMMLENS_BENCH_EXTRA").unwrap_or_default();
        match mode.as_str() {
            "write" => {
                let (nodes, shape) = extra.split_once(' ').expect("nodes and shape");
                let (nodes, json, gz) = write_dump(nodes.parse().expect("nodes"), shape, &file);
                println!("{nodes} {json} {gz}");
            }
            "time" => {
                let gz = std::fs::read(&file).expect("read the dump");
                let runs: usize = extra.parse().expect("runs");
                let times = STEPS.map(|step| best(runs, || run_step(step, &gz)));
                println!("{}", times.map(|t| t.as_nanos().to_string()).join(" "));
            }
            step => {
                let made = run_step(step, &std::fs::read(file).expect("read the dump"));
                std::mem::forget(made);
            }
        }
        return;
    }
    let sizes = support::sizes_from_args();
    let runs_override = std::env::var("COMMLENS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let dir = std::env::temp_dir().join(format!("commlens-bench-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cli = cli_binary();
    if let Some(cli) = &cli {
        println!("whole-CLI columns: {}", cli.display());
    }
    let mut rows = Vec::new();
    for (target, shape) in sizes
        .iter()
        .flat_map(|&target| SHAPES.map(|shape| (target, shape)))
    {
        let file = dir.join(format!("{shape}-{target}.json.gz"));
        let written = child_output("write", &file, &format!("{target} {shape}"));
        let [nodes, json_bytes, gz_bytes] = numbers(&written);
        let runs = runs_override.unwrap_or(if target >= 1_000_000 {
            3
        } else if target >= 100_000 {
            5
        } else {
            15
        });
        if let Ok(step) = std::env::var("COMMLENS_BENCH_ONLY") {
            let gz = std::fs::read(&file).expect("read the dump");
            let time = best(runs, || run_step(&step, &gz));
            eprintln!("{step}: {:.1} ms", ms(time));
            continue;
        }
        let times = numbers(&child_output("time", &file, &runs.to_string()))
            .map(|ns| Duration::from_nanos(ns as u64));
        let process_runs = runs.min(5);
        let processes = STEPS.map(|step| {
            best_process(process_runs, || step_process(step, &file)).expect("bench child")
        });
        let cli = cli.as_ref().map(|bin| {
            COMMANDS.map(|(command, rest)| {
                best_process(process_runs, || {
                    let mut c = Command::new(bin);
                    c.arg(command).arg(&file).args(rest);
                    c
                })
                .expect("commlens")
            })
        });
        std::fs::remove_file(&file).ok();
        rows.push(Row {
            shape,
            nodes,
            json_bytes,
            gz_bytes,
            times,
            processes,
            cli,
        });
    }
    std::fs::remove_dir_all(&dir).ok();
    if rows.is_empty() {
        return;
    }
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("In process (best of N; ratios to the floor of the same run):\n");
    println!(
        "| shape | nodes | JSON MB | gz MB | floor ms | read_dump ms | read_prepared ms | read_dump / floor | read_prepared / floor | floor JSON MB/s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let [floor, read, prepared] = r.times;
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} |",
            r.shape,
            r.nodes,
            mb(r.json_bytes as u64),
            mb(r.gz_bytes as u64),
            ms(floor),
            ms(read),
            ms(prepared),
            ratio(read, floor),
            ratio(prepared, floor),
            mb(r.json_bytes as u64) / floor.as_secs_f64(),
        );
    }
    println!("\nAs processes (wall ms, peak MB, peak / JSON size):\n");
    let mut header = String::from("| shape | nodes | JSON MB | floor |");
    let mut rule = String::from("|---|---:|---:|---:|");
    for step in ["read_dump", "read_prepared"] {
        header.push_str(&format!(" {step} |"));
        rule.push_str("---:|");
    }
    if cli.is_some() {
        for (command, _) in COMMANDS {
            header.push_str(&format!(" commlens {command} |"));
            rule.push_str("---:|");
        }
    }
    println!("{header}\n{rule}");
    for r in &rows {
        let floor = r.processes[0].0;
        let cell = |(time, peak): (Duration, u64)| {
            format!(
                " {:.0} ms ({:.2}×), {:.0} MB ({:.2}×) |",
                ms(time),
                ratio(time, floor),
                mb(peak),
                peak as f64 / r.json_bytes as f64
            )
        };
        let mut line = format!(
            "| {} | {} | {:.1} | {:.0} ms, {:.0} MB ({:.2}×) |",
            r.shape,
            r.nodes,
            mb(r.json_bytes as u64),
            ms(floor),
            mb(r.processes[0].1),
            r.processes[0].1 as f64 / r.json_bytes as f64
        );
        for process in &r.processes[1..] {
            line.push_str(&cell(*process));
        }
        for process in r.cli.iter().flatten() {
            line.push_str(&cell(*process));
        }
        println!("{line}");
    }
    if cli.is_none() {
        println!(
            "\n(whole-CLI columns skipped: build the CLI with `cargo xtask cli` or `cargo build \
             --release -p commlens-cli`, or set COMMLENS_BIN)"
        );
    }
}
