//! `PyValue`: a value of a graph dump as the Python planner saw it.
//!
//! The dump encodes Python objects in JSON (`graph-dump-v1.md`): `{"node": NAME}` is an
//! `fx.Node`, `{"dtype": ..}` a `torch.dtype`, and so on. The planner's decisions depend on
//! Python semantics of those objects (`bool` is not an `int`, `1.0` is not an `int`, a
//! `torch.device` is not a `str`, truthiness), so the port keeps them apart instead of
//! flattening everything into JSON.

pub use crate::key::Key;
use indexmap::IndexMap;
use serde::de;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// A decoded dump value (argument or metadata).
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    None,
    Bool(bool),
    /// Python `int`. JSON integers beyond `i128` cannot occur (serde reads them as floats).
    Int(PyInt),
    Float(f64),
    Str(String),
    /// A tuple, list or `torch.Size`: JSON does not tell them apart.
    List(Vec<PyValue>),
    /// Shared (`Arc`): a reader hands equal metadata dicts (a layer's `fsdp_bucket_spec`
    /// repeats across layers) the same one. Changed through `Arc::make_mut`.
    Dict(Arc<Dict>),
    /// An `fx.Node`, by name. `index` is its graph position when the name resolves.
    Node(NodeRef),
    /// A `torch.dtype`, as `str(dtype)` (`"torch.float32"`).
    Dtype(String),
    /// A `torch.device`, as `str(device)` (`"cuda:0"`).
    Device(String),
    /// A symbolic int/float, as `str(value)`.
    Sym(String),
    /// Anything else the exporter could only write as `str(value)`.
    Opaque(String),
    /// A tensor summary `{"shape", "dtype", "device"}`.
    Tensor(Box<PyValue>),
}

/// What [`PyValue::Int`] holds: an `i128`, kept as two 8-byte halves. An `i128` field would
/// align every `PyValue` to 16 bytes, and on wasm32 dlmalloc serves a 16-byte alignment by
/// over-allocating and trimming (`memalign`): that was 8% of reading a 100k-node dump in the
/// browser, and it made a `PyValue` 32 bytes there instead of 24.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PyInt {
    // In this order, the derived order is the number's: the high half (signed) first.
    high: i64,
    low: u64,
}

impl PyInt {
    pub const fn new(value: i128) -> PyInt {
        PyInt {
            high: (value >> 64) as i64,
            low: value as u64,
        }
    }

    pub const fn get(self) -> i128 {
        ((self.high as i128) << 64) | self.low as i128
    }
}

impl std::fmt::Debug for PyInt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl std::fmt::Display for PyInt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

// Why `PyInt` exists: nothing in a `PyValue` asks for more than 8-byte alignment (and on
// wasm32 a `PyValue` is 24 bytes, not the 32 an `i128` made it).
const _: () = assert!(std::mem::align_of::<PyValue>() <= 8);
#[cfg(target_arch = "wasm32")]
const _: () = assert!(std::mem::size_of::<PyValue>() <= 24);
// Natively 32 bytes, with `NodeRef`'s name boxed (a `String` made it 40: 8 bytes more in every
// decoded metadata value and argument of a dump).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<PyValue>() <= 32);

impl PyValue {
    /// A Python `int`.
    pub const fn int(value: i128) -> PyValue {
        PyValue::Int(PyInt::new(value))
    }
}

/// A Python `dict` with `str` keys, in insertion order (also a node's `kwargs` and `meta`).
pub type Dict = IndexMap<Key, PyValue>;

/// A node's `kwargs`: a [`Dict`] that is nearly always empty, so held boxed and only when it
/// has entries (8 bytes in a node, where the map takes 72). Reads as a `Dict`; writing through
/// it (`DerefMut`) makes room.
#[derive(Clone, Default)]
pub struct Kwargs(Option<Box<Dict>>);

impl Kwargs {
    pub fn new() -> Kwargs {
        Kwargs(None)
    }
}

impl From<Dict> for Kwargs {
    fn from(map: Dict) -> Kwargs {
        Kwargs((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl std::ops::Deref for Kwargs {
    type Target = Dict;

    fn deref(&self) -> &Dict {
        static EMPTY: std::sync::OnceLock<Dict> = std::sync::OnceLock::new();
        match &self.0 {
            Some(map) => map,
            None => EMPTY.get_or_init(Dict::new),
        }
    }
}

impl std::ops::DerefMut for Kwargs {
    fn deref_mut(&mut self) -> &mut Dict {
        self.0.get_or_insert_with(Default::default)
    }
}

impl PartialEq for Kwargs {
    fn eq(&self, other: &Kwargs) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Kwargs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<'a> IntoIterator for &'a Kwargs {
    type Item = (&'a Key, &'a PyValue);
    type IntoIter = indexmap::map::Iter<'a, Key, PyValue>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A reference to a node by name, resolved to its position when it exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRef {
    /// Boxed: see the size checks on `PyValue`.
    pub name: Box<str>,
    pub index: Option<usize>,
}

/// `str(dtype)` of every `torch.dtype`. In metadata a string equal to one of these is a dtype
/// (`conformance-contract.md`).
pub const TORCH_DTYPES: &[&str] = &[
    "torch.float32",
    "torch.float64",
    "torch.float16",
    "torch.bfloat16",
    "torch.complex32",
    "torch.complex64",
    "torch.complex128",
    "torch.uint8",
    "torch.uint16",
    "torch.uint32",
    "torch.uint64",
    "torch.int8",
    "torch.int16",
    "torch.int32",
    "torch.int64",
    "torch.bool",
    "torch.qint8",
    "torch.quint8",
    "torch.qint32",
    "torch.quint4x2",
    "torch.quint2x4",
    "torch.bits1x8",
    "torch.bits2x4",
    "torch.bits4x2",
    "torch.bits8",
    "torch.bits16",
    "torch.float8_e4m3fn",
    "torch.float8_e5m2",
    "torch.float8_e4m3fnuz",
    "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu",
    "torch.float4_e2m1fn_x2",
    "torch.int1",
    "torch.int2",
    "torch.int3",
    "torch.int4",
    "torch.int5",
    "torch.int6",
    "torch.int7",
    "torch.uint1",
    "torch.uint2",
    "torch.uint3",
    "torch.uint4",
    "torch.uint5",
    "torch.uint6",
    "torch.uint7",
];

/// Where a JSON value sits in the dump: arguments and metadata decode strings differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Args,
    Meta,
}

/// Why an argument value could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Path inside the value, e.g. `[0][1]`.
    pub path: String,
    pub message: String,
}

impl PyValue {
    /// Decodes a JSON value of the dump. Plain JSON (args.json, reports) uses [`PyValue::from_plain_json`].
    pub fn decode(value: serde_json::Value, context: Context) -> Result<PyValue, DecodeError> {
        let mut path = String::new();
        decode_at(value, context, &mut path)
    }

    /// A JSON value taken literally: objects are dicts, strings are strings.
    pub fn from_plain_json(value: &serde_json::Value) -> PyValue {
        use serde_json::Value as J;
        match value {
            J::Null => PyValue::None,
            J::Bool(b) => PyValue::Bool(*b),
            J::Number(n) => number(n),
            J::String(s) => PyValue::Str(s.clone()),
            J::Array(items) => PyValue::List(items.iter().map(PyValue::from_plain_json).collect()),
            J::Object(map) => PyValue::Dict(
                map.iter()
                    .map(|(k, v)| (Key::from(k), PyValue::from_plain_json(v)))
                    .collect::<indexmap::IndexMap<_, _>>()
                    .into(),
            ),
        }
    }

    /// `isinstance(v, int) and not isinstance(v, bool)`: the reference's `_static_int`.
    pub fn static_int(&self) -> Option<i128> {
        match self {
            PyValue::Int(i) => Some(i.get()),
            _ => None,
        }
    }

    /// The value when it is a Python `str` (a dtype is not a `str`).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            PyValue::Dict(d) => Some(d),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[PyValue]> {
        match self {
            PyValue::List(items) => Some(items),
            _ => None,
        }
    }

    /// Whether an `fx.Node` reference is anywhere in the value.
    fn holds_node(&self) -> bool {
        match self {
            PyValue::Node(_) => true,
            PyValue::List(items) => items.iter().any(PyValue::holds_node),
            PyValue::Dict(map) => map.values().any(PyValue::holds_node),
            PyValue::Tensor(inner) => inner.holds_node(),
            _ => false,
        }
    }

    /// The dict's entries to change in place, when it holds a node reference to resolve; a
    /// dict without one stays shared (`Arc::make_mut` would copy a shared one).
    pub(crate) fn dict_with_nodes_mut(map: &mut Arc<Dict>) -> Option<&mut Dict> {
        map.values()
            .any(PyValue::holds_node)
            .then(|| Arc::make_mut(map))
    }

    pub fn as_node(&self) -> Option<&NodeRef> {
        match self {
            PyValue::Node(r) => Some(r),
            _ => None,
        }
    }

    /// Python truthiness (`bool(value)`).
    pub fn truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(i) => i.get() != 0,
            PyValue::Float(f) => *f != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(items) => !items.is_empty(),
            PyValue::Dict(map) => !map.is_empty(),
            PyValue::Node(_)
            | PyValue::Dtype(_)
            | PyValue::Device(_)
            | PyValue::Sym(_)
            | PyValue::Opaque(_)
            | PyValue::Tensor(_) => true,
        }
    }

    /// Python `==` for the values the planner compares (numbers across int/float/bool).
    pub fn py_eq(&self, other: &PyValue) -> bool {
        use PyValue as P;
        match (self.as_number(), other.as_number()) {
            (Some(a), Some(b)) => return a.eq_py(&b),
            (Some(_), None) | (None, Some(_)) => return false,
            (None, None) => {}
        }
        match (self, other) {
            (P::None, P::None) => true,
            (P::Str(a), P::Str(b)) => a == b,
            (P::List(a), P::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (P::Dict(a), P::Dict(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.py_eq(w)))
            }
            (P::Node(a), P::Node(b)) => a.name == b.name,
            (P::Dtype(a), P::Dtype(b)) => a == b,
            (P::Device(a), P::Device(b)) => a == b,
            (P::Sym(a), P::Sym(b)) => a == b,
            _ => false,
        }
    }

    /// Numeric view for `==` across `bool`, `int` and `float`, as Python compares them.
    fn as_number(&self) -> Option<Number> {
        match self {
            PyValue::Bool(b) => Some(Number::Int(*b as i128)),
            PyValue::Int(i) => Some(Number::Int(i.get())),
            PyValue::Float(f) => Some(Number::Float(*f)),
            _ => None,
        }
    }

    /// `str(value)` as Python prints it.
    pub fn py_str(&self) -> String {
        match self {
            PyValue::Str(s) | PyValue::Device(s) => s.clone(),
            other => other.py_repr(),
        }
    }

    /// `repr(value)` as Python prints it (lists for arrays; tuples are rendered by
    /// [`PyValue::py_repr_tuple`] where the caller knows it has one).
    pub fn py_repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// `repr(tuple(items))`.
    pub fn py_repr_tuple(items: &[PyValue]) -> String {
        let mut out = String::new();
        Self::write_repr_tuple(&mut out, items);
        out
    }

    /// Appends `repr(tuple(items))` to `out`.
    pub(crate) fn write_repr_tuple(out: &mut String, items: &[PyValue]) {
        out.push('(');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            item.write_repr(out);
        }
        if items.len() == 1 {
            out.push(',');
        }
        out.push(')');
    }

    /// Appends `repr(dict(entries))` to `out`.
    pub(crate) fn write_repr_dict<'v>(
        out: &mut String,
        entries: impl IntoIterator<Item = (&'v str, &'v PyValue)>,
    ) {
        out.push('{');
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_py_repr_str(out, k);
            out.push_str(": ");
            v.write_repr(out);
        }
        out.push('}');
    }

    /// Appends `repr(self)` to `out` ([`PyValue::py_repr`]).
    pub(crate) fn write_repr(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("None"),
            PyValue::Bool(true) => out.push_str("True"),
            PyValue::Bool(false) => out.push_str("False"),
            PyValue::Int(i) => crate::pyjson::write_int(out, i.get()),
            PyValue::Float(f) => out.push_str(&crate::pyjson::float_repr(*f)),
            PyValue::Str(s) => write_py_repr_str(out, s),
            PyValue::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_repr(out);
                }
                out.push(']');
            }
            PyValue::Dict(map) => {
                Self::write_repr_dict(out, map.iter().map(|(k, v)| (k.as_str(), v)));
            }
            PyValue::Node(r) => out.push_str(&r.name),
            PyValue::Dtype(s) | PyValue::Sym(s) | PyValue::Opaque(s) => out.push_str(s),
            PyValue::Device(s) => out.push_str(&device_repr(s)),
            PyValue::Tensor(summary) => {
                out.push_str("FakeTensor(");
                summary.write_repr(out);
                out.push(')');
            }
        }
    }
}

enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn eq_py(&self, other: &Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::Float(a), Number::Float(b)) => a == b,
            (Number::Int(a), Number::Float(b)) | (Number::Float(b), Number::Int(a)) => {
                b.fract() == 0.0 && (*a as f64) == *b
            }
        }
    }
}

/// `repr(torch.device(s))`: `device(type='cuda', index=0)`.
fn device_repr(s: &str) -> String {
    match s.split_once(':') {
        Some((kind, index)) => format!("device(type={}, index={index})", py_repr_str(kind)),
        None => format!("device(type={})", py_repr_str(s)),
    }
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`; escapes
/// backslash, the quote, `\n`, `\r`, `\t`, and non-printable characters.
pub fn py_repr_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_py_repr_str(&mut out, s);
    out
}

/// Appends [`py_repr_str`]`(s)` to `out`.
pub(crate) fn write_py_repr_str(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.reserve(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let code = c as u32;
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Approximates Python's `str.isprintable` for one character: control, separator (other
/// than the ASCII space) and format characters are not printable.
fn is_printable(c: char) -> bool {
    let code = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters and private/unassigned ranges that Python escapes.
    !matches!(code,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
        | 0xD800..=0xDFFF | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF)
}

/// Python's `str.isspace` for `str.strip()`: Unicode whitespace plus the ASCII separators
/// U+001C..U+001F that Rust does not count.
pub fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn number(n: &serde_json::Number) -> PyValue {
    if let Some(i) = n.as_i64() {
        PyValue::int(i as i128)
    } else if let Some(u) = n.as_u64() {
        PyValue::int(u as i128)
    } else {
        PyValue::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Non-finite floats are written `{"repr": "inf"}` (`conformance-contract.md`).
fn non_finite(text: &str) -> Option<f64> {
    match text {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    }
}

pub(crate) fn decode_at(
    value: serde_json::Value,
    context: Context,
    path: &mut String,
) -> Result<PyValue, DecodeError> {
    use serde_json::Value as J;
    Ok(match value {
        J::Null => PyValue::None,
        J::Bool(b) => PyValue::Bool(b),
        J::Number(n) => number(&n),
        J::String(s) => text_value(context, s),
        J::Array(items) => {
            if items.len() > MAX_LIST_LEN {
                return Err(DecodeError {
                    path: path.clone(),
                    message: too_long_list(),
                });
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                out.push(decode_at(item, context, path)?);
                path.truncate(len);
            }
            PyValue::List(out)
        }
        J::Object(map) => {
            if map.len() == 1 {
                let (key, inner) = map.into_iter().next().expect("one entry");
                return decode_single(key, inner, context, path);
            }
            if context == Context::Args {
                return Err(DecodeError {
                    path: path.clone(),
                    message: args_object_keys(map.keys().map(String::as_str), map.len()),
                });
            }
            let mut out = IndexMap::with_capacity(map.len());
            for (key, inner) in map {
                let len = path.len();
                path.push_str(&format!("[{}]", py_repr_str(&key)));
                let decoded = decode_at(inner, context, path)?;
                path.truncate(len);
                out.insert(key.into(), decoded);
            }
            PyValue::Dict(std::sync::Arc::new(out))
        }
    })
}

/// A one-key object: an encoded Python object, or (in metadata) a one-entry dict.
fn decode_single(
    key: String,
    inner: serde_json::Value,
    context: Context,
    path: &mut String,
) -> Result<PyValue, DecodeError> {
    use serde_json::Value as J;
    let text = |inner: &J| inner.as_str().map(str::to_owned);
    let special = match (key.as_str(), &inner) {
        ("node", J::String(name)) => Some(PyValue::Node(NodeRef {
            name: name.as_str().into(),
            index: None,
        })),
        ("dtype", _) => text(&inner).map(PyValue::Dtype),
        ("device", _) => text(&inner).map(PyValue::Device),
        ("sym", _) => text(&inner).map(PyValue::Sym),
        ("repr", J::String(s)) => Some(match non_finite(s) {
            Some(f) => PyValue::Float(f),
            None => PyValue::Opaque(s.clone()),
        }),
        ("tensor", J::Object(_)) if context == Context::Meta => {
            let summary = decode_at(inner.clone(), Context::Meta, path)?;
            Some(PyValue::Tensor(Box::new(summary)))
        }
        _ => None,
    };
    if let Some(value) = special {
        return Ok(value);
    }
    match context {
        Context::Args => Err(DecodeError {
            path: path.clone(),
            message: match key.as_str() {
                "node" | "dtype" | "device" | "sym" | "repr" => {
                    format!(
                        "{{{key:?}: ...}} must hold a string, found {}",
                        kind_of(&inner)
                    )
                }
                _ => args_object_keys(std::iter::once(key.as_str()), 1),
            },
        }),
        Context::Meta => {
            let len = path.len();
            path.push_str(&format!("[{}]", py_repr_str(&key)));
            let decoded = decode_at(inner, context, path)?;
            path.truncate(len);
            let mut map = IndexMap::with_capacity(1);
            map.insert(key.into(), decoded);
            Ok(PyValue::Dict(std::sync::Arc::new(map)))
        }
    }
}

/// The most elements one list of an argument or of metadata may hold (the per-value limit):
/// far more than any graph writes (shapes, bucket members, an output tuple), and few enough
/// that one field cannot take gigabytes from a small (say, gzip-compressed) input.
pub const MAX_LIST_LEN: usize = 1_000_000;

fn too_long_list() -> String {
    format!("a list holds more than {MAX_LIST_LEN} elements (the per-value limit)")
}

/// Why an object in an argument is not one: an argument object is one encoded Python object,
/// with exactly one of the keys `graph-dump-v1.md` lists (`{"node": NAME}`, ...). Dicts, an
/// empty object and a tensor summary are not argument values.
fn args_object_keys<'k>(keys: impl Iterator<Item = &'k str>, count: usize) -> String {
    const EXPECTED: &str = "(expected one of \"node\", \"dtype\", \"device\", \"sym\", \"repr\")";
    match count {
        0 => format!(
            "an empty object is not a valid argument: an argument object has exactly one key \
             {EXPECTED}"
        ),
        1 => format!(
            "an object with the single key {:?} is not a valid argument {EXPECTED}",
            keys.map(|k| crate::text::clip(k, crate::text::MESSAGE_PART_LIMIT))
                .next()
                .unwrap_or_default()
        ),
        n => format!(
            "an object with {n} keys ({}) is not a valid argument: an argument object has \
             exactly one key {EXPECTED}",
            keys.take(4)
                .map(|k| format!(
                    "{:?}",
                    crate::text::clip(k, crate::text::MESSAGE_PART_LIMIT)
                ))
                .collect::<Vec<_>>()
                .join(", ")
                + if n > 4 { ", ..." } else { "" }
        ),
    }
}

/// A JSON type name for messages.
pub fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value as J;
    match value {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(n) if n.is_f64() => "a float",
        J::Number(_) => "an integer",
        J::String(_) => "a string",
        J::Array(_) => "an array",
        J::Object(_) => "an object",
    }
}

// Streaming decoding: `read_dump` decodes argument and metadata values straight from the
// JSON text with these seeds, without building a `serde_json::Value` first. The result is
// exactly what `PyValue::decode` gives for the same text (same values, same first error with
// the same path), including for duplicate keys (last value, first position) and for
// `{"tensor": ...}` in arguments (decoded as metadata). The seeds never fail on their own: the
// only errors they pass on are serde_json's syntax errors, at the positions a `Value` parse
// reports them.

/// The JSON kind a value was written as, for messages ([`kind_of`]'s words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Array,
    Object,
}

impl Kind {
    /// [`kind_of`] of a value of this kind.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Float => "a float",
            Kind::Int => "an integer",
            Kind::Str => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// A value decoded while parsing, with the JSON kind it was written as.
pub(crate) struct Decoded {
    pub(crate) value: Result<PyValue, DecodeError>,
    pub(crate) kind: Kind,
}

impl Decoded {
    fn ok(value: PyValue, kind: Kind) -> Decoded {
        Decoded {
            value: Ok(value),
            kind,
        }
    }
}

/// An object key, borrowed from the input when it has no escapes.
pub(crate) struct KeySeed;

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> de::Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s))
    }
}

/// Any JSON value, parsed (so syntax and UTF-8 are checked as a `Value` parse checks them)
/// and dropped.
pub(crate) struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Skip, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> de::Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        skip_seq(&mut seq)?;
        Ok(Skip)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        skip_map(&mut map)?;
        Ok(Skip)
    }
}

/// Parses and drops the rest of a sequence.
pub(crate) fn skip_seq<'de, A: de::SeqAccess<'de>>(seq: &mut A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

/// Parses and drops the rest of a map.
pub(crate) fn skip_map<'de, A: de::MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    while map.next_key_seed(KeySeed)?.is_some() {
        map.next_value::<Skip>()?;
    }
    Ok(())
}

/// Buffers shared by the seeds of one parse. Lists and dicts are gathered here (as stacks: a
/// nested value uses the space above its parent's) and then allocated at their exact size.
#[derive(Default)]
pub(crate) struct DecodeScratch {
    /// Node references decoded in metadata so far (so the reader can skip resolving the
    /// metadata of nodes without any).
    pub(crate) meta_refs: Cell<usize>,
    items: RefCell<Vec<PyValue>>,
    entries: RefCell<Vec<(Key, PyValue)>>,
    /// Metadata dicts decoded so far, by their text, so that equal ones are one shared dict:
    /// a layer's `fsdp_bucket_spec` is its neighbour's (at 500k nodes, 85k specs were 33 MB
    /// of a `roles` run's peak). Bounded in entries and in text a key.
    dicts: RefCell<foldhash::HashMap<Box<str>, Arc<Dict>>>,
    /// Nodes' decoded metadata entries, by their text, shared in the same way: most nodes'
    /// decoded metadata is one of a few.
    metas: RefCell<foldhash::HashMap<Box<str>, crate::meta::Entries>>,
    /// Where [`DecodeScratch::shared_entries`] puts its key together.
    parts_text: RefCell<String>,
    /// The whole text being read, when the nodes may keep their metadata as positions in it
    /// ([`DecodeScratch::in_document`]).
    document: Option<crate::meta::DumpText>,
}

impl DecodeScratch {
    /// A scratch for reading nodes whose text lies in `document`: what they keep of their
    /// metadata is a position in it, not a copy ([`DecodeScratch::in_document`]).
    #[cfg(any(test, target_arch = "wasm32"))]
    pub(crate) fn in_text(document: crate::meta::DumpText) -> DecodeScratch {
        DecodeScratch {
            document: Some(document),
            ..DecodeScratch::default()
        }
    }

    /// The document `text` lies in, and where in it `text` starts: `None` unless this scratch
    /// has one ([`DecodeScratch::in_text`]) and `text` is a part of it.
    pub(crate) fn in_document(&self, text: &[u8]) -> Option<(&crate::meta::DumpText, usize)> {
        let document = self.document.as_ref()?;
        let start = (text.as_ptr() as usize).checked_sub(document.as_ptr() as usize)?;
        (start + text.len() <= document.len()).then_some((document, start))
    }
}

/// How many texts [`DecodeScratch`] keeps to share what they decode, each way.
const MAX_SHARED: usize = 4096;
/// The longest text of a dict it keeps (a `fsdp_bucket_spec` is about 90 bytes).
const MAX_SHARED_DICT_TEXT: usize = 512;
/// The longest text of entries it keeps: the metadata most nodes share is short
/// (`{"autograd_backward":true}`), and a longer one nearly always names the node's own
/// parameter. Keeping those cost a copy and a hash each for nothing (about 5% of a `plan` run's
/// time on a 500k-node dump).
const MAX_SHARED_ENTRIES_TEXT: usize = 64;

/// Keeps `shared` under `text` (when short) for the next equal text to share. A full table
/// starts again empty: a dump's first thousands of metadata objects may all differ (a
/// placeholder's names its parameter), and a table that only stopped taking new ones would
/// never take the common ones that come after them.
fn keep_to_share<T: ?Sized>(
    table: &mut foldhash::HashMap<Box<str>, Arc<T>>,
    text: &str,
    shared: &Arc<T>,
    max_text: usize,
) {
    if text.len() > max_text {
        return;
    }
    if table.len() >= MAX_SHARED {
        table.clear();
    }
    table.insert(Box::from(text), Arc::clone(shared));
}

impl DecodeScratch {
    pub(crate) fn seed(&self, context: Context) -> DecodeSeed<'_> {
        DecodeSeed {
            context,
            scratch: self,
        }
    }

    /// Where the entries of a dict being gathered start.
    pub(crate) fn entries_mark(&self) -> usize {
        self.entries.borrow().len()
    }

    pub(crate) fn push_entry(&self, key: Key, value: PyValue) {
        self.entries.borrow_mut().push((key, value));
    }

    /// The dict decoded earlier from exactly `text`, shared.
    pub(crate) fn shared_dict(&self, text: &str) -> Option<PyValue> {
        let dicts = self.dicts.borrow();
        dicts.get(text).map(|dict| PyValue::Dict(Arc::clone(dict)))
    }

    /// Keeps `value`, decoded from `text` without node references, to share with the next
    /// dict of the same text. Only short texts, and only so many (see [`keep_to_share`]).
    pub(crate) fn share_dict(&self, text: &str, value: &PyValue) {
        if let PyValue::Dict(dict) = value {
            keep_to_share(
                &mut self.dicts.borrow_mut(),
                text,
                dict,
                MAX_SHARED_DICT_TEXT,
            );
        }
    }

    /// Forgets the entries gathered since `mark`.
    pub(crate) fn truncate_entries(&self, mark: usize) {
        self.entries.borrow_mut().truncate(mark);
    }

    /// The entries gathered since `mark`, keys made unique as [`DecodeScratch::take_map`]
    /// makes them.
    pub(crate) fn take_entries(&self, mark: usize) -> crate::meta::Entries {
        let mut entries = self.entries.borrow_mut();
        let count = entries.len() - mark;
        if count > 16 {
            // Through a map, so that many keys do not cost a scan each.
            let map: Dict = entries.drain(mark..).collect();
            return map.into_iter().collect();
        }
        let taken = &entries[mark..];
        if (1..count).all(|i| taken[..i].iter().all(|(k, _)| *k != taken[i].0)) {
            // Keys already unique (nearly always): one allocation, at its size.
            return entries.drain(mark..).collect();
        }
        let mut out: Vec<(Key, PyValue)> = Vec::with_capacity(count);
        for (key, value) in entries.drain(mark..) {
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, slot)) => *slot = value,
                None => out.push((key, value)),
            }
        }
        out.into()
    }

    /// `entries`, or the equal ones read earlier from the same `parts` (each a decoded
    /// entry's text, from its key to the end of its value, in order; none holding a node
    /// reference), shared. Only short texts are kept, in a bounded table.
    pub(crate) fn shared_entries<'p>(
        &self,
        parts: impl Iterator<Item = &'p str> + Clone,
        entries: crate::meta::Entries,
    ) -> crate::meta::Entries {
        if parts.clone().map(|part| part.len() + 1).sum::<usize>() > MAX_SHARED_ENTRIES_TEXT {
            return entries;
        }
        let mut text = self.parts_text.borrow_mut();
        text.clear();
        for part in parts {
            text.push_str(part);
            text.push(',');
        }
        let mut metas = self.metas.borrow_mut();
        if let Some(shared) = metas.get(text.as_str()) {
            return Arc::clone(shared);
        }
        keep_to_share(&mut metas, &text, &entries, MAX_SHARED_ENTRIES_TEXT);
        entries
    }

    /// The entries gathered since `mark` as a map: as a `serde_json::Map`, a repeated key keeps
    /// its first position and its last value.
    pub(crate) fn take_map(&self, mark: usize) -> Dict {
        let mut entries = self.entries.borrow_mut();
        let mut map = IndexMap::with_capacity(entries.len() - mark);
        map.extend(entries.drain(mark..));
        map
    }
}

/// Checks one metadata value as decoding it would (the per-value list limit; JSON syntax and
/// nesting as the parser checks them) without keeping anything. Yields whether the value
/// holds an object with a `"node"` key, that is, possibly a node reference.
pub(crate) struct ScanSeed;

impl<'de> de::DeserializeSeed<'de> for ScanSeed {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for ScanSeed {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut refs = false;
        let mut i = 0usize;
        while let Some(item) = seq.next_element_seed(ScanSeed)? {
            // Where and how `DecodeSeed::visit_seq` stops.
            if i == MAX_LIST_LEN {
                return Err(de::Error::custom(too_long_list()));
            }
            refs |= item;
            i += 1;
        }
        Ok(refs)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut refs = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            refs |= key == "node";
            refs |= map.next_value_seed(ScanSeed)?;
        }
        Ok(refs)
    }
}

/// A JSON string decoded in `context`: in metadata, the text of a `torch.dtype` is a dtype.
pub(crate) fn text_value(context: Context, s: String) -> PyValue {
    if context == Context::Meta && s.starts_with("torch.") && TORCH_DTYPES.contains(&s.as_str()) {
        PyValue::Dtype(s)
    } else {
        PyValue::Str(s)
    }
}

/// Decodes one dump value in `context` as [`PyValue::decode`] does.
#[derive(Clone, Copy)]
pub(crate) struct DecodeSeed<'a> {
    context: Context,
    scratch: &'a DecodeScratch,
}

impl<'de> de::DeserializeSeed<'de> for DecodeSeed<'_> {
    type Value = Decoded;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Decoded, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// An object's entry value: decoded, or (`"tensor"` in arguments, whose meaning depends on
/// whether it is the object's only key) kept as JSON.
enum Entry {
    Decoded(Decoded),
    Json(serde_json::Value),
}

impl Entry {
    fn kind(&self) -> Kind {
        match self {
            Entry::Decoded(d) => d.kind,
            Entry::Json(j) => {
                use serde_json::Value as J;
                match j {
                    J::Null => Kind::Null,
                    J::Bool(_) => Kind::Bool,
                    J::Number(n) if n.is_f64() => Kind::Float,
                    J::Number(_) => Kind::Int,
                    J::String(_) => Kind::Str,
                    J::Array(_) => Kind::Array,
                    J::Object(_) => Kind::Object,
                }
            }
        }
    }
}

struct EntrySeed<'a, 'k> {
    key: &'k str,
    seed: DecodeSeed<'a>,
}

impl<'de> de::DeserializeSeed<'de> for EntrySeed<'_, '_> {
    type Value = Entry;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Entry, D::Error> {
        if self.seed.context == Context::Args && self.key == "tensor" {
            use serde::Deserialize;
            serde_json::Value::deserialize(deserializer).map(Entry::Json)
        } else {
            self.seed.deserialize(deserializer).map(Entry::Decoded)
        }
    }
}

/// The text of a value decoded from a JSON string (a `Str`, or in metadata a `Dtype`).
fn decoded_text(value: Result<PyValue, DecodeError>) -> String {
    match value {
        Ok(PyValue::Str(s)) | Ok(PyValue::Dtype(s)) => s,
        // Not reached: JSON strings decode to one of the above.
        Ok(other) => other.py_str(),
        Err(e) => e.message,
    }
}

fn prefixed(segment: String, e: DecodeError) -> DecodeError {
    DecodeError {
        path: segment + &e.path,
        message: e.message,
    }
}

impl DecodeSeed<'_> {
    fn string(self, s: String) -> Decoded {
        Decoded::ok(text_value(self.context, s), Kind::Str)
    }

    /// `decode_single` for an object whose only key is `key`.
    fn single(self, key: Cow<'_, str>, entry: Entry) -> Result<PyValue, DecodeError> {
        let kind = entry.kind();
        let decoded = match entry {
            Entry::Json(_) => {
                // "tensor" in arguments: not an argument encoding (`graph-dump-v1.md`).
                return Err(DecodeError {
                    path: String::new(),
                    message: args_object_keys(std::iter::once(key.as_ref()), 1),
                });
            }
            Entry::Decoded(decoded) => decoded,
        };
        match (key.as_ref(), kind) {
            ("node", Kind::Str) => {
                if self.context == Context::Meta {
                    let refs = &self.scratch.meta_refs;
                    refs.set(refs.get() + 1);
                }
                return Ok(PyValue::Node(NodeRef {
                    name: decoded_text(decoded.value).into(),
                    index: None,
                }));
            }
            ("dtype", Kind::Str) => return Ok(PyValue::Dtype(decoded_text(decoded.value))),
            ("device", Kind::Str) => return Ok(PyValue::Device(decoded_text(decoded.value))),
            ("sym", Kind::Str) => return Ok(PyValue::Sym(decoded_text(decoded.value))),
            ("repr", Kind::Str) => {
                let s = decoded_text(decoded.value);
                return Ok(match non_finite(&s) {
                    Some(f) => PyValue::Float(f),
                    None => PyValue::Opaque(s),
                });
            }
            // Arguments keep "tensor" as JSON (above), so this is metadata.
            ("tensor", Kind::Object) => return Ok(PyValue::Tensor(Box::new(decoded.value?))),
            _ => {}
        }
        match self.context {
            Context::Args => Err(DecodeError {
                path: String::new(),
                message: match key.as_ref() {
                    "node" | "dtype" | "device" | "sym" | "repr" => format!(
                        "{{{key:?}: ...}} must hold a string, found {}",
                        kind.describe()
                    ),
                    _ => args_object_keys(std::iter::once(key.as_ref()), 1),
                },
            }),
            Context::Meta => {
                let segment = format!("[{}]", py_repr_str(&key));
                let value = decoded.value.map_err(|e| prefixed(segment, e))?;
                let mut map = IndexMap::with_capacity(1);
                map.insert(Key::from(&*key), value);
                Ok(PyValue::Dict(std::sync::Arc::new(map)))
            }
        }
    }
}

impl<'de> de::Visitor<'de> for DecodeSeed<'_> {
    type Value = Decoded;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Decoded, E> {
        Ok(Decoded::ok(PyValue::None, Kind::Null))
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Decoded, E> {
        Ok(Decoded::ok(PyValue::Bool(b), Kind::Bool))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Decoded, E> {
        Ok(Decoded::ok(PyValue::int(i as i128), Kind::Int))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Decoded, E> {
        Ok(Decoded::ok(PyValue::int(u as i128), Kind::Int))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Decoded, E> {
        Ok(Decoded::ok(PyValue::Float(f), Kind::Float))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Decoded, E> {
        Ok(self.string(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Decoded, E> {
        Ok(self.string(s))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Decoded, A::Error> {
        let mark = self.scratch.items.borrow().len();
        let mut error = None;
        let mut i = 0usize;
        while let Some(item) = seq.next_element_seed(self)? {
            if i == MAX_LIST_LEN {
                // Stops here, before the list takes memory out of proportion to the input
                // (each element costs about 80 bytes however short its text).
                return Err(de::Error::custom(too_long_list()));
            }
            if error.is_none() {
                match item.value {
                    Ok(value) => self.scratch.items.borrow_mut().push(value),
                    Err(e) => error = Some(prefixed(format!("[{i}]"), e)),
                }
            }
            i += 1;
        }
        let mut items = self.scratch.items.borrow_mut();
        Ok(Decoded {
            value: match error {
                None => Ok(PyValue::List(items.drain(mark..).collect())),
                Some(e) => {
                    items.truncate(mark);
                    Err(e)
                }
            },
            kind: Kind::Array,
        })
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Decoded, A::Error> {
        let done = |value| {
            Ok(Decoded {
                value,
                kind: Kind::Object,
            })
        };
        let Some(first) = map.next_key_seed(KeySeed)? else {
            if self.context == Context::Args {
                return done(Err(DecodeError {
                    path: String::new(),
                    message: args_object_keys(std::iter::empty(), 0),
                }));
            }
            return done(Ok(PyValue::Dict(std::sync::Arc::new(IndexMap::new()))));
        };
        let entry = map.next_value_seed(EntrySeed {
            key: &first,
            seed: self,
        })?;
        let Some(mut key) = map.next_key_seed(KeySeed)? else {
            return done(self.single(first, entry));
        };
        // Two or more keys (or one key written more than once). As a `serde_json::Map`:
        // a repeated key keeps its first position and takes its last value.
        if self.context == Context::Meta {
            // Metadata never fails to decode.
            let meta_value = |d: Decoded| d.value.unwrap_or(PyValue::None);
            let mut last_kind;
            let mark = self.scratch.entries_mark();
            if let Entry::Decoded(d) = entry {
                self.scratch.push_entry(Key::from(&*first), meta_value(d));
            }
            loop {
                let decoded = map.next_value_seed(self)?;
                last_kind = decoded.kind;
                self.scratch
                    .push_entry(Key::from(&*key), meta_value(decoded));
                match map.next_key_seed(KeySeed)? {
                    Some(next) => key = next,
                    None => break,
                }
            }
            let mut out = self.scratch.take_map(mark);
            if out.len() == 1 {
                // Every entry had the same key: the survivor is the last one decoded.
                let (key, value) = out.pop().expect("one entry");
                let entry = Entry::Decoded(Decoded::ok(value, last_kind));
                return done(self.single(Cow::Borrowed(key.as_str()), entry));
            }
            return done(Ok(PyValue::Dict(std::sync::Arc::new(out))));
        }
        let mut entries: IndexMap<String, Entry> = IndexMap::with_capacity(4);
        entries.insert(first.into_owned(), entry);
        loop {
            let entry = map.next_value_seed(EntrySeed {
                key: &key,
                seed: self,
            })?;
            entries.insert(key.into_owned(), entry);
            match map.next_key_seed(KeySeed)? {
                Some(next) => key = next,
                None => break,
            }
        }
        if entries.len() == 1 {
            let (key, entry) = entries.pop().expect("one entry");
            return done(self.single(Cow::Owned(key), entry));
        }
        // Arguments: an object is one encoded Python object, with exactly one key.
        done(Err(DecodeError {
            path: String::new(),
            message: args_object_keys(entries.keys().map(String::as_str), entries.len()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The halves give back every `i128`, in the same order and in the same words.
    #[test]
    fn a_py_int_is_its_i128() {
        let values = [
            i128::MIN,
            i128::MIN + 1,
            -(1 << 64) - 1,
            -(1 << 64),
            i64::MIN as i128 - 1,
            i64::MIN as i128,
            -1,
            0,
            1,
            i64::MAX as i128,
            u64::MAX as i128,
            1 << 64,
            i128::MAX,
        ];
        for (i, &a) in values.iter().enumerate() {
            let int = PyInt::new(a);
            assert_eq!(int.get(), a);
            assert_eq!(format!("{int} {int:?}"), format!("{a} {a:?}"));
            for &b in &values[i..] {
                assert_eq!(int.cmp(&PyInt::new(b)), a.cmp(&b), "{a} against {b}");
            }
        }
    }

    #[test]
    fn python_equality_crosses_numeric_types() {
        assert!(PyValue::int(1).py_eq(&PyValue::Float(1.0)));
        assert!(PyValue::Bool(true).py_eq(&PyValue::int(1)));
        assert!(!PyValue::Str("1".into()).py_eq(&PyValue::int(1)));
        assert!(
            !PyValue::Dtype("torch.float32".into()).py_eq(&PyValue::Str("torch.float32".into()))
        );
    }

    #[test]
    fn repr_matches_python() {
        assert_eq!(py_repr_str("l2."), "'l2.'");
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(py_repr_str("a'\"b"), "'a\\'\"b'");
        assert_eq!(py_repr_str("tab\there\u{7}"), "'tab\\there\\x07'");
        assert_eq!(py_repr_str("résumé ✓"), "'résumé ✓'");
        let list = PyValue::from_plain_json(&json!(["b", 1, null, true, 2.5, {"k": [1]}]));
        assert_eq!(list.py_repr(), "['b', 1, None, True, 2.5, {'k': [1]}]");
        assert_eq!(PyValue::py_repr_tuple(&[PyValue::int(1)]), "(1,)");
        assert_eq!(
            PyValue::Device("cuda:0".into()).py_repr(),
            "device(type='cuda', index=0)"
        );
    }

    #[test]
    fn metadata_strings_naming_dtypes_are_dtypes() {
        let v = PyValue::decode(
            json!({"dtype": "torch.bfloat16", "x": "torch.float32"}),
            Context::Meta,
        )
        .unwrap();
        let d = v.as_dict().unwrap();
        assert_eq!(d["dtype"], PyValue::Dtype("torch.bfloat16".into()));
        assert_eq!(d["x"], PyValue::Dtype("torch.float32".into()));
        let a = PyValue::decode(json!("torch.float32"), Context::Args).unwrap();
        assert_eq!(a, PyValue::Str("torch.float32".into()));
    }

    #[test]
    fn encoded_objects_decode() {
        let v = PyValue::decode(
            json!([{"node": "x"}, {"dtype": "torch.int8"}, {"device": "cpu"}, {"sym": "s0"}, {"repr": "inf"}, {"repr": "torch.strided"}]),
            Context::Args,
        )
        .unwrap();
        let items = v.as_list().unwrap();
        assert!(matches!(&items[0], PyValue::Node(r) if &*r.name == "x"));
        assert_eq!(items[1], PyValue::Dtype("torch.int8".into()));
        assert_eq!(items[2], PyValue::Device("cpu".into()));
        assert_eq!(items[3], PyValue::Sym("s0".into()));
        assert!(matches!(items[4], PyValue::Float(f) if f.is_infinite()));
        assert_eq!(items[5], PyValue::Opaque("torch.strided".into()));
    }

    #[test]
    fn unknown_single_key_argument_is_an_error_naming_the_path() {
        let err = PyValue::decode(json!([1, [{"weird": 1}]]), Context::Args).unwrap_err();
        assert_eq!(err.path, "[1][0]");
        assert!(err.message.contains("\"weird\""), "{}", err.message);
    }

    #[test]
    fn truthiness_follows_python() {
        assert!(!PyValue::int(0).truthy());
        assert!(!PyValue::List(vec![]).truthy());
        assert!(PyValue::Str("false".into()).truthy());
        assert!(PyValue::Float(f64::NAN).truthy());
    }
}
