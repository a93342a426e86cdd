//! Reading graph dumps (`graph-dump-v1.md`): bytes in, a validated [`Dump`] or a
//! [`DumpError`] that names the node and the field out. Unknown keys are accepted.

use crate::graph::NameTable;
use crate::meta::{DumpText, Meta, MetaText};
use crate::value::{
    kind_of, skip_map, skip_seq, Context, DecodeError, DecodeScratch, Key, KeySeed, Kind, NodeRef,
    PyValue, ScanSeed, Skip,
};
use indexmap::IndexMap;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value as J;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

mod by_hand;
mod streamed;
pub(crate) use streamed::{signature_records, Source};

/// The format tag every dump carries.
pub const FORMAT: &str = "commlens.graph";
/// The dump versions this reader knows.
pub const KNOWN_VERSIONS: &[i64] = &[1];

/// A validated graph dump.
#[derive(Clone, Debug)]
pub struct Dump {
    /// The graph's nodes in graph order; a node's index is its position.
    pub nodes: Vec<Node>,
    /// `group_ranks` as written (the planner validates it with the reference's messages).
    pub group_ranks: Option<PyValue>,
    /// `model.named_modules()` in order.
    pub modules: Vec<ModuleEntry>,
    pub state_fqns: Vec<String>,
    /// Free-form provenance, shown to users and never interpreted.
    pub source: Option<J>,
    /// Default planner arguments recorded with the dump.
    pub planner: Option<J>,
    /// What the graph's script-object attributes are (an exporter extension, keyed by the
    /// `get_attr` target): `{"class": "ProcessGroup", "group_name", "group_size", "ranks"}` or
    /// `{"class": "ReduceOp", "op"}`. Lets c10d collectives, which take a process-group object,
    /// name their group.
    pub script_objects: Option<J>,
    /// Problems that do not stop reading (dangling references in metadata).
    pub warnings: Vec<String>,
    /// The graph signature of `nodes` as read, hashed node by node while reading
    /// (`crate::signature`); `None` for a dump assembled by hand.
    pub signature: Option<String>,
}

/// One `model.named_modules()` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleEntry {
    pub fqn: String,
    /// The class's qualified (or short) name.
    pub type_name: String,
}

/// One `fx.Node`.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub op: Op,
    /// Canonical target name (`aten.mm.default`, `_operator.getitem`, ...).
    pub target: Target,
    pub args: Vec<PyValue>,
    pub kwargs: crate::value::Kwargs,
    pub meta: Meta,
    /// Whether the result aliases an input without writing it; `None` when not recorded.
    pub alias: Option<bool>,
    /// `node.is_impure()` in the exporting PyTorch; `None` when not recorded.
    pub impure: Option<bool>,
    /// Python's `str(target)`, `str(args)`, `str(kwargs)` when recorded.
    pub repr: Option<NodeRepr>,
}

impl Node {
    /// Asks for the node itself to be brought into cache ([`crate::hashing::prefetch`]).
    pub(crate) fn prefetch(&self) {
        let at: *const Node = self;
        let lines = std::mem::size_of::<Node>().div_ceil(64);
        for line in 0..lines {
            crate::hashing::prefetch(at.cast::<u8>().wrapping_add(line * 64));
        }
    }

    /// Asks for what the node points to first (its arguments and its decoded metadata) to
    /// be brought into cache; worth it once the node itself is there.
    pub(crate) fn prefetch_parts(&self) {
        crate::hashing::prefetch(self.args.as_ptr());
        self.meta.prefetch_entries();
    }
}

/// A node's target name. A graph has a few dozen distinct targets over its many nodes, so the
/// reader shares one string among the nodes of each (16 bytes a node, no allocation) instead
/// of a `String` apiece. Reads as a `str`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target(std::sync::Arc<str>);

impl Target {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the two are the same shared string (not only equal text).
    pub(crate) fn is(&self, other: &Target) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }

    /// The shared string's address: equal for targets that [`Target::is`] the same.
    pub(crate) fn address(&self) -> usize {
        std::sync::Arc::as_ptr(&self.0).cast::<u8>() as usize
    }
}

impl std::ops::Deref for Target {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Target {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Target {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Target {
    fn from(s: &str) -> Target {
        Target(s.into())
    }
}

impl From<String> for Target {
    fn from(s: String) -> Target {
        Target(s.into())
    }
}

impl PartialEq<str> for Target {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Target {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The targets a reader has seen, each held once. Looked up once a node: foldhash, not
/// std's SipHash (1.5 ms of a 100k-node read in the browser).
#[derive(Default)]
pub(crate) struct Targets(crate::hashing::FastSet<Target>);

impl Targets {
    pub(crate) fn get(&mut self, name: &str) -> Target {
        if let Some(t) = self.0.get(name) {
            return t.clone();
        }
        let t = Target::from(name);
        self.0.insert(t.clone());
        t
    }
}

/// Python's own renderings of a node, used verbatim by the graph signature: the three
/// strings as one, with where the second and third start, in one allocation behind a
/// one-word pointer. A `Node` holds an `Option<NodeRepr>`: 8 bytes, where a string and two
/// offsets took 24 (and three `String`s 72), and most reads keep none (at 500k nodes the
/// 16 bytes a node were 8 MB of every command's peak, docs/performance.md).
#[derive(Clone)]
pub struct NodeRepr(triomphe::ThinArc<ReprOffsets, u8>);

/// Where `str(args)` and `str(kwargs)` start in a [`NodeRepr`]'s text.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ReprOffsets {
    args_at: u32,
    kwargs_at: u32,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Option<NodeRepr>>() == 8);

impl PartialEq for NodeRepr {
    fn eq(&self, other: &NodeRepr) -> bool {
        self.0.header.header == other.0.header.header && self.text() == other.text()
    }
}

impl Eq for NodeRepr {}

thread_local! {
    /// Where a repr's three strings are put together before they are copied into its one
    /// allocation.
    static REPR_SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl NodeRepr {
    /// `None` when the three together are 4 GiB or more (a dump's input limit is far below).
    pub fn new(target: &str, args: &str, kwargs: &str) -> Option<NodeRepr> {
        let (args_at, kwargs_at) = NodeRepr::fits(target, args, kwargs)?;
        let offsets = ReprOffsets { args_at, kwargs_at };
        let repr = REPR_SCRATCH.with(|scratch| {
            let mut text = scratch.borrow_mut();
            text.clear();
            text.push_str(target);
            text.push_str(args);
            text.push_str(kwargs);
            let repr = triomphe::ThinArc::from_header_and_slice(offsets, text.as_bytes());
            // A long repr is not kept in the scratch for the rest of the thread's life.
            if text.capacity() > 1 << 16 {
                *text = String::new();
            }
            repr
        });
        Some(NodeRepr(repr))
    }

    /// The three strings, one after the other.
    fn text(&self) -> &str {
        // SAFETY: the bytes were copied from a `String` (`new`), and are never changed.
        unsafe { std::str::from_utf8_unchecked(&self.0.slice) }
    }

    /// Where `args` and `kwargs` would start in the text; `None` when the three do not fit.
    fn fits(target: &str, args: &str, kwargs: &str) -> Option<(u32, u32)> {
        let args_at = u32::try_from(target.len()).ok()?;
        let kwargs_at = u32::try_from(target.len() + args.len()).ok()?;
        u32::try_from(target.len() + args.len() + kwargs.len()).ok()?;
        Some((args_at, kwargs_at))
    }

    /// `str(node.target)`.
    pub fn target(&self) -> &str {
        &self.text()[..self.0.header.header.args_at as usize]
    }

    /// `str(node.args)`.
    pub fn args(&self) -> &str {
        let ReprOffsets { args_at, kwargs_at } = self.0.header.header;
        &self.text()[args_at as usize..kwargs_at as usize]
    }

    /// `str(node.kwargs)`.
    pub fn kwargs(&self) -> &str {
        &self.text()[self.0.header.header.kwargs_at as usize..]
    }
}

impl std::fmt::Debug for NodeRepr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRepr")
            .field("target", &self.target())
            .field("args", &self.args())
            .field("kwargs", &self.kwargs())
            .finish()
    }
}

/// `node.op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Placeholder,
    GetAttr,
    CallFunction,
    CallMethod,
    CallModule,
    Output,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::Placeholder,
        Op::GetAttr,
        Op::CallFunction,
        Op::CallMethod,
        Op::CallModule,
        Op::Output,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Placeholder => "placeholder",
            Op::GetAttr => "get_attr",
            Op::CallFunction => "call_function",
            Op::CallMethod => "call_method",
            Op::CallModule => "call_module",
            Op::Output => "output",
        }
    }

    pub fn parse(text: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == text)
    }
}

impl Node {
    /// `node.meta.get(key)`.
    pub fn meta(&self, key: &str) -> Option<&PyValue> {
        self.meta.get(key)
    }

    /// `node.meta.get(key)` when it is a `str`.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta(key).and_then(PyValue::as_str)
    }

    /// `bool(node.meta.get(key, False))`.
    pub fn meta_flag(&self, key: &str) -> bool {
        self.meta(key).is_some_and(PyValue::truthy)
    }
}

/// `map.get(key)`. Node metadata has a handful of keys: comparing them in place is cheaper
/// than hashing the key and chasing the table, and the planner and classifier look up several
/// keys on every collective.
pub fn lookup<'a>(map: &'a crate::value::Dict, key: &str) -> Option<&'a PyValue> {
    if map.len() <= 16 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// Why a dump could not be read. Its `Display` is the message users see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DumpError {
    /// The bytes start like gzip but do not decompress.
    Gzip { message: String },
    /// Not valid JSON (or not UTF-8).
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// A top-level rule is broken.
    Document { field: String, message: String },
    /// A node breaks a rule.
    Node {
        index: usize,
        /// The node's name when it has a readable one.
        name: Option<String>,
        field: String,
        message: String,
    },
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names, ops and targets come from the input: a 1 MB name is shown clipped, so the
        // message stays short whatever the input holds.
        let clip = |text: &str| crate::text::bounded_message(text);
        match self {
            DumpError::Gzip { message } => {
                write!(
                    f,
                    "invalid dump: gzip data could not be decompressed: {message}"
                )
            }
            DumpError::Json {
                line,
                column,
                message,
            } => write!(
                f,
                "invalid dump: not valid JSON at line {line}, column {column}: {}",
                clip(message)
            ),
            DumpError::Document { field, message } => {
                write!(
                    f,
                    "invalid dump: field \"{}\": {}",
                    clip(field),
                    clip(message)
                )
            }
            DumpError::Node {
                index,
                name,
                field,
                message,
            } => match name {
                Some(name) => write!(
                    f,
                    "invalid dump: node {index} ({:?}), field \"{}\": {}",
                    crate::text::clip(name, crate::text::MESSAGE_PART_LIMIT),
                    clip(field),
                    clip(message)
                ),
                None => write!(
                    f,
                    "invalid dump: node {index}, field \"{}\": {}",
                    clip(field),
                    clip(message)
                ),
            },
        }
    }
}

impl std::error::Error for DumpError {}

/// Receives each node as soon as it has been read and checked, in graph order, while it is
/// still in cache. Per-node passes (the graph's facts and input lists, the planner's local
/// checks) run here rather than walking a large dump again afterwards. Arguments' node
/// references are resolved when a node arrives (they name earlier nodes); references in its
/// metadata are resolved only once every node is read.
pub trait NodeSink {
    /// A `nodes` array begins: forget any nodes received. (A document that repeats the key
    /// is read as JSON reads it: the last array counts.)
    fn begin(&mut self);

    fn node(&mut self, index: usize, node: &Node);

    /// About `nodes` nodes will follow: the reader's guess from the text's size, made right
    /// after [`NodeSink::begin`] ([`expected_nodes`]), so that room can be made at once
    /// instead of grown by doubling. Only a guess: more or fewer may come.
    fn expect_nodes(&mut self, nodes: usize) {
        let _ = nodes;
    }

    /// Whether the nodes keep their `repr` once read. Each node is hashed into the signature
    /// with it either way; a reader of a graph that will not be hashed or written again
    /// (`input::read_graph_without_repr`) lets it go then, and a node whose signature record
    /// was written before it was checked reaches [`NodeSink::node`] without it.
    fn keeps_repr(&self) -> bool {
        true
    }
}

/// No per-node pass.
impl NodeSink for () {
    fn begin(&mut self) {}

    fn node(&mut self, _: usize, _: &Node) {}
}

/// Reads a dump from its bytes (JSON, or gzip-compressed JSON recognised by its magic bytes).
pub fn read_dump(bytes: &[u8]) -> Result<Dump, DumpError> {
    read_dump_into(bytes, &mut ())
}

/// [`read_dump`], handing each node to `sink` as it is read. When reading fails, what the
/// sink gathered is meaningless.
pub fn read_dump_into(bytes: &[u8], sink: &mut dyn NodeSink) -> Result<Dump, DumpError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return read_gzip_into(bytes, sink);
    }
    read_text_into(bytes.to_vec(), sink)
}

/// A gzip-compressed dump, read as it decompresses without holding its whole text
/// (`streamed`); one that reader declines (any dump that breaks a rule, among others) is
/// decompressed whole and read as plain text, which says what is wrong.
fn read_gzip_into(bytes: &[u8], sink: &mut dyn NodeSink) -> Result<Dump, DumpError> {
    match streamed::read(bytes, sink) {
        Ok(dump) => Ok(dump),
        Err(streamed::Declined) => read_text_into(gunzip(bytes)?, sink),
    }
}

/// [`read_dump_into`] for bytes the caller gives up, which then need no copy: the dump's text
/// is kept, shared by the nodes' metadata, for the entries decoded on first use
/// ([`crate::meta`]).
pub fn read_owned_into(bytes: Vec<u8>, sink: &mut dyn NodeSink) -> Result<Dump, DumpError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return read_gzip_into(&bytes, sink);
    }
    read_text_into(bytes, sink)
}

/// [`read_dump_into`], or [`read_owned_into`] when the bytes are owned.
pub fn read_cow_into(bytes: Cow<'_, [u8]>, sink: &mut dyn NodeSink) -> Result<Dump, DumpError> {
    match bytes {
        Cow::Borrowed(bytes) => read_dump_into(bytes, sink),
        Cow::Owned(bytes) => read_owned_into(bytes, sink),
    }
}

/// One entry of a `meta` object, decoded from the text that starts with the object (the last
/// value of a repeated key, as the whole map has it); the other entries are only parsed.
pub(crate) fn decode_meta_entry(text: &[u8], wanted: &str) -> Option<PyValue> {
    // The entries not wanted are skipped by their brackets and strings, several times faster
    // than parsing them; only when that cannot tell is the whole object parsed.
    match streamed::entry_span(text, wanted) {
        Some(None) => None,
        Some(Some((start, end))) => {
            let scratch = DecodeScratch::default();
            let mut deserializer = serde_json::Deserializer::from_slice(&text[start..end]);
            scratch
                .seed(Context::Meta)
                .deserialize(&mut deserializer)
                .ok()
                .map(|decoded| decoded.value.unwrap_or(PyValue::None))
        }
        None => parse_meta_entry(text, wanted),
    }
}

/// The `dtype` of the tensor summary in entry `wanted` of the `meta` object that starts
/// `text`, found by scanning: `Some(Some(dtype))` as `PyValue::py_str` prints the decoded
/// summary's `dtype`, `Some(None)` when the object has no such entry or the summary no
/// `dtype`. `None` when a scan cannot tell ([`decode_meta_entry`] answers then): decoding a
/// whole `val` to read its dtype was half of `roles`' bucket identities.
pub(crate) fn scan_tensor_dtype(text: &[u8], wanted: &str) -> Option<Option<String>> {
    match streamed::entry_span(text, wanted)? {
        None => Some(None),
        Some((start, end)) => {
            streamed::tensor_dtype(&text[start..end]).map(|dtype| dtype.map(str::to_string))
        }
    }
}

/// [`decode_meta_entry`] by parsing the whole object.
fn parse_meta_entry(text: &[u8], wanted: &str) -> Option<PyValue> {
    struct EntryWant<'w, 's> {
        wanted: &'w str,
        scratch: &'s DecodeScratch,
    }
    impl<'de> Want<'de> for EntryWant<'_, '_> {
        type Out = Option<PyValue>;

        fn null(self) -> Slot<Self::Out> {
            Slot::Got(None)
        }

        fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key_seed(KeySeed)? {
                if key == self.wanted {
                    let decoded = map.next_value_seed(self.scratch.seed(Context::Meta))?;
                    found = Some(decoded.value.unwrap_or(PyValue::None));
                } else {
                    map.next_value::<Skip>()?;
                }
            }
            Ok(Slot::Got(found))
        }
    }
    let scratch = DecodeScratch::default();
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    match Tolerant(EntryWant {
        wanted,
        scratch: &scratch,
    })
    .deserialize(&mut deserializer)
    {
        Ok(Slot::Got(found)) => found,
        _ => None,
    }
}

/// Reads a plain dump's text from `source` as it parses: from a reader a piece at a time,
/// never holding it whole, or where it lies when it is whole in memory (`streamed`);
/// `text_len` is the text's expected length. `None` when that reader declines the dump (any
/// dump that breaks a rule, among others): read it whole then ([`read_owned_into`]), which
/// says what is wrong. Nodes handed to `sink` before it declined are handed again.
pub(crate) fn read_streamed_into(
    source: streamed::Source<'_, impl std::io::Read + Send>,
    text_len: usize,
    sink: &mut dyn NodeSink,
) -> Option<Dump> {
    streamed::read_from(source, text_len, sink).ok()
}

/// Reads the JSON text of a dump.
fn read_text_into(text: Vec<u8>, sink: &mut dyn NodeSink) -> Result<Dump, DumpError> {
    let text: DumpText = std::sync::Arc::new(text);
    // As `serde_json::from_slice`: the value, then nothing but whitespace. Text that is UTF-8
    // throughout (every valid dump) is read as a `str`, so serde_json does not check each
    // string again; other text is read as bytes, which finds and reports the first bad
    // sequence exactly as before.
    fn parse<'de, R: serde_json::de::Read<'de>>(
        mut deserializer: serde_json::Deserializer<R>,
        want: DocumentWant<'_>,
    ) -> serde_json::Result<Slot<RawDocument>> {
        Tolerant(want)
            .deserialize(&mut deserializer)
            .and_then(|document| deserializer.end().map(|()| document))
    }
    let want = DocumentWant { sink, text: &text };
    let parsed = match std::str::from_utf8(&text) {
        Ok(utf8) => parse(serde_json::Deserializer::from_str(utf8), want),
        Err(_) => parse(serde_json::Deserializer::from_slice(&text), want),
    };
    let document = parsed.map_err(|e| DumpError::Json {
        line: e.line(),
        column: e.column(),
        message: json_message(&e),
    })?;
    match document {
        Slot::Got(document) => read_top(document.top, document.nodes),
        Slot::Wrong(kind) => Err(not_an_object(kind.describe())),
        Slot::Missing => Err(not_an_object(Kind::Null.describe())),
    }
}

/// Decodes a whole `meta` object from the text that starts with it (what follows the object
/// is not read). The reader has checked the text; should it not parse, the result is empty.
pub(crate) fn decode_meta_object(text: &[u8]) -> crate::value::Dict {
    let scratch = DecodeScratch::default();
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    match Tolerant(MetaWant {
        scratch: &scratch,
        text: None,
    })
    .deserialize(&mut deserializer)
    {
        Ok(Slot::Got((meta, _))) => meta.into_dict(),
        _ => crate::value::Dict::new(),
    }
}

fn not_an_object(kind: &str) -> DumpError {
    document_error(
        "(document)",
        format!("a dump is a JSON object, found {kind}"),
    )
}

/// Decompresses gzip (possibly multi-member) data.
/// Bounded by the input-size limit (`input::gunzip`).
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, DumpError> {
    crate::input::gunzip(bytes).map_err(|message| DumpError::Gzip { message })
}

/// What gzip data says it decompresses to: the last member's ISIZE (its length mod 2^32),
/// bounded by deflate's best ratio (about 1032:1) so that a forged trailer cannot ask for more
/// than the data could hold. A hint only: several members, or more than 4 GiB, decompress to
/// more.
pub fn gzip_size_hint(bytes: &[u8]) -> usize {
    const DEFLATE_MAX_RATIO: usize = 1032;
    // A gzip member is at least 18 bytes (10 of header, 8 of trailer).
    let Some(trailer) = bytes.len().checked_sub(4).filter(|_| bytes.len() >= 18) else {
        return 0;
    };
    let isize = u32::from_le_bytes(bytes[trailer..].try_into().expect("4 bytes")) as usize;
    isize.min(bytes.len().saturating_mul(DEFLATE_MAX_RATIO))
}

/// serde_json's message without its trailing " at line L column C" (we say it ourselves).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn document_error(field: &str, message: impl Into<String>) -> DumpError {
    DumpError::Document {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Validates a parsed JSON document as a dump. ([`read_dump`] reads the same rules straight
/// from the bytes.)
pub fn read_document(document: J) -> Result<Dump, DumpError> {
    let J::Object(mut top) = document else {
        return Err(not_an_object(kind_of(&document)));
    };
    let nodes = top.shift_remove("nodes").map(|nodes| match nodes {
        J::Array(items) => NodesInput::Json(items),
        other => NodesInput::Wrong(kind_of(&other)),
    });
    read_top(top, nodes)
}

/// The `nodes` of a document: as JSON, already read by [`read_dump`], or not an array.
enum NodesInput {
    Json(Vec<J>),
    Parsed(Box<ParsedNodes>),
    Wrong(&'static str),
}

/// Checks the top level (`top` without `nodes`), then the nodes.
fn read_top(
    mut top: serde_json::Map<String, J>,
    nodes: Option<NodesInput>,
) -> Result<Dump, DumpError> {
    match top.get("format") {
        Some(J::String(s)) if s == FORMAT => {}
        Some(other) => {
            return Err(document_error(
                "format",
                format!("expected \"{FORMAT}\", found {}", short(other)),
            ))
        }
        None => {
            return Err(document_error(
                "format",
                format!("missing; a graph dump has \"format\": \"{FORMAT}\""),
            ))
        }
    }
    match top.get("version") {
        Some(J::Number(n)) if n.as_i64().is_some_and(|v| KNOWN_VERSIONS.contains(&v)) => {}
        Some(other) => {
            return Err(document_error(
                "version",
                format!(
                    "unsupported version {}: this reader knows version {}",
                    short(other),
                    known_versions()
                ),
            ))
        }
        None => {
            return Err(document_error(
                "version",
                format!("missing; this reader knows version {}", known_versions()),
            ))
        }
    }
    let nodes = match nodes {
        Some(NodesInput::Wrong(kind)) => {
            return Err(document_error(
                "nodes",
                format!("expected an array of nodes, found {kind}"),
            ))
        }
        Some(nodes) => nodes,
        None => return Err(document_error("nodes", "missing; a dump lists its nodes")),
    };
    let group_ranks = match top.shift_remove("group_ranks") {
        None | Some(J::Null) => None,
        Some(J::Object(map)) => Some(PyValue::from_plain_json(&J::Object(map))),
        Some(other) => {
            return Err(document_error(
                "group_ranks",
                format!(
                    "expected an object mapping process-group names to rank lists, found {}",
                    kind_of(&other)
                ),
            ))
        }
    };
    let modules = read_modules(top.shift_remove("modules"))?;
    let state_fqns = read_state_fqns(top.shift_remove("state_fqns"))?;
    let source = optional_object(&mut top, "source")?;
    let planner = optional_object(&mut top, "planner")?;
    let script_objects = optional_object(&mut top, "script_objects")?;
    let (nodes, warnings, signature) = match nodes {
        NodesInput::Json(items) => {
            let (nodes, warnings) = read_nodes(items)?;
            let mut hasher = crate::signature::SignatureHasher::default();
            nodes.iter().for_each(|node| hasher.add(node));
            (nodes, warnings, hasher.finish())
        }
        NodesInput::Parsed(parsed) => parsed.finish()?,
        NodesInput::Wrong(_) => unreachable!("checked above"),
    };
    Ok(Dump {
        nodes,
        group_ranks,
        modules,
        state_fqns,
        source,
        planner,
        script_objects,
        warnings,
        signature,
    })
}

fn known_versions() -> String {
    KNOWN_VERSIONS
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A short rendering of a JSON value for messages.
fn short(value: &J) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn optional_object(
    top: &mut serde_json::Map<String, J>,
    field: &str,
) -> Result<Option<J>, DumpError> {
    match top.shift_remove(field) {
        None | Some(J::Null) => Ok(None),
        Some(value @ J::Object(_)) => Ok(Some(value)),
        Some(other) => Err(document_error(
            field,
            format!("expected an object, found {}", kind_of(&other)),
        )),
    }
}

fn read_modules(value: Option<J>) -> Result<Vec<ModuleEntry>, DumpError> {
    let items = match value {
        None | Some(J::Null) => return Ok(Vec::new()),
        Some(J::Array(items)) => items,
        Some(other) => {
            return Err(document_error(
                "modules",
                format!(
                    "expected an array of {{\"fqn\", \"type\"}} objects, found {}",
                    kind_of(&other)
                ),
            ))
        }
    };
    let mut modules = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let J::Object(map) = item else {
            return Err(document_error(
                &format!("modules[{i}]"),
                format!(
                    "expected an object {{\"fqn\", \"type\"}}, found {}",
                    kind_of(&item)
                ),
            ));
        };
        let text = |key: &str| match map.get(key) {
            Some(J::String(s)) => Ok(s.clone()),
            Some(other) => Err(document_error(
                &format!("modules[{i}].{key}"),
                format!("expected a string, found {}", kind_of(other)),
            )),
            None => Err(document_error(&format!("modules[{i}].{key}"), "missing")),
        };
        modules.push(ModuleEntry {
            fqn: text("fqn")?,
            type_name: text("type")?,
        });
    }
    Ok(modules)
}

fn read_state_fqns(value: Option<J>) -> Result<Vec<String>, DumpError> {
    let items = match value {
        None | Some(J::Null) => return Ok(Vec::new()),
        Some(J::Array(items)) => items,
        Some(other) => {
            return Err(document_error(
                "state_fqns",
                format!("expected an array of strings, found {}", kind_of(&other)),
            ))
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            J::String(s) => Ok(s),
            other => Err(document_error(
                &format!("state_fqns[{i}]"),
                format!("expected a string, found {}", kind_of(&other)),
            )),
        })
        .collect()
}

fn read_nodes(items: Vec<J>) -> Result<(Vec<Node>, Vec<String>), DumpError> {
    let mut nodes: Vec<Node> = Vec::with_capacity(items.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let node = read_node(i, item, &|name: &str| index.get(name).copied())?;
        if let Some(&first) = index.get(&node.name) {
            return Err(DumpError::Node {
                index: i,
                name: Some(node.name.clone()),
                field: "name".into(),
                message: format!(
                    "the name is already used by node {first}; node names are unique in a dump"
                ),
            });
        }
        index.insert(node.name.clone(), i);
        nodes.push(node);
    }
    // Metadata may point anywhere; a dangling reference is reported, not fatal.
    let mut warnings = Vec::new();
    let lookup = |name: &str| index.get(name).copied();
    for node in &mut nodes {
        let owner = node.name.clone();
        for (key, value) in node.meta.decoded_values_mut() {
            resolve_meta_refs(value, &lookup, &mut |name| {
                warnings.push(format!(
                    "node {owner:?}: meta[{key:?}] refers to node {name:?}, which is not in the dump"
                ))
            });
        }
    }
    Ok((nodes, warnings))
}

fn resolve_meta_refs(
    value: &mut PyValue,
    index: &dyn Fn(&str) -> Option<usize>,
    dangling: &mut dyn FnMut(&str),
) {
    match value {
        PyValue::Node(r) => {
            r.index = index(&r.name);
            if r.index.is_none() {
                dangling(&r.name);
            }
        }
        PyValue::List(items) => {
            for item in items {
                resolve_meta_refs(item, index, dangling);
            }
        }
        PyValue::Dict(map) => {
            for item in PyValue::dict_with_nodes_mut(map)
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                resolve_meta_refs(item, index, dangling);
            }
        }
        _ => {}
    }
}

fn read_node(i: usize, item: J, index: &dyn Fn(&str) -> Option<usize>) -> Result<Node, DumpError> {
    let J::Object(mut map) = item else {
        return Err(DumpError::Node {
            index: i,
            name: None,
            field: "(node)".into(),
            message: format!("a node is a JSON object, found {}", kind_of(&item)),
        });
    };
    let name = match map.shift_remove("name") {
        Some(J::String(s)) if !s.is_empty() => s,
        Some(J::String(_)) => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: "must be a non-empty string".into(),
            })
        }
        Some(other) => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: format!("expected a string, found {}", kind_of(&other)),
            })
        }
        None => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: "missing; every node has a unique name".into(),
            })
        }
    };
    let err = |field: &str, message: String| DumpError::Node {
        index: i,
        name: Some(name.clone()),
        field: field.to_string(),
        message,
    };
    let op = match map.shift_remove("op") {
        Some(J::String(s)) => Op::parse(&s).ok_or_else(|| {
            err(
                "op",
                format!(
                    "unknown op {s:?}; expected one of placeholder, get_attr, call_function, \
                     call_method, call_module, output"
                ),
            )
        })?,
        Some(other) => {
            return Err(err(
                "op",
                format!("expected a string, found {}", kind_of(&other)),
            ))
        }
        None => return Err(err("op", "missing".into())),
    };
    let target = match map.shift_remove("target") {
        Some(J::String(s)) => s,
        Some(other) => {
            return Err(err(
                "target",
                format!("expected a string, found {}", kind_of(&other)),
            ))
        }
        None => return Err(err("target", "missing".into())),
    };
    // References in arguments must point backwards, except from the output node.
    let resolve = |value: &mut PyValue, field: &str| -> Result<(), DumpError> {
        resolve_arg_refs(value, index, op == Op::Output, || String::from(field))
            .map_err(|(path, message)| err(&path, message))
    };
    let mut args = match map.shift_remove("args") {
        None | Some(J::Null) => Vec::new(),
        Some(value @ J::Array(_)) => match PyValue::decode(value, Context::Args) {
            Ok(PyValue::List(items)) => items,
            Ok(_) => Vec::new(),
            Err(e) => return Err(err(&format!("args{}", e.path), e.message)),
        },
        Some(other) => {
            return Err(err(
                "args",
                format!("expected an array, found {}", kind_of(&other)),
            ))
        }
    };
    for (k, arg) in args.iter_mut().enumerate() {
        resolve(arg, &format!("args[{k}]"))?;
    }
    let mut kwargs = IndexMap::new();
    match map.shift_remove("kwargs") {
        None | Some(J::Null) => {}
        Some(J::Object(entries)) => {
            for (key, value) in entries {
                let field = format!("kwargs[{key:?}]");
                let mut decoded = PyValue::decode(value, Context::Args)
                    .map_err(|e| err(&format!("{field}{}", e.path), e.message))?;
                resolve(&mut decoded, &field)?;
                kwargs.insert(key.into(), decoded);
            }
        }
        Some(other) => {
            return Err(err(
                "kwargs",
                format!("expected an object, found {}", kind_of(&other)),
            ))
        }
    }
    let meta = match map.shift_remove("meta") {
        None | Some(J::Null) => IndexMap::new(),
        Some(J::Object(entries)) => {
            let mut meta = IndexMap::with_capacity(entries.len());
            for (key, value) in entries {
                let decoded = PyValue::decode(value, Context::Meta)
                    .map_err(|e| err(&format!("meta[{key:?}]{}", e.path), e.message))?;
                meta.insert(key.into(), decoded);
            }
            meta
        }
        Some(other) => {
            return Err(err(
                "meta",
                format!("expected an object, found {}", kind_of(&other)),
            ))
        }
    };
    let flag = |value: Option<J>, field: &str| match value {
        None | Some(J::Null) => Ok(None),
        Some(J::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(err(
            field,
            format!("expected true or false, found {}", kind_of(&other)),
        )),
    };
    let alias = flag(map.shift_remove("alias"), "alias")?;
    let impure = flag(map.shift_remove("impure"), "impure")?;
    let repr = match map.shift_remove("repr") {
        None | Some(J::Null) => None,
        Some(J::Object(fields)) => {
            let text = |key: &str| match fields.get(key) {
                Some(J::String(s)) => Ok(s.clone()),
                Some(other) => Err(err(
                    &format!("repr.{key}"),
                    format!("expected a string, found {}", kind_of(other)),
                )),
                None => Err(err(
                    &format!("repr.{key}"),
                    "missing; repr has \"target\", \"args\" and \"kwargs\"".into(),
                )),
            };
            let (target, args, kwargs) = (text("target")?, text("args")?, text("kwargs")?);
            Some(
                NodeRepr::new(&target, &args, &kwargs)
                    .ok_or_else(|| err("repr", "longer than 4 GiB in all".into()))?,
            )
        }
        Some(other) => {
            return Err(err(
                "repr",
                format!(
                    "expected an object {{\"target\", \"args\", \"kwargs\"}}, found {}",
                    kind_of(&other)
                ),
            ))
        }
    };
    Ok(Node {
        name,
        op,
        target: target.into(),
        args,
        kwargs: kwargs.into(),
        meta: Meta::from(meta),
        alias,
        impure,
        repr,
    })
}

/// Resolves the node references in an argument; on a reference that does not resolve, the
/// error's field (`path()` and the path inside the value) and message.
fn resolve_arg_refs(
    value: &mut PyValue,
    index: &dyn Fn(&str) -> Option<usize>,
    is_output: bool,
    path: impl FnOnce() -> String,
) -> Result<(), (String, String)> {
    if resolve_all(value, index) {
        Ok(())
    } else {
        resolve_at(value, index, is_output, &mut path())
    }
}

/// Resolves references until one does not resolve; whether all did.
fn resolve_all(value: &mut PyValue, index: &dyn Fn(&str) -> Option<usize>) -> bool {
    match value {
        PyValue::Node(r) => {
            r.index = index(&r.name);
            r.index.is_some()
        }
        PyValue::List(items) => items.iter_mut().all(|item| resolve_all(item, index)),
        PyValue::Dict(map) => PyValue::dict_with_nodes_mut(map)
            .is_none_or(|map| map.values_mut().all(|item| resolve_all(item, index))),
        _ => true,
    }
}

/// [`resolve_all`] keeping the path, for the error.
fn resolve_at(
    value: &mut PyValue,
    index: &dyn Fn(&str) -> Option<usize>,
    is_output: bool,
    path: &mut String,
) -> Result<(), (String, String)> {
    match value {
        PyValue::Node(r) => match index(&r.name) {
            Some(position) => {
                r.index = Some(position);
                Ok(())
            }
            None => Err((
                path.clone(),
                format!(
                    "refers to node {:?}, which does not stand earlier in \"nodes\"{}",
                    r.name,
                    if is_output {
                        ""
                    } else {
                        " (an argument must name an earlier node)"
                    }
                ),
            )),
        },
        PyValue::List(items) => {
            for (k, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{k}]"));
                resolve_at(item, index, is_output, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        PyValue::Dict(map) => {
            let entries = PyValue::dict_with_nodes_mut(map)
                .into_iter()
                .flat_map(|m| m.iter_mut());
            for (key, item) in entries {
                let len = path.len();
                path.push_str(&format!("[{key:?}]"));
                resolve_at(item, index, is_output, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A node reference's position, when the value is a resolved node.
pub fn node_index(value: &PyValue) -> Option<usize> {
    match value {
        PyValue::Node(NodeRef { index, .. }) => *index,
        _ => None,
    }
}

// The streaming reader. `read_dump` parses the document with the tolerant seeds below: every
// field is taken as what the format wants or recorded as the kind of JSON found instead, and
// node values are decoded into `PyValue`s while parsing. Nothing fails during the parse except
// serde_json's own syntax errors, so invalid JSON is reported exactly as a `Value` parse reports
// it, and every rule is then checked in the same order and with the same messages as
// `read_document` checks a parsed `Value`.

/// What a tolerant seed made of a field: what the format wants, or the kind found instead.
#[cfg_attr(test, derive(Debug))]
enum Slot<T> {
    Missing,
    Got(T),
    Wrong(Kind),
}

impl<T> Slot<T> {
    /// The slot's content, leaving it `Missing`: a node is checked field by field where it
    /// lies, not moved whole (moving each parsed node, some 300 bytes, three times on its way
    /// to the node vector was 5% of the checking thread's samples at 500k nodes).
    fn take(&mut self) -> Slot<T> {
        std::mem::replace(self, Slot::Missing)
    }
}

/// What a tolerant seed accepts; everything else is parsed, dropped and recorded as its kind.
trait Want<'de>: Sized {
    type Out;

    fn null(self) -> Slot<Self::Out> {
        Slot::Wrong(Kind::Null)
    }

    fn boolean(self, _: bool) -> Slot<Self::Out> {
        Slot::Wrong(Kind::Bool)
    }

    fn text(self, _: Cow<'de, str>) -> Slot<Self::Out> {
        Slot::Wrong(Kind::Str)
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Slot<Self::Out>, A::Error> {
        skip_seq(&mut seq)?;
        Ok(Slot::Wrong(Kind::Array))
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        skip_map(&mut map)?;
        Ok(Slot::Wrong(Kind::Object))
    }
}

struct Tolerant<W>(W);

impl<'de, W: Want<'de>> DeserializeSeed<'de> for Tolerant<W> {
    type Value = Slot<W::Out>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, W: Want<'de>> Visitor<'de> for Tolerant<W> {
    type Value = Slot<W::Out>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.null())
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(self.0.boolean(b))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Slot::Wrong(Kind::Int))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Slot::Wrong(Kind::Int))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Slot::Wrong(Kind::Float))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(self.0.text(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.map(map)
    }
}

/// A string field.
struct TextWant;

impl<'de> Want<'de> for TextWant {
    type Out = Cow<'de, str>;

    fn text(self, s: Cow<'de, str>) -> Slot<Self::Out> {
        Slot::Got(s)
    }
}

/// An optional boolean (`null` is absent).
struct FlagWant;

impl<'de> Want<'de> for FlagWant {
    type Out = Option<bool>;

    fn null(self) -> Slot<Self::Out> {
        Slot::Got(None)
    }

    fn boolean(self, b: bool) -> Slot<Self::Out> {
        Slot::Got(Some(b))
    }
}

/// `args`: an array of arguments (`null` is absent).
struct ArgsWant<'s>(&'s DecodeScratch);

impl<'de> Want<'de> for ArgsWant<'_> {
    type Out = Result<Vec<PyValue>, DecodeError>;

    fn null(self) -> Slot<Self::Out> {
        Slot::Got(Ok(Vec::new()))
    }

    fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Slot<Self::Out>, A::Error> {
        let decoded = self.0.seed(Context::Args).visit_seq(seq)?;
        Ok(Slot::Got(match decoded.value {
            Ok(PyValue::List(items)) => Ok(items),
            Ok(_) => Ok(Vec::new()),
            Err(e) => Err(e),
        }))
    }
}

/// `kwargs`: an object of arguments (`null` is absent), each decoded or its error.
struct KwargsWant<'s>(&'s DecodeScratch);

type RawKwargs = IndexMap<String, Result<PyValue, DecodeError>>;

impl<'de> Want<'de> for KwargsWant<'_> {
    type Out = RawKwargs;

    fn null(self) -> Slot<Self::Out> {
        Slot::Got(IndexMap::new())
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        let seed = self.0.seed(Context::Args);
        let mut out = IndexMap::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let decoded = map.next_value_seed(seed)?;
            out.insert(key.into_owned(), decoded.value);
        }
        Ok(Slot::Got(out))
    }
}

/// Where the text a node was parsed from lives: the metadata's undecoded entries are kept
/// there.
#[derive(Clone, Copy)]
enum NodeText<'s> {
    /// The dump's whole text, kept and shared by the nodes' metadata.
    Document(&'s DumpText),
    /// Only this node's text, which is not kept: metadata copies its object out of it.
    Node(&'s [u8]),
}

impl NodeText<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            NodeText::Document(text) => text,
            NodeText::Node(text) => text,
        }
    }

    /// The object that starts at `start`, kept for its undecoded entries.
    fn keep(&self, start: usize) -> Option<MetaText> {
        match self {
            NodeText::Document(text) => Some(MetaText::InDocument {
                document: (*text).clone(),
                start,
            }),
            NodeText::Node(text) => streamed::kept_object(&text[start..]).map(MetaText::Own),
        }
    }
}

/// `meta`: an object of metadata values (`null` is absent), and how many node references its
/// decoded entries hold. Given the dump's `text`, the entries [`crate::meta::decoded_on_read`]
/// refuses are checked and left in the text; without it, every entry is decoded.
struct MetaWant<'s> {
    scratch: &'s DecodeScratch,
    text: Option<NodeText<'s>>,
}

impl<'de> Want<'de> for MetaWant<'_> {
    type Out = (Meta, usize);

    fn null(self) -> Slot<Self::Out> {
        Slot::Got((Meta::new(), 0))
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        let scratch = self.scratch;
        let seed = scratch.seed(Context::Meta);
        let refs_before = scratch.meta_refs.get();
        let mark = scratch.entries_mark();
        // Where the object starts in `text`, found from its first key.
        let mut start = None;
        let mut first = true;
        // Whether an entry was left in the text, and whether one may hold a node reference.
        let mut left = false;
        let mut left_refs = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if first {
                first = false;
                start = self.text.and_then(|text| object_start(text.bytes(), &key));
            }
            if start.is_some() && !crate::meta::decoded_on_read(&key) {
                left = true;
                left_refs |= map.next_value_seed(ScanSeed)?;
            } else {
                let decoded = map.next_value_seed(seed)?;
                // Metadata never fails to decode.
                scratch.push_entry(Key::from(&*key), decoded.value.unwrap_or(PyValue::None));
            }
        }
        if let (true, Some(text), Some(start)) = (left_refs, self.text, start) {
            // Decoded whole, so that its node references are resolved, and dangling ones
            // reported, with the others.
            scratch.truncate_entries(mark);
            scratch.meta_refs.set(refs_before);
            let mut again = serde_json::Deserializer::from_slice(&text.bytes()[start..]);
            let whole = MetaWant {
                scratch,
                text: None,
            };
            return match Tolerant(whole).deserialize(&mut again) {
                Ok(Slot::Got(out)) => Ok(Slot::Got(out)),
                // Not reached: the same text parsed a moment ago.
                _ => Err(de::Error::custom(
                    "metadata that parsed once did not parse again",
                )),
            };
        }
        let entries = scratch.take_entries(mark);
        let text = match (left, self.text, start) {
            (true, Some(text), Some(start)) => Some(text.keep(start).ok_or_else(|| {
                // Not reached: the object parsed, so it ends.
                de::Error::custom("metadata that parsed has no end")
            })?),
            _ => None,
        };
        let refs = scratch.meta_refs.get() - refs_before;
        Ok(Slot::Got((Meta::read(entries, text), refs)))
    }
}

/// The offset in `text` of the object whose first key is `key`, when the key was borrowed
/// from `text` (it had no escapes; a copy lies outside `text`'s allocation): the `{` before
/// its opening quote.
fn object_start(text: &[u8], key: &str) -> Option<usize> {
    let offset = (key.as_ptr() as usize)
        .checked_sub(text.as_ptr() as usize)
        .filter(|&offset| offset <= text.len())?;
    let quote = offset
        .checked_sub(1)
        .filter(|&q| text.get(q) == Some(&b'"'))?;
    text[..quote]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .filter(|&i| text[i] == b'{')
}

/// `repr` (`null` is absent).
struct ReprWant;

#[cfg_attr(test, derive(Debug))]
struct RawRepr<'de> {
    target: Slot<Cow<'de, str>>,
    args: Slot<Cow<'de, str>>,
    kwargs: Slot<Cow<'de, str>>,
}

impl<'de> Want<'de> for ReprWant {
    type Out = Option<RawRepr<'de>>;

    fn null(self) -> Slot<Self::Out> {
        Slot::Got(None)
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        let mut repr = RawRepr {
            target: Slot::Missing,
            args: Slot::Missing,
            kwargs: Slot::Missing,
        };
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let slot = match key.as_ref() {
                "target" => &mut repr.target,
                "args" => &mut repr.args,
                "kwargs" => &mut repr.kwargs,
                _ => {
                    map.next_value::<Skip>()?;
                    continue;
                }
            };
            *slot = map.next_value_seed(Tolerant(TextWant))?;
        }
        Ok(Slot::Got(Some(repr)))
    }
}

/// One node's fields as parsed (a repeated key keeps its last value).
#[cfg_attr(test, derive(Debug))]
struct RawNode<'de> {
    name: Slot<Cow<'de, str>>,
    op: Slot<Cow<'de, str>>,
    target: Slot<Cow<'de, str>>,
    args: Slot<Result<Vec<PyValue>, DecodeError>>,
    kwargs: Slot<RawKwargs>,
    meta: Slot<(Meta, usize)>,
    alias: Slot<Option<bool>>,
    impure: Slot<Option<bool>>,
    repr: Slot<Option<RawRepr<'de>>>,
}

impl RawNode<'_> {
    /// A node with no field read yet.
    fn missing() -> Self {
        RawNode {
            name: Slot::Missing,
            op: Slot::Missing,
            target: Slot::Missing,
            args: Slot::Missing,
            kwargs: Slot::Missing,
            meta: Slot::Missing,
            alias: Slot::Missing,
            impure: Slot::Missing,
            repr: Slot::Missing,
        }
    }

    /// Writes the node's signature record as [`crate::signature::SignatureHasher::add`]
    /// writes it once the node is checked, when that needs no check: the node has a name and
    /// either a `repr`, whose strings the record takes as they are, or none and fields that
    /// parsed (its Python strings are then rendered from them, as from the checked node's:
    /// checking only resolves the references, which render as their names). False, writing
    /// nothing, otherwise. (A node that then fails its checks ends the read, record and all.)
    fn write_record(&self, out: &mut String) -> bool {
        let Slot::Got(name) = &self.name else {
            return false;
        };
        let no_meta;
        let meta = match &self.meta {
            Slot::Got((meta, _)) => meta,
            Slot::Missing => {
                no_meta = Meta::new();
                &no_meta
            }
            Slot::Wrong(_) => return false,
        };
        match &self.repr {
            Slot::Got(Some(repr)) => {
                let (Slot::Got(target), Slot::Got(args), Slot::Got(kwargs)) =
                    (&repr.target, &repr.args, &repr.kwargs)
                else {
                    return false;
                };
                crate::signature::write_record(out, name, [target, args, kwargs], meta);
            }
            Slot::Got(None) | Slot::Missing => {
                let (Slot::Got(op), Slot::Got(target)) = (&self.op, &self.target) else {
                    return false;
                };
                let Some(op) = Op::parse(op) else {
                    return false;
                };
                let args = match &self.args {
                    Slot::Missing => &[][..],
                    Slot::Got(Ok(items)) => items,
                    _ => return false,
                };
                let kwargs = match &self.kwargs {
                    Slot::Missing => None,
                    Slot::Got(entries) if entries.values().all(Result::is_ok) => Some(entries),
                    _ => return false,
                };
                let kwargs = kwargs.into_iter().flatten().filter_map(|(key, value)| {
                    value.as_ref().ok().map(|value| (key.as_str(), value))
                });
                crate::signature::write_record_rendered(out, name, op, target, args, kwargs, meta);
            }
            Slot::Wrong(_) => return false,
        }
        true
    }
}

struct NodeWant<'s> {
    scratch: &'s DecodeScratch,
    text: NodeText<'s>,
}

impl<'de> Want<'de> for NodeWant<'_> {
    type Out = RawNode<'de>;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        let mut node = RawNode::missing();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key.as_ref() {
                "name" => node.name = map.next_value_seed(Tolerant(TextWant))?,
                "op" => node.op = map.next_value_seed(Tolerant(TextWant))?,
                "target" => node.target = map.next_value_seed(Tolerant(TextWant))?,
                "args" => node.args = map.next_value_seed(Tolerant(ArgsWant(self.scratch)))?,
                "kwargs" => {
                    node.kwargs = map.next_value_seed(Tolerant(KwargsWant(self.scratch)))?
                }
                "meta" => {
                    node.meta = map.next_value_seed(Tolerant(MetaWant {
                        scratch: self.scratch,
                        text: Some(self.text),
                    }))?
                }
                "alias" => node.alias = map.next_value_seed(Tolerant(FlagWant))?,
                "impure" => node.impure = map.next_value_seed(Tolerant(FlagWant))?,
                "repr" => node.repr = map.next_value_seed(Tolerant(ReprWant))?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(Slot::Got(node))
    }
}

/// The fewest bytes of JSON a node is expected to take, for the room [`ParsedNodes::new`]
/// makes. Natively the room is address space, not memory, so it is made for lean dumps too
/// (a node with only its names and a `repr` is about 150 bytes; the exporter's real graphs
/// take 300 to 600). In wasm the room is the module's memory, grown and kept: there it is
/// made for typical dumps, and a leaner one's vector grows.
#[cfg(not(target_arch = "wasm32"))]
const BYTES_PER_NODE_ROOM: usize = 128;
#[cfg(target_arch = "wasm32")]
const BYTES_PER_NODE_ROOM: usize = 384;

/// How many nodes `text_len` bytes of JSON could hold at [`BYTES_PER_NODE_ROOM`] bytes each:
/// the room readers make for a dump's nodes before the first.
pub(crate) fn expected_nodes(text_len: usize) -> usize {
    text_len / BYTES_PER_NODE_ROOM
}

/// `nodes`, read and checked node by node while parsing. The first broken rule is kept (and
/// the rest of the array only parsed), to be reported once the whole document has parsed and
/// the top-level rules have been checked.
struct ParsedNodes {
    nodes: Vec<Node>,
    /// Name to position of `nodes`.
    index: NameTable,
    error: Option<DumpError>,
    /// Nodes whose metadata holds node references, in graph order.
    with_meta_refs: Vec<usize>,
    /// The graph signature, fed each node as it is read.
    signature: crate::signature::SignatureHasher,
}

impl ParsedNodes {
    /// Before the first node: room for as many nodes as `text_len` bytes of JSON could hold
    /// at [`BYTES_PER_NODE_ROOM`] bytes each, so the vector of a large graph is not copied as
    /// it grows (a doubling also leaves the old vector resident until the allocator returns
    /// it). The room it does not use is never touched. Without the room, it grows.
    fn new(text_len: usize) -> ParsedNodes {
        let mut nodes = Vec::new();
        let _ = nodes.try_reserve(expected_nodes(text_len));
        ParsedNodes {
            nodes,
            index: NameTable::with_capacity(0),
            error: None,
            with_meta_refs: Vec::new(),
            signature: crate::signature::SignatureHasher::default(),
        }
    }

    /// Readies the cache for taking `raw` a few nodes from now: the name table's slots for
    /// its name and the nodes its arguments name (see [`NameTable::prefetch`]).
    #[cfg(not(target_arch = "wasm32"))]
    fn prefetch(&self, raw: &Slot<RawNode<'_>>) {
        let Slot::Got(raw) = raw else { return };
        if let Slot::Got(name) = &raw.name {
            self.index.prefetch(name);
        }
        if let Slot::Got(Ok(args)) = &raw.args {
            for arg in args {
                match arg {
                    PyValue::Node(r) => self.index.prefetch(&r.name),
                    PyValue::List(items) => items.iter().for_each(|item| {
                        if let PyValue::Node(r) = item {
                            self.index.prefetch(&r.name);
                        }
                    }),
                    _ => {}
                }
            }
        }
    }

    /// Adds `raw`'s signature record, written from its parsed fields before it is checked;
    /// false, adding nothing, when that needs the check (`RawNode::write_record`).
    #[cfg(not(target_arch = "wasm32"))]
    fn hash_parsed(&mut self, raw: &Slot<RawNode<'_>>) -> bool {
        let Slot::Got(raw) = raw else { return false };
        self.signature.add_writing(|out| raw.write_record(out))
    }

    /// Checks node `i` as parsed and takes it, handing it to `sink`, and adds its signature
    /// record unless it was `hashed` (written where it was parsed). False when it broke a
    /// rule (kept in `error`): the rest is then only parsed.
    fn take(
        &mut self,
        i: usize,
        raw: &mut Slot<RawNode<'_>>,
        targets: &mut Targets,
        sink: &mut dyn NodeSink,
        hashed: bool,
    ) -> bool {
        // A repr is built only to be kept or hashed: copying it out of the text was 2% of a
        // `plan` run's checking thread, for a value let go right after. When nobody keeps
        // it, the node's record is written from its parsed fields (as the reading thread
        // writes those it parses), so it is not needed for the signature either.
        #[cfg(not(target_arch = "wasm32"))]
        let hashed = hashed || (!sink.keeps_repr() && self.hash_parsed(raw));
        let build_repr = !hashed || sink.keeps_repr();
        let lookup = |name: &str| self.index.find(&self.nodes, name);
        match check_node(i, raw, &lookup, targets, build_repr) {
            Ok((node, meta_refs)) => {
                // No earlier node failed, so `i` is the node's position.
                self.nodes.push(node);
                match self.index.insert_new(&self.nodes, i) {
                    Err(first) => {
                        let node = self.nodes.pop().expect("just pushed");
                        self.error = Some(DumpError::Node {
                            index: i,
                            name: Some(node.name),
                            field: "name".into(),
                            message: format!(
                                "the name is already used by node {first}; node names are \
                                 unique in a dump"
                            ),
                        });
                    }
                    Ok(()) => {
                        // Hashed now, while the node is in cache (references in its metadata
                        // print as names, resolved or not).
                        let node = &self.nodes[i];
                        if !hashed {
                            self.signature.add(node);
                        }
                        sink.node(i, node);
                        if !sink.keeps_repr() {
                            self.nodes[i].repr = None;
                        }
                        if meta_refs > 0 {
                            self.with_meta_refs.push(i);
                        }
                    }
                }
            }
            Err(e) => self.error = Some(e),
        }
        self.error.is_none()
    }
}

struct NodesWant<'s> {
    sink: &'s mut dyn NodeSink,
    text: &'s DumpText,
}

impl<'de> Want<'de> for NodesWant<'_> {
    type Out = ParsedNodes;

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Slot<Self::Out>, A::Error> {
        let mut parsed = ParsedNodes::new(self.text.len());
        let scratch = DecodeScratch::default();
        let mut targets = Targets::default();
        self.sink.begin();
        self.sink.expect_nodes(expected_nodes(self.text.len()));
        let mut i = 0;
        let want = || NodeWant {
            scratch: &scratch,
            text: NodeText::Document(self.text),
        };
        while let Some(mut raw) = seq.next_element_seed(Tolerant(want()))? {
            if !parsed.take(i, &mut raw, &mut targets, self.sink, false) {
                skip_seq(&mut seq)?;
                break;
            }
            i += 1;
        }
        Ok(Slot::Got(parsed))
    }
}

/// A dump's nodes once read: the nodes, the reader's warnings, and the graph signature (`None`
/// when it was digested elsewhere: `crate::signature::digest_elsewhere`).
type ReadNodes = (Vec<Node>, Vec<String>, Option<String>);

impl ParsedNodes {
    fn finish(self) -> Result<ReadNodes, DumpError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut nodes = self.nodes;
        // Metadata may point anywhere; a dangling reference is reported, not fatal.
        let mut warnings = Vec::new();
        for &i in &self.with_meta_refs {
            // Out of its node while it is resolved against all the nodes' names.
            let mut meta = std::mem::take(&mut nodes[i].meta);
            let lookup = |name: &str| self.index.find(&nodes, name);
            let owner = &nodes[i].name;
            for (key, value) in meta.decoded_values_mut() {
                resolve_meta_refs(value, &lookup, &mut |name| {
                    warnings.push(format!(
                        "node {owner:?}: meta[{key:?}] refers to node {name:?}, which is not in \
                         the dump"
                    ))
                });
            }
            nodes[i].meta = meta;
        }
        Ok((nodes, warnings, self.signature.finish()))
    }
}

/// The document: the top-level fields other than `nodes` as JSON, and `nodes` parsed.
struct RawDocument {
    top: serde_json::Map<String, J>,
    nodes: Option<NodesInput>,
}

struct DocumentWant<'s> {
    sink: &'s mut dyn NodeSink,
    text: &'s DumpText,
}

impl<'de> Want<'de> for DocumentWant<'_> {
    type Out = RawDocument;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slot<Self::Out>, A::Error> {
        let mut document = RawDocument {
            top: serde_json::Map::new(),
            nodes: None,
        };
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key.as_ref() {
                "nodes" => {
                    document.nodes = Some(
                        match map.next_value_seed(Tolerant(NodesWant {
                            sink: &mut *self.sink,
                            text: self.text,
                        }))? {
                            Slot::Got(parsed) => NodesInput::Parsed(Box::new(parsed)),
                            Slot::Wrong(kind) => NodesInput::Wrong(kind.describe()),
                            Slot::Missing => NodesInput::Wrong(Kind::Null.describe()),
                        },
                    )
                }
                "format" | "version" | "group_ranks" | "modules" | "state_fqns" | "source"
                | "planner" | "script_objects" => {
                    let value: J = map.next_value()?;
                    document.top.insert(key.into_owned(), value);
                }
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(Slot::Got(document))
    }
}

/// `read_node` for a node parsed by [`NodeWant`]: the same rules in the same order, with the
/// same messages. Returns the node, its name as the index key, and its count of metadata
/// references.
fn check_node<'de>(
    i: usize,
    raw: &mut Slot<RawNode<'de>>,
    lookup: &dyn Fn(&str) -> Option<usize>,
    targets: &mut Targets,
    build_repr: bool,
) -> Result<(Node, usize), DumpError> {
    let not_an_object = |kind: Kind| DumpError::Node {
        index: i,
        name: None,
        field: "(node)".into(),
        message: format!("a node is a JSON object, found {}", kind.describe()),
    };
    let raw = match raw {
        Slot::Got(raw) => raw,
        Slot::Wrong(kind) => return Err(not_an_object(*kind)),
        Slot::Missing => return Err(not_an_object(Kind::Null)),
    };
    let name = match raw.name.take() {
        Slot::Got(s) if !s.is_empty() => s,
        Slot::Got(_) => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: "must be a non-empty string".into(),
            })
        }
        Slot::Wrong(kind) => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: format!("expected a string, found {}", kind.describe()),
            })
        }
        Slot::Missing => {
            return Err(DumpError::Node {
                index: i,
                name: None,
                field: "name".into(),
                message: "missing; every node has a unique name".into(),
            })
        }
    };
    let name = name.into_owned();
    let err = |field: &str, message: String| DumpError::Node {
        index: i,
        name: Some(name.clone()),
        field: field.to_string(),
        message,
    };
    let op = match raw.op.take() {
        Slot::Got(s) => Op::parse(&s).ok_or_else(|| {
            err(
                "op",
                format!(
                    "unknown op {s:?}; expected one of placeholder, get_attr, call_function, \
                     call_method, call_module, output"
                ),
            )
        })?,
        Slot::Wrong(kind) => {
            return Err(err(
                "op",
                format!("expected a string, found {}", kind.describe()),
            ))
        }
        Slot::Missing => return Err(err("op", "missing".into())),
    };
    let target = match raw.target.take() {
        Slot::Got(s) => targets.get(&s),
        Slot::Wrong(kind) => {
            return Err(err(
                "target",
                format!("expected a string, found {}", kind.describe()),
            ))
        }
        Slot::Missing => return Err(err("target", "missing".into())),
    };
    let is_output = op == Op::Output;
    let mut args = match raw.args.take() {
        Slot::Missing => Vec::new(),
        Slot::Got(Ok(items)) => items,
        Slot::Got(Err(e)) => return Err(err(&format!("args{}", e.path), e.message)),
        Slot::Wrong(kind) => {
            return Err(err(
                "args",
                format!("expected an array, found {}", kind.describe()),
            ))
        }
    };
    for (k, arg) in args.iter_mut().enumerate() {
        resolve_arg_refs(arg, lookup, is_output, || format!("args[{k}]"))
            .map_err(|(path, message)| err(&path, message))?;
    }
    let mut kwargs = IndexMap::new();
    match raw.kwargs.take() {
        Slot::Missing => {}
        Slot::Got(entries) => {
            kwargs.reserve(entries.len());
            for (key, value) in entries {
                let field = || format!("kwargs[{key:?}]");
                let mut decoded =
                    value.map_err(|e| err(&format!("{}{}", field(), e.path), e.message))?;
                resolve_arg_refs(&mut decoded, lookup, is_output, field)
                    .map_err(|(path, message)| err(&path, message))?;
                kwargs.insert(key.into(), decoded);
            }
        }
        Slot::Wrong(kind) => {
            return Err(err(
                "kwargs",
                format!("expected an object, found {}", kind.describe()),
            ))
        }
    }
    let (meta, meta_refs) = match raw.meta.take() {
        Slot::Missing => (Meta::new(), 0),
        Slot::Got(meta) => meta,
        Slot::Wrong(kind) => {
            return Err(err(
                "meta",
                format!("expected an object, found {}", kind.describe()),
            ))
        }
    };
    let flag = |value: Slot<Option<bool>>, field: &str| match value {
        Slot::Missing => Ok(None),
        Slot::Got(b) => Ok(b),
        Slot::Wrong(kind) => Err(err(
            field,
            format!("expected true or false, found {}", kind.describe()),
        )),
    };
    let alias = flag(raw.alias.take(), "alias")?;
    let impure = flag(raw.impure.take(), "impure")?;
    let repr = match raw.repr.take() {
        Slot::Missing | Slot::Got(None) => None,
        Slot::Got(Some(fields)) => {
            let text = |value: Slot<Cow<'de, str>>, key: &str| match value {
                Slot::Got(s) => Ok(s),
                Slot::Wrong(kind) => Err(err(
                    &format!("repr.{key}"),
                    format!("expected a string, found {}", kind.describe()),
                )),
                Slot::Missing => Err(err(
                    &format!("repr.{key}"),
                    "missing; repr has \"target\", \"args\" and \"kwargs\"".into(),
                )),
            };
            let target = text(fields.target, "target")?;
            let args = text(fields.args, "args")?;
            let kwargs = text(fields.kwargs, "kwargs")?;
            let too_long = || err("repr", "longer than 4 GiB in all".into());
            match build_repr {
                true => Some(NodeRepr::new(&target, &args, &kwargs).ok_or_else(too_long)?),
                false => {
                    // Checked as building it would check.
                    NodeRepr::fits(&target, &args, &kwargs).ok_or_else(too_long)?;
                    None
                }
            }
        }
        Slot::Wrong(kind) => {
            return Err(err(
                "repr",
                format!(
                    "expected an object {{\"target\", \"args\", \"kwargs\"}}, found {}",
                    kind.describe()
                ),
            ))
        }
    };
    let node = Node {
        name,
        op,
        target,
        args,
        kwargs: kwargs.into(),
        meta,
        alias,
        impure,
        repr,
    };
    Ok((node, meta_refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repr_gives_back_its_three_strings() {
        let cases = [
            ("aten.mm.default", "(a, b)", "{}"),
            ("", "", ""),
            ("<function f>", "", "{'dim': 0}"),
            ("t", "('é', '日本')", "{'k': '\u{0}'}"),
        ];
        for (target, args, kwargs) in cases {
            let repr = NodeRepr::new(target, args, kwargs).expect("fits");
            assert_eq!(
                (repr.target(), repr.args(), repr.kwargs()),
                (target, args, kwargs)
            );
            assert_eq!(repr.clone(), repr);
        }
        let long = "x".repeat(100_000);
        let repr = NodeRepr::new(&long, "()", "{}").expect("fits");
        assert_eq!((repr.target().len(), repr.args()), (100_000, "()"));
        // Equal strings split differently are different reprs.
        assert_ne!(NodeRepr::new("ab", "c", ""), NodeRepr::new("a", "bc", ""));
    }

    /// The reader as it was: a `serde_json::Value`, then [`read_document`].
    fn read_via_value(bytes: &[u8]) -> Result<Dump, DumpError> {
        let inflated;
        let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
            inflated = gunzip(bytes)?;
            &inflated[..]
        } else {
            bytes
        };
        let document: J = serde_json::from_slice(bytes).map_err(|e| DumpError::Json {
            line: e.line(),
            column: e.column(),
            message: json_message(&e),
        })?;
        read_document(document)
    }

    fn same(bytes: &[u8]) {
        let fast = format!("{:?}", read_dump(bytes));
        let slow = format!("{:?}", read_via_value(bytes));
        assert_eq!(
            fast,
            slow,
            "readers disagree on:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }

    pub(super) struct Rng(pub(super) u64);

    impl Rng {
        pub(super) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        pub(super) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    const NAMES: &[&str] = &["a", "b", "x", "relu", "out\\u00e9", "we\\\"ird", ""];
    const KEYS: &[&str] = &[
        "node", "dtype", "device", "sym", "repr", "tensor", "shape", "x", "k\\n", "val",
    ];

    fn string(rng: &mut Rng) -> String {
        let choices = [
            "\"torch.float32\"",
            "\"torch.bfloat16\"",
            "\"torch.nope\"",
            "\"inf\"",
            "\"-inf\"",
            "\"nan\"",
            "\"cuda:0\"",
            "\"s0\"",
            "\"caf\\u00e9\"",
            "\"tab\\t\"",
        ];
        if rng.below(3) == 0 {
            format!("\"{}\"", rng.pick(NAMES))
        } else {
            choices[rng.below(choices.len())].to_string()
        }
    }

    fn value(rng: &mut Rng, depth: usize) -> String {
        let top = if depth > 3 { 5 } else { 9 };
        match rng.below(top) {
            0 => "null".into(),
            1 => if rng.below(2) == 0 { "true" } else { "false" }.into(),
            2 => [
                "0",
                "-3",
                "18446744073709551615",
                "-9223372036854775808",
                "7",
            ][rng.below(5)]
            .into(),
            3 => ["1.5", "-0.0", "2e3", "0.1"][rng.below(4)].into(),
            4 => string(rng),
            5 => {
                let n = rng.below(4);
                let items: Vec<String> = (0..n).map(|_| value(rng, depth + 1)).collect();
                format!("[{}]", items.join(", "))
            }
            6 => {
                // An encoded object, perhaps with a repeated key.
                let key = rng.pick(KEYS);
                let mut text = format!("{{\"{key}\": {}", value(rng, depth + 1));
                if rng.below(4) == 0 {
                    let again = if rng.below(2) == 0 {
                        key
                    } else {
                        rng.pick(KEYS)
                    };
                    text.push_str(&format!(", \"{again}\": {}", value(rng, depth + 1)));
                }
                text.push('}');
                text
            }
            7 => format!("{{\"node\": \"{}\"}}", rng.pick(NAMES)),
            _ => {
                let n = rng.below(4);
                let items: Vec<String> = (0..n)
                    .map(|_| format!("\"{}\": {}", rng.pick(KEYS), value(rng, depth + 1)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn node(rng: &mut Rng, i: usize) -> String {
        if rng.below(100) == 0 {
            return value(rng, 0);
        }
        let mut fields = Vec::new();
        let name = if rng.below(8) == 0 {
            rng.pick(NAMES).to_string()
        } else {
            format!("n{i}")
        };
        let mut push = |rng: &mut Rng, field: String| {
            if rng.below(60) != 0 {
                fields.push(field);
            }
        };
        push(rng, format!("\"name\": \"{name}\""));
        let op = ["call_function", "placeholder", "output", "call_functoin"][if rng.below(10) == 0 {
            rng.below(4)
        } else {
            rng.below(3)
        }];
        push(rng, format!("\"op\": \"{op}\""));
        push(rng, "\"target\": \"aten.mm.default\"".to_string());
        let arg = |rng: &mut Rng| {
            if rng.below(2) == 0 && i > 0 {
                format!("{{\"node\": \"n{}\"}}", rng.below(i))
            } else {
                value(rng, 1)
            }
        };
        let args: Vec<String> = (0..rng.below(4)).map(|_| arg(rng)).collect();
        push(rng, format!("\"args\": [{}]", args.join(", ")));
        if rng.below(3) == 0 {
            let kw: Vec<String> = (0..rng.below(3))
                .map(|_| format!("\"{}\": {}", rng.pick(KEYS), arg(rng)))
                .collect();
            push(rng, format!("\"kwargs\": {{{}}}", kw.join(", ")));
        }
        let meta: Vec<String> = (0..rng.below(5))
            .map(|_| format!("\"{}\": {}", rng.pick(KEYS), value(rng, 0)))
            .collect();
        push(rng, format!("\"meta\": {{{}}}", meta.join(", ")));
        push(rng, "\"alias\": false".to_string());
        push(rng, "\"impure\": null".to_string());
        push(
            rng,
            "\"repr\": {\"target\": \"t\", \"args\": \"()\", \"kwargs\": \"{}\"}".to_string(),
        );
        let extra = format!("\"extra\": {}", value(rng, 0));
        push(rng, extra);
        // Any field may be replaced by a value of another kind, or repeated.
        for _ in 0..rng.below(3) * rng.below(2) * rng.below(2) {
            let keys = [
                "name", "op", "target", "args", "kwargs", "meta", "alias", "impure", "repr",
            ];
            let key = keys[rng.below(keys.len())];
            fields.push(format!("\"{key}\": {}", value(rng, 0)));
        }
        for k in (1..fields.len()).rev() {
            if rng.below(3) == 0 {
                let j = rng.below(k + 1);
                fields.swap(k, j);
            }
        }
        format!("{{{}}}", fields.join(", "))
    }

    fn document(rng: &mut Rng) -> String {
        let n = rng.below(9);
        let nodes: Vec<String> = (0..n).map(|i| node(rng, i)).collect();
        let mut fields = vec![
            "\"format\": \"commlens.graph\"".to_string(),
            "\"version\": 1".to_string(),
            format!("\"nodes\": [{}]", nodes.join(", ")),
        ];
        let extras = [
            "\"group_ranks\": {\"fsdp\": [0, 1]}",
            "\"modules\": [{\"fqn\": \"\", \"type\": \"M\"}]",
            "\"state_fqns\": [\"a\"]",
            "\"source\": {\"p\": 1}",
            "\"planner\": {}",
            "\"format\": \"torch.fx\"",
            "\"version\": 2",
            "\"nodes\": {}",
            "\"group_ranks\": []",
        ];
        for _ in 0..rng.below(3) * rng.below(2) {
            fields.push(extras[rng.below(extras.len())].to_string());
        }
        if rng.below(10) == 0 {
            fields.swap(0, 2);
        }
        format!("{{{}}}", fields.join(", "))
    }

    #[test]
    fn gzip_size_hint_is_the_trailer_bounded_by_the_data() {
        use std::io::Write;
        let json = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(500));
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(json.as_bytes()).expect("gzip");
        let gz = encoder.finish().expect("gzip");
        assert_eq!(gzip_size_hint(&gz), json.len());
        assert_eq!(gunzip(&gz).expect("gunzip"), json.as_bytes());
        // A forged trailer asks for at most what deflate could hold; the data then fails
        // its length check as before.
        let mut forged = gz.clone();
        let n = forged.len();
        forged[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(gzip_size_hint(&forged), (u32::MAX as usize).min(n * 1032));
        assert!(matches!(gunzip(&forged), Err(DumpError::Gzip { .. })));
        assert_eq!(gzip_size_hint(&gz[..17]), 0);
        assert_eq!(gzip_size_hint(&[]), 0);
    }

    #[test]
    fn streaming_reader_matches_value_reader_on_random_documents() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..8_000 {
            let text = document(&mut rng);
            same(text.as_bytes());
            // Truncated or corrupted.
            let cut = rng.below(text.len() + 1);
            same(&text.as_bytes()[..cut]);
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len());
            let noise = b"{}[],:\"\\ 0xn\xff";
            bytes[at] = noise[rng.below(noise.len())];
            same(&bytes);
        }
    }

    #[test]
    fn streaming_reader_matches_value_reader_on_stored_dumps() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            root.join("tests/fixtures/reader"),
            root.join("../shared/conformance/cases"),
        ] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    files.push(path.join("dump.json"));
                } else {
                    files.push(path);
                }
            }
        }
        files.retain(|f| f.is_file());
        files.sort();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for file in files {
            let bytes = std::fs::read(&file).expect("read");
            same(&bytes);
            let mutations = if bytes.len() > 100_000 { 1 } else { 10 };
            for _ in 0..mutations {
                let mut copy = bytes.clone();
                let at = rng.below(copy.len());
                copy[at] = (rng.next() >> 32) as u8;
                same(&copy);
                same(&bytes[..rng.below(bytes.len() + 1)]);
            }
        }
        let synthetic = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(2000));
        same(synthetic.as_bytes());
        // serde_json's recursion limit, wherever the nesting is.
        for depth in [120, 126, 127, 128, 129, 200] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let deep_map = format!("{}1{}", "{\"k\": ".repeat(depth), "}".repeat(depth));
            for inner in [&deep, &deep_map] {
                for node in [
                    format!("{{\"name\": \"a\", \"op\": \"output\", \"target\": \"o\", \"args\": {inner}}}"),
                    format!("{{\"name\": \"a\", \"op\": \"output\", \"target\": \"o\", \"meta\": {{\"m\": {inner}}}}}"),
                    format!("{{\"name\": \"a\", \"op\": \"output\", \"target\": \"o\", \"other\": {inner}}}"),
                ] {
                    let text = format!(
                        "{{\"format\": \"commlens.graph\", \"version\": 1, \"nodes\": [{node}]}}"
                    );
                    same(text.as_bytes());
                }
                same(format!("{{\"source\": {inner}}}").as_bytes());
                same(inner.as_bytes());
            }
        }
    }
}
