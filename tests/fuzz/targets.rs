//! The fuzz targets' bodies, shared by the cargo-fuzz crate (`fuzz/fuzz_targets/*.rs`, run by
//! `cargo xtask fuzz`) and by the native regression test (`tests/fuzz_regressions.rs`, which
//! replays every input kept under `tests/fixtures/fuzz/<target>/`). A body never panics
//! for any input, and asserts what must hold of any output: text reports carry no terminal
//! controls, SVG only characters XML allows, errors a bounded message.
//!
//! Two-input targets (a dump and its arguments, two dumps, rank reports) take one byte
//! string cut at [`SPLIT`], so seeds are files joined with it.

#![allow(dead_code)]

use commlens::input::{self, Limits};
use commlens::TagMode;

/// Separates the parts of a multi-input target's data.
pub const SPLIT: &[u8] = b"\n\0--8<--\0\n";

/// A target's body: any bytes in, a panic only on a bug.
pub type Target = fn(&[u8]);

/// Every target, by name: the name is the fuzz binary's and the fixture folder's.
pub const TARGETS: &[(&str, Target)] = &[
    ("read", read),
    ("args", args),
    ("classify", classify),
    ("plan", plan),
    ("render", render),
    ("validate", validate),
    ("audit", audit),
    ("tracelog", tracelog),
    ("diff", diff),
    ("cost", cost),
];

/// The parts of `data` between [`SPLIT`]s.
/// The first two parts of a two-input target (one part stands for both).
fn before_and_after(data: &[u8]) -> Option<(&[u8], &[u8])> {
    match parts(data).as_slice() {
        [before, after, ..] => Some((before, after)),
        [one] => Some((one, one)),
        [] => None,
    }
}

pub fn parts(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = find(rest, SPLIT) {
        out.push(&rest[..at]);
        rest = &rest[at + SPLIT.len()..];
    }
    out.push(rest);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A fuzz run's limits: small, so a gzip bomb is caught in milliseconds and the fuzzer's
/// memory stays low.
fn small_limits() {
    input::set_limits(Limits::from_mb(8));
}

fn text_ok(what: &str, text: &str) {
    if let Some(c) = text
        .chars()
        .find(|&c| commlens::text::is_terminal_control(c))
    {
        panic!("{what}: terminal control {c:?} in text output");
    }
}

fn error_ok(what: &str, message: &str) {
    assert!(
        message.len() <= 64 * 1024,
        "{what}: a {} byte error message",
        message.len()
    );
}

pub fn read(data: &[u8]) {
    small_limits();
    match input::read(data, None) {
        Ok(dump) => {
            // What the reader accepts, the writer writes and the reader reads back.
            let written = commlens::dump_writer::write_dump(&dump);
            if let Err(e) = input::read(written.as_bytes(), None) {
                panic!("a dump read, written, then not read back: {e}");
            }
        }
        Err(e) => error_ok("read", &e.to_string()),
    }
    if let Ok(graphs) = input::graphs(data) {
        text_ok("graphs", &commlens::tracelog::graphs_text(&graphs));
        let _ = commlens::tracelog::graphs_json(&graphs);
    }
    let _ = input::holds_graph(data);
    gzipped_reads_the_same(data);
    records_agree(data);
}

/// The signature's records that the browser's worker makes from a dump's bytes
/// (`signature::records_of_dump`, without reading the dump) are, byte for byte, those that a
/// read of the same bytes hashes, whenever both are made.
fn records_agree(data: &[u8]) {
    use std::cell::RefCell;
    use std::rc::Rc;
    #[derive(Clone, Default)]
    struct Collected(Rc<RefCell<Vec<u8>>>);
    impl commlens::signature::RecordSink for Collected {
        fn restart(&mut self) {
            self.0.borrow_mut().clear();
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.borrow_mut().extend_from_slice(bytes);
        }
    }
    let Some(made) = commlens::signature::records_of_dump(data) else {
        return;
    };
    let collected = Collected::default();
    let read = commlens::signature::digest_elsewhere(Box::new(collected.clone()), || {
        input::read(data, None)
    });
    if read.is_ok() && input::holds_a_dump(data) {
        let hashed = collected.0.borrow();
        assert!(
            *hashed == made.as_bytes(),
            "records made beside the read differ from the read's:\n{}\n{}",
            String::from_utf8_lossy(&hashed),
            made
        );
    }
}

/// A gzip dump is read as it decompresses (`dump::streamed`): gzipped, any input reads exactly
/// as it does plain, errors word for word.
fn gzipped_reads_the_same(data: &[u8]) {
    use std::io::Write;
    if data.starts_with(&[0x1f, 0x8b]) || data.len() as u64 > input::limits().max_input_bytes {
        return;
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let gzipped = encoder
        .write_all(data)
        .and_then(|()| encoder.finish())
        .expect("gzip into memory");
    let plain = format!("{:?}", input::read(data, None));
    let streamed = format!("{:?}", input::read(&gzipped, None));
    assert!(
        plain == streamed,
        "gzipped reads differently:\n{plain}\n{streamed}"
    );
}

pub fn args(data: &[u8]) {
    small_limits();
    let parts = parts(data);
    let (dump, args) = match parts.as_slice() {
        [dump, args, ..] => (*dump, Some(*args)),
        [dump] => (*dump, None),
        [] => return,
    };
    if let Some(args) = args {
        if let Err(e) = commlens::parse_args_json(args) {
            error_ok("args", &e);
        }
    }
    match commlens::read_and_plan(dump, None, args) {
        Ok((graph, plan)) => {
            text_ok(
                "plan text",
                &commlens::planner::report::plan_to_text(&plan, &graph),
            );
        }
        Err(e) => error_ok("args", &e.to_string()),
    }
}

pub fn classify(data: &[u8]) {
    small_limits();
    let Ok(graph) = input::read_graph(data, None) else {
        return;
    };
    let report = commlens::identity::json::RolesReport::new(graph);
    text_ok("roles", &report.to_text());
    let _ = report.to_json();
}

pub fn plan(data: &[u8]) {
    small_limits();
    for mode in [TagMode::Dump, TagMode::Roles] {
        match commlens::read_and_plan_with(data, None, None, mode) {
            Ok(planned) => {
                text_ok("plan", &planned.to_text());
                let _ = planned.to_json();
            }
            Err(e) => error_ok("plan", &e.to_string()),
        }
    }
}

pub fn render(data: &[u8]) {
    small_limits();
    // The first bytes choose the view (width and range), the rest is the dump.
    let (view, dump) = data.split_at(data.len().min(4));
    let Ok(graph) = input::read_graph(dump, None) else {
        return;
    };
    let args = commlens::resolve_args(&graph, None);
    let Ok(plan) = commlens::plan(&graph, &args) else {
        return;
    };
    use commlens::timeline;
    let collectives = timeline::Collectives::classify(&graph);
    let timeline_input = timeline::plan_timeline(&graph, &plan, &collectives, "fuzz");
    let full = timeline::Viewport::full(timeline_input.node_count);
    let byte = |i: usize| view.get(i).copied().unwrap_or(0) as f64 / 255.0;
    let x0 = full.x0 + (full.x1 - full.x0) * byte(0);
    let x1 = x0 + (full.x1 - x0) * byte(1).max(1e-3);
    let width = 320 + (view.get(2).copied().unwrap_or(0) as u32) * 64;
    let scene = timeline::build_scene(&timeline_input, timeline::Viewport { x0, x1 }, width);
    let svg = timeline::render_svg(&scene);
    if let Some(c) = svg.chars().find(|&c| !commlens::text::is_xml_char(c)) {
        panic!("SVG holds {c:?}, which XML does not allow");
    }
    let _ = timeline::chrome_trace(&timeline_input);
}

pub fn validate(data: &[u8]) {
    use commlens::planner::validate::{validate_reports, Failure, RankReport, ReportRef};
    use commlens::PyValue;
    small_limits();
    let reports = parts(data);
    let group = "fsdp";
    let entries: Vec<ReportRef> = (0..reports.len())
        .map(|i| ReportRef {
            rank: PyValue::int(i as i128),
            file: Some(format!("rank_{i}.json")),
        })
        .collect();
    let load = |i: usize| RankReport::from_json(reports[i], group);
    match validate_reports(group, &entries, load) {
        Ok(()) => text_ok(
            "agreement",
            &commlens::planner::validate::agreement_text(group, &entries),
        ),
        Err(Failure::Load(e)) => error_ok("validate", &e),
        Err(Failure::Invalid(e)) => {
            error_ok("validate", &e.explain());
            let _ = e.to_json();
        }
    }
}

pub fn audit(data: &[u8]) {
    small_limits();
    let Some((before, after)) = before_and_after(data) else {
        return;
    };
    let (Ok(before), Ok(after)) = (
        input::read_graph(before, None),
        input::read_graph(after, None),
    ) else {
        return;
    };
    let audit = commlens::identity::audit(&before, &after);
    let report = commlens::identity::json::AuditReport {
        before,
        after,
        audit,
    };
    text_ok("audit", &report.to_text());
    let _ = report.to_json();
}

pub fn tracelog(data: &[u8]) {
    small_limits();
    let log = commlens::tracelog::TraceLog::scan(data);
    let summaries = log.summaries();
    text_ok("graphs", &commlens::tracelog::graphs_text(&summaries));
    for index in 0..log.len().min(4) {
        match log.graph(index) {
            Ok(dump) => {
                let _ = commlens::dump_writer::write_dump(&dump);
            }
            Err(e) => error_ok("tracelog", &e.to_string()),
        }
    }
    let _ = input::read(data, Some(0));
}

pub fn diff(data: &[u8]) {
    small_limits();
    let Some((before, after)) = before_and_after(data) else {
        return;
    };
    let side = |bytes: &[u8]| commlens::diff::read_side_with(bytes, None, None, TagMode::Dump);
    match (side(before), side(after)) {
        (Ok(before), Ok(after)) => {
            let diff = commlens::diff::PlanDiff::new(before, after);
            text_ok("diff", &diff.to_text());
            let _ = diff.to_json();
        }
        (Err(e), _) | (_, Err(e)) => error_ok("diff", &e.to_string()),
    }
}

pub fn cost(data: &[u8]) {
    small_limits();
    match commlens::cost_report(
        data,
        None,
        None,
        TagMode::Dump,
        commlens::cost::Hardware::default(),
    ) {
        Ok(costed) => {
            let report = costed.report();
            text_ok("cost", &report.to_text());
            let _ = report.to_json();
        }
        Err(e) => error_ok("cost", &e.to_string()),
    }
}
