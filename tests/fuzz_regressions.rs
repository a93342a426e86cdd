//! Replays every input kept from fuzzing (`tests/fixtures/fuzz/<target>/`, one folder per
//! target of `tests/fuzz/targets.rs`) through the same target body, natively: an input that
//! once crashed a target stays fixed. `cargo xtask fuzz` copies each crash it finds there.

#[path = "fuzz/targets.rs"]
mod targets;

use std::path::PathBuf;

#[test]
fn kept_fuzz_inputs_do_not_crash() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&root).expect("tests/fixtures/fuzz") {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some((_, target)) = targets::TARGETS.iter().find(|(n, _)| *n == name) else {
            panic!("tests/fixtures/fuzz/{name}: no fuzz target of that name");
        };
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        inputs.sort();
        for input in inputs {
            let data = std::fs::read(&input).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{} crashes {name}", input.display());
            replayed += 1;
        }
    }
    // The folder holds at least the inputs of the findings of issue 13.
    assert!(replayed > 0, "no kept inputs under {}", root.display());
}

#[test]
fn multi_input_targets_split_their_data() {
    let data = [&b"a"[..], targets::SPLIT, b"b", targets::SPLIT, b""].concat();
    assert_eq!(targets::parts(&data), vec![&b"a"[..], b"b", b""]);
}
