//! A gzip dump is read as it decompresses, a node at a time, without holding its whole text
//! (`dump::streamed`). It must read exactly as its plain text does: the same nodes, metadata
//! (decoded or kept as text), signature and warnings for every dump, and the same error, word
//! for word, for every dump that does not read.

mod common;

use commlens::read_dump;
use std::io::Write;
use std::path::PathBuf;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// Everything reading says: the whole dump (`Debug` shows every node's whole metadata), or
/// the error's message.
fn outcome(bytes: &[u8]) -> String {
    match read_dump(bytes) {
        Ok(dump) => format!("{dump:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Reads `input` plain and gzipped (input that is gzip already is compared with what it
/// decompresses to, when it does).
fn same_gzipped(name: &str, input: &[u8]) {
    let (plain, gzipped) = if input.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        let mut decoder = flate2::read::MultiGzDecoder::new(input);
        if std::io::Read::read_to_end(&mut decoder, &mut plain).is_err() {
            return;
        }
        (plain, input.to_vec())
    } else {
        (input.to_vec(), gzip(input))
    };
    let expected = outcome(&plain);
    let actual = outcome(&gzipped);
    assert!(
        expected == actual,
        "{name}: gzipped reads differently:\nplain:   {}\ngzipped: {}",
        &expected[..expected.len().min(400)],
        &actual[..actual.len().min(400)]
    );
}

#[test]
fn conformance_dumps_read_and_plan_the_same_gzipped() {
    let cases = common::case_dirs(&common::shared_dir().join("conformance/cases"));
    assert!(cases.len() >= 50, "conformance cases missing");
    for case in cases {
        let name = case.display().to_string();
        let plain = common::read(&case.join("dump.json"));
        same_gzipped(&name, &plain);
        let report =
            |bytes: &[u8]| commlens::plan_report_json(bytes, None).map_err(|e| e.to_string());
        assert_eq!(report(&plain), report(&gzip(&plain)), "{name}");
    }
}

#[test]
fn bad_dumps_give_the_same_message_gzipped() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reader");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        same_gzipped(&path.display().to_string(), &common::read(&path));
        files += 1;
    }
    assert!(files >= 20, "reader fixtures missing");
}

/// Cut anywhere, or with bytes flipped (which reaches every rule and every kind of bad JSON
/// at every depth), a real dump reads the same gzipped as plain.
#[test]
fn cut_and_damaged_dumps_read_the_same_gzipped() {
    let path = common::shared_dir().join("conformance/cases/mlp_default/dump.json");
    let bytes = common::read(&path);
    for cut in (0..bytes.len()).step_by(89) {
        same_gzipped(&format!("cut at {cut}"), &bytes[..cut]);
    }
    let mut rng = common::Rng(0x0bad_cafe_f00d_0001);
    for round in 0..300 {
        let mut copy = bytes.clone();
        for _ in 0..1 + rng.below(3) {
            let state = rng.next();
            let at = (state as usize) % copy.len();
            copy[at] = match rng.below(4) {
                0 => b'"',
                1 => b'{',
                2 => b'\\',
                _ => (state >> 32) as u8,
            };
        }
        same_gzipped(&format!("damage {round}"), &copy);
    }
}

/// What the streamed reader declines (nesting near serde_json's depth limit, a second `nodes`,
/// text after the document) reads as the plain text does.
#[test]
fn what_the_streamed_reader_declines_reads_the_same() {
    let node = |meta: &str| {
        format!(
            r#"{{"name": "x", "op": "placeholder", "target": "x", "args": [], "meta": {meta}}}"#
        )
    };
    let dump = |nodes: &str, extra: &str| {
        format!(r#"{{"format": "commlens.graph", "version": 1, "nodes": [{nodes}]{extra}}}"#)
    };
    for depth in [90, 101, 123, 124, 125, 126, 127, 130] {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        same_gzipped(
            &format!("depth {depth}"),
            dump(&node(&format!(r#"{{"val": {deep}}}"#)), "").as_bytes(),
        );
        same_gzipped(
            &format!("top depth {depth}"),
            dump(&node("{}"), &format!(r#", "x": {deep}"#)).as_bytes(),
        );
    }
    same_gzipped(
        "two nodes keys",
        dump(&node("{}"), r#", "nodes": []"#).as_bytes(),
    );
    same_gzipped(
        "trailing",
        format!("{} x", dump(&node("{}"), "")).as_bytes(),
    );
    same_gzipped(
        "escaped key",
        dump(&node("{}"), "")
            .replace("\"nodes\"", "\"no\\u0064es\"")
            .as_bytes(),
    );
    let mut latin1 = dump(&node(r#"{"val": "caf?"}"#), "").into_bytes();
    let at = latin1.iter().position(|b| *b == b'?').expect("?");
    latin1[at] = 0xe9;
    same_gzipped("not UTF-8", &latin1);
}

/// A file holding a plain dump is read as it is parsed (`input::Input::file`): every reader
/// fixture and every conformance dump reads from its file as from its bytes.
#[test]
fn files_read_as_their_bytes() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reader");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .collect();
    let cases = common::shared_dir().join("conformance/cases");
    paths.extend(
        common::case_dirs(&cases)
            .iter()
            .map(|c| c.join("dump.json")),
    );
    let outcome = |read: Result<commlens::Dump, commlens::InputError>| match read {
        Ok(dump) => format!("{dump:?}"),
        Err(e) => format!("error: {e}"),
    };
    for path in &paths {
        let file = std::fs::File::open(path).expect("open");
        let from_file = outcome(
            commlens::input::Input::file(file)
                .map_err(|e| panic!("{e}"))
                .and_then(|input| commlens::input::read(input, None)),
        );
        let from_bytes = outcome(commlens::input::read(common::read(path), None));
        assert!(
            from_file == from_bytes,
            "{}: the file reads differently",
            path.display()
        );
    }
    assert!(paths.len() > 70);
}
