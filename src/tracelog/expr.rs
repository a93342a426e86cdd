//! The Python expressions of FX readable code: what `torch.fx`'s code generator writes for a
//! node's arguments (`_get_repr`: `repr` of numbers, strings, tuples and lists, node names,
//! `torch.float32`, `device(type='cpu')`, symbolic sizes), and the `repr` of the `custom`
//! metadata dict in `Annotation:` comments. Values come out as the [`PyValue`]s the dump
//! reader makes of the exporter's encoding of the same Python objects (`graph-dump-v1.md`).
//!
//! The cursor works on one line of text; positions are byte offsets that only ever move over
//! ASCII bytes or whole characters, so slicing never splits a character.

use crate::value::{Dict, Key, NodeRef, PyValue, TORCH_DTYPES};

/// Where a value stands: arguments encode a `dict` as its `repr` (the exporter's
/// `{"repr": str(value)}`), metadata keeps dicts and turns dtype strings into dtypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Args,
    Meta,
}

/// What the parser expected where it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Expected {
    /// Byte offset in the line.
    pub at: usize,
    pub what: String,
}

pub(super) type Parse<T> = Result<T, Expected>;

/// Deeper nesting than this is refused (the exporter's own limit is 64).
const MAX_DEPTH: usize = 100;

/// Looks node names up: `Some(position)` for a node defined earlier.
pub(super) trait Names {
    fn position(&self, name: &str) -> Option<usize>;
}

pub(super) struct Cursor<'s> {
    pub text: &'s str,
    pub pos: usize,
}

impl<'s> Cursor<'s> {
    pub fn new(text: &'s str) -> Cursor<'s> {
        Cursor { text, pos: 0 }
    }

    pub fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    pub fn rest(&self) -> &'s str {
        self.text.get(self.pos..).unwrap_or("")
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    pub fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    /// Consumes `token` when the text continues with it.
    pub fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    pub fn expected<T>(&self, what: impl Into<String>) -> Parse<T> {
        Err(Expected {
            at: self.pos,
            what: what.into(),
        })
    }

    pub fn expect(&mut self, token: &str, what: &str) -> Parse<()> {
        if self.eat(token) {
            Ok(())
        } else {
            self.expected(what)
        }
    }

    /// A Python identifier (ASCII, as FX names are).
    pub fn ident(&mut self) -> Option<&'s str> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        match bytes.get(start) {
            Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
            _ => return None,
        }
        let mut end = start + 1;
        while bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            end += 1;
        }
        self.pos = end;
        self.text.get(start..end)
    }

    /// `ident(.ident)*`.
    pub fn dotted(&mut self) -> Option<&'s str> {
        let start = self.pos;
        self.ident()?;
        loop {
            let save = self.pos;
            if self.eat(".") && self.ident().is_some() {
                continue;
            }
            self.pos = save;
            break;
        }
        self.text.get(start..self.pos)
    }

    /// Skips one balanced bracketed group starting at `(`, `[` or `{` (strings respected).
    pub fn skip_group(&mut self) -> Parse<()> {
        let mut stack: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                None => return self.expected("a closing bracket"),
                Some(q @ (b'\'' | b'"')) => {
                    self.string_body(q)?;
                    continue;
                }
                Some(open @ (b'(' | b'[' | b'{')) => stack.push(closing(open)),
                Some(close @ (b')' | b']' | b'}')) => {
                    if stack.pop() != Some(close) {
                        return self.expected("matching brackets");
                    }
                    if stack.is_empty() {
                        self.pos += 1;
                        return Ok(());
                    }
                }
                Some(_) => {}
            }
            self.advance_char();
        }
    }

    fn advance_char(&mut self) {
        let step = self.rest().chars().next().map_or(1, char::len_utf8);
        self.pos += step;
    }

    /// Skips to the next `,`, `)`, `]`, `}` or `;` outside brackets and strings (or the end);
    /// returns the skipped text.
    pub fn skip_to_delimiter(&mut self) -> Parse<&'s str> {
        let start = self.pos;
        loop {
            match self.peek() {
                None | Some(b',' | b')' | b']' | b'}' | b';') => break,
                Some(b'(' | b'[' | b'{') => self.skip_group()?,
                Some(q @ (b'\'' | b'"')) => {
                    self.string_body(q)?;
                }
                Some(_) => self.advance_char(),
            }
        }
        Ok(self.text.get(start..self.pos).unwrap_or("").trim_end())
    }

    /// A Python string literal (as `repr` writes it) starting at its quote.
    pub fn string_body(&mut self, quote: u8) -> Parse<String> {
        let open = self.pos;
        self.pos += 1;
        // Most strings have no escape: take them whole.
        let body = self.rest().as_bytes();
        if let Some(end) = memchr::memchr2(quote, b'\\', body) {
            if body.get(end) == Some(&quote) {
                let text = self.rest().get(..end).unwrap_or("").to_string();
                self.pos += end + 1;
                return Ok(text);
            }
        }
        let mut out = String::new();
        loop {
            let rest = self.rest();
            let Some(c) = rest.chars().next() else {
                self.pos = open;
                return self.expected("the end of a string literal");
            };
            self.pos += c.len_utf8();
            if c as u32 == quote as u32 {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.rest().chars().next() else {
                return self.expected("an escape sequence");
            };
            self.pos += e.len_utf8();
            match e {
                '\\' | '\'' | '"' => out.push(e),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                'x' => out.push(self.hex_escape(2)?),
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                '0'..='7' => {
                    let mut code = e as u32 - '0' as u32;
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                code = code * 8 + u32::from(d - b'0');
                                self.pos += 1;
                            }
                            _ => break,
                        }
                    }
                    match char::from_u32(code) {
                        Some(c) => out.push(c),
                        None => return self.expected("a valid octal escape"),
                    }
                }
                '\n' => {}
                other => {
                    // Python keeps unknown escapes verbatim.
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn hex_escape(&mut self, digits: usize) -> Parse<char> {
        let text = self.rest().get(..digits).unwrap_or("");
        let code = (text.len() == digits)
            .then(|| u32::from_str_radix(text, 16).ok())
            .flatten()
            .and_then(char::from_u32);
        match code {
            Some(c) => {
                self.pos += digits;
                Ok(c)
            }
            None => self.expected(format!("{digits} hex digits of an escape")),
        }
    }

    /// A number as `repr(int)` / `repr(float)` writes it, with an optional sign.
    fn number(&mut self) -> Parse<PyValue> {
        let start = self.pos;
        let negative = match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b'+') => {
                self.pos += 1;
                false
            }
            _ => false,
        };
        if self.eat("inf") {
            return Ok(PyValue::Float(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }));
        }
        if self.eat("nan") {
            return Ok(PyValue::Float(f64::NAN));
        }
        let digits = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == digits {
            self.pos = start;
            return self.expected("a number");
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            float = true;
            self.pos += 1;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            let exp = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == exp {
                self.pos = save;
            } else {
                float = true;
            }
        }
        let text = self.text.get(start..self.pos).unwrap_or("");
        if !float {
            if let Ok(i) = text.parse::<i128>() {
                return Ok(PyValue::int(i));
            }
        }
        match text.parse::<f64>() {
            Ok(f) => Ok(PyValue::Float(f)),
            Err(_) => {
                self.pos = start;
                self.expected("a number")
            }
        }
    }
}

fn closing(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        _ => b'}',
    }
}

/// Reads values against the nodes defined so far.
pub(super) struct ValueReader<'n, N: Names + ?Sized> {
    pub names: &'n N,
}

impl<N: Names + ?Sized> ValueReader<'_, N> {
    /// One value, as `_get_repr` (arguments) or `repr` (metadata) wrote it. In arguments a
    /// symbolic size expression (`2*s0`, `s0 + 1`) is read whole as a symbolic value.
    pub fn value(&self, c: &mut Cursor<'_>, place: Place) -> Parse<PyValue> {
        self.value_at(c, place, 0, true)
    }

    /// One value that stops before a binary operator (the operands of `a + b`).
    pub fn operand(&self, c: &mut Cursor<'_>, place: Place) -> Parse<PyValue> {
        self.value_at(c, place, 0, false)
    }

    fn value_at(
        &self,
        c: &mut Cursor<'_>,
        place: Place,
        depth: usize,
        expressions: bool,
    ) -> Parse<PyValue> {
        c.spaces();
        let start = c.pos;
        let atom = self.atom(c, place, depth);
        if !expressions || place != Place::Args {
            return atom;
        }
        let save = c.pos;
        c.spaces();
        let ends = matches!(c.peek(), None | Some(b',' | b')' | b']' | b'}' | b';'));
        match atom {
            Ok(value) if ends => {
                c.pos = save;
                Ok(value)
            }
            // Not a plain value: a symbolic expression, when it reads as one.
            other => {
                c.pos = start;
                match c.skip_to_delimiter() {
                    Ok(text) if is_symbolic_expression(text) => Ok(PyValue::Sym(text.to_string())),
                    _ => {
                        c.pos = save;
                        match other {
                            Ok(_) => c.expected("',' or a closing bracket"),
                            Err(e) => Err(e),
                        }
                    }
                }
            }
        }
    }

    fn atom(&self, c: &mut Cursor<'_>, place: Place, depth: usize) -> Parse<PyValue> {
        if depth > MAX_DEPTH {
            return c.expected(format!("at most {MAX_DEPTH} nested brackets"));
        }
        match c.peek() {
            Some(b'(') => {
                c.pos += 1;
                let (items, trailing_comma) = self.items(c, place, depth, b')')?;
                if items.len() == 1 && !trailing_comma {
                    // `(x)` is no tuple; only a symbolic expression groups like that.
                    return c.expected("a tuple");
                }
                Ok(PyValue::List(items))
            }
            Some(b'[') => {
                c.pos += 1;
                Ok(PyValue::List(self.items(c, place, depth, b']')?.0))
            }
            Some(b'{') => match place {
                Place::Args => {
                    // `encode_arg` writes a dict argument as `{"repr": str(value)}`.
                    let start = c.pos;
                    c.skip_group()?;
                    Ok(PyValue::Opaque(
                        c.text.get(start..c.pos).unwrap_or("").to_string(),
                    ))
                }
                Place::Meta => {
                    c.pos += 1;
                    self.dict(c, depth)
                }
            },
            Some(q @ (b'\'' | b'"')) => {
                let s = c.string_body(q)?;
                Ok(match place {
                    Place::Meta if TORCH_DTYPES.contains(&s.as_str()) => PyValue::Dtype(s),
                    _ => PyValue::Str(s),
                })
            }
            Some(b'-' | b'+' | b'0'..=b'9') => c.number(),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => self.name(c, place),
            _ => c.expected("a value"),
        }
    }

    /// Items up to `close`; whether the last one had a trailing comma.
    fn items(
        &self,
        c: &mut Cursor<'_>,
        place: Place,
        depth: usize,
        close: u8,
    ) -> Parse<(Vec<PyValue>, bool)> {
        let mut items = Vec::new();
        let mut trailing = false;
        loop {
            c.spaces();
            if c.peek() == Some(close) {
                c.pos += 1;
                return Ok((items, trailing));
            }
            items.push(self.value_at(c, place, depth + 1, true)?);
            c.spaces();
            trailing = false;
            if c.eat(",") {
                trailing = true;
                continue;
            }
            if c.peek() != Some(close) {
                return c.expected(format!("',' or '{}'", close as char));
            }
        }
    }

    fn dict(&self, c: &mut Cursor<'_>, depth: usize) -> Parse<PyValue> {
        let mut map = Dict::new();
        loop {
            c.spaces();
            if c.eat("}") {
                return Ok(PyValue::Dict(std::sync::Arc::new(map)));
            }
            let key = match self.value_at(c, Place::Meta, depth + 1, false)? {
                PyValue::Str(s) | PyValue::Dtype(s) => s,
                // The exporter writes `{str(key): ...}`.
                other => other.py_str(),
            };
            c.spaces();
            c.expect(":", "':' after a dict key")?;
            let value = self.value_at(c, Place::Meta, depth + 1, false)?;
            map.insert(Key::from(key.as_str()), value);
            c.spaces();
            if c.eat(",") {
                continue;
            }
            if c.peek() != Some(b'}') {
                return c.expected("',' or '}'");
            }
        }
    }

    /// A name: a node, a constant (`None`, `True`, `inf`), a dtype, a device, a symbol, or a
    /// global the code refers to (`torch.strided`), or a call written as a value
    /// (`slice(None, None, None)`), kept as its text.
    fn name(&self, c: &mut Cursor<'_>, place: Place) -> Parse<PyValue> {
        let start = c.pos;
        let Some(path) = c.dotted() else {
            return c.expected("a name");
        };
        if c.peek() == Some(b'(') {
            if path == "device" {
                return device(c, start);
            }
            c.skip_group()?;
            let text = c.text.get(start..c.pos).unwrap_or("");
            // sympy functions of sizes (`Max(1, s0)`) are symbolic values.
            return Ok(if is_symbolic_expression(text) {
                PyValue::Sym(text.to_string())
            } else {
                PyValue::Opaque(text.to_string())
            });
        }
        Ok(match path {
            "None" => PyValue::None,
            "True" => PyValue::Bool(true),
            "False" => PyValue::Bool(false),
            "inf" => PyValue::Float(f64::INFINITY),
            "nan" => PyValue::Float(f64::NAN),
            _ if path.starts_with("torch.") && TORCH_DTYPES.contains(&path) => {
                PyValue::Dtype(path.to_string())
            }
            _ => match self.names.position(path) {
                Some(index) => PyValue::Node(NodeRef {
                    name: path.into(),
                    index: Some(index),
                }),
                None if path.contains('.') => PyValue::Opaque(path.to_string()),
                None if is_symbol(path) => PyValue::Sym(path.to_string()),
                None => {
                    c.pos = start;
                    return c.expected(match place {
                        Place::Args => "a node defined earlier, a number, a string or a constant",
                        Place::Meta => "a literal value",
                    });
                }
            },
        })
    }
}

/// `device(type='cuda', index=0)` → `cuda:0`, as `str(torch.device)`.
fn device(c: &mut Cursor<'_>, start: usize) -> Parse<PyValue> {
    c.pos += 1;
    let mut kind = None;
    let mut index = None;
    loop {
        c.spaces();
        if c.eat(")") {
            break;
        }
        let key = c.ident();
        c.spaces();
        if key.is_none() || !c.eat("=") {
            c.pos = start;
            return c.expected("device(type='...', index=N)");
        }
        c.spaces();
        match (key, c.peek()) {
            (Some("type"), Some(q @ (b'\'' | b'"'))) => kind = Some(c.string_body(q)?),
            (Some("index"), _) => match c.number()? {
                PyValue::Int(i) => index = Some(i),
                _ => return c.expected("an integer device index"),
            },
            _ => return c.expected("device(type='...', index=N)"),
        }
        c.spaces();
        c.eat(",");
    }
    match (kind, index) {
        (Some(kind), Some(index)) => Ok(PyValue::Device(format!("{kind}:{index}"))),
        (Some(kind), None) => Ok(PyValue::Device(kind)),
        (None, _) => {
            c.pos = start;
            c.expected("device(type='...')")
        }
    }
}

/// A sympy symbol as Inductor names them: letters then digits (`s0`, `u12`, `s77`).
pub(super) fn is_symbol(text: &str) -> bool {
    let letters = text.bytes().take_while(u8::is_ascii_lowercase).count();
    letters > 0 && letters < text.len() && text.bytes().skip(letters).all(|b| b.is_ascii_digit())
}

/// A symbolic size expression (`2*s0`, `s0 + 1`, `Max(1, s0)`, `((s0 + 1)//2)`): arithmetic
/// over numbers and symbols, with at least one symbol.
fn is_symbolic_expression(text: &str) -> bool {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"_ +-*/%().,".contains(&b);
    let mut has_symbol = false;
    let mut word = String::new();
    for b in text.bytes().chain(std::iter::once(b' ')) {
        if !allowed(b) {
            return false;
        }
        if b.is_ascii_alphanumeric() || b == b'_' {
            word.push(b as char);
        } else {
            if is_symbol(&word) {
                has_symbol = true;
            }
            word.clear();
        }
    }
    has_symbol
}

/// `dtype.abbr` of every dtype `torch.fx` can print in an annotation, with `str(dtype)` and
/// whether the dump format knows it (`TORCH_DTYPES`: a dtype string in metadata reads as a
/// dtype only then).
pub(super) const DTYPE_ABBRS: &[(&str, &str, bool)] = &[
    ("f32", "torch.float32", true),
    ("f64", "torch.float64", true),
    ("f16", "torch.float16", true),
    ("bf16", "torch.bfloat16", true),
    ("i64", "torch.int64", true),
    ("i32", "torch.int32", true),
    ("i16", "torch.int16", true),
    ("i8", "torch.int8", true),
    ("u8", "torch.uint8", true),
    ("u16", "torch.uint16", true),
    ("u32", "torch.uint32", true),
    ("u64", "torch.uint64", true),
    ("b8", "torch.bool", true),
    ("c32", "torch.complex32", true),
    ("c64", "torch.complex64", true),
    ("c128", "torch.complex128", true),
    ("bc32", "torch.bcomplex32", false),
    ("b1x8", "torch.bits1x8", true),
    ("b2x4", "torch.bits2x4", true),
    ("b4x2", "torch.bits4x2", true),
    ("b8x1", "torch.bits8", true),
    ("b16x1", "torch.bits16", true),
    ("f8e5m2", "torch.float8_e5m2", true),
    ("f8e4m3fn", "torch.float8_e4m3fn", true),
    ("f8e5m2fnuz", "torch.float8_e5m2fnuz", true),
    ("f8e4m3fnuz", "torch.float8_e4m3fnuz", true),
    ("f8e8m0fnu", "torch.float8_e8m0fnu", true),
    ("f4e2m1fnx2", "torch.float4_e2m1fn_x2", true),
];

/// What a node's annotation says of its value (`meta["val"]`).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Annotation {
    /// A tensor summary `{"shape", "dtype", "device"}`, as the exporter writes a tensor.
    Tensor(PyValue),
    /// `Sym(expr)`: a symbolic int/float.
    Sym(String),
    /// Something else (a type, an unknown form): no value recorded.
    Other,
}

/// Reads the annotation `torch.fx` writes for a node's value: `f32[4, 8][8, 1]cpu` (dtype
/// abbreviation, shape, strides, device), `Sym(s0)`, or a tensor subclass around the same
/// (`DTensor(f32[8][1]cpu, S(0))`).
pub(super) fn annotation(text: &str) -> Annotation {
    if let Some(inner) = text.strip_prefix("Sym(").and_then(|t| t.strip_suffix(')')) {
        return Annotation::Sym(inner.to_string());
    }
    if let Some(value) = tensor_annotation(text) {
        return Annotation::Tensor(value);
    }
    // `Cls(core)` or `Cls(core, placements)` for tensor subclasses.
    if let Some(open) = text.find('(') {
        let name = text.get(..open).unwrap_or("");
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            let inner = text.get(open + 1..).and_then(|t| t.strip_suffix(')'));
            if let Some(inner) = inner {
                let core = split_top_level(inner, b',')
                    .into_iter()
                    .next()
                    .unwrap_or(inner);
                if let Some(value) = tensor_annotation(core.trim()) {
                    return Annotation::Tensor(value);
                }
            }
        }
    }
    Annotation::Other
}

fn tensor_annotation(text: &str) -> Option<PyValue> {
    let open = text.find('[')?;
    let abbr = text.get(..open)?;
    let &(_, dtype, known) = DTYPE_ABBRS.iter().find(|(a, _, _)| *a == abbr)?;
    let rest = text.get(open..)?;
    let (shape_text, rest) = bracketed(rest)?;
    // Strides follow when the graph was printed with them; the device comes last.
    let device = match rest.strip_prefix('[') {
        Some(_) => bracketed(rest)?.1,
        None => rest,
    };
    let mut shape = Vec::with_capacity(4);
    if !shape_text.trim().is_empty() {
        let mut rest = shape_text;
        loop {
            let (dim, next) = split_first_top_level(rest);
            let dim = dim.trim();
            shape.push(match small_int(dim) {
                Some(i) => PyValue::int(i),
                None if !dim.is_empty() => PyValue::Sym(dim.to_string()),
                None => return None,
            });
            match next {
                Some(next) => rest = next,
                None => break,
            }
        }
    }
    let mut summary = Dict::with_capacity(3);
    summary.insert(Key::from("shape"), PyValue::List(shape));
    // In metadata the exporter writes a dtype as its plain string: a known one reads back as
    // a dtype, any other as a string.
    let dtype = if known {
        PyValue::Dtype(dtype.to_string())
    } else {
        PyValue::Str(dtype.to_string())
    };
    summary.insert(Key::from("dtype"), dtype);
    summary.insert(Key::from("device"), PyValue::Str(device.to_string()));
    Some(PyValue::Tensor(Box::new(PyValue::Dict(
        std::sync::Arc::new(summary),
    ))))
}

/// A size as `str(int)` writes it (sizes have at most 18 digits); anything else is `None`.
fn small_int(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = digits
        .bytes()
        .fold(0i128, |v, b| v * 10 + i128::from(b - b'0'));
    Some(if negative { -value } else { value })
}

/// `[inner]rest` → `(inner, rest)`, brackets balanced.
fn bracketed(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' | b'(' => depth += 1,
            b']' | b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((text.get(1..i)?, text.get(i + 1..)?));
                }
            }
            _ => {}
        }
    }
    None
}

/// The text before the first `,` outside brackets, and the text after it (if any).
fn split_first_top_level(text: &str) -> (&str, Option<&str>) {
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => return (text.get(..i).unwrap_or(""), text.get(i + 1..)),
            _ => {}
        }
    }
    (text, None)
}

/// Splits at `sep` outside brackets (sympy's `Max(s0, 1)` has commas inside).
pub(super) fn split_top_level(text: &str, sep: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ if b == sep && depth == 0 => {
                parts.push(text.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text.get(start..).unwrap_or(""));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Known(&'static [&'static str]);

    impl Names for Known {
        fn position(&self, name: &str) -> Option<usize> {
            self.0.iter().position(|n| *n == name)
        }
    }

    fn args(text: &str) -> Parse<PyValue> {
        let reader = ValueReader {
            names: &Known(&["primals_1", "getitem", "wait_tensor"]),
        };
        let mut c = Cursor::new(text);
        let v = reader.value(&mut c, Place::Args)?;
        if !c.at_end() {
            return c.expected("the end");
        }
        Ok(v)
    }

    fn node(name: &str, index: usize) -> PyValue {
        PyValue::Node(NodeRef {
            name: name.into(),
            index: Some(index),
        })
    }

    #[test]
    fn scalars() {
        assert_eq!(args("None"), Ok(PyValue::None));
        assert_eq!(args("True"), Ok(PyValue::Bool(true)));
        assert_eq!(args("-3"), Ok(PyValue::int(-3)));
        assert_eq!(args("0.0"), Ok(PyValue::Float(0.0)));
        assert_eq!(args("1e-05"), Ok(PyValue::Float(1e-5)));
        assert_eq!(args("-inf"), Ok(PyValue::Float(f64::NEG_INFINITY)));
        assert!(matches!(args("nan"), Ok(PyValue::Float(f)) if f.is_nan()));
        assert_eq!(
            args("123456789012345678901234567890123456789012"),
            Ok(PyValue::Float(1.2345678901234568e41))
        );
    }

    #[test]
    fn strings_with_escapes_and_both_quotes() {
        assert_eq!(args("'avg'"), Ok(PyValue::Str("avg".into())));
        assert_eq!(
            args(r#""it's \"x\"\n\x41\u00e9""#),
            Ok(PyValue::Str("it's \"x\"\nAé".into()))
        );
        assert_eq!(
            args(r"'caf\xe9 \U0001f600'"),
            Ok(PyValue::Str("café 😀".into()))
        );
        assert!(args("'open").is_err());
    }

    #[test]
    fn tuples_lists_and_nodes() {
        assert_eq!(
            args("[primals_1, (getitem,), ()]"),
            Ok(PyValue::List(vec![
                node("primals_1", 0),
                PyValue::List(vec![node("getitem", 1)]),
                PyValue::List(vec![]),
            ]))
        );
        assert!(args("(primals_1)").is_err());
        assert!(args("[undefined_node]").is_err());
    }

    #[test]
    fn dtypes_devices_globals_symbols() {
        assert_eq!(
            args("torch.bfloat16"),
            Ok(PyValue::Dtype("torch.bfloat16".into()))
        );
        assert_eq!(
            args("device(type='cpu')"),
            Ok(PyValue::Device("cpu".into()))
        );
        assert_eq!(
            args("device(type='cuda', index=3)"),
            Ok(PyValue::Device("cuda:3".into()))
        );
        assert_eq!(
            args("torch.strided"),
            Ok(PyValue::Opaque("torch.strided".into()))
        );
        assert_eq!(
            args("slice(None, None, None)"),
            Ok(PyValue::Opaque("slice(None, None, None)".into()))
        );
        assert_eq!(args("s0"), Ok(PyValue::Sym("s0".into())));
        assert_eq!(args("u12"), Ok(PyValue::Sym("u12".into())));
        assert_eq!(
            args("[2*s0, s0 + 1, Max(1, s77)]"),
            Ok(PyValue::List(vec![
                PyValue::Sym("2*s0".into()),
                PyValue::Sym("s0 + 1".into()),
                PyValue::Sym("Max(1, s77)".into()),
            ]))
        );
        assert!(args("3 + 4").is_err());
    }

    #[test]
    fn dicts_in_arguments_are_their_repr_and_in_metadata_dicts() {
        assert_eq!(args("{'a': 1}"), Ok(PyValue::Opaque("{'a': 1}".into())));
        let reader = ValueReader { names: &Known(&[]) };
        let mut c = Cursor::new("{'k': 'torch.float32', 'n': [1, (2,)], 3: None}");
        let v = reader.value(&mut c, Place::Meta).unwrap();
        let d = v.as_dict().unwrap();
        assert_eq!(d.get("k"), Some(&PyValue::Dtype("torch.float32".into())));
        assert_eq!(
            d.get("n"),
            Some(&PyValue::List(vec![
                PyValue::int(1),
                PyValue::List(vec![PyValue::int(2)])
            ]))
        );
        assert_eq!(d.get("3"), Some(&PyValue::None));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        assert!(args(&deep).is_err());
    }

    fn tensor(shape: Vec<PyValue>, dtype: &str, device: &str) -> Annotation {
        let mut d = Dict::new();
        d.insert(Key::from("shape"), PyValue::List(shape));
        d.insert(Key::from("dtype"), PyValue::Dtype(dtype.into()));
        d.insert(Key::from("device"), PyValue::Str(device.into()));
        Annotation::Tensor(PyValue::Tensor(Box::new(PyValue::Dict(
            std::sync::Arc::new(d),
        ))))
    }

    #[test]
    fn the_dtype_table_agrees_with_the_dump_format() {
        for (_, name, known) in DTYPE_ABBRS {
            assert_eq!(TORCH_DTYPES.contains(name), *known, "{name}");
        }
    }

    #[test]
    fn annotations() {
        use PyValue::Sym;
        let int = PyValue::int;
        assert_eq!(
            annotation("f32[4, 8][8, 1]cpu"),
            tensor(vec![int(4), int(8)], "torch.float32", "cpu")
        );
        assert_eq!(
            annotation("f32[][]cpu"),
            tensor(vec![], "torch.float32", "cpu")
        );
        assert_eq!(
            annotation("bf16[s0, 2*s0][2*s0, 1]cuda:0"),
            tensor(
                vec![Sym("s0".into()), Sym("2*s0".into())],
                "torch.bfloat16",
                "cuda:0"
            )
        );
        assert_eq!(annotation("b8[3]"), tensor(vec![int(3)], "torch.bool", ""));
        assert_eq!(
            annotation("i64[Max(1, s0)][1]cpu"),
            tensor(vec![Sym("Max(1, s0)".into())], "torch.int64", "cpu")
        );
        assert_eq!(annotation("Sym(s77)"), Annotation::Sym("s77".into()));
        assert_eq!(
            annotation("DTensor(f32[8][1]cpu, S(0))"),
            tensor(vec![int(8)], "torch.float32", "cpu")
        );
        assert_eq!(annotation("torch.Tensor"), Annotation::Other);
        assert_eq!(annotation("zz[4]cpu"), Annotation::Other);
        assert_eq!(annotation("f32[4"), Annotation::Other);
    }
}
