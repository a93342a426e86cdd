//! [`Meta`]: a node's `meta`, decoded where commlens reads it and kept as JSON text elsewhere.
//!
//! Most of a node's metadata (`val`, `tensor_meta`, `stack_trace`, `original_aten`, ...) is
//! never read by planning, classifying or drawing, yet decoded it was most of a read dump's
//! memory. The reader decodes only the entries whose keys [`decoded_on_read`] accepts and keeps
//! the position of the `meta` object in the dump's text; the rest is decoded, once, when
//! something asks for it. Every check the reader makes on metadata still happens while it
//! reads (the per-value list limit, the JSON syntax), and metadata holding a node reference
//! outside the decoded keys is decoded whole at once, so its references are resolved and
//! reported as before. What a reader of a `Meta` sees does not depend on which entries were
//! decoded early: only what it costs does.

use crate::key::Key;
use crate::value::{Dict, PyValue};
use once_cell::race::OnceBox;
use std::fmt;
use std::sync::Arc;

/// Keys decoded while reading: what the planner, the graph's facts, the classifier and the
/// graph signature read on every node (with [`DECODED_PREFIXES`]). Code that walks
/// [`Meta::decoded_entries`] must look only for these.
const DECODED_KEYS: &[&str] = &[
    "comm_type",
    "comm_group",
    "param_name",
    "state_idx",
    "autograd_backward",
    "custom",
    "comm_semantics",
    "recompute",
    "from_node",
    "partitioner_tag",
    "ac_graph_id",
    "desc",
];

/// Key prefixes decoded while reading (`fsdp_*` planner tags, `bucketing_*_sources`).
const DECODED_PREFIXES: &[&str] = &["fsdp_", "bucketing_"];

/// Whether the reader decodes the entry `key` as it reads (otherwise it is decoded on first
/// use).
pub fn decoded_on_read(key: &str) -> bool {
    // Asked of every metadata key as it is read, and on every `Meta::get` that misses: the
    // length and first byte rule out nearly every other key without a call to compare.
    let same = |k: &str| k.len() == key.len() && k.as_bytes().first() == key.as_bytes().first();
    DECODED_KEYS.iter().any(|k| same(k) && *k == key)
        || DECODED_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// A node's decoded metadata entries: shared by the nodes whose `meta` objects read the
/// same (`{"autograd_backward": true}` is most nodes' whole metadata).
pub(crate) type Entries = Arc<[(Key, PyValue)]>;

/// The text a dump was read from, shared by the metadata of its nodes.
pub type DumpText = Arc<Vec<u8>>;

/// Where a node's `meta` object is kept as text.
#[derive(Clone)]
pub(crate) enum MetaText {
    /// In the dump's whole text, which the nodes share: the object starts at `start` (its
    /// `{`).
    InDocument { document: DumpText, start: usize },
    /// The object's own bytes: a dump read as it decompresses keeps no whole text
    /// (`crate::dump::read_gzip_into`).
    /// Shared by the nodes whose kept objects are equal (`streamed::kept_object`).
    Own(Arc<[u8]>),
}

impl MetaText {
    /// The text that starts with the object (what follows it is not read).
    fn bytes(&self) -> &[u8] {
        match self {
            MetaText::InDocument { document, start } => &document[*start..],
            MetaText::Own(bytes) => bytes,
        }
    }
}

/// A node's `meta`: a Python `dict` with `str` keys, in insertion order. Read as a map with
/// [`Meta::get`] and [`Meta::iter`]; equality and `Debug` are those of the whole map.
#[derive(Clone, Default)]
pub struct Meta {
    /// With `text`: exactly the entries whose keys [`decoded_on_read`] accepts (and any
    /// inserted since). Without: every entry. Keys are unique. A shared slice, not a `Vec`
    /// (the reader makes them at their size, and hands nodes with equal metadata the same
    /// one; a change is rare and makes a new one).
    entries: Entries,
    /// The `meta` object in the dump, for the entries not in `entries`.
    text: Option<MetaText>,
    /// Every entry, decoded from `text` and overlaid with `entries`, on first need. An
    /// 8-byte pointer set once (`OnceLock` is 16 bytes): there is a `Meta` in every node. Two
    /// threads that ask for it at once may both decode it; one copy is kept.
    full: OnceBox<Dict>,
}

// What the two boxes above save: a `Meta` is 48 bytes, not 64, in every node.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Meta>() <= 48);

impl Meta {
    /// Asks for the decoded entries to be brought into cache, ahead of reading them
    /// ([`crate::hashing::prefetch`]).
    pub(crate) fn prefetch_entries(&self) {
        crate::hashing::prefetch(self.entries.as_ptr());
    }

    /// Metadata whose every entry is decoded.
    pub fn new() -> Meta {
        Meta::default()
    }

    /// As read: `entries` (unique keys) are the decoded ones; with `text`, the rest are in
    /// the object it holds.
    pub(crate) fn read(entries: Entries, text: Option<MetaText>) -> Meta {
        Meta {
            entries,
            text,
            full: OnceBox::new(),
        }
    }

    /// What the reader made: the decoded entries, and the kept text (from the object's
    /// start to the text's end).
    #[cfg(test)]
    pub(crate) fn as_read(&self) -> (&[(Key, PyValue)], Option<&[u8]>) {
        (&self.entries, self.text.as_ref().map(MetaText::bytes))
    }

    /// The decoded entries, to tell whether two nodes share them.
    #[cfg(test)]
    pub(crate) fn shared_entries(&self) -> &Entries {
        &self.entries
    }

    /// `meta.get(key)`.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        // A decoded entry is the entry (`full` holds the same): looked for first, so the
        // keys read most (those decoded on read) rarely need `decoded_on_read`.
        if let Some(value) = find(&self.entries, key) {
            return Some(value);
        }
        if self.text.is_none() || decoded_on_read(key) {
            None
        } else {
            self.full().get(key)
        }
    }

    /// `meta.get(key)` without keeping what it decodes: for a key read once on every node (the
    /// cost model's `val`), which would otherwise leave each node's whole metadata decoded.
    pub fn get_once(&self, key: &str) -> Option<std::borrow::Cow<'_, PyValue>> {
        use std::borrow::Cow;
        match self.undecoded_text(key) {
            Some(text) => crate::dump::decode_meta_entry(text.bytes(), key).map(Cow::Owned),
            None => self.get(key).map(Cow::Borrowed),
        }
    }

    /// The kept text, when entry `key` is in it and not decoded yet.
    fn undecoded_text(&self, key: &str) -> Option<&MetaText> {
        self.text
            .as_ref()
            .filter(|_| !decoded_on_read(key) && self.full.get().is_none())
    }

    /// The dtype of the tensor that `meta[key]` summarises (`{"tensor": {..., "dtype": ..}}`)
    /// read from the kept text without decoding the entry: `Some(None)` when there is no
    /// entry `key` or its summary has no `dtype`. `None` when the entry is decoded already or
    /// the text is not of that plain form; [`Meta::get_once`] answers then.
    pub fn scan_tensor_dtype(&self, key: &str) -> Option<Option<String>> {
        crate::dump::scan_tensor_dtype(self.undecoded_text(key)?.bytes(), key)
    }

    /// The decoded entries: at least every entry whose key [`decoded_on_read`] accepts, in
    /// order. For walks that look for such keys without decoding the rest.
    pub fn decoded_entries(&self) -> impl Iterator<Item = (&Key, &PyValue)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &PyValue)> {
        let (decoded, full) = match self.text {
            None => (Some(self.decoded_entries()), None),
            Some(_) => (None, Some(self.full().iter())),
        };
        decoded
            .into_iter()
            .flatten()
            .chain(full.into_iter().flatten())
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.iter().map(|(k, _)| k)
    }

    pub fn len(&self) -> usize {
        match self.text {
            None => self.entries.len(),
            Some(_) => self.full().len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        // Kept text always holds an entry that is not decoded.
        self.text.is_none() && self.entries.is_empty()
    }

    /// The whole map, taken apart.
    pub fn into_dict(self) -> Dict {
        match self.text {
            None => self.entries.iter().cloned().collect(),
            Some(_) => self.to_dict(),
        }
    }

    /// The whole map.
    pub fn to_dict(&self) -> Dict {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// `meta[key] = value`, returning the value it replaces.
    pub fn insert(&mut self, key: Key, value: PyValue) -> Option<PyValue> {
        self.prepare_to_change(&key);
        match self.entries.iter().position(|(k, _)| *k == key) {
            Some(at) => Some(std::mem::replace(
                &mut Arc::make_mut(&mut self.entries)[at].1,
                value,
            )),
            None => {
                let mut entries = self.entries.to_vec();
                entries.push((key, value));
                self.entries = entries.into();
                None
            }
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut PyValue> {
        self.prepare_to_change(key);
        let at = self.entries.iter().position(|(k, _)| k.as_str() == key)?;
        Some(&mut Arc::make_mut(&mut self.entries)[at].1)
    }

    /// `meta.pop(key, None)`, keeping the order of the rest.
    pub fn shift_remove(&mut self, key: &str) -> Option<PyValue> {
        self.prepare_to_change(key);
        let at = self.entries.iter().position(|(k, _)| k.as_str() == key)?;
        let mut entries = self.entries.to_vec();
        let (_, value) = entries.remove(at);
        self.entries = entries.into();
        Some(value)
    }

    /// The decoded entries' values, to resolve the node references they hold (the reader
    /// decodes whole any metadata with references elsewhere).
    pub(crate) fn decoded_values_mut(&mut self) -> impl Iterator<Item = (&Key, &mut PyValue)> {
        self.full = OnceBox::new();
        Arc::make_mut(&mut self.entries)
            .iter_mut()
            .map(|(k, v)| (&*k, v))
    }

    /// Before `key` changes: drop the cached whole map, and decode everything when `key` is
    /// one of the entries still in the text.
    fn prepare_to_change(&mut self, key: &str) {
        if self.text.is_some() && !decoded_on_read(key) {
            self.entries = match std::mem::take(&mut self.full).get() {
                Some(full) => full.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                None => self.decode_full().into_iter().collect(),
            };
            self.text = None;
        }
        self.full = OnceBox::new();
    }

    fn full(&self) -> &Dict {
        self.full.get_or_init(|| Box::new(self.decode_full()))
    }

    /// Every entry: the text's, in its order, with the decoded keys' values taken from
    /// `entries` (which may have changed since), then entries added since.
    fn decode_full(&self) -> Dict {
        let Some(text) = &self.text else {
            return self.entries.iter().cloned().collect();
        };
        let from_text = crate::dump::decode_meta_object(text.bytes());
        let mut out = Dict::with_capacity(from_text.len());
        for (key, value) in from_text {
            if !decoded_on_read(&key) {
                out.insert(key, value);
            } else if let Some(value) = find(&self.entries, &key) {
                out.insert(key, value.clone());
            }
        }
        for (key, value) in self.entries.iter() {
            if !out.contains_key(key.as_str()) {
                out.insert(key.clone(), value.clone());
            }
        }
        out
    }
}

/// A scan that compares lengths before text: a node's entries are contiguous, their key
/// strings inline, and most keys differ in length.
fn find<'a>(entries: &'a [(Key, PyValue)], key: &str) -> Option<&'a PyValue> {
    entries
        .iter()
        .find(|(k, _)| k.len() == key.len() && k.as_str() == key)
        .map(|(_, v)| v)
}

impl From<Dict> for Meta {
    fn from(dict: Dict) -> Meta {
        Meta::read(dict.into_iter().collect(), None)
    }
}

impl FromIterator<(Key, PyValue)> for Meta {
    fn from_iter<I: IntoIterator<Item = (Key, PyValue)>>(entries: I) -> Meta {
        Meta::from(entries.into_iter().collect::<Dict>())
    }
}

impl PartialEq for Meta {
    /// As `dict` equality: the same keys with equal values, in any order.
    fn eq(&self, other: &Meta) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> crate::dump::Dump {
        crate::read_dump(text.as_bytes()).expect("dump")
    }

    const DUMP: &str = r#"{"format": "commlens.graph", "version": 1, "nodes": [
        {"name": "x", "op": "placeholder", "target": "x",
         "meta": {"val": {"tensor": {"shape": [4], "dtype": "torch.float32", "device": "cpu"}},
                  "param_name": "w", "stack_trace": "File a.py", "state_idx": 0}},
        {"name": "y", "op": "call_function", "target": "aten.relu.default", "args": [{"node": "x"}],
         "meta": {"seq_nr": 3, "wait_for": {"node": "x"}}},
        {"name": "z", "op": "call_function", "target": "aten.relu.default", "args": [{"node": "y"}],
         "meta": {"comm_type": "fsdp_all_gather", "note": {"node": "gone"}}},
        {"name": "output", "op": "output", "target": "output", "args": [{"node": "z"}]}
    ]}"#;

    /// `get_once` finds an entry by scanning past the others; on every node of the examples
    /// (kept in the document, and copied out by the gzip reader) and on objects made to
    /// trouble a scan, it reads what decoding the whole object reads.
    #[test]
    fn an_entry_read_once_is_the_whole_maps_entry() {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let plain = std::fs::read(examples.join("mlp_fsdp.json")).expect("example");
        let gzipped = std::fs::read(examples.join("llama_fsdp.json.gz")).expect("example");
        let tricky = r#"{"format": "commlens.graph", "version": 1, "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "meta": {
              "val" : 1 , "s": "a \"}\" b", "val": [{"tensor": {"shape": [], "dtype": "torch.int8",
              "device": "cpu"}}], "deep": [[[{"x": ["}"]}]]], "e": {}, "n": null}},
            {"name": "y", "op": "placeholder", "target": "y", "meta": {"only": "\u00e9t\u00e9"}},
            {"name": "z", "op": "placeholder", "target": "z", "meta": {"val": 1, "v\u0061l": 7}}
        ]}"#;
        let mut checked = 0;
        for bytes in [plain, gzipped, tricky.as_bytes().to_vec()] {
            let dump = crate::read_dump(&bytes).expect("dump");
            for node in &dump.nodes {
                for (key, value) in node.meta.iter() {
                    let once = node.meta.get_once(key.as_str());
                    assert_eq!(
                        once.as_deref(),
                        node.meta.get(key.as_str()),
                        "{}",
                        node.name
                    );
                    assert_eq!(once.as_deref(), Some(value), "{} {key:?}", node.name);
                    checked += 1;
                }
                assert_eq!(node.meta.get_once("no such key"), None);
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn undecoded_entries_read_as_decoded_ones() {
        let dump = read(DUMP);
        let meta = &dump.nodes[0].meta;
        assert!(meta.text.is_some(), "the undecoded keys stay text");
        assert_eq!(meta.entries.len(), 2, "param_name and state_idx decoded");
        let keys: Vec<&str> = meta.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["val", "param_name", "stack_trace", "state_idx"]);
        assert_eq!(
            meta.get("stack_trace"),
            Some(&PyValue::Str("File a.py".into()))
        );
        assert!(matches!(meta.get("val"), Some(PyValue::Tensor(_))));
        assert_eq!(meta.len(), 4);
        let eager = Meta::from(meta.to_dict());
        assert_eq!(&eager, meta);
        assert_eq!(format!("{eager:?}"), format!("{meta:?}"));
    }

    /// Keys decoded on read, present or absent, are answered from the decoded entries
    /// without decoding the rest; any other key decodes it, and gets what it holds.
    #[test]
    fn decoded_keys_never_decode_the_rest() {
        let dump = read(DUMP);
        let meta = &dump.nodes[0].meta;
        assert_eq!(meta.get("param_name"), Some(&PyValue::Str("w".into())));
        assert_eq!(meta.get("state_idx"), Some(&PyValue::int(0)));
        for absent in [
            "comm_type",
            "custom",
            "fsdp_bucket_spec",
            "bucketing_x_sources",
            "desc",
        ] {
            assert_eq!(meta.get(absent), None, "{absent}");
        }
        assert!(meta.full.get().is_none(), "nothing else decoded");
        assert_eq!(meta.get("absent"), None);
        assert!(
            meta.full.get().is_some(),
            "an undecoded key decodes the rest"
        );
        assert_eq!(meta.get("param_name"), Some(&PyValue::Str("w".into())));
    }

    /// `decoded_on_read` accepts the listed keys and the prefixed ones, and nothing that
    /// merely shares a key's length and first byte, or is a prefix or extension of one.
    #[test]
    fn decoded_on_read_is_the_list_and_the_prefixes() {
        for key in DECODED_KEYS {
            assert!(decoded_on_read(key), "{key}");
            let mut near = key.to_string();
            near.pop();
            near.push('#');
            assert!(!decoded_on_read(&near), "{near}");
            assert!(!decoded_on_read(&key[..key.len() - 1]), "{key} shortened");
            assert!(!decoded_on_read(&format!("{key}s")), "{key} extended");
        }
        assert!(decoded_on_read("fsdp_bucket_spec") && decoded_on_read("bucketing_ag_sources"));
        assert!(!decoded_on_read("") && !decoded_on_read("fsdp") && !decoded_on_read("val"));
    }

    #[test]
    fn one_entry_decodes_alone() {
        let dump = read(DUMP);
        let meta = &dump.nodes[0].meta;
        for key in ["val", "stack_trace", "param_name", "absent"] {
            assert_eq!(
                meta.get_once(key).as_deref(),
                meta.clone().get(key),
                "{key}"
            );
        }
        assert!(meta.full.get().is_none(), "nothing kept");
        // A repeated key: its last value, as the whole map has it.
        let text = r#"{"format": "commlens.graph", "version": 1, "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "meta": {"v": 1, "w": 0, "v": [2]}}]}"#;
        let dump = read(text);
        let meta = &dump.nodes[0].meta;
        assert_eq!(
            meta.get_once("v").as_deref(),
            Some(&PyValue::List(vec![PyValue::int(2)]))
        );
        assert_eq!(meta.get("v"), Some(&PyValue::List(vec![PyValue::int(2)])));
    }

    #[test]
    fn references_outside_the_decoded_keys_are_resolved_and_reported() {
        let dump = read(DUMP);
        // `wait_for` holds a reference: the whole metadata is decoded and resolved.
        let y = &dump.nodes[1].meta;
        assert!(y.text.is_none());
        assert!(matches!(y.get("wait_for"), Some(PyValue::Node(r)) if r.index == Some(0)));
        assert_eq!(dump.warnings.len(), 1, "{:?}", dump.warnings);
        assert!(dump.warnings[0].contains("\"gone\""), "{:?}", dump.warnings);
    }

    #[test]
    fn changes_keep_order_and_survive_the_text() {
        let dump = read(DUMP);
        let mut meta = dump.nodes[0].meta.clone();
        assert_eq!(
            meta.insert(Key::new("param_name"), PyValue::int(1)),
            Some(PyValue::Str("w".into()))
        );
        meta.insert(Key::new("comm_type"), PyValue::Str("c".into()));
        assert!(meta.text.is_some(), "a decoded key changes in place");
        let keys: Vec<&str> = meta.keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            ["val", "param_name", "stack_trace", "state_idx", "comm_type"]
        );
        assert_eq!(meta.get("param_name"), Some(&PyValue::int(1)));
        assert_eq!(meta.shift_remove("state_idx"), Some(PyValue::int(0)));
        assert_eq!(meta.len(), 4);
        assert_eq!(
            meta.shift_remove("stack_trace"),
            Some(PyValue::Str("File a.py".into()))
        );
        assert!(
            meta.text.is_none(),
            "an undecoded key's change decodes everything"
        );
        let keys: Vec<&str> = meta.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["val", "param_name", "comm_type"]);
    }

    #[test]
    fn the_walks_over_decoded_entries_look_for_decoded_keys() {
        // The keys that `classify`, `candidates`, the signature and the transform audit find
        // by walking `decoded_entries`.
        for key in [
            "custom",
            "comm_type",
            "recompute",
            "from_node",
            "comm_semantics",
            "autograd_backward",
            "fsdp_bucket_members",
            "fsdp_bucket_spec",
            "bucketing_all_gather_sources",
            "param_name",
            "state_idx",
            "comm_group",
        ] {
            assert!(decoded_on_read(key), "{key}");
        }
        assert_eq!(crate::identity::payload::FALLBACK_KEY, "comm_semantics");
    }
}
