//! What every bench shares: the allocator the CLI ships with, and best-of-N timing.
#![allow(dead_code)]

use std::time::{Duration, Instant};

// mimalloc: glibc malloc spends much of a large plan in its own bookkeeping.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Best of `runs` timings of `f`, with the last run's result; earlier results are dropped
/// outside the timed region.
pub fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        last = Some(value);
    }
    (best, last.expect("at least one run"))
}

/// Best of `runs` timings of `f`, its results dropped outside the timed region.
pub fn best_time<T>(runs: usize, f: impl FnMut() -> T) -> Duration {
    best(runs, f).0
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Dump sizes (node counts) from the command line, else about 10k, 100k and 1M.
pub fn sizes_from_args() -> Vec<usize> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    }
}
