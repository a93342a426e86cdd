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
