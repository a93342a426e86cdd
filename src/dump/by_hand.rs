//! A node's text parsed by hand, for the shape the exporter writes: an object of the node's
//! fields, its strings and flags read here, its arguments and decoded metadata values handed
//! to the same serde seeds as before, each on its own span, and the metadata entries that stay
//! text checked and gathered in one pass (`streamed::kept_object` and serde's check each
//! walked them before). At 500k nodes serde's dispatch for the fields, and the two walks of
//! the kept entries, were about a third of the time spent parsing (docs/performance.md).
//!
//! It reads only what it is sure of and gives up (`None`) on anything else: a string with a
//! `\u` escape of a surrogate, a number serde_json might find out of range, a key written
//! twice, a field or `repr` key it does not know, a value of the wrong kind, a kept value that
//! may hold a node reference, anything that is not JSON. The node is then parsed by serde from
//! its start, as before, which reads or reports it. So on what it accepts it must agree with
//! serde exactly, and on nothing else (tests below, against serde, on every node of the
//! conformance dumps and on damaged ones).

use super::streamed::{keep_shared, MAX_DEPTH};
use super::{ArgsWant, KwargsWant, RawNode, RawRepr, Slot, Tolerant};
use crate::key::Key;
use crate::meta::{decoded_on_read, Meta, MetaText};
use crate::value::{text_value, Context, DecodeScratch, NodeRef, PyValue, MAX_LIST_LEN};
use crate::words::{bytes_equal, control_bytes};
use serde::de::DeserializeSeed;
use std::borrow::Cow;
use std::ops::Range;

/// [`parse_node_into`] on a new node, returned when it parsed.
#[cfg(test)]
pub(super) fn parse_node<'t>(text: &'t str, scratch: &DecodeScratch) -> Option<RawNode<'t>> {
    let mut node = RawNode::missing();
    parse_node_into(text, scratch, &mut node).then_some(node)
}

/// Reads the node that `text` holds (a whole JSON value, nothing after it but whitespace)
/// into `node`, which has no field read yet, where it lies; false to leave it to serde, with
/// nothing of the node given up on left in `scratch` (`node` holds what was read before).
/// A node is some 300 bytes: returned and then moved into its batch, its copies were 2-3%
/// of a read's CPU.
pub(super) fn parse_node_into<'t>(
    text: &'t str,
    scratch: &DecodeScratch,
    node: &mut RawNode<'t>,
) -> bool {
    let refs_before = scratch.meta_refs.get();
    let mark = scratch.entries_mark();
    let parsed = Cursor { text, at: 0 }.node(scratch, node).is_some();
    if !parsed {
        scratch.truncate_entries(mark);
        scratch.meta_refs.set(refs_before);
    }
    parsed
}

/// A metadata entry as the walk found it: its key with its quotes, and its value's span when
/// it stays text (`None` when it was decoded).
type KeptEntry = (Range<usize>, Option<Range<usize>>);

struct Cursor<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Cursor<'t> {
    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, read.
    fn next(&mut self) -> Option<u8> {
        self.space();
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// Reads `byte` after whitespace, when it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    /// `word` (`true`, `false`, `null`), which the caller saw begin.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes()[self.at..].starts_with(word).then(|| {
            self.at += word.len();
        })
    }

    /// After a value: a `,` (true, another entry follows) or `close` (false).
    fn more(&mut self, close: u8) -> Option<bool> {
        match self.next()? {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    /// The node object: its fields in any order, each once.
    fn node(&mut self, scratch: &DecodeScratch, node: &mut RawNode<'t>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if !self.eat(b'}') {
            loop {
                let key = self.key()?;
                if !self.eat(b':') {
                    return None;
                }
                self.space();
                match key {
                    "name" => once(&mut node.name, self.text_field()?)?,
                    "op" => once(&mut node.op, self.text_field()?)?,
                    "target" => once(&mut node.target, self.text_field()?)?,
                    "args" => once(&mut node.args, self.args(scratch)?)?,
                    "kwargs" => once(&mut node.kwargs, self.kwargs(scratch)?)?,
                    "meta" => once(&mut node.meta, self.meta(scratch)?)?,
                    "alias" => once(&mut node.alias, self.flag()?)?,
                    "impure" => once(&mut node.impure, self.flag()?)?,
                    "repr" => once(&mut node.repr, self.repr()?)?,
                    _ => return None,
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        self.space();
        (self.at == self.text.len()).then_some(())
    }

    /// An object's key, with no escapes (whitespace before it skipped).
    fn key(&mut self) -> Option<&'t str> {
        self.space();
        match self.string()? {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        }
    }

    /// A string field (`name`, `op`, `target`, `repr`'s): a string and nothing else.
    fn text_field(&mut self) -> Option<Slot<Cow<'t, str>>> {
        self.string().map(Slot::Got)
    }

    /// `alias`, `impure`: `true`, `false` or `null`.
    fn flag(&mut self) -> Option<Slot<Option<bool>>> {
        let (word, flag): (&[u8], _) = match self.peek()? {
            b't' => (b"true", Some(true)),
            b'f' => (b"false", Some(false)),
            b'n' => (b"null", None),
            _ => return None,
        };
        self.literal(word)?;
        Some(Slot::Got(flag))
    }

    /// `args`: an array of the values [`Cursor::decode`] reads, read here; anything else by
    /// serde on its span.
    fn args(
        &mut self,
        scratch: &DecodeScratch,
    ) -> Option<Slot<Result<Vec<PyValue>, crate::value::DecodeError>>> {
        let start = self.at;
        if self.peek()? == b'[' {
            if let Some(PyValue::List(items)) = self.decode(Context::Args, scratch, 1) {
                return Some(Slot::Got(Ok(items)));
            }
            self.at = start;
        }
        let span = self.value_span()?;
        by_serde(&self.text[span], Tolerant(ArgsWant(scratch)))
    }

    /// A metadata value that is decoded: by [`Cursor::decode`], or by serde on its span.
    fn meta_value(&mut self, scratch: &DecodeScratch) -> Option<PyValue> {
        let (start, refs) = (self.at, scratch.meta_refs.get());
        if let Some(value) = self.decode(Context::Meta, scratch, 2) {
            return Some(value);
        }
        self.at = start;
        scratch.meta_refs.set(refs);
        let may_refer = self.skip_value(2)?;
        let text = &self.text[start..self.at];
        if !may_refer {
            if let Some(shared) = scratch.shared_dict(text) {
                return Some(shared);
            }
        }
        let decoded = by_serde(text, scratch.seed(Context::Meta))?;
        // Metadata never fails to decode.
        let value = decoded.value.unwrap_or(PyValue::None);
        if !may_refer {
            scratch.share_dict(text, &value);
        }
        Some(value)
    }

    /// The value at the cursor decoded as `DecodeSeed` decodes it in `context`, when it is
    /// made of what most values are (`null`, booleans, integers, strings, lists, a node
    /// reference); `None` for anything else (a float, any other object), which serde decodes.
    fn decode(
        &mut self,
        context: Context,
        scratch: &DecodeScratch,
        depth: usize,
    ) -> Option<PyValue> {
        match self.peek()? {
            b'"' => Some(text_value(context, self.string()?.into_owned())),
            b't' => self.literal(b"true").map(|()| PyValue::Bool(true)),
            b'f' => self.literal(b"false").map(|()| PyValue::Bool(false)),
            b'n' => self.literal(b"null").map(|()| PyValue::None),
            b'-' | b'0'..=b'9' => self.integer().map(PyValue::int),
            b'[' => {
                let mut items: smallvec::SmallVec<[PyValue; 4]> = smallvec::SmallVec::new();
                if !self.enter(depth, b']')? {
                    loop {
                        // Where `DecodeSeed::visit_seq` stops.
                        if items.len() == MAX_LIST_LEN {
                            return None;
                        }
                        self.space();
                        items.push(self.decode(context, scratch, depth + 1)?);
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
                // At its length: `SmallVec::into_vec` keeps the inline capacity (a list of
                // two took room for four, 80 bytes a node at 500k nodes).
                let mut list = Vec::with_capacity(items.len());
                list.extend(items);
                Some(PyValue::List(list))
            }
            b'{' => {
                // `{"node": name}`, and no other object.
                self.at += 1;
                if self.key()? != "node" || !self.eat(b':') {
                    return None;
                }
                self.space();
                let name = self.string()?;
                if self.more(b'}')? {
                    return None;
                }
                if context == Context::Meta {
                    scratch.meta_refs.set(scratch.meta_refs.get() + 1);
                }
                Some(PyValue::Node(NodeRef {
                    name: name.into_owned().into(),
                    index: None,
                }))
            }
            _ => None,
        }
    }

    /// An integer as serde_json reads it: `None` for a float (a fraction, an exponent, `-0`,
    /// a negative integer past `i64`), for more digits than `u64` always holds, and for what
    /// is not a number.
    fn integer(&mut self) -> Option<i128> {
        let bytes = self.bytes();
        let negative = bytes[self.at] == b'-';
        let start = self.at + usize::from(negative);
        let end = bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| start + n);
        let digits = &bytes[start..end];
        let fits = if negative { 18 } else { 19 };
        if digits.is_empty()
            || digits.len() > fits
            || (digits[0] == b'0' && digits.len() > 1)
            || matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        let value = digits
            .iter()
            .fold(0i128, |n, d| n * 10 + i128::from(d - b'0'));
        if negative && value == 0 {
            return None;
        }
        self.at = end;
        Some(if negative { -value } else { value })
    }

    /// `kwargs`: `{}` read here, anything else by serde on its span.
    fn kwargs(&mut self, scratch: &DecodeScratch) -> Option<Slot<super::RawKwargs>> {
        if self.empty(b'{', b'}') {
            return Some(Slot::Got(Default::default()));
        }
        let span = self.value_span()?;
        by_serde(&self.text[span], Tolerant(KwargsWant(scratch)))
    }

    /// Steps into the array or object at the cursor, `depth` deep; whether it is empty (its
    /// `close` read too). `None` past [`MAX_DEPTH`].
    fn enter(&mut self, depth: usize, close: u8) -> Option<bool> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        Some(self.eat(close))
    }

    /// An empty array or object (`open`, whitespace, `close`), read when it is next.
    fn empty(&mut self, open: u8, close: u8) -> bool {
        if self.peek() != Some(open) {
            return false;
        }
        let mut i = self.at + 1;
        while matches!(self.bytes().get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        let empty = self.bytes().get(i) == Some(&close);
        if empty {
            self.at = i + 1;
        }
        empty
    }

    /// The span of the JSON value that starts here, checked.
    fn value_span(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        self.skip_value(1)?;
        Some(start..self.at)
    }

    /// `meta`: `null`, or an object whose entries [`decoded_on_read`] accepts are decoded (by
    /// serde, on each value's span) and whose others are checked and kept as text, as
    /// `MetaWant` does. A kept value that may hold a node reference is left to serde, which
    /// then decodes the whole object.
    fn meta(&mut self, scratch: &DecodeScratch) -> Option<Slot<(Meta, usize)>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(Slot::Got((Meta::new(), 0)));
        }
        let object_start = self.at;
        if !self.eat(b'{') {
            return None;
        }
        let refs_before = scratch.meta_refs.get();
        let mark = scratch.entries_mark();
        let mut walked: smallvec::SmallVec<[KeptEntry; 8]> = smallvec::SmallVec::new();
        // Each decoded entry's text, from its key to the end of its value.
        let mut decoded: smallvec::SmallVec<[Range<usize>; 8]> = smallvec::SmallVec::new();
        let mut left = false;
        if !self.eat(b'}') {
            loop {
                self.space();
                let key_start = self.at;
                let key = self.key()?;
                let key_span = key_start..self.at;
                if !self.eat(b':') {
                    return None;
                }
                self.space();
                let value_start = self.at;
                if decoded_on_read(key) {
                    let value = self.meta_value(scratch)?;
                    scratch.push_entry(Key::from(key), value);
                    walked.push((key_span, None));
                    decoded.push(key_start..self.at);
                } else {
                    left = true;
                    if self.skip_value(2)? {
                        return None;
                    }
                    walked.push((key_span, Some(value_start..self.at)));
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        let entries = scratch.take_entries(mark);
        let refs = scratch.meta_refs.get() - refs_before;
        // Kept as a position in the whole text where the reader holds one (the browser's
        // dropped file), else as a copy of the kept entries.
        let text = match (left, scratch.in_document(self.bytes())) {
            (false, _) => None,
            (true, Some((document, at))) => Some(MetaText::InDocument {
                document: document.clone(),
                start: at + object_start,
            }),
            (true, None) => Some(MetaText::Own(keep_shared(|out| {
                self.gather(&walked, out);
                Some(())
            })?)),
        };
        // Shared by the decoded entries' own text (kept ones, `val` and the like, differ from
        // node to node where the decoded ones do not).
        let entries = match refs {
            0 => {
                let parts = decoded.iter().map(|span| &self.text[span.clone()]);
                scratch.shared_entries(parts, entries)
            }
            _ => entries,
        };
        Some(Slot::Got((Meta::read(entries, text), refs)))
    }

    /// What `streamed::kept_entries` makes of the walked object: every entry in order, the
    /// decoded ones with `0` for a value.
    fn gather(&self, walked: &[KeptEntry], out: &mut Vec<u8>) {
        let bytes = self.bytes();
        out.push(b'{');
        for (i, (key, value)) in walked.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&bytes[key.clone()]);
            out.push(b':');
            match value {
                Some(value) => out.extend_from_slice(&bytes[value.clone()]),
                None => out.push(b'0'),
            }
        }
        out.push(b'}');
    }

    /// `repr`: `null`, or an object of `target`, `args` and `kwargs` strings, each once.
    fn repr(&mut self) -> Option<Slot<Option<RawRepr<'t>>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(Slot::Got(None));
        }
        if !self.eat(b'{') {
            return None;
        }
        let mut repr = RawRepr {
            target: Slot::Missing,
            args: Slot::Missing,
            kwargs: Slot::Missing,
        };
        if !self.eat(b'}') {
            loop {
                let key = self.key()?;
                if !self.eat(b':') {
                    return None;
                }
                self.space();
                let slot = match key {
                    "target" => &mut repr.target,
                    "args" => &mut repr.args,
                    "kwargs" => &mut repr.kwargs,
                    _ => return None,
                };
                once(slot, self.text_field()?)?;
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        Some(Slot::Got(Some(repr)))
    }

    /// The string at the cursor (its opening quote), unescaped: borrowed when it holds no
    /// escape. `None` for what serde_json would refuse (a control character, a bad escape)
    /// and for a `\u` escape of a surrogate (which serde pairs or refuses).
    fn string(&mut self) -> Option<Cow<'t, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let bytes = self.bytes();
        let mut i = plain_run(bytes, start)?;
        if bytes[i] == b'"' {
            self.at = i + 1;
            return Some(Cow::Borrowed(&self.text[start..i]));
        }
        let mut owned = String::with_capacity(i - start + 16);
        let mut from = start;
        loop {
            // Runs end at a quote, a backslash or a control character, all ASCII: slicing
            // the text there keeps to character boundaries.
            owned.push_str(&self.text[from..i]);
            match bytes[i] {
                b'"' => {
                    self.at = i + 1;
                    return Some(Cow::Owned(owned));
                }
                b'\\' => {
                    let (c, len) = escape(bytes, i)?;
                    owned.push(c);
                    from = i + len;
                }
                _ => return None,
            }
            i = plain_run(bytes, from)?;
        }
    }

    /// Skips the string at the cursor, checked as [`Cursor::string`] checks it; whether it
    /// is `node` (a key that may make its object a node reference).
    fn skip_string(&mut self) -> Option<bool> {
        let bytes = self.bytes();
        let start = self.at + 1;
        let mut i = start;
        loop {
            i = plain_run(bytes, i)?;
            match bytes[i] {
                b'"' => {
                    self.at = i + 1;
                    return Some(&bytes[start..i] == b"node");
                }
                // An escaped `node` is not looked for: a key with an escape is refused.
                b'\\' => i += escape(bytes, i)?.1,
                _ => return None,
            }
        }
    }

    /// Skips the value at the cursor, checked so that serde_json would read it as it is
    /// (`depth` is how deep it is nested in the node); whether an object in it has a `node`
    /// key. A list longer than the per-value limit is refused, as serde refuses it.
    fn skip_value(&mut self, depth: usize) -> Option<bool> {
        match self.peek()? {
            b'"' => self.skip_string().map(|_| false),
            b'{' => {
                if self.enter(depth, b'}')? {
                    return Some(false);
                }
                let mut refs = false;
                loop {
                    self.space();
                    if self.peek()? != b'"' {
                        return None;
                    }
                    let key_start = self.at;
                    refs |= self.skip_string()?;
                    if self.bytes()[key_start..self.at].contains(&b'\\') {
                        return None;
                    }
                    if !self.eat(b':') {
                        return None;
                    }
                    self.space();
                    refs |= self.skip_value(depth + 1)?;
                    if !self.more(b'}')? {
                        return Some(refs);
                    }
                }
            }
            b'[' => {
                if self.enter(depth, b']')? {
                    return Some(false);
                }
                let mut refs = false;
                let mut len = 0usize;
                loop {
                    len += 1;
                    if len >= MAX_LIST_LEN {
                        return None;
                    }
                    self.space();
                    refs |= self.skip_value(depth + 1)?;
                    if !self.more(b']')? {
                        return Some(refs);
                    }
                }
            }
            b't' => self.literal(b"true").map(|()| false),
            b'f' => self.literal(b"false").map(|()| false),
            b'n' => self.literal(b"null").map(|()| false),
            b'-' | b'0'..=b'9' => self.number().map(|()| false),
            _ => None,
        }
    }

    /// A JSON number with at most 19 digits before its point and an exponent of at most two
    /// digits: serde_json reads those without ever finding one out of range (an integer past
    /// `u64` is read as a float).
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits_from = |i: usize| {
            bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_digit())
                .map_or(bytes.len(), |n| i + n)
        };
        let mut i = self.at + usize::from(bytes[self.at] == b'-');
        let int_end = match bytes.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits_from(i),
            _ => return None,
        };
        let digits = int_end - i;
        i = int_end;
        if bytes.get(i) == Some(&b'.') {
            let end = digits_from(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let end = digits_from(i);
            if end == i || end - i > 2 {
                return None;
            }
            i = end;
        }
        if digits > 19 {
            return None;
        }
        self.at = i;
        Some(())
    }
}

/// Sets a field not set before; `None` for a key written twice (serde keeps the last).
fn once<T>(slot: &mut Slot<T>, value: Slot<T>) -> Option<()> {
    match slot {
        Slot::Missing => {
            *slot = value;
            Some(())
        }
        _ => None,
    }
}

/// `seed` on `text`, which must be one whole value (it was checked by [`Cursor::skip_value`]).
fn by_serde<'t, S: DeserializeSeed<'t>>(text: &'t str, seed: S) -> Option<S::Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = seed.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

/// The first position from `i` that holds a quote, a backslash or a control character,
/// eight bytes at a time.
fn plain_run(bytes: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let marks = bytes_equal(word, b'"') | bytes_equal(word, b'\\') | control_bytes(word);
        if marks != 0 {
            return Some(i + marks.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|at| i + at)
}

/// The escape at `i` (its backslash): the character and the escape's length. `None` for an
/// escape JSON does not have, and for a `\u` escape of a surrogate.
fn escape(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    let c = match bytes.get(i + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = std::str::from_utf8(bytes.get(i + 2..i + 6)?).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            // A surrogate is `None` here.
            return Some((char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, 6));
        }
        _ => return None,
    };
    Some((c, 2))
}

#[cfg(test)]
mod tests {
    use super::super::streamed::{node_texts, parse_node_by_serde};
    use super::super::tests::Rng;
    use super::super::{RawNode, Slot};
    use crate::value::{DecodeScratch, PyValue};

    /// Everything a parse made of a node, the metadata as read (decoded entries and kept
    /// bytes, not the map they make), and the node references its metadata counted.
    fn describe(node: &Slot<RawNode>, scratch: &DecodeScratch) -> String {
        let Slot::Got(node) = node else {
            return format!("{node:?}");
        };
        let meta = match &node.meta {
            Slot::Got((meta, refs)) => {
                let (entries, text) = meta.as_read();
                let text = text.map(String::from_utf8_lossy);
                format!("{entries:?} {text:?} {refs}")
            }
            Slot::Missing => "missing".into(),
            Slot::Wrong(kind) => format!("wrong {kind:?}"),
        };
        format!(
            "{:?} {:?} {:?} {:?} {:?} meta {meta} {:?} {:?} {:?} refs {}",
            node.name,
            node.op,
            node.target,
            node.args,
            node.kwargs,
            node.alias,
            node.impure,
            node.repr,
            scratch.meta_refs.get()
        )
    }

    fn at_length(value: &PyValue) -> bool {
        match value {
            PyValue::List(items) => items.capacity() == items.len() && items.iter().all(at_length),
            _ => true,
        }
    }

    /// The hand parser, where it reads `text`, reads it as serde does. Whether it did.
    fn agrees(text: &str) -> bool {
        let (hand, serde) = (DecodeScratch::default(), DecodeScratch::default());
        let Some(by_hand) = super::parse_node(text, &hand) else {
            return false;
        };
        // Lists are held at their length, as serde's are: the reader keeps millions.
        if let Slot::Got(Ok(args)) = &by_hand.args {
            assert!(
                args.iter().all(at_length),
                "a list with room to spare: {text}"
            );
        }
        let by_hand = describe(&Slot::Got(by_hand), &hand);
        let by_serde = match parse_node_by_serde(text, &serde) {
            Some(node) => describe(&node, &serde),
            None => "no node: serde refuses it".into(),
        };
        assert_eq!(by_hand, by_serde, "the parsers disagree on {text}");
        true
    }

    fn stored_dumps() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            root.join("tests/fixtures/reader"),
            root.join("../shared/conformance/cases"),
        ] {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                files.push(match path.is_dir() {
                    true => path.join("dump.json"),
                    false => path,
                });
            }
        }
        files.sort();
        let mut dumps: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
        let synthetic = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(3000));
        dumps.push(synthetic.into_bytes());
        dumps
    }

    #[test]
    fn reads_the_nodes_of_stored_dumps_as_serde_does() {
        let (mut nodes, mut read) = (0, 0);
        for dump in stored_dumps() {
            for text in node_texts(&dump).unwrap_or_default() {
                nodes += 1;
                read += usize::from(agrees(&text));
            }
        }
        // Real dumps are what it is for: it must read nearly all of their nodes.
        assert!(nodes > 15_000, "stored dumps missing: {nodes} nodes");
        assert!(
            read * 100 >= nodes * 97,
            "read {read} of {nodes} nodes by hand"
        );
    }

    #[test]
    fn damaged_nodes_are_read_as_serde_does_or_left_to_it() {
        let mut texts: Vec<String> = stored_dumps()
            .iter()
            .flat_map(|dump| node_texts(dump).unwrap_or_default())
            .collect();
        texts.sort();
        texts.dedup();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let noise: &[&[u8]] = &[
            b"-0",
            b"1.5",
            b"-12",
            b"{\"node\": \"n\"}",
            b"\"torch.float32\"",
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"\"",
            b"\\",
            b" ",
            b"0",
            b"-",
            b"1e400",
            b".5",
            b"e",
            b"true",
            b"null",
            b"\\u00e9",
            b"\\ud800",
            b"\\n",
            b"\x01",
            b"\"node\"",
            b"\xc3\xa9",
            b"\"name\": \"x\", ",
            b"\"meta\": {}, ",
            b"99999999999999999999",
            b"[[[[",
            b"]]]]",
        ];
        let mut read = 0;
        for _ in 0..60_000 {
            let text = texts[rng.below(texts.len())].as_bytes();
            let mut bytes = text.to_vec();
            for _ in 0..=rng.below(3) {
                let at = rng.below(bytes.len() + 1);
                let piece = noise[rng.below(noise.len())];
                match rng.below(3) {
                    0 => {
                        bytes.splice(at..at, piece.iter().copied());
                    }
                    1 => {
                        let end = (at + 1 + rng.below(4)).min(bytes.len());
                        bytes.drain(at.min(end)..end);
                    }
                    _ => {
                        let end = (at + piece.len()).min(bytes.len());
                        bytes.splice(at.min(end)..end, piece.iter().copied());
                    }
                }
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                read += usize::from(agrees(text));
            }
        }
        // Damage leaves many nodes readable (a changed name, number or kept value).
        assert!(read > 5_000, "only {read} damaged nodes read by hand");
    }

    #[test]
    fn what_serde_reads_otherwise_is_left_to_it() {
        let node = |fields: &str| format!(r#"{{"name": "n", "op": "call_function", {fields}}}"#);
        let read = |text: &str| agrees(text);
        // Read by hand.
        for fields in [
            r#""target": "t\u00e9\n\"q\"\\", "args": [], "kwargs": {}"#,
            r#""target": "t", "args": [1, -0, 2.5e-3, "s", {"node": "n"}], "kwargs": {"k": [1]}"#,
            r#""target": "t", "meta": {"val": {"a": [1, {"b": null}], "c": "\/"}, "param_name": "p"}"#,
            r#""target": "t", "meta": {}, "alias": null, "impure": false, "repr": null"#,
            r#""target": "t", "meta": null, "repr": {"args": "(a, 'b')", "target": "x"}"#,
            r#""target": "t", "meta": {"stack_trace": "File \"a.py\", line 1\n"}"#,
            // Decoded metadata values: a dtype's text is a dtype there, a node reference is
            // counted.
            r#""target": "t", "meta": {"fsdp_dtype": "torch.float32", "custom": [-12, 0, true]}"#,
            r#""target": "t", "meta": {"comm_group": [{"node": "a"}, ["x", null]], "val": 1}"#,
            r#""target": "t", "args": [[{"node": "a"}, "torch.float32"], -9, 0, false, null]"#,
            // Arguments serde decodes (floats, `-0`, objects other than a node reference).
            r#""target": "t", "args": [1.5, -0, -9999999999999999999, {"tensor": 1}]"#,
            r#""target": "t", "meta": {"custom": {"a": 1.5}, "fsdp_x": -0}"#,
        ] {
            assert!(read(&node(fields)), "not read by hand: {fields}");
        }
        // Left to serde: what it reads another way (the last of a repeated key, an escaped
        // key, a node reference in a kept value, a surrogate pair), what it may find out of
        // range, and what it refuses.
        for fields in [
            r#""target": "t", "target": "u""#,
            r#""targ\u0065t": "t""#,
            r#""target": "t", "meta": {"val": {"node": "n"}}"#,
            r#""target": "t", "meta": {"val": [{"no\u0064e": "n"}]}"#,
            r#""target": "\ud83d\ude00""#,
            r#""target": "t", "meta": {"val": 1e400}"#,
            r#""target": "t", "meta": {"val": 123456789012345678901234567890}"#,
            r#""target": "t", "meta": {"val": 01}"#,
            r#""target": "t", "meta": {"val": [1,]}"#,
            r#""target": "t", "other": 1"#,
            r#""target": "t", "repr": {"other": "x"}"#,
            r#""target": 1"#,
            r#""target": "t", "alias": 0"#,
            "\"target\": \"t\u{1}\"",
        ] {
            assert!(!read(&node(fields)), "read by hand: {fields}");
        }
        assert!(!read(r#"{"name": "n"} x"#));
        assert!(!read(r#"[1]"#));
    }
}

#[cfg(test)]
mod sharing {
    use super::parse_node;
    use crate::value::{DecodeScratch, PyValue};
    use std::sync::Arc;

    fn node(name: &str, meta: &str) -> String {
        format!(
            r#"{{"name":"{name}","op":"call_function","target":"aten.mm.default","args":[],"kwargs":{{}},"meta":{meta},"alias":false,"impure":false,"repr":null}}"#
        )
    }

    /// Reads two nodes with `meta_a` and `meta_b` on one scratch: their entries, and
    /// whether the entries are one shared slice.
    fn two(meta_a: &str, meta_b: &str) -> (String, bool) {
        let scratch = DecodeScratch::default();
        let (a, b) = (node("a", meta_a), node("b", meta_b));
        let a = parse_node(&a, &scratch).expect("parses by hand");
        let b = parse_node(&b, &scratch).expect("parses by hand");
        let (super::Slot::Got((a, _)), super::Slot::Got((b, _))) = (a.meta, b.meta) else {
            panic!("no meta")
        };
        let (ea, eb) = (a.shared_entries(), b.shared_entries());
        (format!("{:?}", a), Arc::ptr_eq(ea, eb))
    }

    #[test]
    fn equal_metadata_is_one_shared_slice() {
        assert!(
            two(
                r#"{"autograd_backward":true}"#,
                r#"{"autograd_backward":true}"#
            )
            .1
        );
        assert!(two("{}", "{ }").0.contains("{}"));
        assert!(
            !two(
                r#"{"autograd_backward":true}"#,
                r#"{"autograd_backward":false}"#
            )
            .1
        );
        // Beside kept entries, the decoded ones are shared when they read the same.
        assert!(two(r#"{"x":1,"comm_type":"a"}"#, r#"{"x":2,"comm_type":"a"}"#).1);
        assert!(two(r#"{"x":1}"#, r#"{"y":[2]}"#).1, "no decoded entries");
        assert!(!two(r#"{"x":1,"comm_type":"a"}"#, r#"{"x":1,"comm_type":"b"}"#).1);
        let (kept, shared) = two(r#"{"x":1,"comm_type":"a"}"#, r#"{"x":1}"#);
        assert!(!shared, "{kept}");
        // A node reference: not shared.
        assert!(!two(r#"{"custom":{"node":"a"}}"#, r#"{"custom":{"node":"a"}}"#).1);
    }

    #[test]
    fn common_metadata_is_shared_after_many_distinct_objects() {
        // A graph's placeholders come first, each with its own parameter's name: more of them
        // than the table holds must not keep the common metadata after them from sharing.
        let scratch = DecodeScratch::default();
        let entries = |name: &str, meta: &str| {
            let text = node(name, meta);
            let node = parse_node(&text, &scratch).expect("parses by hand");
            let super::Slot::Got((meta, _)) = node.meta else {
                panic!("no meta")
            };
            Arc::clone(meta.shared_entries())
        };
        for i in 0..10_000 {
            entries(&format!("p{i}"), &format!(r#"{{"param_name":"w{i}"}}"#));
        }
        let common = r#"{"autograd_backward":true}"#;
        let (a, b) = (entries("a", common), entries("b", common));
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn equal_metadata_dicts_are_one_shared_dict() {
        let scratch = DecodeScratch::default();
        let spec = r#"{"fsdp_bucket_spec":{"input_shape":[4,8],"dtype":"torch.float32"},"param_name":"P"}"#;
        let specs: Vec<_> = ["a", "b"]
            .iter()
            .map(|name| {
                let text = node(name, &spec.replace('P', name));
                let node = parse_node(&text, &scratch).expect("parses by hand");
                let super::Slot::Got((meta, _)) = node.meta else {
                    panic!("no meta")
                };
                match meta.get("fsdp_bucket_spec") {
                    Some(PyValue::Dict(dict)) => Arc::clone(dict),
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert!(Arc::ptr_eq(&specs[0], &specs[1]));
    }
}
