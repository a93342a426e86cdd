//! `cargo xtask fuzz [TARGET...] [--time S]`: coverage-guided fuzzing of the core with
//! cargo-fuzz (libFuzzer, nightly). The targets' bodies are `tests/fuzz/targets.rs`; the
//! crate is `fuzz/`.
//!
//! Before each run the target's corpus (`fuzz/corpus/<target>/`, not committed) is seeded
//! from `$COMMLENS_SHARED/conformance` and `tests/fixtures` (copied at run time; the shared
//! corpus never enters the repo) and from the kept inputs `tests/fixtures/fuzz/<target>/`. A
//! crash, leak, timeout or out-of-memory input libFuzzer writes to `fuzz/artifacts/<target>/`
//! is copied to `tests/fixtures/fuzz/<target>/`, which the normal test run replays
//! natively (`tests/fuzz_regressions.rs`), and the run fails.

use std::path::{Path, PathBuf};

use crate::util::{self, Fail, Res};
use crate::Opts;

pub const HELP: &str = "\
cargo xtask fuzz [TARGET...] [--time S] [--max-len BYTES] [--no-install]

Runs each TARGET (default: all) for S seconds (default 60) under libFuzzer with the nightly
toolchain and cargo-fuzz (installed with `cargo install cargo-fuzz` when missing, unless
--no-install). Targets: read, args, classify, plan, render, validate, audit, tracelog, diff,
cost (tests/fuzz/targets.rs). Seeds come from $COMMLENS_SHARED/conformance, tests/fixtures and
tests/fixtures/fuzz/TARGET (copied into fuzz/corpus/TARGET at run time). Prints each target's
executions, time and corpus size; a crash is copied to tests/fixtures/fuzz/TARGET (replayed by
`cargo test`) and fails the run. Inputs are cut at --max-len (default 131072) bytes.";

/// The targets, as `fuzz/Cargo.toml` names them.
pub const TARGETS: [&str; 10] = [
    "read", "args", "classify", "plan", "render", "validate", "audit", "tracelog", "diff", "cost",
];

/// Separates the parts of a multi-input target's data (`targets::SPLIT`).
const SPLIT: &[u8] = b"\n\0--8<--\0\n";

pub fn cmd(args: &[String]) -> Res<()> {
    let mut o = Opts::new(args);
    let time: u64 = match o.value("--time")? {
        Some(t) => t
            .parse()
            .map_err(|_| Fail::usage(format!("--time takes seconds, got {t:?}")))?,
        None => 60,
    };
    let max_len: usize = match o.value("--max-len")? {
        Some(t) => t
            .parse()
            .map_err(|_| Fail::usage(format!("--max-len takes bytes, got {t:?}")))?,
        None => 128 << 10,
    };
    let install = !o.flag("--no-install");
    let targets = o.positional()?;
    for t in &targets {
        if !TARGETS.contains(&t.as_str()) {
            return Err(Fail::usage(format!(
                "unknown fuzz target {t:?} (targets: {})",
                TARGETS.join(", ")
            )));
        }
    }
    let targets: Vec<&str> = if targets.is_empty() {
        TARGETS.to_vec()
    } else {
        TARGETS
            .iter()
            .copied()
            .filter(|t| targets.iter().any(|x| x == t))
            .collect()
    };
    ensure_tools(install)?;
    run(&targets, time, max_len).map(|_| ())
}

/// What one target's run did.
pub struct Stats {
    pub target: String,
    pub executions: u64,
    pub seconds: u64,
    pub corpus: usize,
    pub peak_rss_mb: u64,
}

/// Whether nightly and cargo-fuzz are there; `install` runs `cargo install cargo-fuzz` when
/// only cargo-fuzz is missing.
pub fn ensure_tools(install: bool) -> Res<()> {
    let mut nightly = util::succeeds(util::cmd("cargo").args(["+nightly", "--version"]));
    if !nightly && install {
        // The test command installs what it needs (rustup reaches its own dist server here).
        nightly = util::run(util::cmd("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))
        .is_ok();
    }
    if !nightly {
        return Err(Fail::msg(
            "the nightly toolchain is missing (rustup toolchain install nightly): cargo-fuzz \
             needs it",
        ));
    }
    if util::succeeds(util::cmd("cargo").args(["fuzz", "--version"])) {
        return Ok(());
    }
    if !install {
        return Err(Fail::msg(
            "cargo-fuzz is missing (cargo install cargo-fuzz)",
        ));
    }
    util::run(util::cmd("cargo").args(["install", "cargo-fuzz"]))
}

/// Builds the targets once (optimised, with debug assertions, without a sanitizer: the core
/// is safe Rust, so AddressSanitizer would only halve the executions), then runs each for
/// `seconds`. Fails on the first crash (after
/// keeping its input).
pub fn run(targets: &[&str], seconds: u64, max_len: usize) -> Res<Vec<Stats>> {
    let root = util::repo_root();
    let fuzz = root.join("fuzz");
    util::run(util::cmd("cargo").current_dir(&fuzz).args([
        "+nightly",
        "fuzz",
        "build",
        "-O",
        "--debug-assertions",
        "-s",
        "none",
    ]))?;
    let mut all = Vec::new();
    for target in targets {
        let corpus = fuzz.join("corpus").join(target);
        let seeded = seed(&root, target, &corpus, max_len)?;
        let artifacts = fuzz.join("artifacts").join(target);
        std::fs::create_dir_all(&artifacts).map_err(Fail::err)?;
        let before = list(&artifacts);
        println!("fuzz {target}: {seeded} seed(s), {seconds} s");
        let mut c = util::cmd("cargo");
        c.current_dir(&fuzz).args([
            "+nightly",
            "fuzz",
            "run",
            "-O",
            "--debug-assertions",
            "-s",
            "none",
            target,
            corpus.to_str().expect("utf-8 path"),
            "--",
        ]);
        c.arg(format!("-max_total_time={seconds}"))
            .arg(format!("-max_len={max_len}"))
            .arg("-timeout=20")
            .arg("-rss_limit_mb=2048")
            .arg("-print_final_stats=1")
            .arg(format!("-artifact_prefix={}/", artifacts.display()));
        let started = std::time::Instant::now();
        let output = c.output().map_err(Fail::err)?;
        let log = String::from_utf8_lossy(&output.stderr).into_owned();
        let stat = |name: &str| -> u64 {
            log.lines()
                .find_map(|l| l.strip_prefix(&format!("stat::{name}:")))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let stats = Stats {
            target: target.to_string(),
            executions: stat("number_of_executed_units"),
            seconds: started.elapsed().as_secs(),
            corpus: list(&corpus).len(),
            peak_rss_mb: stat("peak_rss_mb"),
        };
        println!(
            "fuzz {target}: {} executions in {} s ({} /s), corpus {}, peak RSS {} MB",
            stats.executions,
            stats.seconds,
            stats.executions / stats.seconds.max(1),
            stats.corpus,
            stats.peak_rss_mb
        );
        let found: Vec<PathBuf> = list(&artifacts)
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        if !output.status.success() || !found.is_empty() {
            let kept = keep(&root, target, &found)?;
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(Fail::msg(format!(
                "fuzz target {target} failed; input(s) kept for `cargo test` in {}:\n{}\n{}",
                root.join("tests/fixtures/fuzz").join(target).display(),
                kept.join("\n"),
                tail.join("\n")
            )));
        }
        all.push(stats);
    }
    Ok(all)
}

fn list(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Copies found inputs to `tests/fixtures/fuzz/<target>/`.
fn keep(root: &Path, target: &str, found: &[PathBuf]) -> Res<Vec<String>> {
    let dir = root.join("tests/fixtures/fuzz").join(target);
    std::fs::create_dir_all(&dir).map_err(Fail::err)?;
    let mut kept = Vec::new();
    for path in found {
        let name = path
            .file_name()
            .expect("file")
            .to_string_lossy()
            .into_owned();
        let dest = dir.join(&name);
        std::fs::copy(path, &dest).map_err(Fail::err)?;
        kept.push(dest.display().to_string());
    }
    Ok(kept)
}

/// Seeds `corpus` for `target` from the conformance corpus, the fixtures and the kept
/// inputs; returns how many seeds it wrote. Seeds longer than `max_len` are left out.
fn seed(root: &Path, target: &str, corpus: &Path, max_len: usize) -> Res<usize> {
    std::fs::create_dir_all(corpus).map_err(Fail::err)?;
    let shared = util::shared_dir().join("conformance");
    let fixtures = root.join("tests/fixtures");
    let files = |dir: &Path, suffixes: &[&str]| -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(dir, &mut out);
        out.retain(|p| {
            let name = p.to_string_lossy();
            suffixes.iter().any(|s| name.ends_with(s))
        });
        out.sort();
        out
    };
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    let cases = list(&shared.join("cases"));
    let dumps: Vec<PathBuf> = cases
        .iter()
        .flat_map(|c| [c.join("dump.json"), c.join("dump.json.gz")])
        .filter(|p| p.exists())
        .chain(
            files(&fixtures, &[".json", ".json.gz", ".log", ".log.gz"])
                .into_iter()
                .filter(|p| !p.starts_with(fixtures.join("fuzz"))),
        )
        .collect();
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    match target {
        "read" | "classify" | "plan" | "cost" | "tracelog" => {
            seeds.extend(dumps.iter().map(|p| read(p)));
        }
        "render" => {
            for (i, p) in dumps.iter().enumerate() {
                let view = [(i * 37 % 256) as u8, 255, (i % 16) as u8, 0];
                seeds.push([&view[..], &read(p)].concat());
            }
        }
        "args" => {
            for case in &cases {
                let (dump, args) = (case.join("dump.json"), case.join("args.json"));
                if dump.exists() && args.exists() {
                    seeds.push([read(&dump), SPLIT.to_vec(), read(&args)].concat());
                }
            }
        }
        "diff" => {
            for case in &cases {
                let (dump, report) = (case.join("dump.json"), case.join("plan.json"));
                if dump.exists() && report.exists() {
                    seeds.push([read(&dump), SPLIT.to_vec(), read(&report)].concat());
                }
            }
            seeds.extend(dumps.iter().map(|p| read(p)));
        }
        "audit" => {
            for before in files(&fixtures.join("identity"), &[".before.json"]) {
                let after = PathBuf::from(before.to_string_lossy().replace(".before.", ".after."));
                if after.exists() {
                    seeds.push([read(&before), SPLIT.to_vec(), read(&after)].concat());
                }
            }
            seeds.extend(dumps.iter().map(|p| read(p)));
        }
        "validate" => {
            for case in list(&shared.join("validate")) {
                let ranks: Vec<Vec<u8>> = files(&case, &[".json"])
                    .into_iter()
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("rank"))
                    })
                    .map(|p| read(&p))
                    .collect();
                if !ranks.is_empty() {
                    seeds.push(ranks.join(SPLIT));
                }
            }
        }
        other => return Err(Fail::msg(format!("no seeds for target {other}"))),
    }
    seeds.extend(
        list(&fixtures.join("fuzz").join(target))
            .iter()
            .map(|p| read(p)),
    );
    let mut written = 0;
    for data in seeds {
        if data.is_empty() || data.len() > max_len {
            continue;
        }
        let name = format!("seed-{}", util::fnv(&[&data]));
        std::fs::write(corpus.join(name), &data).map_err(Fail::err)?;
        written += 1;
    }
    Ok(written)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for path in list(dir) {
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}
