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

/// Best of `runs` timings of `f`, each started with the CPU caches holding none of its data:
/// a buffer larger than this machine's caches (L3 included) is written first, outside the
/// timed region. Warm timings of a repeated run let a small input stay cached between runs;
/// cold ones show how the work itself grows.
pub fn best_cold_time<T>(runs: usize, evict: &mut [u8], mut f: impl FnMut() -> T) -> Duration {
    let mut best = Duration::MAX;
    for round in 0..runs.max(1) {
        // One write per cache line.
        for byte in evict.iter_mut().step_by(64) {
            *byte = byte.wrapping_add(round as u8 | 1);
        }
        std::hint::black_box(&*evict);
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        drop(value);
    }
    best
}

/// A buffer for [`best_cold_time`]: 1 GiB, twice the largest cache this VM reports.
pub fn eviction_buffer() -> Vec<u8> {
    vec![1u8; 1 << 30]
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
