//! Test support shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// `shared/` beside the project: `COMMLENS_SHARED`, else `<repo>/../shared`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("COMMLENS_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
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

/// Compares `actual` with the committed snapshot at `path` (relative to the repo), or
/// rewrites the snapshot when `UPDATE_SNAPSHOTS=1`. Returns a description of a mismatch.
pub fn check_snapshot(relative: &str, actual: &str) -> Result<(), String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("snapshot dir");
        }
        std::fs::write(&path, actual).expect("write snapshot");
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path)
        .map_err(|e| format!("{relative}: no snapshot ({e}); run with UPDATE_SNAPSHOTS=1"))?;
    if expected == actual {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{relative} differs at line {}:\n  expected: {}\n  actual:   {}",
        line + 1,
        expected.lines().nth(line).unwrap_or("<end>"),
        actual.lines().nth(line).unwrap_or("<end>")
    ))
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
