//! A gzip dump read as it decompresses, a node at a time, so that its whole text is never
//! held: at 500k nodes the text alone was as large as everything parsed from it
//! (docs/performance.md). Each node's text is parsed as soon as it is complete, by the same
//! code and rules as the whole-text reader; the metadata entries left undecoded keep a copy of
//! their object ([`MetaText::Own`]) instead of a position in the text.
//!
//! This reader only reads dumps that are right. Anything else (a broken rule, bad JSON, text
//! that is not UTF-8, nesting near serde_json's depth limit, a repeated `nodes`, data over the
//! input-size limit) makes it decline, and the dump is read whole as before, which reports
//! the problem with its exact position and message. So every error a reader reports comes
//! from one reader, and the two agree on every dump they both accept.

use super::{
    read_top, DecodeScratch, DeserializeSeed, Dump, NodeSink, NodeText, NodeWant, NodesInput,
    ParsedNodes, RawNode, Skip, Slot, Targets, Tolerant, J,
};
use crate::hashing::FastSet;
use crate::words::{bytes_equal, HIGHS, ONES};
use std::io::Read;
use std::sync::Arc;

/// What [`scan_value`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// A value ends at `end` (exclusive), nested `depth` arrays and objects deep at most.
    Done { end: usize, depth: usize },
    /// The text ends inside the value.
    More,
    /// Not a JSON value's shape (a closing bracket first, nothing before a separator).
    Bad,
}

/// Where the JSON value that starts at `start` (no whitespace before it) ends, found by its
/// brackets and strings alone: what it holds is checked by the parser afterwards.
pub(crate) fn scan_value(text: &[u8], start: usize) -> Scan {
    match text.get(start) {
        None => Scan::More,
        Some(b'"') => match string_end(text, start + 1) {
            Some(end) => Scan::Done { end, depth: 0 },
            None => Scan::More,
        },
        Some(b'{' | b'[') => scan_nested(text, start),
        Some(b'}' | b']') => Scan::Bad,
        Some(_) => {
            // A number, `true`, `false` or `null`: up to the next separator.
            let len = text[start..].iter().position(|b| {
                matches!(
                    b,
                    b',' | b':' | b']' | b'}' | b'[' | b'{' | b'"' | b' ' | b'\t' | b'\n' | b'\r'
                )
            });
            match len {
                Some(0) => Scan::Bad,
                Some(len) => Scan::Done {
                    end: start + len,
                    depth: 0,
                },
                None => Scan::More,
            }
        }
    }
}

/// [`scan_value`] for an array or object, which starts at `start`, 64 bytes at a time: which
/// bytes are quotes, backslashes and brackets as bit masks, strings as the bits between
/// unescaped quotes, then only the brackets outside strings visited one by one. A dump
/// written without line breaks has every node found this way; byte runs from one quote or
/// bracket to the next took a tenth of such a run's samples natively, and in the browser a
/// one-line 100k dump read 45 ms (8%) slower with them than with this scan on wasm's vectors.
/// The wasm builds have those (`simd128`: `.cargo/config.toml`).
fn scan_nested(text: &[u8], start: usize) -> Scan {
    let mut blocks = Blocks::default();
    let mut i = start;
    while let Some(block) = text.get(i..i + 64) {
        if let Some(at) = blocks.close_at(block.try_into().expect("64 bytes")) {
            return Scan::Done {
                end: i + at + 1,
                depth: blocks.deepest,
            };
        }
        i += 64;
    }
    // The last piece, padded with spaces (no bracket, quote or backslash).
    let rest = &text[i..];
    let mut last = [b' '; 64];
    last[..rest.len()].copy_from_slice(rest);
    match blocks.close_at(&last) {
        Some(at) => Scan::Done {
            end: i + at + 1,
            depth: blocks.deepest,
        },
        None => Scan::More,
    }
}

/// Where a nested value's scan is, between two 64-byte blocks.
#[derive(Default)]
struct Blocks {
    depth: usize,
    deepest: usize,
    /// All ones when the block before ended inside a string.
    in_string: u64,
    /// The block before ended with a backslash that escapes this block's first byte.
    escapes_first: bool,
}

impl Blocks {
    /// Scans `block`, the next 64 bytes of the value: the position of the bracket that closes
    /// the value, if it is in this block.
    fn close_at(&mut self, block: &[u8; 64]) -> Option<usize> {
        let marks = Marks::of(block);
        let quotes = marks.quote & !self.escaped(marks.backslash);
        // A bit for every byte from an opening quote up to (not including) its closing one.
        let mut inside = quotes;
        for shift in [1, 2, 4, 8, 16, 32] {
            inside ^= inside << shift;
        }
        inside ^= self.in_string;
        self.in_string = 0u64.wrapping_sub(inside >> 63);
        let mut brackets = (marks.open | marks.close) & !inside;
        while brackets != 0 {
            let at = brackets.trailing_zeros() as usize;
            if marks.open >> at & 1 == 1 {
                self.depth += 1;
                self.deepest = self.deepest.max(self.depth);
            } else {
                // The value's first byte opens it, so a close never comes at depth 0.
                self.depth -= 1;
                if self.depth == 0 {
                    return Some(at);
                }
            }
            brackets &= brackets - 1;
        }
        None
    }

    /// The bytes of this block that a backslash escapes, given its `backslash` bits: each
    /// backslash that is not itself escaped escapes the byte after it (which may be in the
    /// next block). A dump's strings rarely hold escapes, so this is mostly one test.
    fn escaped(&mut self, backslash: u64) -> u64 {
        let mut escaped = u64::from(std::mem::take(&mut self.escapes_first));
        let mut escapes = backslash & !escaped;
        while escapes != 0 {
            let at = escapes.trailing_zeros();
            if at == 63 {
                self.escapes_first = true;
                break;
            }
            escaped |= 2 << at;
            // This backslash, and the byte it escapes (no escape even when a backslash).
            escapes &= !(3 << at);
        }
        escaped
    }
}

/// A 64-byte block's quotes, backslashes, opening and closing brackets, a bit a byte.
#[derive(Debug, Default, PartialEq, Eq)]
struct Marks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

impl Marks {
    /// With SSE2, part of every x86-64 processor: 16 bytes compared at once.
    #[cfg(target_arch = "x86_64")]
    fn of(block: &[u8; 64]) -> Marks {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        let mut marks = Marks::default();
        for (k, lane) in block.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is in x86-64's baseline; the load reads the 16 bytes of `lane`.
            let [quote, backslash, open, close] = unsafe {
                let bytes = _mm_loadu_si128(lane.as_ptr().cast());
                // `{` and `[` differ only in 0x20, as do `}` and `]`.
                let folded = _mm_or_si128(bytes, _mm_set1_epi8(0x20));
                let bits =
                    |v, byte: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(byte as i8)));
                [
                    bits(bytes, b'"'),
                    bits(bytes, b'\\'),
                    bits(folded, b'{'),
                    bits(folded, b'}'),
                ]
            };
            let shift = 16 * k;
            marks.quote |= u64::from(quote as u16) << shift;
            marks.backslash |= u64::from(backslash as u16) << shift;
            marks.open |= u64::from(open as u16) << shift;
            marks.close |= u64::from(close as u16) << shift;
        }
        marks
    }

    /// With wasm's 128-bit vectors (`simd128`, in every browser since 2023; the wasm builds
    /// enable them): 16 bytes compared at once, as with SSE2.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    fn of(block: &[u8; 64]) -> Marks {
        use std::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_splat, v128, v128_load, v128_or};
        let mut marks = Marks::default();
        for (k, lane) in block.chunks_exact(16).enumerate() {
            // SAFETY: the load reads the 16 bytes of `lane` (wasm loads need no alignment).
            let bytes = unsafe { v128_load(lane.as_ptr().cast::<v128>()) };
            // `{` and `[` differ only in 0x20, as do `}` and `]`.
            let folded = v128_or(bytes, u8x16_splat(0x20));
            let shift = 16 * k;
            marks.quote |= u64::from(u8x16_bitmask(u8x16_eq(bytes, u8x16_splat(b'"')))) << shift;
            marks.backslash |=
                u64::from(u8x16_bitmask(u8x16_eq(bytes, u8x16_splat(b'\\')))) << shift;
            marks.open |= u64::from(u8x16_bitmask(u8x16_eq(folded, u8x16_splat(b'{')))) << shift;
            marks.close |= u64::from(u8x16_bitmask(u8x16_eq(folded, u8x16_splat(b'}')))) << shift;
        }
        marks
    }

    #[cfg(not(any(
        target_arch = "x86_64",
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    fn of(block: &[u8; 64]) -> Marks {
        Marks::of_words(block)
    }

    /// [`Marks::of`] eight bytes at a time in plain integer arithmetic, on processors
    /// without the x86-64 path (and in its test).
    #[cfg_attr(
        any(
            target_arch = "x86_64",
            all(target_arch = "wasm32", target_feature = "simd128")
        ),
        allow(dead_code)
    )]
    fn of_words(block: &[u8; 64]) -> Marks {
        /// The high bit of each byte of `word` that is `byte`, exactly.
        fn equal(word: u64, byte: u8) -> u64 {
            let x = word ^ (u64::from(byte) * ONES);
            !(((x & !HIGHS).wrapping_add(!HIGHS)) | x) & HIGHS
        }
        /// The eight high bits of `highs` as the low eight bits, in byte order.
        fn packed(highs: u64) -> u64 {
            (highs >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
        }
        let mut marks = Marks::default();
        for (k, chunk) in block.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            let folded = word | (0x20 * ONES);
            let shift = 8 * k;
            marks.quote |= packed(equal(word, b'"')) << shift;
            marks.backslash |= packed(equal(word, b'\\')) << shift;
            marks.open |= packed(equal(folded, b'{')) << shift;
            marks.close |= packed(equal(folded, b'}')) << shift;
        }
        marks
    }
}

/// Just past the closing quote of the string whose contents start at `i`, eight bytes at a
/// time (a dump's strings are mostly short).
fn string_end(text: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let at = loop {
            match text.get(i..i + 8) {
                Some(chunk) => {
                    let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    let marks = bytes_equal(word, b'"') | bytes_equal(word, b'\\');
                    if marks != 0 {
                        break i + marks.trailing_zeros() as usize / 8;
                    }
                    i += 8;
                }
                None => break i + memchr::memchr2(b'"', b'\\', text.get(i..)?)?,
            }
        };
        if text[at] == b'"' {
            return Some(at + 1);
        }
        // An escape: the byte after the backslash is never the end.
        i = at + 2;
    }
}

/// What a node keeps of the `meta` object that starts `text` for the entries the reader did
/// not decode: every entry in order, the decoded ones with `0` for a value (their values live
/// decoded in the `Meta`; the key keeps its place in the whole map's order). At 500k nodes the
/// decoded entries' values were a third of the kept text. Anything unexpected keeps the object
/// as it is. `None` when the object does not end in `text`.
///
/// Equal objects share one copy: most nodes keep only their `val`, and a graph repeats its
/// shapes (every layer of a model has the same), so a synthetic 500k-node dump kept 54 MB of
/// text in a few dozen distinct objects. The copies seen last are remembered, a bounded number
/// ([`KEPT_SHARED`]), so a dump whose objects are all different pays a hash a node.
pub(super) fn kept_object(text: &[u8]) -> Option<Arc<[u8]>> {
    keep_shared(|buffer| {
        if kept_entries(text, buffer).is_none() {
            buffer.clear();
            match scan_value(text, 0) {
                Scan::Done { end, .. } => buffer.extend_from_slice(&text[..end]),
                _ => return None,
            }
        }
        Some(())
    })
}

/// The kept object that `gather` writes into a buffer: a copy at its size, or the one
/// already made of an equal object ([`kept_object`]). `None` when `gather` gives up.
pub(super) fn keep_shared(gather: impl FnOnce(&mut Vec<u8>) -> Option<()>) -> Option<Arc<[u8]>> {
    // Gathered in a buffer, then copied out at its size (or shared): a shrinking `realloc`
    // may keep the whole block (mimalloc does unless it halves).
    KEPT.with_borrow_mut(|Kept { buffer, shared }| {
        buffer.clear();
        gather(buffer)?;
        let kept = buffer.as_slice();
        if let Some(seen) = shared.get(kept) {
            return Some(seen.clone());
        }
        if shared.len() == KEPT_SHARED {
            shared.clear();
        }
        let own: Arc<[u8]> = kept.into();
        shared.insert(own.clone());
        Some(own)
    })
}

/// How many of the kept objects seen last [`kept_object`] shares copies of (per thread).
const KEPT_SHARED: usize = 4096;

/// [`kept_object`]'s state on a thread.
#[derive(Default)]
struct Kept {
    /// Where an object is gathered.
    buffer: Vec<u8>,
    /// The kept objects shared, at most [`KEPT_SHARED`].
    shared: FastSet<Arc<[u8]>>,
}

thread_local! {
    static KEPT: std::cell::RefCell<Kept> = std::cell::RefCell::new(Kept::default());
}

/// Lets go of the kept objects [`kept_object`] remembers on this thread, once a read is over,
/// so that a closed dump's metadata is not held on to.
fn forget_kept_objects() {
    KEPT.with_borrow_mut(|kept| kept.shared = FastSet::default());
}

/// The object at the start of `object`, found entry by entry (one pass), into `out`. `None`
/// for an empty object (kept as it is) or one the scan cannot walk.
fn kept_entries(object: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.push(b'{');
    let mut first = true;
    walk_entries(object, |key, value| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        let quoted = &object[key.clone()];
        let key = &quoted[1..quoted.len() - 1];
        // A key with escapes is kept with its value, as a key not decoded would be.
        let decoded = !key.contains(&b'\\')
            && std::str::from_utf8(key).is_ok_and(crate::meta::decoded_on_read);
        out.extend_from_slice(quoted);
        out.push(b':');
        match decoded {
            true => out.push(b'0'),
            false => out.extend_from_slice(&object[value]),
        }
        Some(())
    })?;
    if first {
        return None;
    }
    out.push(b'}');
    Some(())
}

/// Where the value of the last `wanted` entry of the object at the start of `object` is,
/// found by scanning (no parsing of the other entries): `Some(None)` when it has none, `None`
/// when a scan cannot tell (a key with escapes, text that is not an object), for the parser to
/// answer. The object was checked when the dump was read.
pub(super) fn entry_span(object: &[u8], wanted: &str) -> Option<Option<(usize, usize)>> {
    let mut found = None;
    walk_entries(object, |key, value| {
        let key = &object[key.start + 1..key.end - 1];
        if key.contains(&b'\\') {
            return None;
        }
        if key == wanted.as_bytes() {
            found = Some((value.start, value.end));
        }
        Some(())
    })?;
    Some(found)
}

/// The `dtype` of the tensor summary `value` holds (`{"tensor": {"shape": [..], "dtype":
/// "torch.float32", ...}}`), found by scanning: `Some(dtype)` as its decoded `dtype` entry
/// prints (`PyValue::py_str`), `Some(None)` when the summary has none. `None` when a scan
/// cannot tell: anything but an object whose one entry, `"tensor"`, holds an object of two or
/// more plain entries (strings without escapes, numbers, `true`, `false`, `null`, and lists
/// of those) and at most one `dtype`, a string; the decoder answers those.
pub(super) fn tensor_dtype(value: &[u8]) -> Option<Option<&str>> {
    let mut summary = None;
    let mut entries = 0;
    walk_entries(value, |key, inner| {
        entries += 1;
        summary = (&value[key] == b"\"tensor\"").then_some(inner);
        Some(())
    })?;
    let summary = &value[summary.filter(|_| entries == 1)?];
    let mut dtype = None;
    let mut entries = 0;
    walk_entries(summary, |key, inner| {
        entries += 1;
        let inner = &summary[inner];
        if !(is_plain(inner) || plain_list(inner)) {
            return None;
        }
        if &summary[key] == b"\"dtype\"" {
            // A repeated `dtype` is left to the decoder.
            if dtype.replace(inner).is_some() {
                return None;
            }
        }
        Some(())
    })?;
    // An object of one entry may decode as a value of its own (`{"dtype": ..}` is a dtype,
    // not a dict), so the summary is read by scanning only when it has more.
    if entries < 2 {
        return None;
    }
    match dtype {
        None => Some(None),
        Some([b'"', text @ .., b'"']) if !text.contains(&b'\\') => {
            std::str::from_utf8(text).ok().map(Some)
        }
        Some(_) => None,
    }
}

/// Whether `value` (a whole JSON value, checked when the dump was read) is a string without
/// escapes, a number, `true`, `false` or `null`.
fn is_plain(value: &[u8]) -> bool {
    match value.first() {
        Some(b'"') => !value.contains(&b'\\'),
        Some(b'[' | b'{') | None => false,
        Some(_) => true,
    }
}

/// Whether the list `value` (a whole JSON array) holds only [`is_plain`] items.
fn plain_list(value: &[u8]) -> bool {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let skip_space = |mut i: usize| {
        while value.get(i).is_some_and(space) {
            i += 1;
        }
        i
    };
    if value.first() != Some(&b'[') {
        return false;
    }
    let mut i = skip_space(1);
    if value.get(i) == Some(&b']') {
        return i + 1 == value.len();
    }
    loop {
        // The list's own `]` ends a number or literal that is its last item.
        let Scan::Done { end, depth: 0 } = scan_value(value, i) else {
            return false;
        };
        if !is_plain(&value[i..end]) {
            return false;
        }
        i = skip_space(end);
        match value.get(i) {
            Some(b',') => i = skip_space(i + 1),
            Some(b']') => return i + 1 == value.len(),
            _ => return false,
        }
    }
}

/// Walks the object at the start of `object` by scanning, handing `entry` each entry's key
/// (with its quotes) and value, in order; stops with `None` when `entry` does, or when the
/// text is not an object the scan can walk. The one walk [`kept_entries`] and [`entry_span`]
/// share.
fn walk_entries(
    object: &[u8],
    mut entry: impl FnMut(std::ops::Range<usize>, std::ops::Range<usize>) -> Option<()>,
) -> Option<()> {
    let skip_space = |mut i: usize| {
        while matches!(object.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    };
    if object.first() != Some(&b'{') {
        return None;
    }
    let mut i = skip_space(1);
    if object.get(i) == Some(&b'}') {
        return Some(());
    }
    loop {
        if object.get(i) != Some(&b'"') {
            return None;
        }
        let Scan::Done { end: key_end, .. } = scan_value(object, i) else {
            return None;
        };
        let key = i..key_end;
        i = skip_space(key_end);
        if object.get(i) != Some(&b':') {
            return None;
        }
        i = skip_space(i + 1);
        let Scan::Done { end: value_end, .. } = scan_value(object, i) else {
            return None;
        };
        entry(key, i..value_end)?;
        i = skip_space(value_end);
        match object.get(i) {
            Some(b',') => i = skip_space(i + 1),
            Some(b'}') => return Some(()),
            _ => return None,
        }
    }
}

/// The streamed reader declined the dump; it is read whole instead.
#[derive(Debug)]
pub(super) struct Declined;

impl<E: std::fmt::Display> From<E> for Declined {
    fn from(_: E) -> Declined {
        Declined
    }
}

/// Deeper than this, a value is left to the whole-text reader: serde_json counts its depth
/// limit (128) from the document, not from the node.
pub(super) const MAX_DEPTH: usize = 100;

/// Bytes read from the decompressor at a time (at least).
const CHUNK: usize = 256 << 10;

/// gzip data (one member or several, as `input::gunzip` reads them) as a byte stream.
struct Gunzip<'a> {
    decoder: Option<flate2::bufread::GzDecoder<&'a [u8]>>,
}

impl Read for Gunzip<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(decoder) = &mut self.decoder else {
                return Ok(0);
            };
            let n = decoder.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            let rest = self.decoder.take().expect("present").into_inner();
            if rest.is_empty() {
                return Ok(0);
            }
            if !rest.starts_with(&[0x1f, 0x8b]) {
                return Err(std::io::Error::other("bytes after the gzip data"));
            }
            self.decoder = Some(flate2::bufread::GzDecoder::new(rest));
        }
    }
}

/// Where a dump's text comes from.
pub(crate) enum Source<'a, R> {
    /// A reader (a decompressor, a file), read a piece at a time into the stream's buffer.
    Reader(R),
    /// Text already whole in memory (the browser's dropped file, a pipe read to its end):
    /// read where it lies, not copied into a buffer piece by piece (in the browser the
    /// copies, and zeroing the buffer before each, were a pass over the whole text).
    Whole(&'a [u8]),
    /// Whole text that the graph may keep: where the nodes are parsed where they lie (one
    /// thread, as in the browser), what they keep of their metadata is a position in it
    /// rather than a copy.
    Document(&'a crate::meta::DumpText),
}

impl<'a> Source<'a, std::io::Empty> {
    /// Text whole in memory (the reader type is unused).
    pub(crate) fn whole(text: &'a [u8]) -> Self {
        Source::Whole(text)
    }

    /// Whole text that the graph may keep ([`Source::Document`]; the reader type is unused).
    pub(crate) fn document(text: &'a crate::meta::DumpText) -> Self {
        Source::Document(text)
    }
}

/// The text, held from the value being read to what has been read: a window of the reader's
/// output, or the whole text.
struct Stream<'a, R> {
    /// `None` once the text is whole in `text`.
    reader: Option<R>,
    text: std::borrow::Cow<'a, [u8]>,
    /// Where reading is in `text`; what comes before is done with.
    pos: usize,
    /// Bytes read so far, and the input-size limit on them.
    total: u64,
    limit: u64,
}

impl<'a, R: Read> Stream<'a, R> {
    /// A stream over `source`; `None` when whole text is over the input-size `limit`.
    fn new(source: Source<'a, R>, limit: u64) -> Option<Stream<'a, R>> {
        let (reader, text) = match source {
            Source::Reader(reader) => (Some(reader), std::borrow::Cow::Owned(Vec::new())),
            Source::Whole(text) => (None, std::borrow::Cow::Borrowed(text)),
            Source::Document(text) => (None, std::borrow::Cow::Borrowed(text.as_slice())),
        };
        let total = text.len() as u64;
        (total <= limit).then_some(Stream {
            reader,
            text,
            pos: 0,
            total,
            limit,
        })
    }

    /// Reads at least `want` bytes more, unless the text ends first (then false).
    /// Positions into `text` taken before do not survive it.
    fn fill(&mut self, want: usize) -> Result<bool, Declined> {
        let Some(reader) = &mut self.reader else {
            return Ok(false);
        };
        let text = self.text.to_mut();
        text.drain(..self.pos);
        self.pos = 0;
        let start = text.len();
        let want = want.max(CHUNK);
        text.try_reserve(want)?;
        // Into the room as it is: a file writes there without the room being zeroed first
        // (zeroing it was a pass over every byte of a plain dump).
        if reader.by_ref().take(want as u64).read_to_end(text).is_err() {
            return Err(Declined);
        }
        let got = text.len() - start;
        self.total += got as u64;
        if self.total > self.limit {
            return Err(Declined);
        }
        Ok(got > 0)
    }

    /// The next byte that is not whitespace (it stays unread), or `None` at the end.
    fn peek(&mut self) -> Result<Option<u8>, Declined> {
        loop {
            match self.text[self.pos..]
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                Some(at) => {
                    self.pos += at;
                    return Ok(Some(self.text[self.pos]));
                }
                None => {
                    self.pos = self.text.len();
                    if !self.fill(0)? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Reads `byte`, after whitespace.
    fn expect(&mut self, byte: u8) -> Result<(), Declined> {
        if self.peek()? != Some(byte) {
            return Err(Declined);
        }
        self.pos += 1;
        Ok(())
    }

    /// The next value's span in `text`, whole (read on until it ends); `pos` stays at its
    /// start.
    fn value(&mut self) -> Result<(usize, usize), Declined> {
        self.peek()?.ok_or(Declined)?;
        loop {
            match scan_value(&self.text, self.pos) {
                Scan::Done { end, depth } if depth <= MAX_DEPTH => return Ok((self.pos, end)),
                Scan::More => {
                    // At least as much again as the value holds so far, so that a large
                    // value is scanned a bounded number of times.
                    if !self.fill(self.text.len() - self.pos)? {
                        return Err(Declined);
                    }
                }
                Scan::Done { .. } | Scan::Bad => return Err(Declined),
            }
        }
    }

    /// The next node's span, as [`Stream::value`] finds it, or by its line once `lines` has
    /// seen that the dump writes a node a line (as the exporter does).
    ///
    /// A JSON string cannot hold a raw line break, so a node alone on its line ends at the
    /// line's last `}` (before a `,`). That end is a guess until the node is parsed, and the
    /// parser checks it: it reads one value that must take the whole span, so a guess that
    /// cuts a node short or takes in two fails to parse and the dump is declined to the
    /// whole-text reader, as anything that does not parse is. The guess is only taken after
    /// the first [`Lines::TRIAL`] nodes' lines matched their scans, so a dump laid out another
    /// way is scanned (not declined), and only when the line has at most [`MAX_DEPTH`]
    /// brackets (so the value is not nested deeper).
    fn node_value(&mut self, lines: &mut Lines) -> Result<(usize, usize), Declined> {
        match *lines {
            Lines::Scanned => self.value(),
            Lines::Trial(seen) => {
                let scanned = self.value_with_line_end()?;
                let guess = self.line_guess_in_held();
                *lines = match guess == Some(scanned) {
                    true if seen + 1 == Lines::TRIAL => Lines::Taken,
                    true => Lines::Trial(seen + 1),
                    false => Lines::Scanned,
                };
                Ok(scanned)
            }
            Lines::Taken => {
                self.peek()?.ok_or(Declined)?;
                let guess = loop {
                    match memchr::memchr(b'\n', &self.text[self.pos..]) {
                        Some(at) => break line_value(&self.text[self.pos..self.pos + at]),
                        // A line longer than what is held: read on as `value` does (at least
                        // doubling what is held, so a long line is searched a bounded number
                        // of times).
                        None => {
                            if !self.fill(self.text.len() - self.pos)? {
                                break None;
                            }
                        }
                    }
                };
                match guess {
                    Some(len) => Ok((self.pos, self.pos + len)),
                    None => self.value(),
                }
            }
        }
    }

    /// [`Stream::value`], with a few bytes after the value held too: where its line ends,
    /// when it ends the line (a `,` and spaces may come first).
    fn value_with_line_end(&mut self) -> Result<(usize, usize), Declined> {
        const AFTER: usize = 64;
        let (start, end) = self.value()?;
        if self.text.len() - end >= AFTER {
            return Ok((start, end));
        }
        // `fill` may let go of the text before `pos` (the value's start): the span moves
        // with it.
        let before = self.pos;
        self.fill(AFTER)?;
        let moved = before - self.pos;
        Ok((start - moved, end - moved))
    }

    /// Where the node at `pos` ends if it ends its line, looking only at the text held: a
    /// dump written on one line is not read whole to find a line break that never comes (at
    /// 500k nodes that held the whole 171 MB text, and more, as it grew).
    fn line_guess_in_held(&self) -> Option<(usize, usize)> {
        let held = &self.text[self.pos..];
        let at = memchr::memchr(b'\n', held)?;
        line_value(&held[..at]).map(|len| (self.pos, self.pos + len))
    }

    /// The text of `span`, which must be UTF-8 (as the whole-text reader's fast path needs).
    fn str(&self, (start, end): (usize, usize)) -> Result<&str, Declined> {
        Ok(std::str::from_utf8(&self.text[start..end])?)
    }
}

/// How [`Stream::node_value`] finds where nodes end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lines {
    /// By scanning, and checking that each node's line ends it; the count that did.
    Trial(usize),
    /// By their lines.
    Taken,
    /// By scanning: a node's line did not end it.
    Scanned,
}

impl Lines {
    /// How many nodes' lines must end them before lines are taken.
    const TRIAL: usize = 8;
}

/// The length of the object that `line` (from a node's start to the next line break) holds
/// when it is the node's line: up to its last `}`, with a `,` and spaces after it. `None`
/// when the line does not end that way, or holds more than [`MAX_DEPTH`] brackets.
fn line_value(line: &[u8]) -> Option<usize> {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    let mut end = line.len() - line.iter().rev().take_while(|b| space(b)).count();
    if end > 0 && line[end - 1] == b',' {
        end -= 1;
        end -= line[..end].iter().rev().take_while(|b| space(b)).count();
    }
    if end == 0 || line[end - 1] != b'}' {
        return None;
    }
    // Brackets in strings count too: this bounds the depth from above.
    (brackets_up_to(&line[..end], MAX_DEPTH + 1) <= MAX_DEPTH).then_some(end)
}

/// How many `{` and `[` `bytes` holds, counting to `limit` or a little past it. A node's line
/// has a dozen or more brackets, and every byte of the dump is in a line: natively they are
/// counted 32 bytes at a time, in a loop the compiler vectorizes (finding them one `memchr2`
/// call at a time was 2-3% of the reading thread; a word at a time, 5% slower than that).
#[cfg(not(target_arch = "wasm32"))]
fn brackets_up_to(bytes: &[u8], limit: usize) -> usize {
    let is_bracket = |b: &u8| u8::from(*b == b'{' || *b == b'[');
    let mut chunks = bytes.chunks_exact(32);
    let mut count = 0;
    for chunk in &mut chunks {
        // At most 32: a byte holds the chunk's count.
        count += usize::from(chunk.iter().map(is_bracket).fold(0u8, u8::wrapping_add));
        if count >= limit {
            return count;
        }
    }
    count
        + chunks
            .remainder()
            .iter()
            .map(|b| usize::from(is_bracket(b)))
            .sum::<usize>()
}

/// [`brackets_up_to`] in wasm, which has no vectors here: a loop over every byte was slower
/// in the browser than `memchr2`, which skips a word at a time between brackets.
#[cfg(target_arch = "wasm32")]
fn brackets_up_to(bytes: &[u8], limit: usize) -> usize {
    memchr::memchr2_iter(b'{', b'[', bytes).take(limit).count()
}

/// Reads the gzip-compressed dump `bytes` as it decompresses, handing each node to `sink`.
pub(super) fn read(bytes: &[u8], sink: &mut dyn NodeSink) -> Result<Dump, Declined> {
    let gunzip = Gunzip {
        decoder: Some(flate2::bufread::GzDecoder::new(bytes)),
    };
    read_from(Source::Reader(gunzip), super::gzip_size_hint(bytes), sink)
}

/// Reads the dump's text from `source` (a piece at a time from a reader), handing each node
/// to `sink`; `text_len` is what the text's length is thought to be (for room, not trusted).
///
/// Natively the work is shared by two threads: one decompresses and finds each node's end,
/// this one checks the parsed nodes in order (names, targets, references) and hashes them
/// into the signature, and each parses as many of the nodes as keeps the other busy. At 500k
/// nodes, on one thread, finding the nodes took about 15% of a whole `plan` run, parsing them
/// 30% and checking them 25% (docs/performance.md).
pub(super) fn read_from(
    source: Source<'_, impl Read + Send>,
    text_len: usize,
    sink: &mut dyn NodeSink,
) -> Result<Dump, Declined> {
    #[cfg(not(target_arch = "wasm32"))]
    let read = read_in_two(source, text_len, sink, 1);
    #[cfg(target_arch = "wasm32")]
    let read = read_in_one(source, text_len, sink);
    // The reading thread's copies went with it.
    forget_kept_objects();
    read
}

/// [`read_from`] on this thread alone (the browser's).
#[cfg(any(test, target_arch = "wasm32"))]
fn read_in_one(
    source: Source<'_, impl Read>,
    text_len: usize,
    sink: &mut dyn NodeSink,
) -> Result<Dump, Declined> {
    let limit = crate::input::limits().max_input_bytes;
    let scratch = match &source {
        Source::Document(text) => DecodeScratch::in_text(Arc::clone(text)),
        _ => DecodeScratch::default(),
    };
    let mut take = Take::new(text_len, sink, scratch);
    let document = read_document(source, limit, &mut take)?;
    take.finish(document)
}

/// Parses the text of one node (a whole JSON value, nothing after it) into `slot`, which
/// holds a node with no field read yet, where it lies (see `by_hand::parse_node_into`):
/// whether the text parsed.
fn parse_node_in<'t>(text: &'t str, scratch: &DecodeScratch, slot: &mut Slot<RawNode<'t>>) -> bool {
    if let Slot::Got(node) = slot {
        if super::by_hand::parse_node_into(text, scratch, node) {
            return true;
        }
    }
    match parse_node_by_serde(text, scratch) {
        Some(raw) => {
            *slot = raw;
            true
        }
        None => false,
    }
}

/// [`parse_node`] by serde alone: what reads every node the hand parser leaves.
pub(super) fn parse_node_by_serde<'t>(
    text: &'t str,
    scratch: &DecodeScratch,
) -> Option<Slot<RawNode<'t>>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let raw = Tolerant(NodeWant {
        scratch,
        text: NodeText::Node(text.as_bytes()),
    })
    .deserialize(&mut deserializer)
    .ok()?;
    deserializer.end().ok()?;
    Some(raw)
}

/// Nodes handed from the reading thread to the checking one at a time.
#[cfg(not(target_arch = "wasm32"))]
const BATCH: usize = 256;

/// How many nodes ahead of the one being checked the name table is readied for (see
/// `ParsedNodes::prefetch`): about as many as take the time of a cache miss to check.
#[cfg(not(target_arch = "wasm32"))]
const PREFETCH_AHEAD: usize = 8;

/// Batches not yet checked, at most: what bounds the memory between the threads.
#[cfg(not(target_arch = "wasm32"))]
const IN_FLIGHT: usize = 8;

/// Nodes on their way to the checking thread: parsed, or their text for it to parse.
#[cfg(not(target_arch = "wasm32"))]
enum Batch {
    Parsed(ParsedBatch),
    Texts { text: String, ends: Vec<usize> },
}

/// Nodes parsed on the reading thread, with the text their strings borrow: handed over
/// together, the strings are not copied to be sent (the copies, and freeing them on the
/// other thread, were 7% of a `plan` run at 500k nodes). Their signature records are written
/// here too, which leaves the checking thread (the busier) only to hash them.
#[cfg(not(target_arch = "wasm32"))]
struct ParsedBatch {
    /// Borrowing `text` (their lifetime is not `'static`; see [`ParsedBatch::parse`]).
    /// Declared first, so dropped first.
    nodes: Vec<Slot<RawNode<'static>>>,
    /// The nodes' signature records, `", "` between them; `None` when one could not be
    /// written before the node is checked (`RawNode::write_record`).
    records: Option<String>,
    text: String,
}

#[cfg(not(target_arch = "wasm32"))]
impl ParsedBatch {
    /// Parses the nodes of `text`, each ending at its entry of `ends`; `None` when one does
    /// not parse.
    fn parse(text: String, ends: &[usize], scratch: &DecodeScratch) -> Option<ParsedBatch> {
        let mut nodes: Vec<Slot<RawNode<'_>>> = Vec::with_capacity(ends.len());
        let mut records = Some(String::with_capacity(text.len() / 2));
        let mut start = 0;
        for &end in ends {
            // Parsed where it will lie, not moved there.
            nodes.push(Slot::Got(RawNode::missing()));
            let raw = nodes.last_mut()?;
            if !parse_node_in(&text[start..end], scratch, raw) {
                return None;
            }
            if let Some(out) = &mut records {
                if !out.is_empty() {
                    out.push_str(", ");
                }
                let written = matches!(&*raw, Slot::Got(node) if node.write_record(out));
                if !written {
                    records = None;
                }
            }
            start = end;
        }
        // SAFETY: the nodes borrow the bytes `text` holds on the heap. They do not move when
        // `text` does, and are neither changed nor freed while the nodes live: `text` is not
        // touched again, it is dropped after `nodes`, and `take_all` hands each node to
        // `Take::take`, which accepts any lifetime, so it keeps nothing borrowed. (Only a
        // lifetime changes: the two vectors are the same type to the machine.)
        let nodes = unsafe {
            std::mem::transmute::<Vec<Slot<RawNode<'_>>>, Vec<Slot<RawNode<'static>>>>(nodes)
        };
        Some(ParsedBatch {
            nodes,
            records,
            text,
        })
    }

    /// Hands each node to `take`, in order, until one breaks a rule, and then the records;
    /// whether all were taken.
    fn take_all(self, take: &mut Take<'_>) -> bool {
        let ParsedBatch {
            mut nodes,
            records,
            text,
        } = self;
        let count = nodes.len();
        let hashed = records.is_some();
        let mut taken = true;
        for k in 0..count {
            if let Some(ahead) = nodes.get(k + PREFETCH_AHEAD) {
                take.parsed.prefetch(ahead);
            }
            if !take.take(&mut nodes[k], hashed) {
                taken = false;
                break;
            }
        }
        if let (true, Some(records)) = (taken, &records) {
            take.parsed.signature.add_written(records, count);
        }
        // What is left of the nodes borrows `text`.
        drop(nodes);
        drop(text);
        taken
    }
}

/// [`read_from`] on two threads. The checking thread is given nodes to parse while fewer
/// than `give_text_below` batches wait for it.
#[cfg(not(target_arch = "wasm32"))]
fn read_in_two(
    source: Source<'_, impl Read + Send>,
    text_len: usize,
    sink: &mut dyn NodeSink,
    give_text_below: usize,
) -> Result<Dump, Declined> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let waiting = AtomicUsize::new(0);
    let limit = crate::input::limits().max_input_bytes;
    std::thread::scope(|scope| {
        // Made in the scope: should this thread panic, the receiver is dropped as it unwinds,
        // and a reading thread waiting to send stops instead of being waited for forever.
        let (send, receive) = std::sync::mpsc::sync_channel(IN_FLIGHT);
        let reading = std::thread::Builder::new()
            .name("commlens-read".into())
            .spawn_scoped(scope, || {
                let mut forward = Forward {
                    send,
                    waiting: &waiting,
                    give_text_below,
                    scratch: DecodeScratch::default(),
                    text: String::with_capacity(BATCH_TEXT),
                    ends: Vec::with_capacity(BATCH),
                };
                let document = read_document(source, limit, &mut forward)?;
                match forward.flush() {
                    true => Ok(document),
                    false => Err(Declined),
                }
            })?;
        let mut take = Take::new(text_len, sink, DecodeScratch::default());
        let mut taken = true;
        for batch in &receive {
            waiting.fetch_sub(1, Ordering::Relaxed);
            taken = match batch {
                Batch::Parsed(batch) => batch.take_all(&mut take),
                Batch::Texts { text, ends } => {
                    let mut start = 0;
                    ends.into_iter().all(|end| {
                        let node = &text[start..end];
                        start = end;
                        take.node(node)
                    })
                }
            };
            if !taken {
                break;
            }
        }
        // A reader still sending stops at its next batch.
        drop(receive);
        let document = reading.join().map_err(|_| Declined)??;
        if !taken {
            return Err(Declined);
        }
        take.finish(document)
    })
}

/// Where [`read_document`] hands the text of each node; false stops the reading.
trait Parsed {
    fn node(&mut self, text: &str) -> bool;
}

/// Parses the nodes, checks them in order and keeps them.
struct Take<'s> {
    parsed: ParsedNodes,
    targets: Targets,
    scratch: DecodeScratch,
    sink: &'s mut dyn NodeSink,
    next: usize,
}

impl<'s> Take<'s> {
    fn new(text_len: usize, sink: &'s mut dyn NodeSink, scratch: DecodeScratch) -> Take<'s> {
        sink.begin();
        sink.expect_nodes(super::expected_nodes(text_len));
        Take {
            parsed: ParsedNodes::new(text_len),
            targets: Targets::default(),
            scratch,
            sink,
            next: 0,
        }
    }

    /// Checks the next node, parsed (its signature record already added when `hashed`);
    /// false when it broke a rule.
    fn take(&mut self, raw: &mut Slot<RawNode<'_>>, hashed: bool) -> bool {
        let taken = self
            .parsed
            .take(self.next, raw, &mut self.targets, self.sink, hashed);
        self.next += 1;
        taken
    }

    /// The dump, from its top-level entries and the nodes taken.
    fn finish(self, document: Document) -> Result<Dump, Declined> {
        if !document.has_nodes {
            return Err(Declined);
        }
        let nodes = NodesInput::Parsed(Box::new(self.parsed));
        Ok(read_top(document.top, Some(nodes))?)
    }
}

impl Parsed for Take<'_> {
    fn node(&mut self, text: &str) -> bool {
        let mut raw = Slot::Got(RawNode::missing());
        parse_node_in(text, &self.scratch, &mut raw) && self.take(&mut raw, false)
    }
}

/// Sends the nodes, a batch at a time, to the thread that checks them: their text while it
/// waits for work, else parsed here.
#[cfg(not(target_arch = "wasm32"))]
struct Forward<'w> {
    send: std::sync::mpsc::SyncSender<Batch>,
    /// Batches sent and not yet received.
    waiting: &'w std::sync::atomic::AtomicUsize,
    give_text_below: usize,
    scratch: DecodeScratch,
    /// The texts of the nodes gathered, each ending at its entry of `ends`.
    text: String,
    ends: Vec<usize>,
}

/// Room for a batch's text (real nodes take 300-1,500 bytes).
#[cfg(not(target_arch = "wasm32"))]
const BATCH_TEXT: usize = BATCH * 512;

#[cfg(not(target_arch = "wasm32"))]
impl Forward<'_> {
    /// Sends what is gathered; false when the checking thread has stopped, or a node does
    /// not parse.
    fn flush(&mut self) -> bool {
        use std::sync::atomic::Ordering;
        let text = std::mem::replace(&mut self.text, String::with_capacity(BATCH_TEXT));
        let ends = std::mem::replace(&mut self.ends, Vec::with_capacity(BATCH));
        // While the checking thread has no batch to go on with but this one, it is given
        // text: it is then idle, or soon will be.
        let batch = match self.waiting.load(Ordering::Relaxed) < self.give_text_below {
            true => Batch::Texts { text, ends },
            false => match ParsedBatch::parse(text, &ends, &self.scratch) {
                Some(parsed) => Batch::Parsed(parsed),
                None => return false,
            },
        };
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.send.send(batch).is_ok()
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Parsed for Forward<'_> {
    fn node(&mut self, text: &str) -> bool {
        self.text.push_str(text);
        self.ends.push(self.text.len());
        self.ends.len() < BATCH || self.flush()
    }
}

/// The document's top-level entries other than `nodes`, and whether it had `nodes`.
struct Document {
    top: serde_json::Map<String, J>,
    has_nodes: bool,
}

/// Reads the document from `reader`, handing each node to `nodes` as it is parsed.
/// `limit` is the input-size limit on the decompressed text (taken on the caller's thread:
/// limits are per thread).
fn read_document(
    source: Source<'_, impl Read>,
    limit: u64,
    nodes: &mut impl Parsed,
) -> Result<Document, Declined> {
    let mut stream = Stream::new(source, limit).ok_or(Declined)?;
    let mut top = serde_json::Map::new();
    let mut has_nodes = false;
    stream.expect(b'{')?;
    if stream.peek()? == Some(b'}') {
        stream.pos += 1;
    } else {
        loop {
            let span = stream.value()?;
            let key: String = serde_json::from_str(stream.str(span)?)?;
            stream.pos = span.1;
            stream.expect(b':')?;
            if key == "nodes" {
                if has_nodes {
                    return Err(Declined);
                }
                read_nodes(&mut stream, nodes)?;
                has_nodes = true;
            } else {
                let span = stream.value()?;
                let text = stream.str(span)?;
                match key.as_str() {
                    "format" | "version" | "group_ranks" | "modules" | "state_fqns" | "source"
                    | "planner" | "script_objects" => {
                        let value: J = serde_json::from_str(text)?;
                        top.insert(key, value);
                    }
                    _ => {
                        serde_json::from_str::<Skip>(text)?;
                    }
                }
                stream.pos = span.1;
            }
            match stream.peek()? {
                Some(b',') => stream.pos += 1,
                Some(b'}') => {
                    stream.pos += 1;
                    break;
                }
                _ => return Err(Declined),
            }
        }
    }
    if stream.peek()?.is_some() {
        return Err(Declined);
    }
    Ok(Document { top, has_nodes })
}

/// The `nodes` array, a node at a time.
fn read_nodes<R: Read>(
    stream: &mut Stream<'_, R>,
    nodes: &mut impl Parsed,
) -> Result<(), Declined> {
    stream.expect(b'[')?;
    if stream.peek()? == Some(b']') {
        stream.pos += 1;
        return Ok(());
    }
    let mut lines = Lines::Trial(0);
    loop {
        let span = stream.node_value(&mut lines)?;
        if !nodes.node(stream.str(span)?) {
            return Err(Declined);
        }
        stream.pos = span.1;
        match stream.peek()? {
            Some(b',') => stream.pos += 1,
            Some(b']') => {
                stream.pos += 1;
                return Ok(());
            }
            _ => return Err(Declined),
        }
    }
}

/// The graph signature's records of the dump `bytes` (plain JSON or gzip), `[` and `]`
/// around them, as a read of the same bytes hashes them, found without checking or keeping
/// the nodes (`signature::records_of_dump`). `None` when this reader declines the document
/// (the whole-text reader then reads it, or says what is wrong), when the text is over the
/// input-size limit, or when a node's record needs its node checked (it has no `repr`).
pub(crate) fn signature_records(bytes: &[u8]) -> Option<String> {
    /// Each node parsed and its record written, then let go.
    struct Records {
        scratch: DecodeScratch,
        out: String,
        count: usize,
    }
    impl Parsed for Records {
        fn node(&mut self, text: &str) -> bool {
            let mut raw = Slot::Got(RawNode::missing());
            if !parse_node_in(text, &self.scratch, &mut raw) {
                return false;
            }
            if self.count > 0 {
                self.out.push_str(", ");
            }
            self.count += 1;
            matches!(&raw, Slot::Got(node) if node.write_record(&mut self.out))
        }
    }
    let limit = crate::input::limits().max_input_bytes;
    let gzip = bytes.starts_with(&[0x1f, 0x8b]);
    let text_len = match gzip {
        true => super::gzip_size_hint(bytes),
        false => bytes.len(),
    };
    let mut records = Records {
        scratch: DecodeScratch::default(),
        // Records are about half a node's text (a fifth to a half in the dumps measured).
        out: String::with_capacity(text_len.min(limit as usize) / 2),
        count: 0,
    };
    records.out.push('[');
    let document = if gzip {
        let gunzip = Gunzip {
            decoder: Some(flate2::bufread::GzDecoder::new(bytes)),
        };
        read_document(Source::Reader(gunzip), limit, &mut records)
    } else {
        read_document(Source::whole(bytes), limit, &mut records)
    };
    forget_kept_objects();
    if !document.ok()?.has_nodes {
        return None;
    }
    records.out.push(']');
    Some(records.out)
}

/// The text of each node of the dump `bytes` (plain JSON) as this reader finds it; `None`
/// when it declines the document.
#[cfg(test)]
pub(super) fn node_texts(bytes: &[u8]) -> Option<Vec<String>> {
    struct Texts(Vec<String>);
    impl Parsed for Texts {
        fn node(&mut self, text: &str) -> bool {
            self.0.push(text.to_owned());
            true
        }
    }
    let mut texts = Texts(Vec::new());
    read_document(Source::whole(bytes), u64::MAX, &mut texts).ok()?;
    Some(texts.0)
}

#[cfg(test)]
mod tests {
    use super::{read, read_in_one, scan_value, Scan, Source};
    use std::io::Write;

    /// Read from a `Source::Document` (as the browser reads a dropped file), the nodes keep
    /// their undecoded metadata as positions in the text, and the dump is the one read from
    /// the same text otherwise, metadata and all; a dump with a stack trace in every node.
    #[test]
    fn a_kept_document_is_read_the_same_with_positions_in_it() {
        let synthetic = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(2_000));
        let traced = crate::synth::lean_dump_with_stack_traces(&synthetic).expect("lean");
        for (name, text) in [("synthetic", synthetic), ("stack traces", traced)] {
            let document: crate::meta::DumpText = std::sync::Arc::new(text.into_bytes());
            let copied = read_in_one(Source::whole(&document), document.len(), &mut ());
            let kept = read_in_one(Source::document(&document), document.len(), &mut ());
            let (Ok(copied), Ok(kept)) = (copied, kept) else {
                panic!("{name}: declined");
            };
            assert_eq!(format!("{copied:?}"), format!("{kept:?}"), "{name}");
            let range = document.as_ptr_range();
            let in_document = |d: &crate::Dump| {
                d.nodes
                    .iter()
                    .filter_map(|n| n.meta.as_read().1)
                    .filter(|t| range.contains(&t.as_ptr()))
                    .count()
            };
            assert!(in_document(&kept) > 1_000, "{name}: kept as positions");
            assert_eq!(in_document(&copied), 0, "{name}: kept as copies");
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).expect("gzip");
        encoder.finish().expect("gzip")
    }

    /// The examples are read by this reader (not declined to the whole-text one), into what
    /// the whole-text reader reads; `tests/streamed.rs` compares the two on every
    /// conformance dump and every bad one.
    #[test]
    fn good_dumps_are_read_streamed_as_the_whole_text_reads_them() {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let llama = std::fs::read(examples.join("llama_fsdp.json.gz")).expect("example");
        let mlp = gzip(&std::fs::read(examples.join("mlp_fsdp.json")).expect("example"));
        // Two members, as `gzip a; gzip b; cat` makes.
        let text = crate::dump::gunzip(&mlp).expect("gunzip");
        let (a, b) = text.split_at(text.len() / 2);
        let members = [gzip(a), gzip(b)].concat();
        for bytes in [llama, mlp, members] {
            let streamed = read(&bytes, &mut ()).expect("read streamed");
            let whole =
                crate::dump::read_text_into(crate::dump::gunzip(&bytes).expect("gunzip"), &mut ())
                    .expect("read whole");
            assert!(!streamed.nodes.is_empty());
            assert_eq!(format!("{streamed:?}"), format!("{whole:?}"));
            assert_eq!(streamed.signature, whole.signature);
        }
    }

    /// Hands out nodes as a dump's text holds them, and says which it was given.
    #[cfg(not(target_arch = "wasm32"))]
    struct Order(Vec<String>);

    #[cfg(not(target_arch = "wasm32"))]
    impl crate::dump::NodeSink for Order {
        fn begin(&mut self) {
            self.0.clear();
        }

        fn node(&mut self, index: usize, node: &crate::dump::Node) {
            assert_eq!(index, self.0.len(), "nodes are handed out in order");
            self.0.push(node.name.to_string());
        }
    }

    /// Every way the two threads can share the work (the reading thread parsing every node,
    /// the checking one parsing every node, and what `read_from` does) reads what one thread
    /// and the whole-text reader read, node for node, on a dump long enough for many batches.
    // Two threads: not in wasm (the reader runs on one there).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn two_threads_read_what_one_reads() {
        let spec = crate::synth::SynthSpec::with_nodes(12 * super::BATCH * super::IN_FLIGHT);
        let text = crate::synth::synthetic_dump(spec);
        // Some nodes without a `repr`: the checking thread writes the signature records of
        // their batches.
        let mut stripped = 0;
        let without_repr: String = text
            .lines()
            .enumerate()
            .map(|(i, line)| match (i % 997, line.find(", \"repr\": {")) {
                (0, Some(at)) => {
                    stripped += 1;
                    let end = line.rfind('}').expect("a node's line");
                    format!("{}{}\n", &line[..at], &line[end..])
                }
                _ => format!("{line}\n"),
            })
            .collect();
        assert!(stripped > 10);
        for (text, whole_text) in [
            (text.clone().into_bytes(), false),
            (without_repr.into_bytes(), false),
            (text.into_bytes(), true),
        ] {
            // Read from a reader a piece at a time, or where the text lies.
            let source = || match whole_text {
                true => Source::Whole(&text[..]),
                false => Source::Reader(&text[..]),
            };
            let mut one_order = Order(Vec::new());
            let one = super::read_in_one(source(), text.len(), &mut one_order).expect("one");
            let whole = crate::dump::read_text_into(text.clone(), &mut ()).expect("whole");
            assert!(one.nodes.len() > 10 * super::BATCH * super::IN_FLIGHT);
            let one_text = format!("{one:?}");
            assert_eq!(one_text, format!("{whole:?}"));
            assert!(one.signature.is_some());
            for give_text_below in [0, 1, usize::MAX] {
                let mut order = Order(Vec::new());
                let two = super::read_in_two(source(), text.len(), &mut order, give_text_below)
                    .expect("two");
                assert_eq!(
                    format!("{two:?}"),
                    one_text,
                    "give_text_below {give_text_below}"
                );
                assert_eq!(two.signature, one.signature);
                assert_eq!(order.0, one_order.0);
            }
        }
    }

    /// The input-size limit is the caller's (limits are per thread): decompressed text over
    /// it is declined by the thread that reads, so the whole-text reader reports it.
    #[test]
    fn the_reading_thread_holds_the_callers_limit() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(20_000));
        let bytes = gzip(text.as_bytes());
        crate::input::set_limits(crate::input::Limits {
            max_input_bytes: text.len() as u64 / 2,
        });
        let streamed = read(&bytes, &mut ());
        crate::input::set_limits(crate::input::Limits::default());
        assert!(streamed.is_err(), "over the limit set on this thread");
        assert!(read(&bytes, &mut ()).is_ok());
    }

    /// A sink that panics part-way (a bug) ends the reading with that panic, while the
    /// reading thread still has batches to send: it is not left waiting, nor waited for.
    // Two threads: not in wasm (the reader runs on one there).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn a_panic_on_the_checking_thread_does_not_leave_the_reader_waiting() {
        struct Panics;
        impl crate::dump::NodeSink for Panics {
            fn begin(&mut self) {}
            fn node(&mut self, index: usize, _: &crate::dump::Node) {
                assert!(index < 300, "a bug in a sink");
            }
        }
        let spec = crate::synth::SynthSpec::with_nodes(40 * super::BATCH * super::IN_FLIGHT);
        let text = crate::synth::synthetic_dump(spec).into_bytes();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                super::read_in_two(Source::Reader(&text[..]), text.len(), &mut Panics, 1).is_ok()
            }));
            let _ = done.send(outcome.is_err());
        });
        let panicked = finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the read ends");
        assert!(panicked, "the sink's panic reaches the caller");
    }

    /// A dump that goes wrong late (a repeated name, bad JSON in a node, text cut short) is
    /// declined on two threads, whichever thread parses the node, and the reading stops.
    // Two threads: not in wasm (the reader runs on one there).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn two_threads_decline_what_one_declines() {
        let spec = crate::synth::SynthSpec::with_nodes(6 * super::BATCH * super::IN_FLIGHT);
        let text = crate::synth::synthetic_dump(spec);
        let late = text.len() * 4 / 5;
        let at = late + text[late..].find("{\"name\": \"").expect("a late node");
        // `{"name": "…"` of a node that starts at `start`.
        let name_at = |start: usize| {
            let end = start + 10 + text[start + 10..].find('"').expect("a name");
            &text[start..=end]
        };
        let first = name_at(text.find("{\"name\": \"").expect("a node"));
        let repeated = format!(
            "{}{}{}",
            &text[..at],
            first,
            &text[at + name_at(at).len()..]
        );
        let bad_json = format!("{}{{\"name\" \"x\", {}", &text[..at], &text[at + 1..]);
        let cut = text[..late].to_string();
        for (what, bad, says) in [
            ("repeated name", repeated, "already used"),
            ("bad JSON", bad_json, "expected `:`"),
            ("cut", cut, "EOF"),
        ] {
            let whole = crate::dump::read_text_into(bad.clone().into_bytes(), &mut ());
            let message = whole.expect_err(what).to_string();
            assert!(message.contains(says), "{what}: {message}");
            for source in [
                Source::Reader(bad.as_bytes()),
                Source::Whole(bad.as_bytes()),
            ] {
                assert!(
                    super::read_in_one(source, bad.len(), &mut ()).is_err(),
                    "{what}"
                );
            }
            for give_text_below in [0, 1, usize::MAX] {
                for source in [
                    Source::Reader(bad.as_bytes()),
                    Source::Whole(bad.as_bytes()),
                ] {
                    let two = super::read_in_two(source, bad.len(), &mut (), give_text_below);
                    assert!(two.is_err(), "{what}, give_text_below {give_text_below}");
                }
            }
        }
    }

    #[test]
    fn entries_are_found_by_scanning_or_left_to_the_parser() {
        fn span<'o>(object: &'o str, key: &str) -> Option<Option<&'o str>> {
            super::entry_span(object.as_bytes(), key)
                .map(|found| found.map(|(start, end)| &object[start..end]))
        }
        let object = r#"{ "a" : 1 , "s": "\"a\": 2", "a": [{"a": 3}], "b": {} }"#;
        assert_eq!(
            span(object, "a"),
            Some(Some(r#"[{"a": 3}]"#)),
            "the last of a repeated key"
        );
        assert_eq!(span(object, "b"), Some(Some("{}")));
        assert_eq!(span(object, "s"), Some(Some(r#""\"a\": 2""#)));
        assert_eq!(span(object, "c"), Some(None));
        assert_eq!(span("{}", "a"), Some(None));
        assert_eq!(
            span(r#"{"a": 1, "\u0061": 2}"#, "a"),
            None,
            "a key with escapes"
        );
        assert_eq!(span("[1]", "a"), None);
        assert_eq!(span(r#"{"a": 1"#, "a"), None, "cut short");
    }

    /// The end a byte-by-byte reading of strings, escapes and brackets finds.
    fn scanned_byte_by_byte(text: &[u8], start: usize) -> Scan {
        let (mut depth, mut deepest) = (0, 0);
        let (mut in_string, mut escaped) = (false, false);
        for (i, &b) in text.iter().enumerate().skip(start) {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Scan::Done {
                            end: i + 1,
                            depth: deepest,
                        };
                    }
                }
                _ => {}
            }
        }
        Scan::More
    }

    /// A random nested value: strings full of brackets, quotes and runs of backslashes, long
    /// and short, so that every kind of byte falls on every side of a 64-byte block's edge.
    fn random_nested(rng: &mut crate::dump::tests::Rng, out: &mut String, depth: usize) {
        let object = rng.below(2) == 0;
        out.push(if object { '{' } else { '[' });
        for item in 0..rng.below(5) {
            if item > 0 {
                out.push_str([",", ", ", ",\n  "][rng.below(3)]);
            }
            if object {
                random_string(rng, out);
                out.push_str(": ");
            }
            match rng.below(4) {
                0 if depth < 6 => random_nested(rng, out, depth + 1),
                1 => out.push_str(["12.5e3", "null", "true", "-7", "Y_y\u{7f}"][rng.below(5)]),
                _ => random_string(rng, out),
            }
        }
        out.push(if object { '}' } else { ']' });
    }

    fn random_string(rng: &mut crate::dump::tests::Rng, out: &mut String) {
        const PIECES: &[&str] = &[
            "a",
            "layers.0.attn",
            "{",
            "}",
            "[",
            "]",
            "\\\"",
            "\\\\",
            "\\\\\\\"",
            "\\n",
            "|",
            ";",
            "{[}]",
        ];
        out.push('"');
        let long = if rng.below(8) == 0 { 40 } else { 4 };
        for _ in 0..rng.below(long) {
            out.push_str(PIECES[rng.below(PIECES.len())]);
        }
        out.push('"');
    }

    /// The 64-byte block scan ends every value where a byte-by-byte reading does, at every
    /// offset from a block's start, and asks for more for every cut-short value.
    #[test]
    fn nested_values_end_where_a_byte_by_byte_reading_says() {
        let mut rng = crate::dump::tests::Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..600 {
            let mut value = String::new();
            random_nested(&mut rng, &mut value, 0);
            let pad = " ".repeat(rng.below(64));
            let text = format!("{pad}{value}, {{\"after\": [1]}}");
            let start = pad.len();
            let found = scan_value(text.as_bytes(), start);
            assert_eq!(
                found,
                scanned_byte_by_byte(text.as_bytes(), start),
                "{text}"
            );
            assert!(
                matches!(found, Scan::Done { end, .. } if end == start + value.len()),
                "{text}"
            );
            let cuts = [1, 2, value.len() / 2, value.len() - 1];
            for cut in cuts.into_iter().filter(|&cut| cut < value.len()) {
                let short = &text.as_bytes()[..start + cut];
                assert_eq!(
                    scan_value(short, start),
                    Scan::More,
                    "{}",
                    String::from_utf8_lossy(short)
                );
            }
        }
    }

    /// A block's marks, found 16 bytes at a time with SSE2 or wasm's vectors and 8 at a time
    /// in integers, are the bytes that are quotes, backslashes and brackets, whatever bytes
    /// are around them. (`cargo xtask test` runs this in wasm too: its wasm-unit step.)
    #[test]
    fn block_marks_are_the_bytes_that_are_quotes_backslashes_and_brackets() {
        use super::Marks;
        let mut rng = crate::dump::tests::Rng(0x9e37_79b9_7f4a_7c15);
        let alphabet = *b"\"\\{}[]Y_y\x7f|;=:,a \x80\xff\x00\x5b\x7b\x3b\x1b";
        for round in 0..2000 {
            let mut block = [0u8; 64];
            for b in &mut block {
                *b = if round % 2 == 0 {
                    alphabet[rng.below(alphabet.len())]
                } else {
                    rng.next() as u8
                };
            }
            let bits = |is: fn(u8) -> bool| {
                (0..64)
                    .filter(|&i| is(block[i]))
                    .fold(0u64, |m, i| m | 1 << i)
            };
            let expected = Marks {
                quote: bits(|b| b == b'"'),
                backslash: bits(|b| b == b'\\'),
                open: bits(|b| b == b'{' || b == b'['),
                close: bits(|b| b == b'}' || b == b']'),
            };
            assert_eq!(Marks::of(&block), expected, "{block:?}");
            assert_eq!(Marks::of_words(&block), expected, "{block:?}");
        }
    }

    #[test]
    fn values_end_where_their_brackets_and_strings_say() {
        let done = |text: &str, end: usize, depth: usize| {
            assert_eq!(
                scan_value(text.as_bytes(), 0),
                Scan::Done { end, depth },
                "{text}"
            )
        };
        done(r#"{"a": [1, {"b": "]}"}]} , 3"#, 23, 3);
        done(r#""a \" b\\" x"#, 10, 0);
        done("12.5e3, 4", 6, 0);
        done("null]", 4, 0);
        done("[[]]", 4, 2);
        for more in [r#"{"a": 1"#, r#""abc\""#, "123", "[[]", r#"{"a\"#] {
            assert_eq!(scan_value(more.as_bytes(), 0), Scan::More, "{more}");
        }
        // Bytes that share the brackets' bits are not brackets.
        done("[Y, _, y, \u{7f}, [\"]\"]]", 19, 2);
        for bad in ["]", "}", ",1", ":"] {
            assert_eq!(scan_value(bad.as_bytes(), 0), Scan::Bad, "{bad}");
        }
    }

    #[test]
    fn a_node_line_ends_at_its_last_brace_before_a_comma() {
        use super::line_value;
        assert_eq!(line_value(br#"{"a": [1, "}"]},"#), Some(15));
        assert_eq!(line_value(b"{\"a\": 1} , \r"), Some(8));
        assert_eq!(line_value(b"{}"), Some(2));
        // Not a node's line: the array's end follows, or the node goes on.
        for other in [&b"{}]"[..], b"{\"a\": [", b"", b" , ", b"}"] {
            assert_eq!(line_value(other), (other == b"}").then_some(1), "{other:?}");
        }
        // More brackets than `MAX_DEPTH` (strings' too): left to the scan, which knows the depth.
        let deep = format!(
            "{}1{}",
            "[".repeat(super::MAX_DEPTH),
            "]".repeat(super::MAX_DEPTH)
        );
        assert_eq!(line_value(format!("{{\"a\": {deep}}}").as_bytes()), None);
        let shallow = format!("{{\"a\": \"{}\"}}", "{".repeat(super::MAX_DEPTH - 1));
        assert_eq!(line_value(shallow.as_bytes()), Some(shallow.len()));
    }

    /// Brackets counted a word at a time are the bytes that are `{` or `[`, whatever is
    /// around them, at every place in lines of every length up to a few words.
    #[test]
    fn brackets_are_counted_exactly() {
        use super::brackets_up_to;
        let naive = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'{' || b == b'[').count();
        for len in 0..40 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    for fill in [b'{', b'a', 0, 0x80, b'['] {
                        let mut bytes = vec![fill; len];
                        bytes[at] = byte;
                        assert_eq!(brackets_up_to(&bytes, usize::MAX), naive(&bytes));
                    }
                }
            }
        }
        // Past the limit, at least the limit.
        assert!(brackets_up_to(&[b'['; 1000], 101) >= 101);
    }

    /// Text whole in memory is held to the input-size limit before it is read; from a reader,
    /// as it is read.
    #[test]
    fn whole_text_over_the_limit_is_declined() {
        let text = b"{\"nodes\": []}";
        let limit = text.len() as u64;
        assert!(super::Stream::new(Source::whole(text), limit).is_some());
        assert!(super::Stream::new(Source::whole(text), limit - 1).is_none());
        struct Accept;
        impl super::Parsed for Accept {
            fn node(&mut self, _: &str) -> bool {
                true
            }
        }
        for source in [Source::Reader(&text[..]), Source::Whole(&text[..])] {
            let over = super::read_document(source, limit - 1, &mut Accept);
            assert!(over.is_err());
        }
        let within = super::read_document(Source::whole(&text[..]), limit, &mut Accept);
        assert!(within.is_ok_and(|document| document.has_nodes));
    }

    /// A node a line (the exporter's layout) is read by its lines once the first nodes' lines
    /// matched their scans; nodes laid out otherwise from the start are scanned; a line that
    /// does not hold exactly one node after that declines the dump, and the whole-text reader
    /// reads it.
    #[test]
    fn nodes_are_found_by_their_lines_and_a_wrong_line_is_declined() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(3_000));
        let whole = |text: &str| {
            let read = crate::dump::read_text_into(text.as_bytes().to_vec(), &mut ());
            format!("{:?}", read.expect("read whole"))
        };
        let streamed =
            |text: &str| read(&gzip(text.as_bytes()), &mut ()).map(|dump| format!("{dump:?}"));
        let lines_taken = |text: &str| {
            let at = text.find("\"nodes\": [").expect("nodes") + "\"nodes\": [".len();
            let mut stream = super::Stream::new(Source::Reader(&text.as_bytes()[at..]), u64::MAX)
                .expect("within the limit");
            let mut lines = super::Lines::Trial(0);
            for _ in 0..3 * super::Lines::TRIAL {
                let span = stream.node_value(&mut lines).expect("a node");
                stream.pos = span.1;
                stream.expect(b',').expect("a comma");
            }
            lines
        };
        assert_eq!(lines_taken(&text), super::Lines::Taken);
        assert_eq!(streamed(&text).expect("read by lines"), whole(&text));

        // Each node over two lines: scanned, and read as before.
        let two_lines = text.replace("\"meta\": {", "\"meta\":\n{");
        assert_eq!(lines_taken(&two_lines), super::Lines::Scanned);
        assert_eq!(
            streamed(&two_lines).expect("read by scans"),
            whole(&two_lines)
        );

        // Later, two nodes on one line, or one node over two: declined, read whole.
        let lines: Vec<&str> = text.split('\n').collect();
        let node = lines
            .iter()
            .rposition(|l| l.starts_with("{\"name\""))
            .expect("a node")
            - 5;
        let mut joined = lines.clone();
        let both = format!("{} {}", joined[node], joined[node + 1]);
        joined.splice(node..node + 2, [both.as_str()]);
        let joined = joined.join("\n");
        // Split where the first line ends like a node (in `}` and `,`), and where it does not.
        let split_at = |after: &str| {
            let node_split = lines[node].replacen(after, &format!("{after}\n"), 1);
            assert_ne!(node_split, lines[node]);
            lines.join("\n").replacen(lines[node], &node_split, 1)
        };
        let (split, unlike) = (split_at("\"kwargs\": {},"), split_at("\"op\": "));
        assert_eq!(streamed(&unlike).expect("read by its scan"), whole(&unlike));
        for odd in [joined, split] {
            assert_eq!(lines_taken(&odd), super::Lines::Taken);
            assert!(streamed(&odd).is_err());
            let via_input = crate::dump::read_dump(&gzip(odd.as_bytes())).expect("read");
            assert_eq!(format!("{via_input:?}"), whole(&odd));
        }
    }

    #[test]
    fn a_dump_on_one_line_is_scanned_without_being_held_whole() {
        // As `json.dump` writes it: no line breaks at all. Looking for the end of the first
        // node's line once read the whole text into the window, and kept it there.
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(20_000))
            .replace('\n', "");
        let at = text.find("\"nodes\": [").expect("nodes") + "\"nodes\": [".len();
        let mut stream = super::Stream::new(Source::Reader(&text.as_bytes()[at..]), u64::MAX)
            .expect("within the limit");
        let mut lines = super::Lines::Trial(0);
        let mut held = 0;
        for _ in 0..3 * super::Lines::TRIAL {
            let span = stream.node_value(&mut lines).expect("a node");
            held = held.max(stream.text.len());
            stream.pos = span.1;
            stream.expect(b',').expect("a comma");
        }
        assert_eq!(lines, super::Lines::Scanned);
        assert!(
            held <= 2 * super::CHUNK,
            "{held} of {} bytes held",
            text.len()
        );
        let streamed = read(&gzip(text.as_bytes()), &mut ()).expect("read by scans");
        let whole = crate::dump::read_text_into(text.as_bytes().to_vec(), &mut ()).expect("read");
        assert_eq!(format!("{streamed:?}"), format!("{whole:?}"));
    }

    #[test]
    fn kept_objects_hold_the_undecoded_values_and_every_key_in_order() {
        let kept = |text: &str| {
            let kept = super::kept_object(text.as_bytes()).expect("an object");
            String::from_utf8(kept.to_vec()).expect("utf-8")
        };
        assert_eq!(
            kept(
                r#"{ "val": {"a": [1, "}"]}, "comm_type" : "x",
                "stack_trace": "s\"", "fsdp_bucket_spec": {"k": [1, 2]}, "z": null }"#
            ),
            r#"{"val":{"a": [1, "}"]},"comm_type":0,"stack_trace":"s\"","fsdp_bucket_spec":0,"z":null}"#
        );
        // A key with an escape keeps its value; so does anything unexpected.
        assert_eq!(kept(r#"{"comm\u005ftype": 1}"#), r#"{"comm\u005ftype":1}"#);
        for odd in ["{}", r#"{"a" 1}"#, r#"{"a": 1,}"#] {
            assert_eq!(kept(odd), odd);
        }
        // What follows the object is not kept; an object that does not end is not kept.
        assert_eq!(kept(r#"{"a": 1}, "alias": true}"#), r#"{"a":1}"#);
        assert!(super::kept_object(br#"{"a": 1"#).is_none());
    }

    #[test]
    fn equal_kept_objects_share_one_copy_and_the_copies_are_let_go_after_a_read() {
        let keep = |text: String| super::kept_object(text.as_bytes()).expect("an object");
        let shape = |n: usize| format!(r#"{{"val": {{"shape": [{n}]}}, "comm_type": "x"}}"#);
        let first = keep(shape(8));
        // The same object kept (its decoded values aside) shares the first's bytes.
        let again = keep(shape(8).replace("\"x\"", "\"y\""));
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        assert!(!std::sync::Arc::ptr_eq(&first, &keep(shape(9))));
        // Past the bound, the objects remembered are forgotten, and each is still right.
        let many: Vec<_> = (0..super::KEPT_SHARED + 10)
            .map(|n| keep(shape(n)))
            .collect();
        for (n, kept) in many.iter().enumerate() {
            assert_eq!(
                &kept[..],
                format!(r#"{{"val":{{"shape": [{n}]}},"comm_type":0}}"#).as_bytes()
            );
        }
        let last = keep(shape(super::KEPT_SHARED + 9));
        assert!(std::sync::Arc::ptr_eq(&last, &many[super::KEPT_SHARED + 9]));
        assert!(!std::sync::Arc::ptr_eq(&keep(shape(8)), &first));
        // After a read, this thread holds none of them.
        let dump = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(2_000));
        let before = std::sync::Arc::strong_count(&last);
        super::read(&gzip(dump.as_bytes()), &mut ()).expect("read");
        assert_eq!(std::sync::Arc::strong_count(&last), before - 1);
    }

    /// Random JSON values, written compactly and pretty, end exactly where serde_json says
    /// they do, whatever follows them, and are `More` when cut short.
    #[test]
    fn values_end_where_serde_json_says() {
        use serde_json::{json, Value};
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        fn value(next: &mut dyn FnMut(u64) -> u64, depth: u32) -> Value {
            let strings = [
                "",
                "a",
                "\"]\\",
                "{[",
                "Y_y\u{7f}",
                "caf\u{e9} \u{1F600}",
                "x\ny",
            ];
            match if depth > 4 { next(4) } else { next(7) } {
                0 => json!(next(1000) as i64 - 500),
                1 => json!(strings[next(strings.len() as u64) as usize]),
                2 => json!(next(3) == 0),
                3 => Value::Null,
                4 => json!(next(1000) as f64 / 7.0),
                5 => Value::Array((0..next(4)).map(|_| value(next, depth + 1)).collect()),
                _ => Value::Object(
                    (0..next(4))
                        .map(|k| {
                            (
                                format!("{}{k}", strings[next(7) as usize]),
                                value(next, depth + 1),
                            )
                        })
                        .collect(),
                ),
            }
        }
        for round in 0..2000 {
            let v = value(&mut next, 0);
            let text = if round % 2 == 0 {
                serde_json::to_string(&v).expect("json")
            } else {
                serde_json::to_string_pretty(&v).expect("json")
            };
            let mut with_tail = text.clone().into_bytes();
            with_tail.extend_from_slice(b", {\"x\": 1}]");
            match scan_value(&with_tail, 0) {
                Scan::Done { end, .. } => assert_eq!(end, text.len(), "{text}"),
                other => panic!("{text}: {other:?}"),
            }
            let cut = next(text.len() as u64) as usize;
            if !text.as_bytes()[..cut].is_empty() {
                assert!(
                    !matches!(scan_value(&text.as_bytes()[..cut], 0), Scan::Done { end, .. } if end > cut),
                    "{text} cut at {cut}"
                );
            }
        }
    }
}
