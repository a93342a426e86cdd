//! JSON written as serde_json's pretty printer writes it (two spaces an indentation level),
//! a piece at a time: objects by hand ([`PrettyObject`]), values from any depth
//! ([`PrettyAt`]), and objects whose arrays are made an item at a time and, natively, printed
//! on two threads ([`Field`], [`write_pretty_fields`]). `roles --json`, `audit --json` and
//! `cost --json` are printed with it; every text equals `serde_json::to_string_pretty` of the
//! same value (the tests here and beside each report).

use serde_json::Value;

/// A JSON object being written as serde_json's pretty printer writes one that starts
/// `depth` levels deep (see [`PrettyAt`]): its entries one level deeper, `}` on its own line
/// at its depth, `{}` when it has none.
pub(crate) struct PrettyObject<'o> {
    out: &'o mut String,
    /// The depth of the object's keys.
    depth: usize,
    any: bool,
}

impl<'o> PrettyObject<'o> {
    pub(crate) fn open(out: &'o mut String, depth: usize) -> PrettyObject<'o> {
        out.push('{');
        PrettyObject {
            out,
            depth: depth + 1,
            any: false,
        }
    }

    /// Starts the entry `key`, up to its value.
    pub(crate) fn key(&mut self, key: &str) -> &mut String {
        self.out.push_str(if self.any { ",\n" } else { "\n" });
        push_indent(self.out, self.depth);
        self.any = true;
        push_json_str(self.out, key);
        self.out.push_str(": ");
        self.out
    }

    pub(crate) fn str(&mut self, key: &str, value: &str) {
        push_json_str(self.key(key), value);
    }

    pub(crate) fn opt_str(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.str(key, value),
            None => self.null(key),
        }
    }

    pub(crate) fn null(&mut self, key: &str) {
        self.key(key).push_str("null");
    }

    pub(crate) fn bool(&mut self, key: &str, value: bool) {
        self.key(key).push_str(if value { "true" } else { "false" });
    }

    /// An array of strings.
    pub(crate) fn strs<'s>(&mut self, key: &str, items: impl Iterator<Item = &'s str>) {
        let depth = self.depth;
        let out = self.key(key);
        let mut any = false;
        for item in items {
            out.push_str(if any { ",\n" } else { "[\n" });
            push_indent(out, depth + 1);
            push_json_str(out, item);
            any = true;
        }
        if any {
            out.push('\n');
            push_indent(out, depth);
            out.push(']');
        } else {
            out.push_str("[]");
        }
    }

    /// An object, as the value of `key`.
    pub(crate) fn object(&mut self, key: &str) -> PrettyObject<'_> {
        let depth = self.depth;
        PrettyObject::open(self.key(key), depth)
    }

    pub(crate) fn close(self) {
        if self.any {
            self.out.push('\n');
            push_indent(self.out, self.depth - 1);
        }
        self.out.push('}');
    }
}

/// The indentation of the deepest lines `roles --json` prints, and more, at once.
const SPACES: &str = "                                ";

/// Two spaces for each of `depth` levels, in pieces of at most [`SPACES`].
fn indent_pieces(depth: usize) -> impl Iterator<Item = &'static str> {
    let (whole, rest) = (2 * depth / SPACES.len(), 2 * depth % SPACES.len());
    std::iter::repeat_n(SPACES, whole).chain((rest > 0).then(|| &SPACES[..rest]))
}

/// Two spaces for each of `depth` levels.
fn push_indent(out: &mut String, depth: usize) {
    indent_pieces(depth).for_each(|piece| out.push_str(piece));
}

/// `text` as a JSON string, escaped as serde_json escapes it: `"`, `\` and the control
/// characters (`\n` and the like where JSON has a short form, else `\u00XX`); the rest,
/// non-ASCII too, as it is.
pub(crate) fn push_json_str(out: &mut String, text: &str) {
    let bytes = text.as_bytes();
    out.push('"');
    let mut plain = 0;
    while let Some(at) = next_escaped(bytes, plain) {
        // Escaped bytes are ASCII: `plain..at` ends on a character boundary.
        out.push_str(&text[plain..at]);
        let byte = bytes[at];
        let short = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => "",
        };
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(short);
        }
        plain = at + 1;
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// The first byte from `from` on that a JSON string escapes (`"`, `\`, a control
/// character), found eight bytes at a time: names and most evidence have none, and the
/// evidence that quotes a tag has four.
fn next_escaped(bytes: &[u8], from: usize) -> Option<usize> {
    use crate::words::{bytes_equal, control_bytes};
    let marks =
        |word: u64| control_bytes(word) | bytes_equal(word, b'"') | bytes_equal(word, b'\\');
    let mut at = from;
    while let Some(eight) = bytes.get(at..at + 8) {
        let found = marks(u64::from_le_bytes(eight.try_into().expect("8 bytes")));
        if found != 0 {
            // The lowest mark is exact (`crate::words`).
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    // The last few bytes one at a time: copied into a word to be tested at once, the
    // word's load waited for the copy's stores (a third of this function's time).
    bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        .map(|k| at + k)
}

/// An entry of a JSON object written a piece at a time: a value, or an array whose items are
/// made one at a time.
pub(crate) enum Field<'a> {
    Value(Value),
    Items(Box<dyn Iterator<Item = Value> + 'a>),
    /// `len` items, the `i`-th made by `item(i)`: natively, half of them are made and printed
    /// on a second thread (`roles --json` at 500k nodes writes 85k collectives, 95 MB).
    Indexed(usize, Box<dyn Indexed + 'a>),
}

/// The items of [`Field::Indexed`]: made by index, and printed without becoming a `Value`.
pub(crate) trait Indexed: Sync {
    fn value(&self, i: usize) -> Value;
    /// Item `i` pretty-printed `depth` levels deep, after `out`; `scratch` is for the bytes.
    fn push(&self, i: usize, out: &mut String, depth: usize, scratch: &mut Vec<u8>);
}

impl<F: Fn(usize) -> T + Sync, T: serde::Serialize> Indexed for F {
    fn value(&self, i: usize) -> Value {
        serde_json::to_value(self(i)).unwrap_or_default()
    }

    fn push(&self, i: usize, out: &mut String, depth: usize, scratch: &mut Vec<u8>) {
        push_serialized(out, &self(i), depth, scratch);
    }
}

/// The object of `fields` as a `Value`.
pub(crate) fn object_of(fields: Vec<(&str, Field<'_>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(key, field)| {
                let value = match field {
                    Field::Value(v) => v,
                    Field::Items(items) => Value::Array(items.collect()),
                    Field::Indexed(len, items) => {
                        Value::Array((0..len).map(|i| items.value(i)).collect())
                    }
                };
                (key.to_string(), value)
            })
            .collect(),
    )
}

/// `serde_json::to_string_pretty` of the object of `fields`, and a newline, without holding
/// the whole value: each array item is written, indented to its depth, and dropped. (Pretty
/// JSON breaks lines only between tokens, never inside a string, so an item's own text is
/// indented by adding spaces after each of its line breaks.)
pub(crate) fn pretty_fields(fields: Vec<(&str, Field<'_>)>) -> String {
    let mut out = String::new();
    pretty_fields_into(fields, &mut out, &mut |_| {});
    out
}

/// [`pretty_fields`] written to `w` a piece at a time, never holding the whole text.
pub(crate) fn write_pretty_fields(
    fields: Vec<(&str, Field<'_>)>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    crate::text::write_in_pieces(w, |out, flush| pretty_fields_into(fields, out, flush))
}

/// serde_json's `PrettyFormatter` (two spaces) for a value that starts `depth` levels deep:
/// its line breaks are indented to its place in the whole document. (Pretty-printing alone
/// and indenting each line after was a third of `commlens roles --json`.)
struct PrettyAt {
    depth: usize,
    has_value: bool,
}

impl PrettyAt {
    fn new(depth: usize) -> PrettyAt {
        PrettyAt {
            depth,
            has_value: false,
        }
    }

    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W, text: &[u8]) -> std::io::Result<()> {
        w.write_all(text)?;
        indent_pieces(self.depth).try_for_each(|piece| w.write_all(piece.as_bytes()))
    }

    fn begin<W: ?Sized + std::io::Write>(&mut self, w: &mut W, open: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + std::io::Write>(&mut self, w: &mut W, close: &[u8]) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, b"\n")?;
        }
        w.write_all(close)
    }
}

impl serde_json::ser::Formatter for PrettyAt {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, if first { b"\n" } else { b",\n" })
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, if first { b"\n" } else { b",\n" })
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// [`pretty_fields`]'s text into `out`; `flush` sees it after each array item.
fn pretty_fields_into(
    fields: Vec<(&str, Field<'_>)>,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
) {
    if fields.is_empty() {
        out.push_str("{}\n");
        return;
    }
    out.push('{');
    push_fields(fields, true, out, flush, Printing::TwoThreads);
    out.push_str("\n}\n");
}

/// The entries of a [`pretty_fields`] object, without its braces; `first` when they begin it.
pub(crate) fn push_fields(
    fields: Vec<(&str, Field<'_>)>,
    first: bool,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
    printing: Printing,
) {
    for (i, (key, field)) in fields.into_iter().enumerate() {
        out.push_str(if first && i == 0 { "\n  " } else { ",\n  " });
        push_at(out, &Value::String(key.to_string()), 1);
        out.push_str(": ");
        match field {
            Field::Value(value) => push_at(out, &value, 1),
            Field::Items(items) => {
                let mut any = false;
                for item in items {
                    out.push_str(if any { ",\n    " } else { "[\n    " });
                    any = true;
                    push_at(out, &item, 2);
                    flush(out);
                }
                out.push_str(if any { "\n  ]" } else { "[]" });
            }
            Field::Indexed(0, _) => out.push_str("[]"),
            Field::Indexed(len, item) => {
                out.push('[');
                push_items(len, &*item, out, flush, printing);
                out.push_str("\n  ]");
            }
        }
    }
}

/// `value` pretty-printed `depth` levels deep.
fn push_at(out: &mut String, value: &Value, depth: usize) {
    push_serialized(out, value, depth, &mut Vec::new());
}

/// `value` pretty-printed `depth` levels deep, through `scratch`.
fn push_serialized(
    out: &mut String,
    value: &impl serde::Serialize,
    depth: usize,
    scratch: &mut Vec<u8>,
) {
    scratch.clear();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut *scratch, PrettyAt::new(depth));
    let printed = value.serialize(&mut serializer).ok().map(|()| &scratch[..]);
    // serde_json prints UTF-8 (the lossy reading is never needed).
    match printed.map(std::str::from_utf8) {
        Some(Ok(text)) => out.push_str(text),
        Some(Err(_)) => out.push_str(&String::from_utf8_lossy(scratch)),
        None => out.push_str("null"),
    }
}

/// Items `range` of an array's items as they are printed two levels deep (each after its
/// line break, the ones after the first after a comma).
fn push_item_range(range: std::ops::Range<usize>, items: &dyn Indexed, out: &mut String) {
    let mut scratch = Vec::new();
    for i in range {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        items.push(i, out, 2, &mut scratch);
    }
}

/// Whether the items of an array are printed on two threads (natively), or on this one
/// alone: while the plan is being made on the other core, a second printing thread only
/// takes turns with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Printing {
    OneThread,
    TwoThreads,
}

/// Items in a chunk: what is printed on one thread before the other's turn.
const ITEM_CHUNK: usize = 64;

/// The `len` items of an array (at least one), in order, into `out`, flushed after each
/// chunk. Natively, with [`Printing::TwoThreads`], every other chunk is made on a second
/// thread while this one makes and writes its own; at most two chunks wait.
fn push_items(
    len: usize,
    item: &dyn Indexed,
    out: &mut String,
    flush: &mut dyn FnMut(&mut String),
    printing: Printing,
) {
    let chunk = |k: usize| k * ITEM_CHUNK..((k + 1) * ITEM_CHUNK).min(len);
    let chunks = len.div_ceil(ITEM_CHUNK);
    // In wasm there is one thread.
    #[cfg(target_arch = "wasm32")]
    let _ = printing;
    #[cfg(not(target_arch = "wasm32"))]
    if chunks > 1 && printing == Printing::TwoThreads {
        let printed = std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::sync_channel::<String>(2);
            let helper = std::thread::Builder::new()
                .name("commlens-json".into())
                .spawn_scoped(scope, move || {
                    // Each chunk's text made at about the last one's size, not grown.
                    let mut room = 0;
                    for k in (1..chunks).step_by(2) {
                        let mut text = String::with_capacity(room + room / 8);
                        push_item_range(chunk(k), item, &mut text);
                        room = text.len();
                        if send.send(text).is_err() {
                            return;
                        }
                    }
                });
            let Ok(helper) = helper else {
                return false;
            };
            for k in (0..chunks).step_by(2) {
                push_item_range(chunk(k), item, out);
                flush(out);
                if k + 1 < chunks {
                    // The helper sends every odd chunk unless it panicked; then the rest is
                    // printed here.
                    match receive.recv() {
                        Ok(text) => out.push_str(&text),
                        Err(_) => push_item_range(chunk(k + 1), item, out),
                    }
                    flush(out);
                }
            }
            // Joined here, so that a panic there (which one here would have repeated) is not
            // raised again by the scope.
            let _ = helper.join();
            true
        });
        if printed {
            return;
        }
    }
    for k in 0..chunks {
        push_item_range(chunk(k), item, out);
        flush(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_printed_deep_is_serdes_pretty_text_indented() {
        let value = json!({"a": [1, {"b": [[], {}, [2, {"c": "d"}]]}], "e": {"f": null}});
        let pretty = serde_json::to_string_pretty(&value).expect("pretty");
        // Deeper than the indentation written at once.
        for depth in [0, 1, 3, 15, 16, 17, 40] {
            let mut out = String::new();
            push_at(&mut out, &value, depth);
            let indent = "  ".repeat(depth);
            assert_eq!(
                out,
                pretty.replace('\n', &format!("\n{indent}")),
                "depth {depth}"
            );
        }
    }

    /// Strings are escaped as serde_json escapes them: every control character, quotes and
    /// backslashes at any place in a word, and nothing else (non-ASCII and DEL as they are).
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut cases: Vec<String> = ["", "a", "plain_name_17", "é", "tab\tend", "\u{7f}", "🙂x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for byte in 0u8..0x80 {
            for at in 0..17 {
                let mut s = "x".repeat(at);
                s.push(char::from(byte));
                s.push_str(&"y".repeat(16 - at));
                cases.push(s);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut below = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let alphabet = [
            'a', '"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '€', '\u{7f}', ' ',
        ];
        for _ in 0..2000 {
            let len = below(40);
            cases.push((0..len).map(|_| alphabet[below(alphabet.len())]).collect());
        }
        for case in &cases {
            let mut out = String::from("<");
            push_json_str(&mut out, case);
            assert_eq!(
                out,
                format!("<{}", serde_json::to_string(case).unwrap()),
                "{case:?}"
            );
        }
    }

    /// An object of fields is serde_json's pretty text of the object they make.
    #[test]
    fn fields_print_as_serdes_pretty_text_of_their_object() {
        let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap() + "\n";
        assert_eq!(pretty_fields(Vec::new()), pretty(&json!({})));
        let empty = vec![("a", Field::Items(Box::new(std::iter::empty())))];
        assert_eq!(pretty_fields(empty), pretty(&json!({"a": []})));
        // Empty and nested containers, at every depth the report writes values at.
        let nested = json!({"x": [], "y": {}, "z": [[1, {}], "s\n", {"w": [[]]}]});
        let fields = vec![
            ("a", Field::Value(nested.clone())),
            (
                "b",
                Field::Items(Box::new(
                    vec![nested.clone(), json!([]), json!({})].into_iter(),
                )),
            ),
        ];
        let whole = json!({"a": nested, "b": [nested, [], {}]});
        assert_eq!(pretty_fields(fields), pretty(&whole));
        // Made by index, over many chunks (printed on two threads natively), one, and none.
        let item = |i: usize| json!({"i": i, "a": [i, {}], "e": []});
        for len in [0, 1, ITEM_CHUNK, 2 * ITEM_CHUNK + 1, 37 * ITEM_CHUNK + 5] {
            let fields = vec![("c", Field::Indexed(len, Box::new(item)))];
            let whole = json!({"c": (0..len).map(item).collect::<Vec<_>>()});
            assert_eq!(pretty_fields(fields), pretty(&whole), "{len} items");
        }
    }
}
