//! Test support shared by the core's tests (`tests/`) and the CLI's (`cli/tests/`): where the
//! shared corpus is, and snapshot files.
//!
//! - The corpus (`shared/`, beside the repo) is required: a test that needs it fails when it
//!   is missing, unless `COMMLENS_ALLOW_MISSING_SHARED=1` says that skipping is intended (the
//!   test then says on stderr that it skipped). No test passes silently without it.
//! - A snapshot is only compared in a normal run; it is written only with
//!   `UPDATE_SNAPSHOTS=1`. A missing snapshot is a failure, not a new file.

use std::path::{Path, PathBuf};

/// The variable that lets tests skip (with a message) when `shared/` is missing.
pub const ALLOW_MISSING_SHARED: &str = "COMMLENS_ALLOW_MISSING_SHARED";

/// The repository's root (this crate sits in `<repo>/testkit`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit is inside the repo")
        .to_path_buf()
}

/// Where `shared/` is meant to be: `COMMLENS_SHARED`, else `<repo>/../shared`.
pub fn shared_path() -> PathBuf {
    match std::env::var_os("COMMLENS_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("../shared"),
    }
}

fn allow_missing() -> bool {
    std::env::var_os(ALLOW_MISSING_SHARED).is_some_and(|v| v == "1")
}

/// `shared/<relative>`, which must exist: a missing corpus panics with how to fix it, unless
/// [`ALLOW_MISSING_SHARED`] is `1`, when `None` is returned after saying on stderr that
/// `test` was skipped.
pub fn shared(relative: &str, test: &str) -> Option<PathBuf> {
    let path = shared_path().join(relative);
    if path.exists() {
        return Some(path);
    }
    if allow_missing() {
        eprintln!(
            "SKIPPED {test}: {} is missing and {ALLOW_MISSING_SHARED}=1",
            path.display()
        );
        return None;
    }
    panic!(
        "{test}: the shared corpus is missing: {} does not exist. Put shared/ beside the repo \
         or set COMMLENS_SHARED; to skip the tests that need it, set {ALLOW_MISSING_SHARED}=1",
        path.display()
    );
}

/// [`shared`] for tests that cannot run without it at all.
pub fn require_shared(relative: &str) -> PathBuf {
    let path = shared_path().join(relative);
    assert!(
        path.exists(),
        "the shared corpus is missing: {} does not exist (put shared/ beside the repo or set \
         COMMLENS_SHARED)",
        path.display()
    );
    path
}

/// Whether this run rewrites snapshots (`UPDATE_SNAPSHOTS=1`).
pub fn updating_snapshots() -> bool {
    std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1")
}

/// Compares `actual` with the snapshot at `path` (relative paths are relative to the repo),
/// or rewrites it when `UPDATE_SNAPSHOTS=1`. Returns a description of the mismatch.
pub fn check_snapshot(path: impl AsRef<Path>, actual: &str) -> Result<(), String> {
    let path = repo_root().join(path.as_ref());
    let shown = path
        .strip_prefix(repo_root())
        .unwrap_or(&path)
        .display()
        .to_string();
    if updating_snapshots() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("snapshot dir");
        }
        std::fs::write(&path, actual).expect("write snapshot");
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path)
        .map_err(|e| format!("{shown}: no snapshot ({e}); run with UPDATE_SNAPSHOTS=1"))?;
    if expected == actual {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{shown} differs at line {} (UPDATE_SNAPSHOTS=1 rewrites it):\n  expected: {}\n  actual:   {}",
        line + 1,
        expected.lines().nth(line).unwrap_or("<end>"),
        actual.lines().nth(line).unwrap_or("<end>")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_snapshot_is_a_failure_not_a_new_file() {
        if updating_snapshots() {
            return;
        }
        let relative = "target/testkit-no-such-snapshot.txt";
        let e = check_snapshot(relative, "x").unwrap_err();
        assert!(e.contains("no snapshot"), "{e}");
        assert!(!repo_root().join(relative).exists());
    }

    #[test]
    fn a_missing_corpus_fails_unless_skipping_is_asked_for() {
        if allow_missing() {
            assert!(shared("no/such/dir", "t").is_none());
        } else {
            let r = std::panic::catch_unwind(|| shared("no/such/dir", "t"));
            assert!(r.is_err());
        }
    }
}
