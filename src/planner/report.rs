//! The plan report (`BucketPlan.to_dict()`), the graph signature and group digests,
//! byte-compatible with the Python reference (`validate_group_plans` is in `validate.rs`).

use super::{Bucket, BucketPlan, Candidate, CollectiveKind};
use crate::graph::{Graph, NodeId};
use crate::pyjson;
use crate::value::{Key, PyValue};
use indexmap::IndexMap;
use std::ops::Range;

fn dict<const N: usize>(entries: [(&str, PyValue); N]) -> PyValue {
    PyValue::Dict(
        entries
            .into_iter()
            .map(|(k, v)| (Key::from(k), v))
            .collect::<indexmap::IndexMap<_, _>>()
            .into(),
    )
}

fn str_list(items: &[String]) -> PyValue {
    PyValue::List(items.iter().cloned().map(PyValue::Str).collect())
}

fn int_list(items: &[i128]) -> PyValue {
    PyValue::List(items.iter().map(|&i| PyValue::int(i)).collect())
}

/// A `u128` as Python's `int`, clamped to what `PyValue::Int` holds.
fn clamped(value: u128) -> i128 {
    value.min(i128::MAX as u128) as i128
}

fn uint(value: u128) -> PyValue {
    PyValue::int(clamped(value))
}

fn json_bool(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// `Candidate.describe()`.
pub fn describe_candidate(candidate: &Candidate) -> PyValue {
    dict([
        ("param_name", PyValue::Str(candidate.param_name.to_string())),
        ("state_idx", PyValue::int(candidate.state_idx)),
        ("kind", PyValue::Str(candidate.key.kind.as_str().into())),
        ("backward", PyValue::Bool(candidate.key.backward)),
        ("scope", PyValue::Str(candidate.key.scope.to_string())),
        ("module_fqns", str_list(&candidate.module_fqns)),
        ("group", PyValue::Str(candidate.key.group.to_string())),
        ("ranks", int_list(&candidate.key.ranks)),
        ("dtype", PyValue::Str(candidate.key.dtype.to_string())),
        ("device_type", PyValue::Str(candidate.device_type().into())),
        ("input_shape", int_list(&candidate.input_shape)),
        ("output_shape", int_list(&candidate.output_shape)),
        (
            "reduce_op",
            candidate
                .key
                .reduce_op
                .map_or(PyValue::None, |op| PyValue::Str(op.to_string())),
        ),
    ])
}

/// `Bucket.describe()`: packed offsets, bytes and scheduling bounds.
pub fn describe_bucket(bucket: &Bucket) -> PyValue {
    let mut offset: u128 = 0;
    let mut members = Vec::with_capacity(bucket.members.len());
    for member in &bucket.members {
        let local_numel = member.local_numel();
        let PyValue::Dict(mut described) = describe_candidate(member) else {
            unreachable!("describe_candidate returns a dict")
        };
        let described_mut = std::sync::Arc::make_mut(&mut described);
        described_mut.insert("local_offset".into(), uint(offset));
        described_mut.insert("local_numel".into(), uint(local_numel));
        members.push(PyValue::Dict(described));
        offset = offset.saturating_add(local_numel);
    }
    dict([
        ("bucket_id", PyValue::Str(bucket.bucket_id.text())),
        (
            "rewrite_supported",
            PyValue::Bool(bucket.supports_rs_rewrite() || bucket.supports_ag_rewrite()),
        ),
        ("members", PyValue::List(members)),
        ("size_bytes", uint(bucket.size_bytes())),
        ("latest_input", PyValue::int(bucket.latest_input() as i128)),
        (
            "earliest_consumer",
            PyValue::int(bucket.earliest_consumer() as i128),
        ),
        ("fusable", PyValue::Bool(bucket.fusable())),
    ])
}

/// [`describe_candidate`] (with `local_offset` and `local_numel` when given, as
/// [`describe_bucket`]'s members have) written straight to `out` at `level`: the report's and
/// the digests' hot path, byte-identical to writing the value (tested below).
fn write_candidate(
    out: &mut String,
    candidate: &Candidate,
    local: Option<(u128, u128)>,
    indent: Option<usize>,
    level: usize,
) {
    let mut o = pyjson::ObjectWriter::new(out, indent, level);
    let inner = o.inner();
    let key = &candidate.key;
    o.key("backward").push_str(json_bool(key.backward));
    pyjson::write_string(o.key("device_type"), candidate.device_type());
    pyjson::write_string(o.key("dtype"), key.dtype);
    pyjson::write_string(o.key("group"), &key.group);
    write_ints(o.key("input_shape"), &candidate.input_shape, indent, inner);
    pyjson::write_string(o.key("kind"), key.kind.as_str());
    if let Some((offset, numel)) = local {
        pyjson::write_int(o.key("local_numel"), clamped(numel));
        pyjson::write_int(o.key("local_offset"), clamped(offset));
    }
    pyjson::write_list_with(
        o.key("module_fqns"),
        candidate.module_fqns.iter(),
        indent,
        inner,
        |out, s| pyjson::write_string(out, s),
    );
    write_ints(
        o.key("output_shape"),
        &candidate.output_shape,
        indent,
        inner,
    );
    pyjson::write_string(o.key("param_name"), &candidate.param_name);
    write_ints(o.key("ranks"), &key.ranks, indent, inner);
    match &key.reduce_op {
        Some(op) => pyjson::write_string(o.key("reduce_op"), op),
        None => o.key("reduce_op").push_str("null"),
    }
    pyjson::write_string(o.key("scope"), &key.scope);
    pyjson::write_int(o.key("state_idx"), candidate.state_idx);
    o.end();
}

fn write_ints(out: &mut String, items: &[i128], indent: Option<usize>, level: usize) {
    pyjson::write_list_with(out, items.iter(), indent, level, |out, &i| {
        pyjson::write_int(out, i)
    });
}

/// [`describe_bucket`] written straight to `out` at `level` of the indented layout.
fn write_bucket(out: &mut String, bucket: &Bucket, level: usize) {
    let indent = Some(1);
    let mut o = pyjson::ObjectWriter::new(out, indent, level);
    let inner = o.inner();
    pyjson::write_string(o.key("bucket_id"), &bucket.bucket_id.text());
    pyjson::write_int(
        o.key("earliest_consumer"),
        bucket.earliest_consumer() as i128,
    );
    o.key("fusable").push_str(json_bool(bucket.fusable()));
    pyjson::write_int(o.key("latest_input"), bucket.latest_input() as i128);
    let mut offset: u128 = 0;
    pyjson::write_list_with(
        o.key("members"),
        &bucket.members,
        indent,
        inner,
        |out, m| {
            let numel = m.local_numel();
            write_candidate(out, m, Some((offset, numel)), indent, inner + 1);
            offset = offset.saturating_add(numel);
        },
    );
    o.key("rewrite_supported").push_str(json_bool(
        bucket.supports_rs_rewrite() || bucket.supports_ag_rewrite(),
    ));
    pyjson::write_int(o.key("size_bytes"), clamped(bucket.size_bytes()));
    o.end();
}

/// [`describe_decision`] written straight to `out` at `level` of the indented layout.
fn write_decision(out: &mut String, d: &super::Decision, graph: &Graph, level: usize) {
    let mut o = pyjson::ObjectWriter::new(out, Some(1), level);
    pyjson::write_string(o.key("action"), d.action.as_str());
    pyjson::write_string(o.key("node"), &graph.node(d.node).name);
    if let Some(previous) = d.previous_node {
        pyjson::write_string(o.key("previous_node"), &graph.node(previous).name);
    }
    pyjson::write_string(o.key("reason"), d.reason.as_str());
    o.end();
}

/// Asks for what the wire records after the `at`th read to be brought into cache: each
/// record's node and its decoded metadata entries lie wherever the reader put them, and
/// writing the records otherwise waits for memory at each (a few milliseconds at 500k nodes,
/// on the thread that ends a `plan` run). A node's `Meta` is asked for 16 records ahead, and
/// the entries it points to, by then in cache, 8 ahead.
fn prefetch_wire_records(records: &[super::WireRecord], at: usize, graph: &Graph) {
    const NODE_AHEAD: usize = 16;
    if let Some(record) = records.get(at + NODE_AHEAD) {
        crate::hashing::prefetch(&graph.node(record.node).meta);
    }
    if let Some(record) = records.get(at + NODE_AHEAD / 2) {
        graph.node(record.node).meta.prefetch_entries();
    }
}

/// [`super::WireRecord::to_value`] written straight to `out` in [`pyjson::dumps`]'s layout.
fn write_wire_record(out: &mut String, record: &super::WireRecord, graph: &Graph) {
    let node = graph.node(record.node);
    let meta = |out: &mut String, key: &str| match node.meta(key) {
        Some(v) => pyjson::write_compact(out, v),
        None => out.push_str("null"),
    };
    out.push('[');
    meta(out, "comm_type");
    out.push_str(", ");
    meta(out, "param_name");
    out.push_str(", ");
    meta(out, "state_idx");
    out.push_str(", ");
    // The bucket spec with its device reduced to the device type.
    let mut entries: Vec<(&str, &PyValue)> = match node.meta("fsdp_bucket_spec") {
        Some(PyValue::Dict(map)) => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        _ => Vec::new(),
    };
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        pyjson::write_string(out, key);
        out.push_str(": ");
        if *key == "device" {
            let text = value.py_str();
            pyjson::write_string(out, text.split(':').next().unwrap_or_default());
        } else {
            pyjson::write_compact(out, value);
        }
    }
    out.push_str("}, ");
    let is_rs = node.meta_str("comm_type") == Some(CollectiveKind::ReduceScatter.as_str());
    if is_rs && node.args.len() > 1 {
        pyjson::write_compact(out, &node.args[1]);
    } else {
        out.push_str("null");
    }
    out.push(']');
}

/// `BucketPlan.group_digest(group)`: layout and order for one process group, without
/// rank-local device indices. The JSON is hashed as it is written, a bucket at a time.
pub fn group_digest(plan: &BucketPlan, graph: &Graph, group: &str) -> String {
    group_digest_with(plan, graph, group, None)
}

/// [`group_digest`], with the wire records taken from `written` where it has them.
fn group_digest_with(
    plan: &BucketPlan,
    graph: &Graph,
    group: &str,
    written: Option<&WireRecordTexts>,
) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let flush = |hasher: &mut sha2::Sha256, text: &mut String| {
        if text.len() >= 1 << 15 {
            hasher.update(text.as_bytes());
            text.clear();
        }
    };
    let mut text = String::with_capacity(1 << 16);
    let ranks = plan
        .group_ranks
        .get(group)
        .map(|r| int_list(r))
        .unwrap_or(PyValue::None);
    // `[ranks, layouts, wire]` as `pyjson::dumps` writes it.
    text.push('[');
    text.push_str(&pyjson::dumps(&ranks));
    text.push_str(", ");
    let layouts = plan
        .buckets
        .iter()
        .filter(|b| b.members.first().is_some_and(|m| &*m.key.group == group));
    pyjson::write_list_with(&mut text, layouts, None, 0, |out, b| {
        pyjson::write_list_with(out, &b.members, None, 1, |out, m| {
            write_candidate(out, m, None, None, 2)
        });
        flush(&mut hasher, out);
    });
    text.push_str(", ");
    let records = plan
        .wire_collectives
        .get(group)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // The records written ahead are hashed as they are; the rest are written here.
    let (spans, rest) = match written {
        Some(written) => written.spans_of_first(records),
        None => (Vec::new(), 0),
    };
    text.push('[');
    if let (Some(written), false) = (written, spans.is_empty()) {
        hasher.update(text.as_bytes());
        text.clear();
        written.hash_items(&mut hasher, &spans);
        if rest < records.len() {
            text.push_str(", ");
        }
    }
    for (i, record) in records.iter().enumerate().skip(rest) {
        if i > rest {
            text.push_str(", ");
        }
        prefetch_wire_records(records, i, graph);
        write_wire_record(&mut text, record, graph);
        flush(&mut hasher, &mut text);
    }
    text.push(']');
    text.push(']');
    hasher.update(text.as_bytes());
    pyjson::hex(&hasher.finalize())
}

/// The wire records of a graph's tagged collectives, written before the plan says which
/// groups hold them: natively, `commlens plan` writes them on the second core while this one
/// plans (it is otherwise idle then), as many as it can until the plan is made, and the group
/// digests hash them as they are and write the rest. Written after the plan, they were half
/// of the digests' thread, which ended the run 15-30 ms after the report's text at 500k
/// nodes (docs/performance.md).
pub struct WireRecordTexts {
    /// The records in graph order, `", "` between them.
    text: String,
    /// Each record's node and where its text ends (it starts two bytes after the previous
    /// record's end, or at 0).
    ends: Vec<(NodeId, usize)>,
}

impl WireRecordTexts {
    /// The wire records of `nodes` (in graph order), as the digests write them, until `stop`
    /// is set: the first of them, then (checked every few records).
    pub fn new_until(
        graph: &Graph,
        nodes: &[NodeId],
        stop: &std::sync::atomic::AtomicBool,
    ) -> WireRecordTexts {
        const CHECK_EVERY: usize = 64;
        let records: Vec<super::WireRecord> = nodes
            .iter()
            .map(|&node| super::WireRecord { node })
            .collect();
        // About 250 bytes a record on the exporter's dumps.
        let mut text = String::with_capacity(records.len() * 256);
        let mut ends = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            if i % CHECK_EVERY == 0 && stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            if i > 0 {
                text.push_str(", ");
            }
            prefetch_wire_records(&records, i, graph);
            write_wire_record(&mut text, record, graph);
            ends.push((record.node, text.len()));
        }
        WireRecordTexts { text, ends }
    }

    /// Where the texts of the first of `records` lie, as many as were written (the records
    /// of a group are in graph order, as these are), and how many that is.
    fn spans_of_first(&self, records: &[super::WireRecord]) -> (Vec<Range<usize>>, usize) {
        let mut spans = Vec::with_capacity(records.len());
        for record in records {
            // In graph order, so by node.
            let Ok(found) = self
                .ends
                .binary_search_by_key(&record.node, |&(node, _)| node)
            else {
                break;
            };
            let start = match found {
                0 => 0,
                _ => self.ends[found - 1].1 + 2,
            };
            spans.push(start..self.ends[found].1);
        }
        let count = spans.len();
        (spans, count)
    }

    /// Hashes the records at `spans` with `", "` between them (a list's items, as
    /// [`pyjson::write_list_with`] writes them): records that follow each other here are
    /// hashed with the separator between them, at once.
    fn hash_items(&self, hasher: &mut sha2::Sha256, spans: &[Range<usize>]) {
        use sha2::Digest;
        let Some(first) = spans.first() else { return };
        let mut run = first.clone();
        for span in &spans[1..] {
            if span.start == run.end + 2 {
                run.end = span.end;
            } else {
                hasher.update(&self.text.as_bytes()[run]);
                hasher.update(b", ");
                run = span.clone();
            }
        }
        hasher.update(&self.text.as_bytes()[run]);
    }
}

/// One decision of `BucketPlan.to_dict()`, with node names.
fn describe_decision(d: &super::Decision, graph: &Graph) -> PyValue {
    let name = |id: usize| PyValue::Str(graph.node(id).name.clone());
    let mut map = IndexMap::new();
    map.insert(Key::from("node"), name(d.node));
    if let Some(previous) = d.previous_node {
        map.insert(Key::from("previous_node"), name(previous));
    }
    map.insert(Key::from("action"), PyValue::Str(d.action.as_str().into()));
    map.insert(Key::from("reason"), PyValue::Str(d.reason.as_str().into()));
    PyValue::Dict(std::sync::Arc::new(map))
}

/// `BucketPlan.to_dict()` with node names for decisions.
pub fn plan_to_value(plan: &BucketPlan, graph: &Graph) -> PyValue {
    let mut value = plan_to_value_without_lists(plan, graph);
    if let PyValue::Dict(map) = &mut value {
        let map = std::sync::Arc::make_mut(map);
        let buckets = plan.buckets.iter().map(describe_bucket).collect();
        let decisions = plan
            .decisions
            .iter()
            .map(|d| describe_decision(d, graph))
            .collect();
        map.insert(Key::from("buckets"), PyValue::List(buckets));
        map.insert(Key::from("decisions"), PyValue::List(decisions));
    }
    value
}

/// [`plan_to_value`] without its two long lists, `buckets` and `decisions`.
fn plan_to_value_without_lists(plan: &BucketPlan, graph: &Graph) -> PyValue {
    plan_to_value_with_digests(plan, group_digests(plan, graph, None))
}

/// `{group: group_digest(group)}` for every group of the plan.
fn group_digests(plan: &BucketPlan, graph: &Graph, written: Option<&WireRecordTexts>) -> PyValue {
    PyValue::Dict(
        plan.group_ranks
            .keys()
            .map(|g| {
                let digest = group_digest_with(plan, graph, g, written);
                (Key::from(g), PyValue::Str(digest))
            })
            .collect::<indexmap::IndexMap<_, _>>()
            .into(),
    )
}

/// [`plan_to_value_without_lists`] with its `group_digests` given.
fn plan_to_value_with_digests(plan: &BucketPlan, group_digests: PyValue) -> PyValue {
    let summary = &plan.summary;
    let reason_counts = PyValue::Dict(
        summary
            .reason_counts
            .iter()
            .map(|(action, counts)| {
                (
                    Key::from(action.as_str()),
                    PyValue::Dict(
                        counts
                            .iter()
                            .map(|(r, n)| (Key::from(r.as_str()), PyValue::int(*n as i128)))
                            .collect::<indexmap::IndexMap<_, _>>()
                            .into(),
                    ),
                )
            })
            .collect::<indexmap::IndexMap<_, _>>()
            .into(),
    );
    let count = |n: usize| PyValue::int(n as i128);
    let summary_value = dict([
        ("tagged_collectives", count(summary.tagged_collectives)),
        ("selected_parameters", count(summary.selected_parameters)),
        ("selected_collectives", count(summary.selected_collectives)),
        (
            "candidate_collectives",
            count(summary.candidate_collectives),
        ),
        ("buckets", count(summary.buckets)),
        ("singletons", count(summary.singletons)),
        (
            "rs_rewrite_candidates",
            count(summary.rs_rewrite_candidates),
        ),
        (
            "ag_rewrite_candidates",
            count(summary.ag_rewrite_candidates),
        ),
        ("reason_counts", reason_counts),
        (
            "unmatched_module_paths",
            str_list(&summary.unmatched_module_paths),
        ),
    ]);
    let module_bucket_plans = match &plan.module_bucket_plans {
        None => PyValue::None,
        Some(groups) => PyValue::List(groups.iter().map(|g| str_list(g)).collect()),
    };
    let group_ranks = PyValue::Dict(
        plan.group_ranks
            .iter()
            .map(|(g, ranks)| (Key::from(g), int_list(ranks)))
            .collect::<indexmap::IndexMap<_, _>>()
            .into(),
    );
    dict([
        ("summary", summary_value),
        ("signature", PyValue::Str(plan.signature.clone())),
        ("module_bucket_plans", module_bucket_plans),
        ("group_ranks", group_ranks),
        ("group_digests", group_digests),
    ])
}

/// The report as the CLI prints it: `json.dumps(to_dict(), indent=1, sort_keys=True)` and a
/// newline, the layout of the conformance corpus's `plan.json`. Written a bucket and a
/// decision at a time: the whole [`plan_to_value`] of a large plan takes several times the
/// report's size.
pub fn plan_to_json(plan: &BucketPlan, graph: &Graph) -> String {
    plan_to_json_with(plan, graph, None)
}

/// [`plan_to_json`], with the wire records taken from `written` where it has them.
pub fn plan_to_json_with(
    plan: &BucketPlan,
    graph: &Graph,
    written: Option<&WireRecordTexts>,
) -> String {
    let mut out = String::with_capacity(plan.buckets.len() * 1024 + plan.decisions.len() * 128);
    write_report(plan, graph, written, &mut out, &mut |_| {});
    out
}

/// [`plan_to_json`] written to `w` a piece at a time, so that the report is never held whole
/// (at 500k nodes it is 66 MB).
pub fn write_plan_json(
    plan: &BucketPlan,
    graph: &Graph,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    write_plan_json_with(plan, graph, None, w)
}

/// [`write_plan_json`], with the wire records taken from `written` where it has them.
pub fn write_plan_json_with(
    plan: &BucketPlan,
    graph: &Graph,
    written: Option<&WireRecordTexts>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    crate::text::write_in_pieces(w, |out, flush| {
        write_report(plan, graph, written, out, flush)
    })
}

/// The report's text into `out`; `flush` sees it after each bucket and decision.
///
/// The group digests hash the buckets and wire records again (a sixth of a whole `plan` run at
/// 500k nodes, docs/performance.md); natively a second thread hashes them while this one
/// writes the buckets and decisions, which the report holds before them.
fn write_report(
    plan: &BucketPlan,
    graph: &Graph,
    written: Option<&WireRecordTexts>,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
) {
    #[cfg(not(target_arch = "wasm32"))]
    std::thread::scope(|scope| {
        let hashing = std::thread::Builder::new()
            .name("commlens-digests".into())
            .spawn_scoped(scope, || group_digests(plan, graph, written));
        write_report_with(plan, graph, out, flush, || {
            hashing
                .ok()
                .and_then(|thread| thread.join().ok())
                .unwrap_or_else(|| group_digests(plan, graph, written))
        })
    });
    #[cfg(target_arch = "wasm32")]
    write_report_with(plan, graph, out, flush, || {
        group_digests(plan, graph, written)
    });
}

/// [`write_report`] with the group digests from `digests`, asked for when they are written.
fn write_report_with(
    plan: &BucketPlan,
    graph: &Graph,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
    digests: impl FnOnce() -> PyValue,
) {
    let PyValue::Dict(mut top) = plan_to_value_with_digests(plan, PyValue::None) else {
        unreachable!("plan_to_value_with_digests returns a dict")
    };
    let top = std::sync::Arc::make_mut(&mut top);
    top.insert(Key::from("buckets"), PyValue::None);
    top.insert(Key::from("decisions"), PyValue::None);
    top.sort_unstable_keys();
    let mut digests = Some(digests);
    out.push('{');
    for (i, (key, value)) in top.iter().enumerate() {
        pyjson::write_indented_key(out, key, i == 0, 0);
        match key.as_str() {
            "group_digests" => {
                let value = digests.take().map(|f| f()).unwrap_or(PyValue::None);
                pyjson::write_indented(out, &value, 1)
            }
            "buckets" => write_buckets(out, &plan.buckets, flush),
            "decisions" => {
                pyjson::write_list_with(&mut *out, &plan.decisions, Some(1), 1, |out, d| {
                    write_decision(out, d, graph, 2);
                    flush(out);
                })
            }
            _ => pyjson::write_indented(out, value, 1),
        }
    }
    out.push_str("\n}\n");
}

/// The report's `buckets` list (at its level, 1), `flush` seeing the text as it grows.
///
/// The buckets are most of a report (56 of its 66 MB at 500k nodes). Natively the second part
/// of a long list ([`halfway`]) is written on another thread while this one writes the first
/// (and the group digests hash on a third), and joined after: the other core was otherwise
/// idle for most of the report's writing, the run's last 100 ms at 500k nodes.
fn write_buckets(out: &mut String, buckets: &[Bucket], flush: &mut dyn FnMut(&mut String)) {
    let indent = Some(1);
    let write_part =
        |out: &mut String, part: &[Bucket], first: bool, flush: &mut dyn FnMut(&mut String)| {
            for (i, bucket) in part.iter().enumerate() {
                pyjson::start_list_item(out, indent, 1, first && i == 0);
                write_bucket(out, bucket, 2);
                flush(out);
            }
        };
    #[cfg(not(target_arch = "wasm32"))]
    if buckets.len() >= SPLIT_BUCKETS_FROM {
        let (head, tail) = buckets.split_at(halfway(buckets));
        std::thread::scope(|scope| {
            let written = std::thread::Builder::new()
                .name("commlens-report".into())
                .spawn_scoped(scope, || tail_in_pieces(tail));
            write_part(out, head, true, flush);
            match written.ok().and_then(|thread| thread.join().ok()) {
                Some(pieces) => {
                    for piece in pieces {
                        out.push_str(&piece);
                        flush(out);
                    }
                }
                None => write_part(out, tail, false, flush),
            }
        });
        pyjson::end_list(out, indent, 1, true);
        return;
    }
    write_part(out, buckets, true, flush);
    pyjson::end_list(out, indent, 1, !buckets.is_empty());
}

/// A list this long is written in two halves ([`write_buckets`]); a short one is not worth a
/// thread.
#[cfg(not(target_arch = "wasm32"))]
const SPLIT_BUCKETS_FROM: usize = 2048;

/// Where a list of buckets is cut in two, by their text (a bucket's grows with its members):
/// a little before the middle, since this thread also writes the decisions and copies the
/// second part in, while the other shares its core with the digests' thread. (Cut at 2/5,
/// this thread waited for the other at 500k nodes; at 1/2, the other ended first.)
#[cfg(not(target_arch = "wasm32"))]
fn halfway(buckets: &[Bucket]) -> usize {
    let weight = |b: &Bucket| b.members.len() + 1;
    let half = buckets.iter().map(weight).sum::<usize>() * 9 / 20;
    let mut seen = 0;
    buckets
        .iter()
        .position(|b| {
            seen += weight(b);
            seen > half
        })
        .unwrap_or(buckets.len())
}

/// The text of `tail`, the second part of the buckets' list, in pieces of about 1 MiB: the
/// thread that joins them copies each into its report buffer, which stays small, instead of
/// growing it to hold the whole part.
#[cfg(not(target_arch = "wasm32"))]
fn tail_in_pieces(tail: &[Bucket]) -> Vec<String> {
    const PIECE: usize = 1 << 20;
    let mut pieces = Vec::new();
    let mut text = String::with_capacity(PIECE + (PIECE >> 2));
    for bucket in tail {
        pyjson::start_list_item(&mut text, Some(1), 1, false);
        write_bucket(&mut text, bucket, 2);
        if text.len() >= PIECE {
            let full = std::mem::replace(&mut text, String::with_capacity(PIECE + (PIECE >> 2)));
            pieces.push(full);
        }
    }
    pieces.push(text);
    pieces
}

pub use crate::signature::{graph_signature, python_strings, SignatureHasher};

pub use super::validate::{validate_group_plans, ValidationError};

/// A plan in plain words, for terminals, CI logs and review docs: every bucket with its
/// members and window, every decision with what its reason means.
/// Safe for a terminal (`text::terminal_safe`).
pub fn plan_to_text(plan: &BucketPlan, graph: &Graph) -> String {
    crate::text::into_terminal_safe(plan_to_text_unescaped(plan, graph))
}

fn plan_to_text_unescaped(plan: &BucketPlan, graph: &Graph) -> String {
    use std::fmt::Write;
    let name = |id: usize| graph.node(id).name.as_str();
    let s = &plan.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "plan of {} nodes (signature {}): {} buckets, {} singletons, from {} candidates of {} tagged collectives",
        graph.len(),
        &plan.signature[..12],
        s.buckets,
        s.singletons,
        s.candidate_collectives,
        s.tagged_collectives
    );
    for bucket in &plan.buckets {
        let first = &bucket.members[0];
        let _ = writeln!(
            out,
            "bucket {}: {} {} on {} (ranks {:?}), scope {}, {} member{}, {} bytes, window {} -> {}{}",
            bucket.bucket_id,
            first.key.kind.as_str(),
            if first.key.backward { "backward" } else { "forward" },
            first.key.group,
            first.key.ranks,
            first.key.scope,
            bucket.members.len(),
            if bucket.members.len() == 1 { "" } else { "s" },
            bucket.size_bytes(),
            bucket.latest_input(),
            bucket.earliest_consumer(),
            if bucket.fusable() { "" } else { " (singleton)" }
        );
        for member in &bucket.members {
            let _ = writeln!(
                out,
                "  {} {} #{} {:?} -> {:?} {}",
                name(member.launch),
                member.param_name,
                member.state_idx,
                member.input_shape,
                member.output_shape,
                member.key.dtype
            );
        }
    }
    for decision in &plan.decisions {
        let subject = match decision.previous_node {
            Some(previous) => format!("{} from {}", name(decision.node), name(previous)),
            None => name(decision.node).to_string(),
        };
        let _ = writeln!(
            out,
            "{} {}: {}: {}",
            decision.action.as_str(),
            subject,
            decision.reason.as_str(),
            decision.reason.explain()
        );
    }
    if !s.unmatched_module_paths.is_empty() {
        let _ = writeln!(
            out,
            "unmatched module paths: {}",
            s.unmatched_module_paths.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthetic_dump, SynthSpec};

    /// The report and digests written piece by piece equal those of the whole value.
    #[test]
    fn streamed_report_and_digests_equal_the_whole_value() {
        // 30k nodes: natively the buckets are written in two halves, the second in more than
        // one piece (`write_buckets`).
        for nodes in [300, 5000, 30_000] {
            let text = synthetic_dump(SynthSpec::with_nodes(nodes));
            let (graph, plan) = crate::read_and_plan(text.as_bytes(), None, None).unwrap();
            assert!(!plan.buckets.is_empty() && !plan.decisions.is_empty());
            #[cfg(not(target_arch = "wasm32"))]
            if nodes == 30_000 {
                assert!(plan.buckets.len() >= SPLIT_BUCKETS_FROM);
                let tail = &plan.buckets[halfway(&plan.buckets)..];
                assert!(tail_in_pieces(tail).len() > 1);
            }
            let whole = plan_to_value(&plan, &graph);
            assert_eq!(
                plan_to_json(&plan, &graph),
                pyjson::dumps_indented(&whole) + "\n"
            );
            let mut written = Vec::new();
            write_plan_json(&plan, &graph, &mut written).unwrap();
            assert_eq!(written, plan_to_json(&plan, &graph).into_bytes());
            for group in plan.group_ranks.keys() {
                let layouts: Vec<PyValue> = plan
                    .buckets
                    .iter()
                    .filter(|b| b.members.first().is_some_and(|m| &*m.key.group == group))
                    .map(|b| PyValue::List(b.members.iter().map(describe_candidate).collect()))
                    .collect();
                let wire = plan
                    .wire_collectives
                    .get(group)
                    .map_or(Vec::new(), |records| {
                        records.iter().map(|r| r.to_value(&graph)).collect()
                    });
                let ranks = plan
                    .group_ranks
                    .get(group)
                    .map_or(PyValue::None, |r| int_list(r));
                let value = PyValue::List(vec![ranks, PyValue::List(layouts), PyValue::List(wire)]);
                assert_eq!(group_digest(&plan, &graph, group), pyjson::digest(&value));
            }
        }
        // No buckets, no decisions: the empty lists as `json.dumps` writes them.
        let text = synthetic_dump(SynthSpec::with_nodes(300));
        let (graph, plan) = crate::read_and_plan(text.as_bytes(), None, None).unwrap();
        let empty = BucketPlan {
            buckets: Vec::new(),
            decisions: Vec::new(),
            ..plan
        };
        assert_eq!(
            plan_to_json(&empty, &graph),
            pyjson::dumps_indented(&plan_to_value(&empty, &graph)) + "\n"
        );
    }

    /// The group digests are the same whoever wrote the wire records: all of them written
    /// ahead, none, the first of them (the writing stopped when the plan was made), or
    /// records a group does not keep among them; and so is the whole report.
    #[test]
    fn digests_with_wire_records_written_ahead_equal_those_written_after() {
        use std::sync::atomic::AtomicBool;
        let text = synthetic_dump(SynthSpec::with_nodes(5000));
        let (graph, plan) = crate::read_and_plan(text.as_bytes(), None, None).unwrap();
        let (group, records) = plan.wire_collectives.first().expect("a group");
        assert!(records.len() > 10, "{} records", records.len());
        let nodes: Vec<NodeId> = records.iter().map(|r| r.node).collect();
        // A group that keeps every other record of those written.
        let mut sparse = plan.clone();
        sparse.wire_collectives[0] = records.iter().copied().step_by(2).collect();
        let going = AtomicBool::new(false);
        let stopped = AtomicBool::new(true);
        let cases = [
            ("all", WireRecordTexts::new_until(&graph, &nodes, &going)),
            ("none", WireRecordTexts::new_until(&graph, &nodes, &stopped)),
            (
                "first",
                WireRecordTexts::new_until(&graph, &nodes[..7], &going),
            ),
            (
                "one",
                WireRecordTexts::new_until(&graph, &nodes[..1], &going),
            ),
            (
                "from the second",
                WireRecordTexts::new_until(&graph, &nodes[1..], &going),
            ),
        ];
        for (what, written) in &cases {
            for plan in [&plan, &sparse] {
                assert_eq!(
                    group_digest_with(plan, &graph, group, Some(written)),
                    group_digest(plan, &graph, group),
                    "{what}"
                );
            }
            assert_eq!(
                plan_to_json_with(&plan, &graph, Some(written)),
                plan_to_json(&plan, &graph),
                "{what}"
            );
        }
        let (_, wire_records) = cases[0].1.spans_of_first(records);
        assert_eq!(wire_records, records.len());
    }
}
