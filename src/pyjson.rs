//! Python-compatible JSON: what `json.dumps(value, sort_keys=True, default=str)` writes.
//!
//! Digests (`signature`, `group_digests`) are SHA-256 of that text, so a plan computed here
//! can be checked against one the Python planner logged: every byte must agree. That means
//! Python's separators (`", "`, `": "`), `ensure_ascii` escapes, `repr(float)` for floats,
//! `Infinity`/`NaN`, and `str(obj)` for objects JSON cannot hold (`default=str`).

use crate::value::PyValue;
use crate::words::{bytes_equal, short_word, unprintable_bytes};
use sha2::{Digest, Sha256};

/// `json.dumps(value, sort_keys=True, default=str)`.
pub fn dumps(value: &PyValue) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None, 0);
    out
}

/// `json.dumps(value, indent=1, sort_keys=True, default=str)`: the layout of the reports.
pub fn dumps_indented(value: &PyValue) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(1), 0);
    out
}

/// SHA-256 hex of [`dumps`]: the reference's `_digest`.
pub fn digest(value: &PyValue) -> String {
    let text = dumps(value);
    hex(&Sha256::digest(text.as_bytes()))
}

/// Lowercase hex of a digest, as Python's `hexdigest()`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[(byte >> 4) as usize] as char);
        out.push(DIGITS[(byte & 15) as usize] as char);
    }
    out
}

fn newline(out: &mut String, indent: Option<usize>, level: usize) {
    /// Indents are copied from here, not pushed a space at a time (a report's every line).
    const SPACES: &str = "                                                                ";
    if let Some(width) = indent {
        out.push('\n');
        let mut left = width * level;
        while left > 0 {
            let run = left.min(SPACES.len());
            out.push_str(&SPACES[..run]);
            left -= run;
        }
    }
}

fn write_value(out: &mut String, value: &PyValue, indent: Option<usize>, level: usize) {
    let item_separator = if indent.is_some() { "," } else { ", " };
    match value {
        PyValue::None => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Int(i) => write_int(out, i.get()),
        PyValue::Float(f) => out.push_str(&float_json(*f)),
        PyValue::Str(s) => write_string(out, s),
        PyValue::List(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_separator);
                }
                newline(out, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            newline(out, indent, level);
            out.push(']');
        }
        PyValue::Dict(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut entries: Vec<(&str, &PyValue)> =
                map.iter().map(|(k, v)| (k.as_str(), v)).collect();
            write_entries(out, &mut entries, indent, level);
        }
        // `default=str`: objects JSON cannot hold are written as `str(obj)`.
        other => write_string(out, &other.py_str()),
    }
}

/// [`dumps`] of `value`, appended to `out`.
pub fn write_compact(out: &mut String, value: &PyValue) {
    write_value(out, value, None, 0);
}

/// `json.dumps` of a list whose items are made one at a time, so the whole list is never held:
/// what [`write_value`] writes for a `PyValue::List` of them, at `level` with `indent` (`None`
/// for [`dumps`]'s layout). `flush` sees the text after each item (a digest takes it away).
pub fn write_list_of(
    out: &mut String,
    items: impl IntoIterator<Item = PyValue>,
    indent: Option<usize>,
    level: usize,
    flush: &mut dyn FnMut(&mut String),
) {
    write_list_with(out, items, indent, level, |out, item| {
        write_value(out, &item, indent, level + 1);
        flush(out);
    });
}

/// [`write_value`] at `level` of the indented layout ([`dumps_indented`]'s).
pub fn write_indented(out: &mut String, value: &PyValue, level: usize) {
    write_value(out, value, Some(1), level);
}

/// The start of an entry of an indented object at `level`: the separator after the previous
/// entry (unless `first`), the line break, the key.
pub fn write_indented_key(out: &mut String, key: &str, first: bool, level: usize) {
    if !first {
        out.push(',');
    }
    newline(out, Some(1), level + 1);
    write_string(out, key);
    out.push_str(": ");
}

/// A dict given as entries, written with sorted keys (`json.dumps(dict(entries),
/// sort_keys=True)`); the entries are sorted in place.
pub fn write_dict_entries(out: &mut String, entries: &mut [(&str, &PyValue)]) {
    write_entries(out, entries, None, 0);
}

fn write_entries(
    out: &mut String,
    entries: &mut [(&str, &PyValue)],
    indent: Option<usize>,
    level: usize,
) {
    if entries.is_empty() {
        out.push_str("{}");
        return;
    }
    // Python sorts str keys by code point; Rust's str ordering is by UTF-8 bytes, which
    // orders code points identically.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let item_separator = if indent.is_some() { "," } else { ", " };
    out.push('{');
    for (i, (key, item)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(item_separator);
        }
        newline(out, indent, level + 1);
        write_string(out, key);
        out.push_str(": ");
        write_value(out, item, indent, level + 1);
    }
    newline(out, indent, level);
    out.push('}');
}

/// A dict written entry by entry, without a [`PyValue`] for it: the caller gives the keys in
/// sorted order (what `sort_keys=True` writes; debug builds check it) and writes each value
/// after [`ObjectWriter::key`]. Same layout as a `PyValue::Dict` at `level` with `indent`.
pub struct ObjectWriter<'o> {
    out: &'o mut String,
    indent: Option<usize>,
    level: usize,
    last_key: Option<&'static str>,
}

impl<'o> ObjectWriter<'o> {
    pub fn new(out: &'o mut String, indent: Option<usize>, level: usize) -> ObjectWriter<'o> {
        ObjectWriter {
            out,
            indent,
            level,
            last_key: None,
        }
    }

    /// Starts the entry `key`; its value is written next, into the returned text.
    pub fn key(&mut self, key: &'static str) -> &mut String {
        debug_assert!(self.last_key.is_none_or(|k| k < key), "{key} out of order");
        match (self.last_key, self.indent) {
            (None, _) => self.out.push('{'),
            (Some(_), Some(_)) => self.out.push(','),
            (Some(_), None) => self.out.push_str(", "),
        }
        self.last_key = Some(key);
        newline(self.out, self.indent, self.level + 1);
        // Keys are the code's own names, written as they are: checking each for escapes was
        // half of writing a report's strings.
        debug_assert!(is_plain_ascii(key.as_bytes()), "{key:?} needs escapes");
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\": ");
        self.out
    }

    /// The level a value of an entry is written at (for nested lists and dicts).
    pub fn inner(&self) -> usize {
        self.level + 1
    }

    pub fn indent(&self) -> Option<usize> {
        self.indent
    }

    pub fn end(self) {
        if self.last_key.is_none() {
            self.out.push_str("{}");
            return;
        }
        newline(self.out, self.indent, self.level);
        self.out.push('}');
    }
}

/// A list written item by item at `level` with `indent`, as [`write_value`] writes a
/// `PyValue::List`: `item` writes each.
pub fn write_list_with<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    indent: Option<usize>,
    level: usize,
    mut item: impl FnMut(&mut String, T),
) {
    let mut any = false;
    for x in items {
        start_list_item(out, indent, level, !any);
        any = true;
        item(out, x);
    }
    end_list(out, indent, level, any);
}

/// What comes before an item of a list at `level`, as [`write_list_with`] writes it: the
/// list's `[` before the first item, else the separator after the one before. With
/// [`end_list`], for a list written in parts.
pub fn start_list_item(out: &mut String, indent: Option<usize>, level: usize, first: bool) {
    out.push_str(match (first, indent) {
        (true, _) => "[",
        (false, Some(_)) => ",",
        (false, None) => ", ",
    });
    newline(out, indent, level + 1);
}

/// The end of a list at `level` whose items began with [`start_list_item`] (`[]` when it
/// had none).
pub fn end_list(out: &mut String, indent: Option<usize>, level: usize, any: bool) {
    if !any {
        out.push_str("[]");
        return;
    }
    newline(out, indent, level);
    out.push(']');
}

/// An integer as `json.dumps` writes it.
pub fn write_int(out: &mut String, i: i128) {
    // `itoa`, not `fmt`: formatting an `i128` through `fmt` divides 128-bit numbers, and a
    // report's shapes, offsets and ranks all fit in 64 bits.
    let mut digits = itoa::Buffer::new();
    match i64::try_from(i) {
        Ok(small) => out.push_str(digits.format(small)),
        Err(_) => out.push_str(digits.format(i)),
    }
}

/// Whether `bytes` are printable ASCII other than `"` and `\\` (written as they are). Checked
/// eight bytes at a time without a branch per byte, the last word overlapping the one before
/// it: names and Python reprs are almost always plain and mostly shorter than 32 bytes, and
/// their tails, checked a byte at a time, were most of writing them.
fn is_plain_ascii(bytes: &[u8]) -> bool {
    fn marks(word: u64) -> u64 {
        unprintable_bytes(word) | bytes_equal(word, b'"') | bytes_equal(word, b'\\')
    }
    let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    let Some(last) = bytes.len().checked_sub(8) else {
        // The spaces around the bytes are plain.
        return marks(short_word(bytes)) == 0;
    };
    let any = bytes
        .chunks_exact(8)
        .fold(marks(word(&bytes[last..])), |any, chunk| {
            any | marks(word(chunk))
        });
    any == 0
}

/// A JSON string with `ensure_ascii=True` escaping, as Python's `json` writes it.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    if is_plain_ascii(s.as_bytes()) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Python's `json` writes it: `repr(f)`, or `Infinity`/`-Infinity`/`NaN`.
pub fn float_json(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        float_repr(f)
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation when the
/// decimal exponent is in [-4, 16), else `d.ddde+XX`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            for _ in 0..(-point) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let point = point as usize;
            if digits.len() <= point {
                out.push_str(&digits);
                for _ in digits.len()..point {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.abs()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python_layouts() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (1e300, "1e+300"),
            (2.5, "2.5"),
            (-123.456, "-123.456"),
            (5e-324, "5e-324"),
        ];
        for (value, expected) in cases {
            assert_eq!(float_repr(value), expected, "{value:e}");
        }
    }

    #[test]
    fn integers_are_written_as_python_writes_them_at_every_width() {
        let edges = [0, -1, 9, 10, -10, i64::MAX as i128, i64::MIN as i128];
        let wide = [
            i64::MAX as i128 + 1,
            i64::MIN as i128 - 1,
            i128::MAX,
            i128::MIN,
        ];
        for i in edges.into_iter().chain(wide) {
            let mut out = String::new();
            write_int(&mut out, i);
            assert_eq!(out, i.to_string());
            assert_eq!(dumps(&PyValue::int(i)), i.to_string());
        }
    }

    #[test]
    fn plain_ascii_is_decided_as_a_byte_by_byte_check_decides_it() {
        let plain = |bytes: &[u8]| {
            bytes
                .iter()
                .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
        };
        // Every byte value at every position of strings up to three words long, in plain
        // text and after a byte that carries or borrows (0xff, 0x00) in the words' arithmetic.
        for len in 0..=24 {
            for at in 0..len {
                for before in [b'a', 0xff, 0x00, 0x7e] {
                    for byte in 0..=255u8 {
                        let mut bytes = vec![b'a'; len];
                        if at > 0 {
                            bytes[at - 1] = before;
                        }
                        bytes[at] = byte;
                        assert_eq!(is_plain_ascii(&bytes), plain(&bytes), "{bytes:?}");
                    }
                }
            }
        }
        let mut out = String::new();
        write_string(&mut out, "aten.mm.default(primals_1, 'x')~");
        assert_eq!(out, "\"aten.mm.default(primals_1, 'x')~\"");
    }

    #[test]
    fn indents_deeper_than_the_spaces_copied_at_once_are_whole() {
        let mut value = PyValue::int(7);
        for _ in 0..70 {
            value = PyValue::List(vec![value]);
        }
        let mut expected = String::new();
        for level in 0..70 {
            expected.push_str(&format!("{}[\n", " ".repeat(level)));
        }
        expected.push_str(&format!("{}7", " ".repeat(70)));
        for level in (0..70).rev() {
            expected.push_str(&format!("\n{}]", " ".repeat(level)));
        }
        assert_eq!(dumps_indented(&value), expected);
    }

    #[test]
    fn ensure_ascii_escapes() {
        let mut out = String::new();
        write_string(&mut out, "é\u{1F600}\"\\\u{1}\u{7f}");
        assert_eq!(out, "\"\\u00e9\\ud83d\\ude00\\\"\\\\\\u0001\\u007f\"");
    }
}
