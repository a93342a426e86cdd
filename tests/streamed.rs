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

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    commlens::pyjson::hex(&sha2::Sha256::digest(bytes))
}

/// `signature::records_of_dump` (the browser's worker makes the signature with it while the
/// page reads `without_records`): its records' SHA-256 is the signature a read of the same
/// bytes makes, for every conformance dump plain and gzipped and the synthetic shapes (lean,
/// with `val`, with stack traces); what it cannot make the same way it declines.
#[test]
fn records_made_beside_the_read_are_the_signature() {
    let agrees = |name: &str, bytes: &[u8]| {
        let read = read_dump(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let records = commlens::signature::records_of_dump(bytes)
            .unwrap_or_else(|| panic!("{name}: declined"));
        assert_eq!(
            Some(sha256_hex(records.as_bytes())),
            read.signature,
            "{name}"
        );
    };
    let cases = common::case_dirs(&common::shared_dir().join("conformance/cases"));
    assert!(cases.len() >= 50, "conformance cases missing");
    for case in cases {
        let name = case.display().to_string();
        let plain = common::read(&case.join("dump.json"));
        agrees(&name, &plain);
        if !plain.starts_with(&[0x1f, 0x8b]) {
            agrees(&format!("{name}, gzipped"), &gzip(&plain));
        }
    }
    let synthetic = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(3_000));
    for (name, text) in [
        ("lean", commlens::synth::lean_dump(&synthetic).unwrap()),
        (
            "stack traces",
            commlens::synth::lean_dump_with_stack_traces(&synthetic).unwrap(),
        ),
        (
            "without reprs",
            commlens::synth::lean_dump_without_reprs(&synthetic).unwrap(),
        ),
        ("with val", synthetic),
    ] {
        agrees(name, text.as_bytes());
        agrees(name, &gzip(text.as_bytes()));
        // A read for the planner, which keeps no reprs, writes each batch's records on the
        // thread that parsed it.
        let read = read_dump(text.as_bytes()).unwrap();
        let planner: commlens::planner::Planner<commlens::graph::Graph> =
            commlens::input::read_prepared(text.as_bytes(), None).unwrap();
        assert_eq!(
            Some(planner.signature()),
            read.signature.as_deref(),
            "{name}"
        );
    }
    // Nodes without `repr`, their Python strings rendered from the parsed fields (before the
    // nodes are checked) as from the checked nodes: every kind of value in `args` and
    // `kwargs`, references, and each way a target prints.
    let rendered = [
        r#"{"name": "p", "op": "placeholder", "target": "p"}"#,
        r#"{"name": "q", "op": "get_attr", "target": "layers.0.w", "args": [], "kwargs": {}}"#,
        r#"{"name": "add", "op": "call_function", "target": "_operator.add", "args": [{"node": "p"}, 1]}"#,
        r#"{"name": "mm", "op": "call_function", "target": "aten.mm.default", "args": [{"node": "p"}, [{"node": "q"}, -7, 2.5, null, true, "it's", "a\"b\u0007"]], "kwargs": {"dtype": {"dtype": "torch.float32"}, "dim": [0, 1], "k'ey": "v", "s": {"sym": "s0"}, "r": {"repr": "slice(None, None, None)"}}}"#,
        r#"{"name": "f", "op": "call_function", "target": "my_lib.helpers.fused", "args": [{"node": "mm"}], "kwargs": {"device": {"device": "cuda:0"}, "x": [1, [{"node": "add"}]]}}"#,
        r#"{"name": "output", "op": "output", "target": "output", "args": [[{"node": "f"}, 170141183460469231731687303715884105727]]}"#,
    ];
    let nodes = rendered.join(",\n");
    let text = format!(
        "{{\n\"format\": \"commlens.graph\",\n\"version\": 1,\n\"nodes\": [\n{nodes}\n]\n}}\n"
    );
    agrees("rendered strings", text.as_bytes());
    agrees("rendered strings, gzipped", &gzip(text.as_bytes()));
    // Declined: a trace log; a document the whole-text reader reads (two `nodes` arrays); a
    // node whose `repr` is not its strings (the check would fail it); no `nodes`; over the
    // limit.
    let spec = commlens::synth::SynthSpec::with_nodes(300);
    let log = commlens::synth::synthetic_trace_log(spec, true);
    let node =
        r#"{"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}, "meta": {}"#;
    let with_repr =
        format!(r#"{node}, "repr": {{"target": "x", "args": "()", "kwargs": "{{}}"}}}}"#);
    let dump = |nodes: &str, extra: &str| {
        format!(r#"{{"format": "commlens.graph", "version": 1, "nodes": [{nodes}]{extra}}}"#)
    };
    agrees("one node", dump(&with_repr, "").as_bytes());
    // What the browser asks its worker for: dumps, plain or gzipped, not trace logs.
    for (name, text, is_dump) in [
        ("dump", dump(&with_repr, ""), true),
        ("trace log", log.clone(), false),
    ] {
        assert_eq!(
            commlens::input::holds_a_dump(text.as_bytes()),
            is_dump,
            "{name}"
        );
        assert_eq!(
            commlens::input::holds_a_dump(&gzip(text.as_bytes())),
            is_dump,
            "{name}, gzipped"
        );
    }
    for (name, text) in [
        ("trace log", log),
        ("two nodes keys", dump(&with_repr, r#", "nodes": []"#)),
        (
            "repr not strings",
            dump(&format!(r#"{node}, "repr": {{"target": 1}}}}"#), ""),
        ),
        (
            "no nodes",
            r#"{"format": "commlens.graph", "version": 1}"#.to_string(),
        ),
    ] {
        assert_eq!(
            commlens::signature::records_of_dump(text.as_bytes()),
            None,
            "{name}"
        );
    }
    let limits = commlens::input::limits();
    commlens::input::set_limits(commlens::input::Limits {
        max_input_bytes: 100,
    });
    let over = commlens::signature::records_of_dump(dump(&with_repr, "").as_bytes());
    commlens::input::set_limits(limits);
    assert_eq!(over, None, "over the input-size limit");
}

/// Read `without_records`, a dump plans the same once its signature is set, and its reader
/// neither hashes nor hands out records; a read after the scope hashes again.
#[test]
fn a_read_without_records_waits_for_its_signature() {
    use commlens::graph::Graph;
    use commlens::planner::Planner;
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(2_000));
    let read = read_dump(text.as_bytes()).unwrap();
    let args =
        commlens::PlannerArgs::resolve(None, read.planner.as_ref(), read.group_ranks.as_ref());
    let here: Planner<Graph> = commlens::input::read_prepared(text.as_bytes(), None).unwrap();
    let mut later: Planner<Graph> = commlens::signature::without_records(|| {
        assert!(commlens::signature::digesting_elsewhere());
        commlens::input::read_prepared(text.as_bytes(), None).unwrap()
    });
    assert!(
        !commlens::signature::digesting_elsewhere(),
        "the scope is closed"
    );
    assert_eq!(later.signature(), "", "pending until set");
    assert_eq!(later.graph().dump.signature, None);
    assert_eq!(
        format!("{:?}", later.graph().nodes()),
        format!("{:?}", here.graph().nodes()),
        "the same nodes, reprs and all"
    );
    let records = commlens::signature::records_of_dump(text.as_bytes()).unwrap();
    later.set_signature(sha256_hex(records.as_bytes()));
    assert_eq!(later.signature(), here.signature());
    let report =
        |p: &Planner<Graph>| commlens::plan_json_with(&p.plan(&args).unwrap(), p.graph(), None);
    assert_eq!(report(&later), report(&here));
    let again: Planner<Graph> = commlens::input::read_prepared(text.as_bytes(), None).unwrap();
    assert_eq!(again.signature(), here.signature());
}
