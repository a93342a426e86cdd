//! The graph signature (`graph_signature`): SHA-256 over each node's name, `str(target)`,
//! `str(args)`, `str(kwargs)` and planning metadata, exactly as the reference computes it, so a
//! plan can be matched to the graph snapshot it was made from — and to a report the Python
//! planner logged. The reader hashes each node as it reads it ([`crate::Dump::signature`]),
//! while the node is still in cache; [`graph_signature`] recomputes it from any graph.

use crate::dump::{Node, Op};
use crate::graph::Graph;
use crate::meta::Meta;
use crate::pyjson;
use crate::value::PyValue;
use std::borrow::Cow;
use std::cell::RefCell;

/// Metadata keys the signature covers: every `fsdp_*` key and these.
const SIGNATURE_KEYS: [&str; 5] = [
    "comm_type",
    "comm_group",
    "param_name",
    "state_idx",
    "autograd_backward",
];

/// `graph_signature`: SHA-256 over each node's name, target, args, kwargs and planning
/// metadata, so a plan can be matched to the graph snapshot it was made from.
pub fn graph_signature(graph: &Graph) -> String {
    let mut hasher = SignatureHasher::here();
    for node in graph.nodes() {
        hasher.add(node);
    }
    hasher.finish().unwrap_or_default()
}

/// `graph_signature`, streamed: each node's record is hashed as it is visited, in graph order,
/// and the records' JSON is never held whole.
///
/// Inside [`digest_elsewhere`], a hasher made with `default()` hands the records' bytes to
/// that scope's sink instead of hashing them (a new hasher starts the sink's bytes over), and
/// [`SignatureHasher::finish`] gives `None`.
pub struct SignatureHasher {
    /// `None`: the bytes go to the thread's [`digest_elsewhere`] sink.
    hasher: Option<sha2::Sha256>,
    buffer: String,
    count: usize,
    /// Made inside [`without_records`]: writes nothing.
    skipped: bool,
}

/// The bytes are flushed to the hash in pieces of about this size (they stay in cache)...
const PIECE: usize = 1 << 15;
/// ...and to a [`digest_elsewhere`] sink in larger ones: each piece handed out crosses into the
/// host (in the browser, a call into JS and a copy), and 32 KiB pieces cost half of what the
/// hashing they replace did.
const PIECE_ELSEWHERE: usize = 1 << 20;

/// Where [`digest_elsewhere`] hands the graph signature's bytes.
pub trait RecordSink {
    /// The records start over: the reader began another `nodes` array (a document that
    /// repeats the key is read as JSON reads it, the last array counting).
    fn restart(&mut self);
    /// The next piece of the records' bytes.
    fn write(&mut self, bytes: &[u8]);
}

thread_local! {
    /// Where [`digest_elsewhere`] sends the records' bytes on this thread.
    static ELSEWHERE: RefCell<Option<Box<dyn RecordSink>>> = const { RefCell::new(None) };
    /// Inside [`without_records`] on this thread.
    static WITHOUT_RECORDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `read` with no graph signature made at all: the readers on this thread write no
/// records, leave [`crate::Dump::signature`] as `None`, and a planner they prepare has an
/// empty signature until [`crate::planner::Planner::set_signature`] gives it one. For a host
/// that makes the signature of the same bytes elsewhere, at the same time
/// ([`records_of_dump`] on another thread or instance: the browser's worker). Everything else
/// the readers do (every check, every error, every node's `repr`) is unchanged.
pub fn without_records<T>(read: impl FnOnce() -> T) -> T {
    /// Restores the flag however `read` ends.
    struct Scope(bool);
    impl Drop for Scope {
        fn drop(&mut self) {
            WITHOUT_RECORDS.with(|w| w.set(self.0));
        }
    }
    let _scope = Scope(WITHOUT_RECORDS.with(|w| w.replace(true)));
    read()
}

/// The graph signature's bytes for the dump `bytes` (plain JSON or gzip), as a read of the
/// same bytes hashes them: its SHA-256 (hex) is the signature of the graph read from them.
/// Made without checking or keeping the nodes, in about half a read's time, for a host that
/// digests them beside the read ([`without_records`]). `None` when they cannot be made that
/// way: the bytes are not a dump this reader reads node by node (a trace log, a document the
/// whole-text reader reads), are over the input-size limit, or a node's record needs its
/// check (a field of the wrong kind; a node without `repr` has its strings rendered). Bytes
/// that do not hold a valid dump may give records; their read fails, and nobody asks for
/// their signature.
pub fn records_of_dump(bytes: &[u8]) -> Option<String> {
    crate::dump::signature_records(bytes)
}

/// Runs `read` with the graph signature's bytes handed to `records`, a piece at a time, instead
/// of hashed: for a host whose SHA-256 is much faster than this build's (in a browser,
/// WebCrypto's is native code, where wasm has no SHA instructions and SHA-256 was a fifth of
/// a read). Inside, the readers on this thread leave [`crate::Dump::signature`] as `None` and
/// a [`crate::planner::Planner`] they prepare has an empty signature until
/// [`crate::planner::Planner::set_signature`] gives it the SHA-256 (hex) of all the bytes
/// handed out. Everything else the readers do (every check, every error) is unchanged.
pub fn digest_elsewhere<T>(records: Box<dyn RecordSink>, read: impl FnOnce() -> T) -> T {
    /// Clears the sink however `read` ends.
    struct Scope(Option<Box<dyn RecordSink>>);
    impl Drop for Scope {
        fn drop(&mut self) {
            let outer = self.0.take();
            ELSEWHERE.with(|e| *e.borrow_mut() = outer);
        }
    }
    let outer = ELSEWHERE.with(|e| e.borrow_mut().replace(records));
    let _scope = Scope(outer);
    read()
}

/// Whether this thread's readers leave the signature to the host: inside
/// [`digest_elsewhere`] or [`without_records`].
pub fn digesting_elsewhere() -> bool {
    ELSEWHERE.with(|e| e.borrow().is_some()) || WITHOUT_RECORDS.with(|w| w.get())
}

impl Default for SignatureHasher {
    fn default() -> Self {
        if WITHOUT_RECORDS.with(|w| w.get()) {
            return SignatureHasher {
                hasher: None,
                buffer: String::new(),
                count: 0,
                skipped: true,
            };
        }
        let mut hasher = SignatureHasher::here();
        ELSEWHERE.with(|e| {
            if let Some(records) = e.borrow_mut().as_mut() {
                records.restart();
                hasher.hasher = None;
                hasher.buffer.reserve(PIECE_ELSEWHERE);
            }
        });
        hasher
    }
}

impl SignatureHasher {
    /// A hasher that hashes here, even inside [`digest_elsewhere`].
    pub fn here() -> Self {
        use sha2::Digest;
        let mut buffer = String::with_capacity(PIECE * 2);
        buffer.push('[');
        SignatureHasher {
            hasher: Some(sha2::Sha256::new()),
            buffer,
            count: 0,
            skipped: false,
        }
    }

    fn flush(&mut self) {
        use sha2::Digest;
        match &mut self.hasher {
            Some(hasher) => hasher.update(self.buffer.as_bytes()),
            None => ELSEWHERE.with(|e| {
                if let Some(records) = e.borrow_mut().as_mut() {
                    records.write(self.buffer.as_bytes());
                }
            }),
        }
        self.buffer.clear();
    }

    /// Adds the next node's record: `(name, str(target), str(args), str(kwargs), metadata)`.
    pub fn add(&mut self, node: &Node) {
        if self.skipped {
            return;
        }
        self.add_writing(|out| {
            match &node.repr {
                Some(repr) => write_record(
                    out,
                    &node.name,
                    [repr.target(), repr.args(), repr.kwargs()],
                    &node.meta,
                ),
                None => write_record_rendered(
                    out,
                    &node.name,
                    node.op,
                    &node.target,
                    &node.args,
                    node.kwargs.iter().map(|(k, v)| (k.as_str(), v)),
                    &node.meta,
                ),
            }
            true
        });
    }

    /// Adds the next `count` records, written by [`write_record`] with `", "` between them
    /// (the streamed reader writes them on the thread that parsed the nodes).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn add_written(&mut self, records: &str, count: usize) {
        if count == 0 || self.skipped {
            return;
        }
        if self.count > 0 {
            self.buffer.push_str(", ");
        }
        self.count += count;
        match &mut self.hasher {
            // A batch's records (tens of KB, written on the other thread) are hashed where
            // they are, not copied into the buffer first: the copy was 1.2% of a read's CPU.
            Some(hasher) if records.len() >= PIECE => {
                use sha2::Digest;
                hasher.update(self.buffer.as_bytes());
                self.buffer.clear();
                hasher.update(records.as_bytes());
            }
            _ => {
                self.buffer.push_str(records);
                self.flush_if_full();
            }
        }
    }

    /// Adds the next node's record as `write` writes it ([`write_record`]'s text), unless it
    /// writes nothing and returns false; whether it was added.
    pub(crate) fn add_writing(&mut self, write: impl FnOnce(&mut String) -> bool) -> bool {
        if self.skipped {
            // Nothing to write: the record counts as added.
            return true;
        }
        let before = self.buffer.len();
        if self.count > 0 {
            self.buffer.push_str(", ");
        }
        if !write(&mut self.buffer) {
            self.buffer.truncate(before);
            return false;
        }
        self.count += 1;
        self.flush_if_full();
        true
    }

    fn flush_if_full(&mut self) {
        let piece = if self.hasher.is_some() {
            PIECE
        } else {
            PIECE_ELSEWHERE
        };
        if self.buffer.len() >= piece {
            self.flush();
        }
    }

    /// The hex digest of all records added; `None` when they were handed out
    /// ([`digest_elsewhere`]) or not written ([`without_records`]).
    pub fn finish(mut self) -> Option<String> {
        use sha2::Digest;
        if self.skipped {
            return None;
        }
        self.buffer.push(']');
        self.flush();
        self.hasher.map(|hasher| pyjson::hex(&hasher.finalize()))
    }
}

/// Writes a node's record, `[name, str(target), str(args), str(kwargs), {metadata}]`, to
/// `out`.
pub(crate) fn write_record(out: &mut String, name: &str, strings: [&str; 3], meta: &Meta) {
    out.push('[');
    for text in std::iter::once(name).chain(strings) {
        pyjson::write_string(out, text);
        out.push_str(", ");
    }
    // Gathered on the stack: a node has a handful of these entries, and an allocation per
    // node was 1.5% of reading a 100k-node dump in the browser.
    let mut metadata: smallvec::SmallVec<[(&str, &PyValue); 16]> = meta
        .decoded_entries()
        .filter(|(k, _)| k.starts_with("fsdp_") || SIGNATURE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    pyjson::write_dict_entries(out, &mut metadata);
    out.push(']');
}

/// `str(node.target)`, `str(node.args)`, `str(node.kwargs)`: from the dump's `repr` field
/// when present, else rendered as Python would print them (best effort: a dump cannot say
/// whether an array was a tuple or a list).
pub fn python_strings(node: &Node) -> (Cow<'_, str>, Cow<'_, str>, Cow<'_, str>) {
    if let Some(repr) = &node.repr {
        return (
            Cow::Borrowed(repr.target()),
            Cow::Borrowed(repr.args()),
            Cow::Borrowed(repr.kwargs()),
        );
    }
    let mut strings = Default::default();
    render_python_strings(
        &mut strings,
        node.op,
        &node.target,
        &node.args,
        node.kwargs.iter().map(|(k, v)| (k.as_str(), v)),
    );
    let [target, args, kwargs] = strings;
    (Cow::Owned(target), Cow::Owned(args), Cow::Owned(kwargs))
}

/// Renders a node's `str(target)`, `str(args)` and `str(kwargs)` into `strings` (each
/// cleared first), as [`python_strings`] does for a node without a `repr`.
fn render_python_strings<'v>(
    strings: &mut [String; 3],
    op: Op,
    target: &str,
    args: &[PyValue],
    kwargs: impl IntoIterator<Item = (&'v str, &'v PyValue)>,
) {
    let [target_out, args_out, kwargs_out] = strings;
    target_out.clear();
    write_python_target(target_out, op, target);
    args_out.clear();
    PyValue::write_repr_tuple(args_out, args);
    kwargs_out.clear();
    PyValue::write_repr_dict(kwargs_out, kwargs);
}

thread_local! {
    /// The strings [`write_record_rendered`] renders a node's into, kept for the next node
    /// rather than three allocated for each (a dump without `repr`s renders every node's).
    static RENDERED: RefCell<[String; 3]> = RefCell::default();
}

/// Writes the record of a node without a `repr` ([`write_record`]), its Python strings
/// rendered from its fields.
pub(crate) fn write_record_rendered<'v>(
    out: &mut String,
    name: &str,
    op: Op,
    target: &str,
    args: &[PyValue],
    kwargs: impl IntoIterator<Item = (&'v str, &'v PyValue)>,
    meta: &Meta,
) {
    RENDERED.with(|rendered| {
        // Never borrowed twice: rendering calls nothing that writes a record.
        let mut strings = rendered.borrow_mut();
        render_python_strings(&mut strings, op, target, args, kwargs);
        let [target, args, kwargs] = &*strings;
        write_record(out, name, [target, args, kwargs], meta);
    });
}

/// Namespaces of `torch.ops` whose `str()` is the canonical name itself.
const OP_NAMESPACES: &[&str] = &[
    "aten",
    "prims",
    "_c10d_functional",
    "c10d_functional",
    "c10d",
    "inductor",
    "higher_order",
    "profiler",
    "quantized",
    "symm_mem",
    "_dtensor",
];

/// Appends `str(node.target)` to `out`.
fn write_python_target(out: &mut String, op: Op, target: &str) {
    if op != Op::CallFunction {
        out.push_str(target);
        return;
    }
    if let Some(name) = target.strip_prefix("_operator.") {
        out.push_str("<built-in function ");
        out.push_str(name);
        out.push('>');
        return;
    }
    let namespace = target.split('.').next().unwrap_or_default();
    if OP_NAMESPACES.contains(&namespace) {
        out.push_str(target);
        return;
    }
    let last = target.rsplit('.').next().unwrap_or(target);
    out.push_str("<function ");
    out.push_str(last);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader's signature (hashed while reading) equals one recomputed from the graph, on
    /// both reading paths.
    #[test]
    fn signature_hashed_while_reading_matches_recomputation() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec {
            layers: 2,
            degree: 2,
            hidden: 8,
        });
        let streamed = crate::read_dump(text.as_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let from_value = crate::dump::read_document(value).unwrap();
        let recomputed = graph_signature(&Graph::new(streamed.clone()));
        assert_eq!(streamed.signature.as_deref(), Some(recomputed.as_str()));
        assert_eq!(from_value.signature.as_deref(), Some(recomputed.as_str()));
        let mut by_hand = streamed;
        by_hand.signature = None;
        let planner = crate::planner::Planner::new(Graph::new(by_hand));
        let plan = planner.plan(&crate::PlannerArgs::default()).unwrap();
        assert_eq!(plan.signature, recomputed);
    }

    /// A node with more signature entries than fit on the stack hashes them all, in key order
    /// whatever their order in the dump.
    #[test]
    fn every_signature_entry_is_hashed_however_many() {
        let dump = crate::synth::synthetic_dump(crate::synth::SynthSpec {
            layers: 1,
            degree: 2,
            hidden: 8,
        });
        let with_entries = |keys: &mut dyn Iterator<Item = usize>, last: u32| {
            let meta: Vec<String> = keys
                .map(|k| format!("\"fsdp_k{k:02}\": {}", if k == 19 { last } else { 1 }))
                .collect();
            let node = format!(
                "{{\"name\": \"extra\", \"op\": \"placeholder\", \"target\": \"extra\", \"meta\": {{{}}}}}, ",
                meta.join(", ")
            );
            let text = dump.replacen("\"nodes\": [", &format!("\"nodes\": [{node}"), 1);
            assert_ne!(text, dump);
            crate::read_dump(text.as_bytes())
                .unwrap()
                .signature
                .unwrap()
        };
        let in_order = with_entries(&mut (0..20), 1);
        assert_eq!(in_order, with_entries(&mut (0..20).rev(), 1));
        assert_ne!(
            in_order,
            with_entries(&mut (0..20), 2),
            "the 20th entry counts"
        );
        assert_ne!(in_order, with_entries(&mut (0..19), 1), "so does its key");
    }

    /// The records' bytes, as a host digesting them elsewhere receives them.
    #[derive(Clone, Default)]
    struct Collected(std::rc::Rc<RefCell<(Vec<u8>, usize)>>);

    impl RecordSink for Collected {
        fn restart(&mut self) {
            let mut c = self.0.borrow_mut();
            c.0.clear();
            c.1 += 1;
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.borrow_mut().0.extend_from_slice(bytes);
        }
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        use sha2::Digest;
        pyjson::hex(&sha2::Sha256::digest(bytes))
    }

    /// Read inside `digest_elsewhere`, a dump, a trace log and a dump that repeats `nodes` hand
    /// out bytes whose SHA-256 is the signature read here; with it set, the plan (its bucket
    /// ids carry the signature) is the same plan, and reading after the scope hashes again.
    #[test]
    fn signature_digested_elsewhere_is_the_signature() {
        let spec = crate::synth::SynthSpec {
            layers: 3,
            degree: 2,
            hidden: 8,
        };
        let dump = crate::synth::synthetic_dump(spec);
        let log = crate::synth::synthetic_trace_log(spec, true);
        // The same document with a first, different `nodes` array that the second replaces,
        // long enough that some of its records are handed out before the second begins.
        let first: Vec<String> = (0..50_000)
            .map(|i| {
                format!("{{\"name\": \"x{i}\", \"op\": \"placeholder\", \"target\": \"x{i}\"}}")
            })
            .collect();
        let repeated = dump.replacen(
            "\"nodes\":",
            &format!("\"nodes\": [{}], \"nodes\":", first.join(", ")),
            1,
        );
        assert_ne!(repeated, dump, "the synthetic dump has a nodes key");
        // The dump's own arguments (its group ranks and block types; the log has neither).
        let read = crate::read_dump(dump.as_bytes()).unwrap();
        let args =
            crate::PlannerArgs::resolve(None, read.planner.as_ref(), read.group_ranks.as_ref());
        for (what, text) in [
            ("dump", &dump),
            ("trace log", &log),
            ("repeated nodes", &repeated),
        ] {
            let here: crate::planner::Planner<Graph> =
                crate::input::read_prepared(text.as_bytes(), None).unwrap();
            let expected = here.signature().to_string();
            assert_eq!(expected.len(), 64, "{what}");
            let collected = Collected::default();
            let mut elsewhere: crate::planner::Planner<Graph> =
                digest_elsewhere(Box::new(collected.clone()), || {
                    crate::input::read_prepared(text.as_bytes(), None).unwrap()
                });
            assert!(!digesting_elsewhere(), "{what}: the scope is closed");
            assert_eq!(elsewhere.signature(), "", "{what}: pending until set");
            assert_eq!(elsewhere.graph().dump.signature, None, "{what}");
            let (bytes, starts) = collected.0.borrow().clone();
            assert!(starts >= 1, "{what}");
            assert_eq!(sha256_hex(&bytes), expected, "{what}");
            elsewhere.set_signature(sha256_hex(&bytes));
            let (a, b) = (here.plan(&args).unwrap(), elsewhere.plan(&args).unwrap());
            // (A printed graph keeps no FSDP tags, so a log's graph plans to no buckets.)
            assert!(what == "trace log" || !a.buckets.is_empty(), "{what}");
            assert_eq!(
                crate::planner::report::plan_to_value(&a, here.graph()),
                crate::planner::report::plan_to_value(&b, elsewhere.graph()),
                "{what}"
            );
        }
        let after: crate::planner::Planner<Graph> =
            crate::input::read_prepared(dump.as_bytes(), None).unwrap();
        assert_eq!(
            after.graph().dump.signature.as_deref(),
            Some(after.signature())
        );
    }
}
