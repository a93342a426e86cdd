//! Hostile inputs (issue 13): each test is one finding, on an input built from a fixture the
//! way a hostile user would build it, and checks that it ends in a clear error (or correct
//! output) in bounded time and memory. Every one of them failed (panicked, ran for minutes,
//! read without bound, or printed what it should not) before the fix it covers.

use commlens::identity::json::{AuditReport, RolesReport};
use commlens::input::{self, Limits};
use commlens::{read_dump, Graph};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("fixture JSON")
}

/// The traced FSDP+TP fixture: 4 placeholders, collectives with explicit roles.
fn base() -> Value {
    fixture("identity/fsdp_tp_annotated.json")
}

/// `dump` with node `old` renamed to `new`, references included.
fn rename(mut dump: Value, old: &str, new: &str) -> Value {
    fn walk(v: &mut Value, old: &str, new: &str) {
        match v {
            Value::Object(m) => {
                if m.len() == 1 && m.get("node").and_then(Value::as_str) == Some(old) {
                    m.insert("node".into(), json!(new));
                    return;
                }
                m.values_mut().for_each(|x| walk(x, old, new));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, old, new)),
            _ => {}
        }
    }
    for node in dump["nodes"].as_array_mut().unwrap() {
        if node["name"] == old {
            node["name"] = json!(new);
        }
        walk(&mut node["args"], old, new);
        walk(&mut node["kwargs"], old, new);
        walk(&mut node["meta"], old, new);
    }
    dump
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn error_of(dump: &[u8]) -> String {
    match input::read(dump, None) {
        Ok(_) => panic!("read without error"),
        Err(e) => e.to_string(),
    }
}

fn audit(before: Graph, after: Graph) -> AuditReport {
    let audit = commlens::identity::audit(&before, &after);
    AuditReport {
        before,
        after,
        audit,
    }
}

fn no_terminal_controls(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| commlens::text::is_terminal_control(c))
        .collect();
    assert!(bad.is_empty(), "{what} writes terminal controls {bad:?}");
}

// Finding 1: `roles` text panicked ("Formatting argument out of range") on a name of 65,536
// characters or more (a padded column wider than `format!` allows).
#[test]
fn roles_text_with_a_70k_character_name() {
    let name = "n".repeat(70_000);
    let dump = rename(base(), "all_gather_into_tensor", &name);
    let report = RolesReport::new(Graph::new(read_dump(&bytes(&dump)).unwrap()));
    let text = report.to_text();
    assert!(text.contains(&name));
    // The other columns still line up after the long one.
    assert!(text.lines().any(|l| l.starts_with(&format!("{name}  "))));
}

// Finding 2: the group_ranks check was quadratic in the list's length.
#[test]
fn group_ranks_check_is_linear() {
    let ranks: Vec<u64> = (0..400_000).collect();
    let args = json!({"group_ranks": {"fsdp": [0, 1], "unused": ranks}});
    let args = bytes(&args);
    let start = Instant::now();
    commlens::plan_report_json(&bytes(&base()), Some(&args)).unwrap();
    // Quadratic: 8e10 comparisons, minutes. Linear: well under a second even unoptimized.
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // A repeated rank is still refused (the reference's message).
    let repeated = json!({"group_ranks": {"fsdp": [0, 1, 0]}});
    let e = commlens::plan_report_json(&bytes(&base()), Some(&bytes(&repeated))).unwrap_err();
    assert!(e.to_string().contains("distinct"), "{e}");
}

// Finding 3: one metadata list of 20M elements from a 40 KB gzip took ~1.6 GB and aborted.
#[test]
fn a_metadata_list_over_the_per_value_limit_is_an_error() {
    let mut dump = base();
    let list = format!("[{}0]", "0,".repeat(commlens::value::MAX_LIST_LEN));
    dump["nodes"][4]["meta"]["huge"] = json!("HUGE");
    let text = serde_json::to_string(&dump)
        .unwrap()
        .replace("\"HUGE\"", &list);
    let compressed = gzip(text.as_bytes());
    assert!(compressed.len() < 100_000);
    let e = error_of(&compressed);
    assert!(
        e.contains("more than 1000000 elements") && e.contains("per-value limit"),
        "{e}"
    );
    // At the limit it reads.
    let at_limit = serde_json::to_string(&dump).unwrap().replace(
        "\"HUGE\"",
        &format!("[{}0]", "0,".repeat(commlens::value::MAX_LIST_LEN - 1)),
    );
    assert!(input::read(at_limit.as_bytes(), None).is_ok());
}

// Finding 4: no bound on input size; a gzip bomb was inflated until memory ran out.
#[test]
fn input_size_limit_covers_plain_and_decompressed_bytes() {
    input::set_limits(Limits::from_mb(1));
    let zeros = vec![0u8; 3 << 20];
    let e = error_of(&zeros);
    assert!(
        e.contains("the input is 3.0 MiB") && e.contains("input-size limit of 1.0 MiB"),
        "{e}"
    );
    let bomb = gzip(&vec![b' '; 8 << 20]);
    assert!(bomb.len() < 64 << 10);
    let e = error_of(&bomb);
    assert!(
        e.contains("decompresses to more than the input-size limit"),
        "{e}"
    );
    // A stream (a device, a pipe) is read up to the limit, not to its end.
    let endless = std::io::repeat(0).take_while_limit();
    let e = input::read_limited(endless, None).unwrap_err().to_string();
    assert!(e.contains("more than the input-size limit"), "{e}");
    input::set_limits(Limits::default());
    assert_eq!(input::limits().max_input_bytes, 1024 << 20);
    assert!(input::read(&bomb, None).is_err_and(|e| !e.to_string().contains("limit")));
}

trait Endless: std::io::Read + Sized {
    /// The reader, bounded far beyond the test's limit (a stand-in for /dev/zero).
    fn take_while_limit(self) -> std::io::Take<Self> {
        self.take(1 << 40)
    }
}
impl<R: std::io::Read> Endless for R {}

// Finding 5: argument objects with zero keys, two or more keys, or the single key "tensor"
// were accepted; `{"node": ..., "x": 1}` escaped the earlier-node check or dropped the edge.
#[test]
fn argument_objects_have_exactly_one_known_key() {
    let cases = [
        (json!({}), "an empty object"),
        (
            json!({"node": "primals_1", "x": 1}),
            "2 keys (\"node\", \"x\")",
        ),
        (json!({"node": "no_such_node", "x": 1}), "2 keys"),
        (json!({"a": 1, "b": 2, "c": 3}), "3 keys"),
        (
            json!({"tensor": {"shape": [1], "dtype": "torch.float32", "device": "cpu"}}),
            "single key \"tensor\"",
        ),
    ];
    for (arg, expected) in cases {
        let mut dump = base();
        dump["nodes"][4]["args"][0] = arg.clone();
        let e = error_of(&bytes(&dump));
        assert!(
            e.contains("node 4") && e.contains("args[0]") && e.contains(expected),
            "{arg}: {e}"
        );
        // Nested in a list, and in kwargs, alike.
        let mut dump = base();
        dump["nodes"][4]["kwargs"] = json!({"k": [1, arg]});
        let e = error_of(&bytes(&dump));
        assert!(e.contains(expected), "{arg} in kwargs: {e}");
    }
    // Metadata keeps dicts (and empty ones).
    let mut dump = base();
    dump["nodes"][4]["meta"]["d"] = json!({"a": {}, "b": {"node": "x", "y": 1}});
    assert!(input::read(bytes(&dump), None).is_ok());
}

// Finding 6: U+FFFE/U+FFFF (and other characters XML forbids) were written into the SVG.
#[test]
fn svg_holds_only_characters_xml_allows() {
    let name = "ag\u{fffe}\u{ffff}\u{1}\u{1b}<&>";
    let dump = rename(base(), "all_gather_into_tensor", name);
    let graph = Graph::new(read_dump(&bytes(&dump)).unwrap());
    let args = commlens::resolve_args(&graph, None);
    let plan = commlens::plan(&graph, &args).unwrap();
    let collectives = commlens::timeline::Collectives::classify(&graph);
    let input = commlens::timeline::plan_timeline(&graph, &plan, &collectives, name);
    let scene = commlens::timeline::build_scene(
        &input,
        commlens::timeline::Viewport::full(input.node_count),
        900,
    );
    let svg = commlens::timeline::render_svg(&scene);
    let bad: Vec<char> = svg
        .chars()
        .filter(|&c| !commlens::text::is_xml_char(c))
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    assert!(svg.contains('\u{fffd}'));
}

// Finding 7: ESC and BEL in names reached the terminal through the text reports.
#[test]
fn text_reports_escape_terminal_controls() {
    let name = "ag\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}";
    let dump = bytes(&rename(base(), "all_gather_into_tensor", name));
    let graph = || Graph::new(read_dump(&dump).unwrap());
    let roles = RolesReport::new(graph()).to_text();
    assert!(roles.contains("ag\\u{1b}]0;owned\\u{7}"), "{roles}");
    no_terminal_controls("roles", &roles);
    let audit = audit(graph(), graph()).to_text();
    no_terminal_controls("audit", &audit);
    let plan = commlens::read_and_plan_with(&dump, None, None, commlens::TagMode::Roles)
        .unwrap()
        .to_text();
    no_terminal_controls("plan --format text", &plan);
    assert!(plan.contains("\\u{1b}"), "{plan}");
    let side =
        || commlens::diff::read_side_with(&dump, None, None, commlens::TagMode::Roles).unwrap();
    let diff = commlens::diff::PlanDiff::new(side(), side()).to_text();
    no_terminal_controls("diff", &diff);
    let cost = commlens::cost_report(
        &dump,
        None,
        None,
        commlens::TagMode::Roles,
        commlens::cost::Hardware::default(),
    )
    .unwrap()
    .report()
    .to_text();
    no_terminal_controls("cost", &cost);
}

// Finding 8: a 1 MB op, name or target was echoed whole in the error message.
#[test]
fn error_messages_are_bounded() {
    let long = "x\u{1b}".repeat(500_000);
    let mut bad_op = base();
    bad_op["nodes"][4]["op"] = json!(long);
    let mut bad_ref = base();
    bad_ref["nodes"][4]["args"][0] = json!({"node": long});
    let mut bad_name = base();
    bad_name["nodes"][4]["name"] = json!(long);
    bad_name["nodes"][4]["op"] = json!(7);
    let mut bad_key = base();
    bad_key["nodes"][4]["args"][0] = json!({ long.clone(): 1 });
    for (what, dump) in [
        ("op", bad_op),
        ("reference", bad_ref),
        ("name", bad_name),
        ("key", bad_key),
    ] {
        let e = error_of(&bytes(&dump));
        assert!(e.len() < 2_000, "{what}: a {} byte message", e.len());
        assert!(e.contains("characters]"), "{what}: {e}");
        no_terminal_controls(what, &e);
    }
}

// Finding 10: a complete gzip member followed by garbage said "unexpected end of file".
#[test]
fn gzip_followed_by_garbage_says_so() {
    let mut data = gzip(&bytes(&base()));
    let end = data.len();
    data.extend_from_slice(b"garbage!");
    let e = error_of(&data);
    assert!(
        e.contains(&format!("complete at byte {end}")) && e.contains("8 more byte(s)"),
        "{e}"
    );
    // Several members are still one input.
    let text = bytes(&base());
    let (a, b) = text.split_at(text.len() / 2);
    let mut two = gzip(a);
    two.extend(gzip(b));
    assert!(input::read(&two, None).is_ok());
}

// Finding 10: `audit` of two unrelated graphs reported everything "kept" without a word.
#[test]
fn audit_of_unrelated_graphs_says_so() {
    let before = Graph::new(read_dump(&bytes(&base())).unwrap());
    let other = fixture("planner/capacity.json");
    let after = Graph::new(read_dump(&bytes(&other)).unwrap());
    let report = audit(before, after);
    let note = report.audit.unrelated.clone().expect("a note");
    assert!(note.contains("look unrelated"), "{note}");
    assert!(report
        .to_text()
        .starts_with("note: the two graphs look unrelated"));
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["note"], json!(note));
    // A graph against itself (or a transform of it) has no note.
    let same = Graph::new(read_dump(&bytes(&base())).unwrap());
    let again = Graph::new(read_dump(&bytes(&base())).unwrap());
    assert!(audit(same, again).audit.unrelated.is_none());
}
