//! Test support shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// `shared/` beside the project: `COMMLENS_SHARED`, else `<repo>/../shared` (the shared test
/// helper, `testkit`, decides for `tests/` and `cli/tests/` alike).
pub fn shared_dir() -> PathBuf {
    commlens_testkit::shared_path()
}

/// The case folders under `dir`, sorted by name.
pub fn case_dirs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    cases
}

pub fn read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&read(path))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Compares `actual` with the committed snapshot at `relative` (to the repo); rewritten only
/// when `UPDATE_SNAPSHOTS=1` (`testkit::check_snapshot`).
pub fn check_snapshot(relative: &str, actual: &str) -> Result<(), String> {
    commlens_testkit::check_snapshot(relative, actual)
}

/// A small deterministic generator (xorshift64), for tests that damage inputs at random.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}
