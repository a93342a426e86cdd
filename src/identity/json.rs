//! The stable JSON forms of `commlens roles --json` and `commlens audit --json`, and their
//! plain-text renderings. Keys are written in a fixed order; the schemas are documented in the
//! README ("Semantic identity of collectives").

use super::{
    audit, bucket_identities, bucket_identities_on_this_thread, classify, Audit, BucketIdentity,
    Classification, CollectiveIdentity, Counts, Coverage, Diagnostic, MemoryEvent,
};
use crate::dump::{read_dump, DumpError};
use crate::graph::Graph;
use crate::pretty_json::{
    object_of, pretty_fields, push_fields, write_pretty_fields, Field, Indexed, PrettyObject,
    Printing,
};
use serde_json::{json, Map, Value};

/// The `format` tag of `roles --json`.
pub const ROLES_FORMAT: &str = "commlens.roles";
/// The `format` tag of `audit --json`.
pub const AUDIT_FORMAT: &str = "commlens.audit";
/// The schema version of both forms.
pub const SCHEMA_VERSION: i64 = 1;

fn opt(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |s| Value::String(s.to_string()))
}

/// One collective entry of `roles --json`, `depth` levels deep, as serde_json's pretty
/// printer writes it (two spaces an indentation level), its keys in their order. The
/// collectives are the report's largest part (85k entries, 95 MB at 500k nodes): written
/// straight into the text, not through serde's serializer, a scratch buffer and a UTF-8
/// check, which were most of printing them. The one definition of an entry's keys: its
/// `Value` ([`collective_value`]) is this text read back.
fn push_collective(out: &mut String, depth: usize, graph: &Graph, c: &CollectiveIdentity) {
    let mut o = PrettyObject::open(out, depth);
    o.str("node", &c.name);
    o.str("op", &c.op);
    o.str("api", c.api.as_str());
    o.str("transport", c.transport.as_str());
    o.opt_str("group", c.group.as_deref());
    o.node_names("waits", graph, &c.waits);
    o.role_source_producer(c.role.as_ref(), c.source, c.producer.as_deref());
    o.str("phase", c.phase.as_str());
    let mut evidence = o.object("phase_evidence");
    evidence.str("rule", c.phase_evidence.rule);
    evidence.str("evidence", &c.phase_evidence.detail_text(graph));
    evidence.close();
    o.bool("recomputed", c.recomputed);
    o.opt_str("rule", c.evidence.as_ref().map(|e| e.rule));
    o.opt_str(
        "evidence",
        c.evidence.as_ref().map(|e| e.detail_text(graph)).as_deref(),
    );
    match &c.heuristic {
        Some((role, ev)) => {
            let mut heuristic = o.object("heuristic");
            heuristic.str("role", role.as_str());
            heuristic.str("rule", ev.rule);
            heuristic.str("evidence", &ev.detail_text(graph));
            heuristic.close();
        }
        None => o.null("heuristic"),
    }
    match c.provenance.as_deref() {
        Some(p) => {
            let mut provenance = o.object("provenance");
            provenance.str("key", &p.key);
            provenance.strs("members", p.members.iter().map(String::as_str));
            provenance.opt_str("pass_name", p.pass_name.as_deref());
            provenance.close();
        }
        None => o.null("provenance"),
    }
    o.close();
}

/// Asks for the names that printing the collectives a few entries after `at` reads to be
/// brought into cache: its own and its waits'. A wait's name is two reads away (the node,
/// then its text), each a miss once the read is over: the node is asked for further ahead.
fn prefetch_names(graph: &Graph, collectives: &[CollectiveIdentity], at: usize) {
    use crate::hashing::prefetch;
    const AHEAD: usize = 8;
    if let Some(c) = collectives.get(at + 2 * AHEAD) {
        for &wait in c.waits.iter() {
            prefetch(&graph.node(wait).name);
        }
    }
    if let Some(c) = collectives.get(at + AHEAD) {
        prefetch(c.name.as_ptr());
        for &wait in c.waits.iter() {
            prefetch(graph.node(wait).name.as_ptr());
        }
    }
}

/// One entry of `roles --json`'s `memory_events`, as [`push_collective`] writes one.
fn push_memory_event(out: &mut String, depth: usize, e: &MemoryEvent) {
    let mut o = PrettyObject::open(out, depth);
    o.str("node", &e.name);
    o.str("comm_type", &e.comm_type);
    o.opt_str("param_name", e.param_name.as_deref());
    o.str("phase", e.phase.as_str());
    o.close();
}

/// One entry of `roles --json`'s `buckets`, as [`push_collective`] writes one. (Made as
/// `Value`s and printed on one thread, the buckets and memory events took longer than the
/// collectives, which are twice their size: 0.08 s at 500k nodes; printed through serde,
/// the buckets were the last 35 ms of `roles --json` at 500k, on one core.)
fn push_bucket(out: &mut String, depth: usize, graph: &Graph, b: &BucketIdentity) {
    let mut o = PrettyObject::open(out, depth);
    o.str("bucket_id", &b.bucket_id);
    o.node_names("members", graph, &b.members);
    o.role_source_producer(b.role.as_ref(), b.source, b.producer.as_deref());
    o.close();
}

/// The entries of `roles --json`'s objects that name nodes and say where a role came from.
trait IdentityEntries {
    /// The names of nodes `ids`, as an array of strings.
    fn node_names(&mut self, key: &str, graph: &Graph, ids: &[crate::graph::NodeId]);

    /// The `role`, `source` and `producer` entries that collectives and buckets share.
    fn role_source_producer(
        &mut self,
        role: Option<&super::Role>,
        source: Option<super::Source>,
        producer: Option<&str>,
    );
}

impl IdentityEntries for PrettyObject<'_> {
    fn node_names(&mut self, key: &str, graph: &Graph, ids: &[crate::graph::NodeId]) {
        self.strs(key, ids.iter().map(|&id| graph.node(id).name.as_str()));
    }

    fn role_source_producer(
        &mut self,
        role: Option<&super::Role>,
        source: Option<super::Source>,
        producer: Option<&str>,
    ) {
        self.opt_str("role", role.map(|r| r.as_str()));
        self.opt_str("source", source.map(|s| s.as_str()));
        self.opt_str("producer", producer);
    }
}

/// One collective entry of `roles --json` as a `Value`: [`push_collective`]'s text read back.
pub fn collective_value(graph: &Graph, c: &CollectiveIdentity) -> Value {
    let mut text = String::new();
    push_collective(&mut text, 0, graph, c);
    // The text is JSON by construction; `Null` is never reached.
    serde_json::from_str(&text).unwrap_or_default()
}

/// Items of `roles --json` printed by hand: `print(i, out, depth)` writes item `i`
/// `depth` levels deep; its `Value` is that text read back.
struct Printed<F>(F);

impl<F: Fn(usize, &mut String, usize) + Sync> Indexed for Printed<F> {
    fn value(&self, i: usize) -> Value {
        let mut text = String::new();
        (self.0)(i, &mut text, 0);
        // The text is JSON by construction; `Null` is never reached.
        serde_json::from_str(&text).unwrap_or_default()
    }

    fn push(&self, i: usize, out: &mut String, depth: usize, _: &mut Vec<u8>) {
        (self.0)(i, out, depth);
    }
}

pub fn diagnostic_value(d: &Diagnostic) -> Value {
    json!({
        "code": d.code.as_str(),
        "nodes": d.nodes,
        "rule": d.rule,
        "evidence": d.evidence,
        "message": d.message,
    })
}

fn counts_value(c: &Counts, with_unclassified: bool) -> Value {
    let mut m = Map::new();
    m.insert("explicit".into(), json!(c.explicit));
    m.insert("inferred".into(), json!(c.inferred));
    if with_unclassified {
        m.insert("unclassified".into(), json!(c.unclassified));
    }
    Value::Object(m)
}

pub fn coverage_value(c: &Coverage) -> Value {
    let mut m = Map::new();
    m.insert("total".into(), json!(c.all.total()));
    m.insert("explicit".into(), json!(c.all.explicit));
    m.insert("inferred".into(), json!(c.all.inferred));
    m.insert("unclassified".into(), json!(c.all.unclassified));
    m.insert(
        "by_role".into(),
        Value::Object(
            c.by_role
                .iter()
                .map(|(k, v)| (k.clone(), counts_value(v, false)))
                .collect(),
        ),
    );
    m.insert(
        "by_group".into(),
        Value::Object(
            c.by_group
                .iter()
                .map(|(k, v)| (k.clone(), counts_value(v, true)))
                .collect(),
        ),
    );
    Value::Object(m)
}

/// The `roles --json` object.
pub fn roles_value(
    graph: &Graph,
    c: &Classification,
    buckets: &[BucketIdentity],
    bucket_diagnostics: &[Diagnostic],
) -> Value {
    object_of(roles_fields(graph, c, buckets, bucket_diagnostics))
}

/// The entries of the `roles --json` object, in order.
fn roles_fields<'a>(
    graph: &'a Graph,
    c: &'a Classification,
    buckets: &'a [BucketIdentity],
    bucket_diagnostics: &'a [Diagnostic],
) -> Vec<(&'static str, Field<'a>)> {
    let mut fields = roles_classification_fields(graph, c);
    fields.extend(roles_plan_fields(graph, c, buckets, bucket_diagnostics));
    fields
}

/// The first entries of the `roles --json` object: those of the classification alone.
fn roles_classification_fields<'a>(
    graph: &'a Graph,
    c: &'a Classification,
) -> Vec<(&'static str, Field<'a>)> {
    vec![
        ("format", Field::Value(json!(ROLES_FORMAT))),
        ("version", Field::Value(json!(SCHEMA_VERSION))),
        (
            "collectives",
            Field::Indexed(
                c.collectives.len(),
                Box::new(Printed(|i, out: &mut String, depth| {
                    prefetch_names(graph, &c.collectives, i);
                    push_collective(out, depth, graph, &c.collectives[i])
                })),
            ),
        ),
        (
            "memory_events",
            Field::Indexed(
                c.memory_events.len(),
                Box::new(Printed(|i, out: &mut String, depth| {
                    push_memory_event(out, depth, &c.memory_events[i])
                })),
            ),
        ),
    ]
}

/// The rest of the `roles --json` object, after [`roles_classification_fields`]: those that
/// need the plan.
fn roles_plan_fields<'a>(
    graph: &'a Graph,
    c: &'a Classification,
    buckets: &'a [BucketIdentity],
    bucket_diagnostics: &'a [Diagnostic],
) -> Vec<(&'static str, Field<'a>)> {
    vec![
        (
            "buckets",
            Field::Indexed(
                buckets.len(),
                Box::new(Printed(|i, out: &mut String, depth| {
                    push_bucket(out, depth, graph, &buckets[i])
                })),
            ),
        ),
        (
            "diagnostics",
            Field::Items(Box::new(
                c.diagnostics
                    .iter()
                    .chain(bucket_diagnostics)
                    .map(diagnostic_value),
            )),
        ),
        ("coverage", Field::Value(coverage_value(&c.coverage))),
    ]
}

/// Everything `commlens roles` reports about one graph: the classification and the identity
/// of the planner's buckets (with the dump's planner arguments; none when the planner rejects
/// them).
pub struct RolesReport {
    pub graph: Graph,
    pub classification: Classification,
    pub buckets: Vec<BucketIdentity>,
    pub bucket_diagnostics: Vec<Diagnostic>,
}

impl RolesReport {
    pub fn new(graph: Graph) -> RolesReport {
        let args = crate::resolve_args(&graph, None);
        // The plan is made on a second thread while this one classifies: each took
        // 0.14-0.21 s at 500k nodes, on one core of two.
        let (plan, classification) = crate::parallel::join(
            "commlens-plan",
            || crate::planner::plan(&graph, &args).ok(),
            || classify(&graph),
        );
        RolesReport::from_parts(graph, classification, plan)
    }

    /// The report of `graph`, classified, and its plan (none when the planner rejected the
    /// dump's arguments).
    fn from_parts(
        graph: Graph,
        classification: Classification,
        plan: Option<crate::planner::BucketPlan>,
    ) -> RolesReport {
        let (buckets, bucket_diagnostics) = match plan {
            Some(plan) => bucket_identities(&graph, &classification, &plan),
            None => (Vec::new(), Vec::new()),
        };
        RolesReport {
            graph,
            classification,
            buckets,
            bucket_diagnostics,
        }
    }

    /// [`RolesReport::new`] and [`RolesReport::write_json`] at once: what needs only the
    /// classification (the collectives and memory events, most of the text) is written to
    /// `w` while the plan is still being made on a second thread. Classifying is the shorter
    /// of the two (at 500k nodes about 0.07 s against the plan's 0.11 s), and the core it
    /// left idle now prints, on this thread alone (a second printing thread would only take
    /// turns with the plan's; at 500k nodes the two end about together, after 0.08-0.1 s);
    /// the text is [`RolesReport::write_json`]'s. The second thread,
    /// its plan made, goes on to the buckets' identities (they need the classification,
    /// which is done by then) while the printing goes on: before, they were made after it,
    /// on both cores (0.03 s at 500k nodes). The report is returned once written; the first
    /// write error stops the writing and is returned.
    pub fn new_writing_json(
        graph: Graph,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<RolesReport> {
        RolesReport::new_writing(
            graph,
            w,
            |graph, classification, w| {
                crate::text::write_in_pieces(w, |out, flush| {
                    out.push('{');
                    push_fields(
                        roles_classification_fields(graph, classification),
                        true,
                        out,
                        flush,
                        // The plan is being made on the other core.
                        Printing::OneThread,
                    );
                })
            },
            |report, w| {
                crate::text::write_in_pieces(w, |out, flush| {
                    let fields = roles_plan_fields(
                        &report.graph,
                        &report.classification,
                        &report.buckets,
                        &report.bucket_diagnostics,
                    );
                    push_fields(fields, false, out, flush, Printing::TwoThreads);
                    out.push_str("\n}\n");
                })
            },
        )
    }

    /// The report made while it is written: `classified` writes what needs only the
    /// classification while the plan and then the buckets' identities are made on a second
    /// thread, and `rest` writes what follows once the report is whole
    /// ([`RolesReport::new_writing_json`], [`RolesReport::new_writing_text`]). The first
    /// write error stops the writing and is returned.
    fn new_writing(
        graph: Graph,
        w: &mut dyn std::io::Write,
        classified: impl FnOnce(&Graph, &Classification, &mut dyn std::io::Write) -> std::io::Result<()>,
        rest: impl FnOnce(&RolesReport, &mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> std::io::Result<RolesReport> {
        let args = crate::resolve_args(&graph, None);
        // Whichever thread asks first classifies; the other waits for it (in wasm, and
        // without a second thread, the two run in turn).
        let classification_once = std::sync::OnceLock::new();
        let classification = || classification_once.get_or_init(|| classify(&graph));
        let (buckets, written) = crate::parallel::join(
            "commlens-plan",
            || {
                let plan = crate::planner::plan(&graph, &args).ok()?;
                Some(bucket_identities_on_this_thread(
                    &graph,
                    classification(),
                    &plan,
                ))
            },
            || classified(&graph, classification(), &mut *w),
        );
        written?;
        let (buckets, bucket_diagnostics) = buckets.unwrap_or_default();
        let classification = match classification_once.into_inner() {
            Some(classification) => classification,
            // Not reached: the writing asked for it.
            None => classify(&graph),
        };
        let report = RolesReport {
            graph,
            classification,
            buckets,
            bucket_diagnostics,
        };
        rest(&report, w)?;
        Ok(report)
    }

    pub fn from_dump(bytes: &[u8]) -> Result<RolesReport, DumpError> {
        Ok(RolesReport::new(Graph::new(read_dump(bytes)?)))
    }

    pub fn to_json(&self) -> String {
        pretty_fields(roles_fields(
            &self.graph,
            &self.classification,
            &self.buckets,
            &self.bucket_diagnostics,
        ))
    }

    /// [`RolesReport::to_json`] written to `w` a piece at a time (at 500k nodes the text is
    /// 95 MB).
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        write_pretty_fields(
            roles_fields(
                &self.graph,
                &self.classification,
                &self.buckets,
                &self.bucket_diagnostics,
            ),
            w,
        )
    }

    /// The text form, safe for a terminal (`text::terminal_safe`).
    pub fn to_text(&self) -> String {
        crate::text::into_terminal_safe(self.text_unescaped())
    }

    fn text_unescaped(&self) -> String {
        let mut out = String::new();
        push_collective_table(&self.graph, &self.classification, &mut out, &mut |_| {});
        push_text_tail(self, &mut out);
        out
    }

    /// [`RolesReport::new`] and [`RolesReport::to_text`] at once, as
    /// [`RolesReport::new_writing_json`] does for the JSON: the table of collectives (most of
    /// the text, which needs only the classification) is written to `w` while the plan is
    /// made on a second thread, then the buckets, diagnostics and coverage. Each piece is
    /// made terminal-safe as it is written, which makes the same text as the whole made safe.
    pub fn new_writing_text(
        graph: Graph,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<RolesReport> {
        RolesReport::new_writing(
            graph,
            w,
            |graph, classification, w| {
                crate::text::write_terminal_safe_in_pieces(w, |out, flush| {
                    push_collective_table(graph, classification, out, flush);
                })
            },
            |report, w| {
                crate::text::write_terminal_safe_in_pieces(w, |out, _| push_text_tail(report, out))
            },
        )
    }
}

/// A collective's line in the text table: its cells, borrowed from the classification (the
/// evidence is rendered as its line is written).
struct TextRow<'a> {
    node: &'a str,
    transport: &'static str,
    group: &'a str,
    role: &'a str,
    source: &'static str,
    phase: &'static str,
    recomputed: bool,
    evidence: Option<&'a super::Evidence>,
}

impl TextRow<'_> {
    const RECOMPUTED: &'static str = " (recomputed)";

    fn phase_width(&self) -> usize {
        self.phase.len()
            + if self.recomputed {
                Self::RECOMPUTED.len()
            } else {
                0
            }
    }
}

/// The text form's table of collectives (a header, then a line each, the first six columns
/// padded to their widest cell), handing `out` to `flush` after each line.
fn push_collective_table(
    graph: &Graph,
    c: &Classification,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
) {
    let rows: Vec<TextRow<'_>> = c
        .collectives
        .iter()
        .map(|c| TextRow {
            node: &c.name,
            transport: c.transport.as_str(),
            group: c.group.as_deref().unwrap_or("-"),
            role: c.role.as_ref().map_or("unclassified", |r| r.as_str()),
            source: c.source.map_or("-", |s| s.as_str()),
            phase: c.phase.as_str(),
            recomputed: c.recomputed,
            evidence: c.evidence.as_ref(),
        })
        .collect();
    let header = [
        "node",
        "transport",
        "group",
        "role",
        "source",
        "phase",
        "evidence",
    ];
    let mut widths = [0; 6];
    for (w, h) in widths.iter_mut().zip(header) {
        *w = h.len();
    }
    for row in &rows {
        let cells = [row.node, row.transport, row.group, row.role, row.source];
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
        widths[5] = widths[5].max(row.phase_width());
    }
    for (i, cell) in header.iter().enumerate().take(6) {
        crate::text::push_padded(out, cell, widths[i]);
        out.push_str("  ");
    }
    out.push_str(header[6]);
    out.push('\n');
    for row in &rows {
        let cells = [row.node, row.transport, row.group, row.role, row.source];
        for (cell, &width) in cells.into_iter().zip(&widths) {
            crate::text::push_padded(out, cell, width);
            out.push_str("  ");
        }
        out.push_str(row.phase);
        if row.recomputed {
            out.push_str(TextRow::RECOMPUTED);
        }
        out.extend(std::iter::repeat_n(' ', widths[5] - row.phase_width()));
        out.push_str("  ");
        match row.evidence {
            Some(e) => {
                out.push_str(e.rule);
                out.push_str(": ");
                e.detail.render_into(graph, out);
            }
            None => out.push('-'),
        }
        out.push('\n');
        flush(out);
    }
}

/// The text form after the table: the planner's buckets of more than one collective, the
/// diagnostics and the coverage.
fn push_text_tail(report: &RolesReport, out: &mut String) {
    let g = &report.graph;
    for b in &report.buckets {
        if b.members.len() > 1 {
            out.push_str(&format!(
                "planner bucket {}: {} [{}]\n",
                b.bucket_id,
                b.role.as_ref().map(|r| r.as_str()).unwrap_or("no role"),
                b.members
                    .iter()
                    .map(|&id| g.node(id).name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let diags: Vec<&Diagnostic> = report
        .classification
        .diagnostics
        .iter()
        .chain(&report.bucket_diagnostics)
        .collect();
    out.push_str(&format!("\n{} diagnostic(s)\n", diags.len()));
    for d in diags {
        out.push_str(&format!(
            "  {}: {}\n      evidence: {}\n",
            d.code.as_str(),
            d.message,
            d.evidence
        ));
    }
    out.push_str(&coverage_text(&report.classification.coverage));
}

fn coverage_text(c: &Coverage) -> String {
    let mut out = format!(
        "\ncoverage: {} collectives: {} explicit, {} inferred, {} unclassified\n",
        c.all.total(),
        c.all.explicit,
        c.all.inferred,
        c.all.unclassified
    );
    for (role, n) in &c.by_role {
        out.push_str(&format!(
            "  role  {role}: {} explicit, {} inferred\n",
            n.explicit, n.inferred
        ));
    }
    for (group, n) in &c.by_group {
        out.push_str(&format!(
            "  group {group}: {} explicit, {} inferred, {} unclassified\n",
            n.explicit, n.inferred, n.unclassified
        ));
    }
    out
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

fn brief(c: Option<&CollectiveIdentity>) -> Value {
    match c {
        Some(c) => json!({
            "role": c.role.as_ref().map(|r| r.as_str()),
            "source": c.source.map(|s| s.as_str()),
            "producer": c.producer.as_deref(),
        }),
        None => Value::Null,
    }
}

/// The `audit --json` object.
pub fn audit_value(before: &Graph, after: &Graph, a: &Audit) -> Value {
    let mut m = Map::new();
    m.insert("format".into(), json!(AUDIT_FORMAT));
    m.insert("version".into(), json!(SCHEMA_VERSION));
    if let Some(note) = &a.unrelated {
        m.insert("note".into(), json!(note));
    }
    m.insert(
        "entries".into(),
        Value::Array(
            a.entries
                .iter()
                .map(|e| {
                    let into: Vec<String> = e
                        .into
                        .iter()
                        .map(|&id| after.node(id).name.clone())
                        .collect();
                    let mut o = Map::new();
                    o.insert("node".into(), json!(before.node(e.node).name));
                    o.insert("status".into(), json!(e.status.as_str()));
                    o.insert("into".into(), json!(into));
                    o.insert("matched_by".into(), opt(e.matched_by.as_deref()));
                    o.insert("rule".into(), opt(e.rule));
                    o.insert("before".into(), brief(a.before.get(e.node)));
                    o.insert(
                        "after".into(),
                        brief(e.into.first().and_then(|&id| a.after.get(id))),
                    );
                    Value::Object(o)
                })
                .collect(),
        ),
    );
    m.insert(
        "new".into(),
        Value::Array(
            a.new
                .iter()
                .map(|&id| {
                    let c = a.after.get(id);
                    let mut o = Map::new();
                    o.insert("node".into(), json!(after.node(id).name));
                    if let Value::Object(b) = brief(c) {
                        o.extend(b);
                    }
                    Value::Object(o)
                })
                .collect(),
        ),
    );
    m.insert(
        "after_collectives".into(),
        Value::Array(
            a.after
                .collectives
                .iter()
                .map(|c| collective_value(after, c))
                .collect(),
        ),
    );
    m.insert(
        "diagnostics".into(),
        Value::Array(a.diagnostics.iter().map(diagnostic_value).collect()),
    );
    m.insert(
        "coverage".into(),
        json!({"before": coverage_value(&a.before.coverage), "after": coverage_value(&a.after.coverage)}),
    );
    Value::Object(m)
}

/// Which of the two dumps of an audit could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditInputError {
    Before(DumpError),
    After(DumpError),
}

impl std::fmt::Display for AuditInputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditInputError::Before(e) => write!(f, "before: {e}"),
            AuditInputError::After(e) => write!(f, "after: {e}"),
        }
    }
}

/// Both graphs and their audit.
pub struct AuditReport {
    pub before: Graph,
    pub after: Graph,
    pub audit: Audit,
}

impl AuditReport {
    pub fn from_dumps(before: &[u8], after: &[u8]) -> Result<AuditReport, AuditInputError> {
        let before = Graph::new(read_dump(before).map_err(AuditInputError::Before)?);
        let after = Graph::new(read_dump(after).map_err(AuditInputError::After)?);
        let audit = audit(&before, &after);
        Ok(AuditReport {
            before,
            after,
            audit,
        })
    }

    pub fn to_json(&self) -> String {
        pretty(&audit_value(&self.before, &self.after, &self.audit))
    }

    /// The text form, safe for a terminal (`text::terminal_safe`).
    pub fn to_text(&self) -> String {
        crate::text::into_terminal_safe(self.text_unescaped())
    }

    fn text_unescaped(&self) -> String {
        let a = &self.audit;
        let mut out = String::new();
        if let Some(note) = &a.unrelated {
            out.push_str(&format!("note: {note}\n\n"));
        }
        for e in &a.entries {
            let name = &self.before.node(e.node).name;
            let into: Vec<&str> = e
                .into
                .iter()
                .map(|&id| self.after.node(id).name.as_str())
                .collect();
            let role = |c: Option<&CollectiveIdentity>| match c.and_then(|c| c.role.as_ref()) {
                Some(r) => r.as_str().to_string(),
                None => "no role".into(),
            };
            out.push_str(&format!(
                "{:<9} {name} ({}) -> {} ({}){}\n",
                e.status.as_str(),
                role(a.before.get(e.node)),
                if into.is_empty() {
                    "-".to_string()
                } else {
                    into.join(", ")
                },
                role(e.into.first().and_then(|&id| a.after.get(id))),
                e.rule.map(|r| format!(" [rule {r}]")).unwrap_or_default()
            ));
        }
        for &id in &a.new {
            out.push_str(&format!("new       {}\n", self.after.node(id).name));
        }
        out.push_str(&format!("\n{} diagnostic(s)\n", a.diagnostics.len()));
        for d in &a.diagnostics {
            out.push_str(&format!(
                "  {}: {}\n      evidence: {}\n",
                d.code.as_str(),
                d.message,
                d.evidence
            ));
        }
        out.push_str("\nbefore");
        out.push_str(&coverage_text(&a.before.coverage));
        out.push_str("\nafter");
        out.push_str(&coverage_text(&a.after.coverage));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthetic_dump, SynthSpec};

    /// The entries printed by hand (collectives, memory events, buckets) are serde_json's
    /// pretty text of their values at every depth: collectives with and without waits,
    /// heuristics and provenance, buckets with members, and memory events.
    #[test]
    fn printed_entries_are_serdes_pretty_text() {
        fn check(print: &dyn Fn(&mut String, usize)) {
            let mut text = String::new();
            print(&mut text, 0);
            let value: Value = serde_json::from_str(&text).expect("JSON");
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for depth in [0, 2, 17] {
                let mut out = String::new();
                print(&mut out, depth);
                let indent = "  ".repeat(depth);
                assert_eq!(out, pretty.replace('\n', &format!("\n{indent}")));
            }
        }
        let (mut collectives, mut events, mut buckets) = (0, 0, 0);
        for text in [
            synthetic_dump(SynthSpec::with_nodes(600)),
            include_str!("../../examples/mlp_fsdp.json").to_string(),
            include_str!(
                "../../tests/fixtures/identity/cases/bucketing_inferred_members.after.json"
            )
            .to_string(),
        ] {
            let report = RolesReport::new(Graph::new(read_dump(text.as_bytes()).unwrap()));
            let graph = &report.graph;
            for c in &report.classification.collectives {
                check(&|out, depth| push_collective(out, depth, graph, c));
                collectives += 1;
            }
            for e in &report.classification.memory_events {
                check(&|out, depth| push_memory_event(out, depth, e));
                events += 1;
            }
            for b in &report.buckets {
                check(&|out, depth| push_bucket(out, depth, graph, b));
                buckets += 1;
            }
        }
        assert!(
            collectives > 50 && events > 0 && buckets > 0,
            "{collectives} collectives, {events} memory events, {buckets} buckets"
        );
    }

    /// The text written while planning, a piece at a time, is `to_text`'s, terminal-safe
    /// escapes included (a collective named with ESC and a screen-clearing sequence).
    #[test]
    fn streamed_roles_text_equals_the_whole_text() {
        let mlp = include_str!("../../examples/mlp_fsdp.json");
        let hostile = mlp.replace(
            "\"all_gather_into_tensor_1\"",
            "\"all_gather_into_tensor_1\\u001b[2J\"",
        );
        assert_ne!(hostile, mlp);
        for text in [
            synthetic_dump(SynthSpec::with_nodes(3000)),
            mlp.to_string(),
            hostile,
        ] {
            let report = RolesReport::new(Graph::new(read_dump(text.as_bytes()).unwrap()));
            let whole = report.to_text();
            let mut written = Vec::new();
            let graph = Graph::new(read_dump(text.as_bytes()).unwrap());
            let made = RolesReport::new_writing_text(graph, &mut written).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), whole);
            assert_eq!(made.to_text(), whole);
            assert!(!whole.contains('\u{1b}'));
            if text.contains("\\u001b") {
                assert!(whole.contains("all_gather_into_tensor_1\\u{1b}[2J"));
            }
        }
    }

    /// The report written a piece at a time equals the whole value printed.
    #[test]
    fn streamed_roles_equal_the_whole_value() {
        for text in [
            synthetic_dump(SynthSpec::with_nodes(3000)),
            include_str!("../../examples/mlp_fsdp.json").to_string(),
        ] {
            let report = RolesReport::new(Graph::new(read_dump(text.as_bytes()).unwrap()));
            let whole = roles_value(
                &report.graph,
                &report.classification,
                &report.buckets,
                &report.bucket_diagnostics,
            );
            assert!(!report.classification.collectives.is_empty());
            assert_eq!(report.to_json(), pretty(&whole));
            let mut written = Vec::new();
            report.write_json(&mut written).unwrap();
            assert_eq!(written, pretty(&whole).into_bytes());
            // Written while planning: the same text, and the same report.
            let mut while_planning = Vec::new();
            let graph = Graph::new(read_dump(text.as_bytes()).unwrap());
            let made = RolesReport::new_writing_json(graph, &mut while_planning).unwrap();
            assert_eq!(while_planning, written);
            assert_eq!(made.to_json(), report.to_json());
        }
    }
}
