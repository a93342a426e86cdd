//! PyTorch's structured trace logs (`TORCH_TRACE=dir`, one log per rank) read as graphs.
//!
//! A log is a sequence of records (`torch/_logging/_internal.py`, `TorchLogsFormatter` with
//! `trace=True`): a glog-style prefix, a JSON header whose first key names the record
//! (`{"artifact": {"name": "inductor_post_grad_graph", ...}, "rank": 0, "frame_id": 0,
//! "frame_compile_id": 0, "attempt": 0, "has_payload": "<md5>"}`), then the payload, one line
//! per payload line, each prefixed by a tab. Inductor logs the graph it lowers, after its
//! post-grad passes (its own bucketing included), as the `inductor_post_grad_graph` artifact
//! (`print_readable` text, read by [`fx`]), and the order its scheduler issues collectives in
//! as `inductor_collective_schedule` (a JSON list of kernel names).
//!
//! [`TraceLog::scan`] indexes a log in one pass over its lines (headers parsed, payloads only
//! skipped); [`TraceLog::graph`] reads the chosen graph into the same [`Dump`] the dump reader
//! builds from the exporter's dump of that graph. What the text cannot say is said in notes:
//! a log has no process-group ranks, `custom` metadata values are cut at 40 characters, and a
//! node's stack is only its innermost `# File:` line.

mod expr;
pub mod fx;
pub mod print;

use crate::dump::{Dump, Node, NodeSink, Op};
use crate::value::{Key, PyValue};
use indexmap::IndexMap;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value as J;
use std::fmt;
use std::ops::Range;

pub use fx::{canonical_target, ANNOTATION_LIMIT, TRUNCATED_KEY};

/// The artifact that holds a post-grad graph.
pub const POST_GRAD_GRAPH: &str = "inductor_post_grad_graph";
/// The artifact that holds Inductor's collective issue order.
pub const COLLECTIVE_SCHEDULE: &str = "inductor_collective_schedule";
/// The per-node metadata key of a collective's position in [`COLLECTIVE_SCHEDULE`].
pub const SCHEDULE_POSITION_KEY: &str = "inductor_schedule_position";

/// Whether `bytes` (already decompressed) look like a trace log: the first line starts with a
/// glog prefix (`V1201 04:26:36.236000 20096 file.py:123] {...}`, optionally after
/// `[rank0]:`).
pub fn looks_like_trace_log(bytes: &[u8]) -> bool {
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let line = match line.strip_prefix(b"[rank") {
        Some(rest) => match rest.iter().position(|b| *b == b':') {
            Some(colon) => rest.get(colon + 1..).unwrap_or(&[]),
            None => return false,
        },
        None => line,
    };
    matches!(line.first(), Some(b'V' | b'I' | b'W' | b'E' | b'C'))
        && line
            .get(1..5)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
        && line.get(5) == Some(&b' ')
        && find(line, b"] {").is_some()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// Whether a graph is a training forward, a training backward, or an inference graph (told
/// by its inputs: AOTAutograd names them `primals_*`, `tangents_*`, or `arg*_1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphKind {
    Forward,
    Backward,
    Inference,
}

impl GraphKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GraphKind::Forward => "forward",
            GraphKind::Backward => "backward",
            GraphKind::Inference => "inference",
        }
    }

    pub(crate) fn of(nodes: &[Node]) -> GraphKind {
        let placeholders = || nodes.iter().filter(|n| n.op == Op::Placeholder);
        if placeholders().any(|n| n.name.starts_with("tangents")) {
            GraphKind::Backward
        } else if placeholders().any(|n| n.name.starts_with("primals")) {
            GraphKind::Forward
        } else {
            GraphKind::Inference
        }
    }
}

/// One post-grad graph of a log, as `commlens graphs` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphSummary {
    /// Position among the log's post-grad graphs (what `--graph K` picks).
    pub index: usize,
    /// `torch._guards.CompileId` as tlparse writes it: `0/0`, `!1/0/2`, with `_N` for a
    /// restarted attempt.
    pub compile_id: String,
    pub rank: Option<i64>,
    /// The line of the artifact's header in the log (1-based).
    pub line: usize,
    /// What was read; `Err` with the reason when the graph's text could not be read.
    pub content: Result<GraphContent, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphContent {
    pub kind: GraphKind,
    pub nodes: usize,
    pub collectives: usize,
}

impl GraphContent {
    /// What a graph of `nodes` holds.
    pub fn of(nodes: &[crate::dump::Node]) -> GraphContent {
        GraphContent {
            kind: GraphKind::of(nodes),
            nodes: nodes.len(),
            collectives: nodes
                .iter()
                .filter(|n| crate::graph::collective_op(n).is_some())
                .count(),
        }
    }
}

/// Why a trace log (or one of its graphs) could not be read. `Display` is the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceLogError {
    /// The log holds no post-grad graph; what it does hold, by record name.
    NoGraph { found: Vec<(String, usize)> },
    /// Several graphs and none chosen.
    ChooseGraph { graphs: Vec<GraphSummary> },
    /// `--graph K` beyond the last graph.
    OutOfRange {
        choice: usize,
        graphs: Vec<GraphSummary>,
    },
    /// A line of a graph's code that does not read.
    Syntax {
        line: usize,
        column: usize,
        graph: usize,
        compile_id: String,
        expected: String,
        found: String,
    },
    /// The bytes of a graph's payload are not UTF-8.
    Encoding { line: usize, graph: usize },
}

impl fmt::Display for TraceLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceLogError::NoGraph { found } => {
                write!(
                    f,
                    "invalid trace log: no {POST_GRAD_GRAPH} artifact (run with Inductor, \
                     e.g. torch.compile's default backend); the log holds "
                )?;
                if found.is_empty() {
                    f.write_str("no records")
                } else {
                    let listed: Vec<String> = found
                        .iter()
                        .map(|(name, n)| format!("{name} ×{n}"))
                        .collect();
                    f.write_str(&listed.join(", "))
                }
            }
            TraceLogError::ChooseGraph { graphs } => write!(
                f,
                "the trace log holds {} post-grad graphs; choose one with --graph K:\n{}",
                graphs.len(),
                graphs_text(graphs).trim_end()
            ),
            TraceLogError::OutOfRange { choice, graphs } => write!(
                f,
                "--graph {choice} is out of range: the trace log holds {} post-grad graph{} \
                 (0 to {}):\n{}",
                graphs.len(),
                if graphs.len() == 1 { "" } else { "s" },
                graphs.len().saturating_sub(1),
                graphs_text(graphs).trim_end()
            ),
            TraceLogError::Syntax {
                line,
                column,
                graph,
                compile_id,
                expected,
                found,
            } => write!(
                f,
                "invalid trace log: line {line}, column {column} (post-grad graph {graph}, \
                 compile {compile_id}): expected {expected}, found {found}"
            ),
            TraceLogError::Encoding { line, graph } => write!(
                f,
                "invalid trace log: line {line} (post-grad graph {graph}) is not UTF-8 text"
            ),
        }
    }
}

impl std::error::Error for TraceLogError {}

/// One record of interest: where its header and payload are.
#[derive(Clone, Debug)]
struct Record {
    /// The header's line number (1-based).
    line: usize,
    rank: Option<i64>,
    compile_id: String,
    /// Byte range of the payload lines (each still starting with its tab).
    payload: Range<usize>,
}

/// A log, indexed: its post-grad graphs, their collective schedules, and what else it holds.
pub struct TraceLog<'a> {
    text: &'a [u8],
    graphs: Vec<Record>,
    /// The collective schedule logged for each graph, if one was.
    schedules: Vec<Option<Record>>,
    /// Record names (`artifact:NAME` for artifacts) and how often each occurs.
    counts: IndexMap<String, usize>,
    /// Lines that are neither a record header nor a payload line: count and first line.
    unreadable: (usize, usize),
}

/// The header fields this reader uses.
#[derive(Default)]
struct Header {
    /// The first key: the record's name.
    name: String,
    artifact: Option<String>,
    rank: Option<i64>,
    frame_id: Option<i64>,
    frame_compile_id: Option<i64>,
    attempt: Option<i64>,
    compiled_autograd_id: Option<i64>,
}

impl Header {
    /// `CompileId` and `TraceId` as `torch._guards` writes them (tlparse agrees).
    fn compile_id(&self) -> String {
        let frame = match (self.frame_id, self.frame_compile_id) {
            (Some(f), Some(c)) => Some(format!("{f}/{c}")),
            _ => None,
        };
        let id = match (self.compiled_autograd_id, frame) {
            (Some(ca), Some(frame)) => format!("!{ca}/{frame}"),
            (Some(ca), None) => format!("!{ca}"),
            (None, Some(frame)) => frame,
            (None, None) => return "-".to_string(),
        };
        match self.attempt {
            Some(a) if a != 0 => format!("{id}_{a}"),
            _ => id,
        }
    }
}

impl<'de> de::Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Header, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a record header object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
                let mut h = Header::default();
                let mut first = true;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if first {
                        h.name = key.to_string();
                        first = false;
                    }
                    match key.as_ref() {
                        "artifact" => {
                            let meta: ArtifactMeta = map.next_value()?;
                            h.artifact = meta.name;
                        }
                        "rank" => h.rank = map.next_value::<Int>()?.0,
                        "frame_id" => h.frame_id = map.next_value::<Int>()?.0,
                        "frame_compile_id" => h.frame_compile_id = map.next_value::<Int>()?.0,
                        "attempt" => h.attempt = map.next_value::<Int>()?.0,
                        "compiled_autograd_id" => {
                            h.compiled_autograd_id = map.next_value::<Int>()?.0
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(serde::Deserialize)]
struct ArtifactMeta {
    #[serde(default)]
    name: Option<String>,
}

/// An integer field, or nothing when it is something else.
struct Int(Option<i64>);

impl<'de> de::Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Int, D::Error> {
        Ok(Int(match J::deserialize(d)? {
            J::Number(n) => n.as_i64(),
            _ => None,
        }))
    }
}

impl<'a> TraceLog<'a> {
    /// Indexes a log (decompressed bytes) in one pass over its lines.
    pub fn scan(text: &'a [u8]) -> TraceLog<'a> {
        let mut log = TraceLog {
            text,
            graphs: Vec::new(),
            schedules: Vec::new(),
            counts: IndexMap::new(),
            unreadable: (0, 0),
        };
        // The record whose payload lines follow: a graph (index) or a schedule.
        enum Open {
            None,
            Graph(usize),
            Schedule(Record),
            Other,
        }
        let mut open = Open::None;
        let mut last_graph: IndexMap<(Option<i64>, String), usize> = IndexMap::new();
        let mut start = 0;
        let mut number = 0;
        while start < text.len() {
            number += 1;
            let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
            let line = &text[start..end];
            let next = end + 1;
            if line.first() == Some(&b'\t') {
                match &mut open {
                    Open::Graph(g) => {
                        if let Some(record) = log.graphs.get_mut(*g) {
                            extend(&mut record.payload, start, end);
                        }
                    }
                    Open::Schedule(record) => extend(&mut record.payload, start, end),
                    Open::None => note_unreadable(&mut log.unreadable, number),
                    Open::Other => {}
                }
                start = next;
                continue;
            }
            if let Open::Schedule(record) = std::mem::replace(&mut open, Open::Other) {
                log.attach(record, &last_graph);
            }
            let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
            if trimmed.is_empty() {
                open = Open::None;
                start = next;
                continue;
            }
            let header = find(trimmed, b"] {")
                .and_then(|at| trimmed.get(at + 2..))
                .and_then(|json| serde_json::from_slice::<Header>(json).ok());
            let Some(header) = header else {
                note_unreadable(&mut log.unreadable, number);
                open = Open::None;
                start = next;
                continue;
            };
            let kind = match (&header.artifact, header.name.as_str()) {
                (Some(name), "artifact") => name.as_str(),
                (None, name) => name,
                (Some(_), name) => name,
            };
            let counted = match &header.artifact {
                Some(name) if header.name == "artifact" => format!("artifact {name}"),
                _ => header.name.clone(),
            };
            *log.counts.entry(counted).or_insert(0) += 1;
            let record = Record {
                line: number,
                rank: header.rank,
                compile_id: header.compile_id(),
                payload: next.min(text.len())..next.min(text.len()),
            };
            open = match kind {
                POST_GRAD_GRAPH => {
                    last_graph.insert((record.rank, record.compile_id.clone()), log.graphs.len());
                    log.graphs.push(record);
                    log.schedules.push(None);
                    Open::Graph(log.graphs.len() - 1)
                }
                COLLECTIVE_SCHEDULE => Open::Schedule(record),
                _ => Open::Other,
            };
            start = next;
        }
        if let Open::Schedule(record) = open {
            log.attach(record, &last_graph);
        }
        log
    }

    /// The first schedule after a graph of the same compile (and rank) is that graph's.
    fn attach(&mut self, record: Record, last_graph: &IndexMap<(Option<i64>, String), usize>) {
        if let Some(&g) = last_graph.get(&(record.rank, record.compile_id.clone())) {
            if let Some(slot @ None) = self.schedules.get_mut(g) {
                *slot = Some(record);
            }
        }
    }

    /// How many post-grad graphs the log holds.
    pub fn len(&self) -> usize {
        self.graphs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.graphs.is_empty()
    }

    /// Every post-grad graph, read to count its nodes and collectives.
    pub fn summaries(&self) -> Vec<GraphSummary> {
        (0..self.graphs.len())
            .map(|index| {
                let record = &self.graphs[index];
                GraphSummary {
                    index,
                    compile_id: record.compile_id.clone(),
                    rank: record.rank,
                    line: record.line,
                    content: self
                        .parse(index, &mut ())
                        .map(|(parsed, _)| GraphContent::of(&parsed.nodes))
                        .map_err(|e| e.to_string()),
                }
            })
            .collect()
    }

    /// The error for a log without graphs: what it holds instead.
    fn no_graph(&self) -> TraceLogError {
        let mut found: Vec<(String, usize)> =
            self.counts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        TraceLogError::NoGraph { found }
    }

    /// Picks a graph: `choice`, or the only one when there is one.
    pub fn choose(&self, choice: Option<usize>) -> Result<usize, TraceLogError> {
        if self.graphs.is_empty() {
            return Err(self.no_graph());
        }
        match choice {
            Some(k) if k < self.graphs.len() => Ok(k),
            Some(k) => Err(TraceLogError::OutOfRange {
                choice: k,
                graphs: self.summaries(),
            }),
            None if self.graphs.len() == 1 => Ok(0),
            None => Err(TraceLogError::ChooseGraph {
                graphs: self.summaries(),
            }),
        }
    }

    fn parse(
        &self,
        index: usize,
        sink: &mut dyn NodeSink,
    ) -> Result<(fx::ParsedGraph, &Record), TraceLogError> {
        let Some(record) = self.graphs.get(index) else {
            return Err(self.no_graph());
        };
        let bytes = self.text.get(record.payload.clone()).unwrap_or(&[]);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let before = bytes.get(..e.valid_up_to()).unwrap_or(&[]);
            TraceLogError::Encoding {
                line: record.line + 1 + memchr::memchr_iter(b'\n', before).count(),
                graph: index,
            }
        })?;
        let lines = text.split('\n').enumerate().map(|(i, line)| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            (record.line + 1 + i, line.strip_prefix('\t').unwrap_or(line))
        });
        let count = memchr::memchr_iter(b'\n', bytes).count();
        let parsed = fx::parse_graph(lines, count, sink).map_err(|e| TraceLogError::Syntax {
            line: e.line,
            column: e.column + 1,
            graph: index,
            compile_id: record.compile_id.clone(),
            expected: e.expected,
            found: e.found,
        })?;
        Ok((parsed, record))
    }

    /// Reads graph `index` into a dump: the nodes as the dump reader would build them from the
    /// exporter's dump, `source` saying where it came from (and the collective schedule), and
    /// `warnings` holding what the log could not say.
    pub fn graph(&self, index: usize) -> Result<Dump, TraceLogError> {
        self.graph_into(index, &mut ())
    }

    /// [`TraceLog::graph`], handing each node to `sink` in graph order as it is read (see
    /// [`crate::dump::read_dump_into`]). The schedule positions are added to the nodes
    /// afterwards; nothing a sink computes depends on them.
    pub fn graph_into(&self, index: usize, sink: &mut dyn NodeSink) -> Result<Dump, TraceLogError> {
        let (parsed, record) = self.parse(index, sink)?;
        let mut nodes = parsed.nodes;
        let mut notes = Vec::new();
        let mut source = serde_json::Map::new();
        source.insert("producer".into(), J::from("TORCH_TRACE log"));
        source.insert("artifact".into(), J::from(POST_GRAD_GRAPH));
        source.insert("graph".into(), J::from(index));
        source.insert("compile_id".into(), J::from(record.compile_id.clone()));
        if let Some(rank) = record.rank {
            source.insert("rank".into(), J::from(rank));
        }
        source.insert("kind".into(), J::from(GraphKind::of(&nodes).as_str()));
        source.insert("log_line".into(), J::from(record.line));

        // Group ranks are not in the log; group sizes are in the collectives' arguments.
        let groups = group_sizes(&nodes);
        if !groups.is_empty() {
            let listed: Vec<String> = groups
                .iter()
                .map(|(g, size)| match size {
                    Some(n) => format!("{g} ({n} ranks)"),
                    None => format!("{g} (size not in its collectives' arguments)"),
                })
                .collect();
            notes.push(format!(
                "a trace log does not record which ranks form each process group; group \
                 sizes are taken from the collectives' arguments: {}",
                listed.join(", ")
            ));
            source.insert(
                "group_sizes".into(),
                J::Object(
                    groups
                        .iter()
                        .map(|(g, size)| {
                            let size = size.and_then(|n| i64::try_from(n).ok());
                            (g.clone(), size.map_or(J::Null, J::from))
                        })
                        .collect(),
                ),
            );
        }
        if !parsed.truncated.is_empty() {
            notes.push(format!(
                "PyTorch prints at most {ANNOTATION_LIMIT} characters of each `custom` \
                 metadata value (`Annotation:`); the cut values on {} are kept as text and \
                 are never read as explicit identities",
                name_list(&parsed.truncated)
            ));
        }
        if !parsed.unreadable.is_empty() {
            notes.push(format!(
                "the `Annotation:` of {} is not made of Python literals; it is kept as text",
                name_list(&parsed.unreadable)
            ));
        }
        if !parsed.submodules.is_empty() {
            notes.push(format!(
                "the graphs of submodules {} are printed after the graph and are not read",
                parsed.submodules.join(", ")
            ));
        }
        if let Some(schedule) = self.schedules.get(index).and_then(Option::as_ref) {
            match self.schedule(schedule) {
                Ok(kernels) => {
                    if let Some(problem) = attach_schedule(&mut nodes, &kernels) {
                        notes.push(problem);
                    }
                    source.insert(
                        COLLECTIVE_SCHEDULE.into(),
                        J::Array(
                            kernels
                                .into_iter()
                                .map(|k| k.map_or(J::Null, J::from))
                                .collect(),
                        ),
                    );
                }
                Err(message) => notes.push(format!(
                    "the {COLLECTIVE_SCHEDULE} at line {} could not be read: {message}",
                    schedule.line
                )),
            }
        }
        if self.unreadable.0 > 0 {
            notes.push(format!(
                "{} line{} of the log {} neither a record nor a payload line and {} \
                 skipped (the first is line {})",
                self.unreadable.0,
                if self.unreadable.0 == 1 { "" } else { "s" },
                if self.unreadable.0 == 1 { "is" } else { "are" },
                if self.unreadable.0 == 1 {
                    "was"
                } else {
                    "were"
                },
                self.unreadable.1
            ));
        }
        Ok(Dump {
            nodes,
            group_ranks: None,
            modules: Vec::new(),
            state_fqns: Vec::new(),
            source: Some(J::Object(source)),
            planner: None,
            script_objects: None,
            warnings: notes,
            // Computed when a plan needs it (`Planner::new`), not for every reader.
            signature: None,
        })
    }

    /// The kernel names of a schedule record.
    fn schedule(&self, record: &Record) -> Result<Vec<Option<String>>, String> {
        let bytes = self.text.get(record.payload.clone()).unwrap_or(&[]);
        let mut json = Vec::with_capacity(bytes.len());
        for line in bytes.split(|b| *b == b'\n') {
            json.extend_from_slice(line.strip_prefix(b"\t").unwrap_or(line));
            json.push(b'\n');
        }
        serde_json::from_slice::<Vec<Option<String>>>(&json).map_err(|e| e.to_string())
    }
}

fn extend(range: &mut Range<usize>, start: usize, end: usize) {
    if range.start >= range.end {
        *range = start..end;
    } else {
        range.end = end;
    }
}

fn note_unreadable(unreadable: &mut (usize, usize), line: usize) {
    if unreadable.0 == 0 {
        unreadable.1 = line;
    }
    unreadable.0 += 1;
}

fn name_list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more nodes", names.len() - SHOWN));
    }
    text
}

/// Each process group the collectives name, with its size when an argument gives it (the
/// integer before the group name of `all_gather_into_tensor*` and `reduce_scatter_tensor*`).
fn group_sizes(nodes: &[Node]) -> IndexMap<String, Option<i128>> {
    let mut groups: IndexMap<String, Option<i128>> = IndexMap::new();
    for node in nodes {
        if crate::graph::collective_op(node).is_none() {
            continue;
        }
        // `all_gather_into_tensor*(input, group_size, group_name)`,
        // `reduce_scatter_tensor*(input, reduce_op, group_size, group_name)`.
        let sized = node.target.contains("all_gather_into_tensor")
            || node.target.contains("reduce_scatter_tensor");
        let (group, size_at) = match node.kwargs.get("group_name") {
            Some(PyValue::Str(g)) => (Some(g.as_str()), node.args.len().checked_sub(1)),
            _ => match node.args.iter().rposition(|a| matches!(a, PyValue::Str(_))) {
                Some(at) => (
                    node.args.get(at).and_then(PyValue::as_str),
                    at.checked_sub(1),
                ),
                None => (None, None),
            },
        };
        let size = size_at
            .filter(|_| sized)
            .and_then(|i| node.args.get(i))
            .and_then(PyValue::static_int);
        let group = group.map(str::to_string);
        if let Some(group) = group {
            let entry = groups.entry(group).or_insert(None);
            if entry.is_none() {
                *entry = size;
            }
        }
    }
    groups
}

/// Marks each collective with its position in the schedule. The schedule names kernels, not
/// nodes; Inductor keeps collectives in graph order relative to each other (reordering one
/// past another could deadlock ranks that order them differently), so the k-th collective
/// kernel is the k-th collective node when the two sequences name the same ops. Waits may be
/// sunk past each other and are not marked. Says why when the sequences differ.
fn attach_schedule(nodes: &mut [Node], kernels: &[Option<String>]) -> Option<String> {
    let scheduled: Vec<(usize, String)> = kernels
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let target = canonical_target(k.as_deref()?);
            (!target.contains("wait_tensor")).then_some((i, target))
        })
        .collect();
    let collectives: Vec<usize> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| crate::graph::collective_op(n).is_some())
        .map(|(i, _)| i)
        .collect();
    let targets: Vec<&str> = collectives
        .iter()
        .filter_map(|&i| nodes.get(i).map(|n| n.target.as_str()))
        .collect();
    let differ = scheduled
        .iter()
        .map(|(_, t)| t.as_str())
        .zip(&targets)
        .position(|(a, b)| a != *b);
    if differ.is_some() || scheduled.len() != targets.len() {
        let detail = match differ {
            Some(k) => format!(
                "collective {k} is {} in the schedule and {} in the graph",
                scheduled.get(k).map_or("", |(_, t)| t.as_str()),
                targets.get(k).copied().unwrap_or("")
            ),
            None => format!(
                "the schedule lists {} collectives, the graph has {}",
                scheduled.len(),
                targets.len()
            ),
        };
        return Some(format!(
            "the {COLLECTIVE_SCHEDULE} does not match the graph's collectives in order \
             ({detail}); positions are not attached to nodes"
        ));
    }
    for ((position, _), node) in scheduled.iter().zip(collectives) {
        if let Some(node) = nodes.get_mut(node) {
            node.meta.insert(
                Key::from(SCHEDULE_POSITION_KEY),
                PyValue::int(*position as i128),
            );
        }
    }
    None
}

/// `commlens graphs` as text: one row per graph.
/// Safe for a terminal (`text::terminal_safe`).
pub fn graphs_text(graphs: &[GraphSummary]) -> String {
    crate::text::into_terminal_safe(graphs_text_unescaped(graphs))
}

fn graphs_text_unescaped(graphs: &[GraphSummary]) -> String {
    let header = [
        "graph",
        "compile",
        "rank",
        "kind",
        "nodes",
        "collectives",
        "log line",
    ];
    let rows: Vec<[String; 7]> = graphs
        .iter()
        .map(|g| {
            let (kind, nodes, collectives) = match &g.content {
                Ok(c) => (
                    c.kind.as_str().to_string(),
                    c.nodes.to_string(),
                    c.collectives.to_string(),
                ),
                Err(_) => ("unreadable".to_string(), "-".to_string(), "-".to_string()),
            };
            [
                g.index.to_string(),
                g.compile_id.clone(),
                g.rank.map_or("-".to_string(), |r| r.to_string()),
                kind,
                nodes,
                collectives,
                g.line.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            crate::text::push_padded(&mut text, cell, widths[i]);
            text.push_str("  ");
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    for g in graphs {
        if let Err(e) = &g.content {
            out.push_str(&format!("graph {}: {e}\n", g.index));
        }
    }
    out
}

/// `commlens graphs --json`: `{"format": "commlens.graphs", "version": 1, "graphs": [...]}`.
pub fn graphs_json(graphs: &[GraphSummary]) -> String {
    let items: Vec<J> = graphs
        .iter()
        .map(|g| {
            let mut m = serde_json::Map::new();
            m.insert("graph".into(), J::from(g.index));
            m.insert("compile_id".into(), J::from(g.compile_id.clone()));
            m.insert("rank".into(), g.rank.map_or(J::Null, J::from));
            m.insert("log_line".into(), J::from(g.line));
            match &g.content {
                Ok(c) => {
                    m.insert("kind".into(), J::from(c.kind.as_str()));
                    m.insert("nodes".into(), J::from(c.nodes));
                    m.insert("collectives".into(), J::from(c.collectives));
                    m.insert("error".into(), J::Null);
                }
                Err(e) => {
                    m.insert("kind".into(), J::Null);
                    m.insert("nodes".into(), J::Null);
                    m.insert("collectives".into(), J::Null);
                    m.insert("error".into(), J::from(e.clone()));
                }
            }
            J::Object(m)
        })
        .collect();
    let mut top = serde_json::Map::new();
    top.insert("format".into(), J::from("commlens.graphs"));
    top.insert("version".into(), J::from(1));
    top.insert("graphs".into(), J::Array(items));
    let mut text = serde_json::to_string_pretty(&J::Object(top)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthetic_dump, SynthSpec};

    /// Printing a graph as `torch.fx` does and reading it back gives its nodes, targets,
    /// arguments and values (a synthetic Llama-like FSDP graph of ~2000 nodes).
    #[test]
    fn printed_graphs_read_back() {
        let dump =
            crate::read_dump(synthetic_dump(SynthSpec::with_nodes(2000)).as_bytes()).unwrap();
        for context in [false, true] {
            let log = print::trace_log(&print::readable_code(&dump.nodes), context);
            let back = TraceLog::scan(log.as_bytes()).graph(0).unwrap();
            assert_eq!(back.nodes.len(), dump.nodes.len());
            for (a, b) in back.nodes.iter().zip(&dump.nodes) {
                assert_eq!(
                    (&a.name, a.op, &a.target, &a.args, &a.kwargs),
                    (&b.name, b.op, &b.target, &b.args, &b.kwargs)
                );
                if a.op != Op::Output {
                    assert_eq!(a.meta("val"), b.meta("val"), "{}", a.name);
                }
            }
        }
    }
}
