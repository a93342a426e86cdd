//! The FX readable code of an `inductor_post_grad_graph` artifact (`GraphModule.print_readable`
//! with strides and devices, as `torch/fx/graph.py`'s `_gen_python_code` writes it) read back
//! into the nodes the dump reader would build from the exporter's dump of the same graph:
//!
//! ```text
//! class GraphModule(torch.nn.Module):
//!     def forward(self, primals_1: "f32[4, 8][8, 1]cpu", primals_2: "Sym(s0)"):
//!         # Annotation: {...} recompute: MUST_SAVE File: /m.py:23 in f, code: y = g(x)
//!         all_gather_into_tensor: "f32[16, 8][8, 1]cpu" = torch.ops._c10d_functional.all_gather_into_tensor.default(primals_1, 4, '0');  primals_1 = None
//!         getitem: "f32[4][1]cpu" = split_with_sizes[0]
//!         return (all_gather_into_tensor, None)
//! ```
//!
//! Each statement is one node: `name[: "annotation"] = right-hand side[;  dead = None]`. The
//! right-hand side is a call (`torch.ops.ns.op.overload(...)` → `ns.op.overload`, a Python
//! function by its qualified name, `node.method(...)`, `self.submodule(...)`), an operator the
//! printer writes as Python syntax (`a + b` → `_operator.add`, `x[0]` → `_operator.getitem`),
//! `self.attr` (`get_attr`) or `node.attr` (`builtins.getattr`). The comment line before a
//! group of nodes gives their metadata: the `custom` annotation (values longer than 40
//! characters cut by PyTorch), `recompute`/`ac_graph_id`, `autograd_backward` ("Backward of
//! forward node") and the innermost source line, which becomes a one-frame `stack_trace`.

use super::expr::{annotation, Annotation, Cursor, Expected, Names, Place, ValueReader};
use crate::dump::{Node, NodeSink, Op};
use crate::value::{Dict, Key, NodeRef, PyValue};
use std::collections::HashMap;

/// The metadata key a trace-log node carries when PyTorch cut `custom` values at 40
/// characters: the list of the cut keys. Such a value is text, never a valid payload.
pub const TRUNCATED_KEY: &str = "trace_log.truncated_custom";

/// PyTorch prints at most this many characters of each `custom` metadata value.
pub const ANNOTATION_LIMIT: usize = 40;

/// One payload line: its log line number and its text (the tab removed).
pub(super) type Line<'s> = (usize, &'s str);

/// A graph read from its code.
#[derive(Debug)]
pub(super) struct ParsedGraph {
    pub nodes: Vec<Node>,
    /// Nodes whose `Annotation:` values were cut, in graph order.
    pub truncated: Vec<String>,
    /// Nodes whose `Annotation:` is no Python literal (kept as text).
    pub unreadable: Vec<String>,
    /// Names of submodule graphs printed after the forward (not read).
    pub submodules: Vec<String>,
}

/// Where the code stopped making sense.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SyntaxError {
    /// The log line number.
    pub line: usize,
    /// 1-based column in the payload line.
    pub column: usize,
    pub expected: String,
    /// The text from where reading stopped (shortened).
    pub found: String,
}

fn syntax_error(line: Line<'_>, e: Expected) -> SyntaxError {
    let rest = line.1.get(e.at..).unwrap_or("");
    let found = if rest.is_empty() {
        "the end of the line".to_string()
    } else {
        let cut: String = rest.chars().take(60).collect();
        if cut.len() < rest.len() {
            format!("{cut:?}...")
        } else {
            format!("{cut:?}")
        }
    };
    SyntaxError {
        line: line.0,
        column: line.1.get(..e.at).map_or(1, |s| s.chars().count() + 1),
        expected: e.what,
        found,
    }
}

/// Node names defined so far.
#[derive(Default)]
struct Table<'s> {
    by_name: crate::hashing::FastMap<&'s str, usize>,
}

impl Names for Table<'_> {
    fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// The metadata a summary comment gives the nodes after it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Summary {
    custom: Option<PyValue>,
    truncated: Vec<String>,
    /// The annotation is no Python literal (a value's `repr` like `<object at 0x..>`).
    unreadable: bool,
    recompute: Option<String>,
    ac_graph_id: Option<PyValue>,
    backward: bool,
    stack_trace: Option<String>,
}

struct Builder<'s, 'k> {
    nodes: Vec<Node>,
    /// Receives each node once read (placeholders once the body begins: a renaming line may
    /// still change their names).
    sink: &'k mut dyn NodeSink,
    /// Nodes before this position have been handed to the sink.
    sent: usize,
    stale: bool,
    table: Table<'s>,
    summary: Summary,
    truncated: Vec<String>,
    unreadable: Vec<String>,
    /// Annotations read so far, by their text.
    annotations: crate::hashing::FastMap<&'s str, Option<PyValue>>,
}

/// Reads the code of one graph from its payload lines (about `count` of them: a hint for
/// the tables' sizes), handing each node to `sink` while it is in cache.
pub(super) fn parse_graph<'s>(
    lines: impl Iterator<Item = Line<'s>>,
    count: usize,
    sink: &mut dyn NodeSink,
) -> Result<ParsedGraph, SyntaxError> {
    let mut lines = lines.peekable();
    // `class GraphModule(torch.nn.Module):`, then (after any module-level statements such as
    // `wrap(...)`) `def forward(self, ...):`.
    let mut header = None;
    let mut last = (0, "");
    for line in lines.by_ref() {
        last = line;
        let text = line.1.trim_end();
        if text.trim().is_empty() {
            continue;
        }
        let trimmed = text.trim_start();
        if header.is_none() {
            if trimmed.starts_with("class ") && trimmed.ends_with(':') {
                header = Some(indent(text));
                continue;
            }
            return Err(syntax_error(
                line,
                Expected {
                    at: indent(text),
                    what: "the graph's `class GraphModule(torch.nn.Module):` line".into(),
                },
            ));
        }
        if trimmed.starts_with("def ") {
            return body(line, &mut lines, count, sink);
        }
    }
    Err(SyntaxError {
        line: last.0,
        column: 1,
        expected: if header.is_none() {
            "the graph's `class GraphModule(torch.nn.Module):` line".into()
        } else {
            "`def forward(self, ...):`".into()
        },
        found: "the end of the graph's text".into(),
    })
}

/// An error at `at` in a part of the line that starts `by` bytes in.
fn shifted(e: Expected, by: usize) -> Expected {
    Expected {
        at: e.at + by,
        what: e.what,
    }
}

fn indent(text: &str) -> usize {
    text.len() - text.trim_start_matches(' ').len()
}

fn body<'s, I: Iterator<Item = Line<'s>>>(
    def: Line<'s>,
    lines: &mut std::iter::Peekable<I>,
    lower: usize,
    sink: &mut dyn NodeSink,
) -> Result<ParsedGraph, SyntaxError> {
    sink.begin();
    let mut table = Table::default();
    table.by_name.reserve(lower);
    let mut b = Builder {
        nodes: Vec::with_capacity(lower),
        sink,
        sent: 0,
        stale: false,
        table,
        summary: Summary::default(),
        truncated: Vec::new(),
        unreadable: Vec::new(),
        annotations: HashMap::default(),
    };
    let def_indent = indent(def.1);
    b.signature(def).map_err(|e| syntax_error(def, e))?;
    let mut returned = false;
    let mut submodules = Vec::new();
    let mut in_meta_block = false;
    let mut ended = false;
    let mut last = def;
    for line in lines.by_ref() {
        last = line;
        let text = line.1.trim_end();
        let trimmed = text.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        // `FX_GRAPH_SHOW_META=1` prints each node's metadata between triple quotes.
        if trimmed == "\"\"\"" {
            in_meta_block = !in_meta_block;
            continue;
        }
        if in_meta_block {
            continue;
        }
        if indent(text) <= def_indent {
            // The forward is over: submodule graphs follow (`class name(torch.nn.Module):`).
            ended = true;
            if let Some(name) = trimmed
                .strip_prefix("class ")
                .and_then(|t| t.split('(').next())
            {
                submodules.push(name.to_string());
            }
            continue;
        }
        if ended {
            continue;
        }
        let at = indent(text);
        let statement = text.get(at..).unwrap_or("");
        let located = |e: Expected| syntax_error(line, shifted(e, at));
        if let Some(comment) = statement.strip_prefix('#') {
            b.summary = summary(comment).map_err(|e| located(shifted(e, 1)))?;
            continue;
        }
        if returned {
            return Err(located(Expected {
                at: 0,
                what: "nothing after the `return` line".into(),
            }));
        }
        if statement == "pass" {
            continue;
        }
        if let Some(value) = statement
            .strip_prefix("return")
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            b.output(value)
                .map_err(|e| located(shifted(e, "return".len())))?;
            returned = true;
            continue;
        }
        b.statement(statement).map_err(located)?;
    }
    if !returned {
        return Err(SyntaxError {
            line: last.0,
            column: 1,
            expected: "the graph's `return` line".into(),
            found: "the end of the graph's text".into(),
        });
    }
    if b.stale {
        // A placeholder was renamed after the sink saw it: hand every node on again.
        b.sink.begin();
        b.sent = 0;
    }
    b.send();
    Ok(ParsedGraph {
        nodes: b.nodes,
        truncated: b.truncated,
        unreadable: b.unreadable,
        submodules,
    })
}

impl<'s> Builder<'s, '_> {
    /// Hands every node not yet handed on to the sink.
    fn send(&mut self) {
        while let Some(node) = self.nodes.get(self.sent) {
            self.sink.node(self.sent, node);
            self.sent += 1;
        }
    }

    fn push(&mut self, name: &'s str, node: Node) -> Result<(), Expected> {
        if self.table.by_name.contains_key(name) {
            return Err(Expected {
                at: 0,
                what: format!("a new node name ({name:?} is already defined)"),
            });
        }
        self.table.by_name.insert(name, self.nodes.len());
        let placeholder = node.op == Op::Placeholder;
        self.nodes.push(node);
        if !placeholder {
            self.send();
        }
        Ok(())
    }

    /// `def forward(self, a: "ann", b, c: "ann" = default) -> ann:`
    fn signature(&mut self, def: Line<'s>) -> Result<(), Expected> {
        let text = def.1.trim_end();
        let at = indent(text);
        let mut c = Cursor::new(text);
        c.pos = at;
        c.expect("def ", "`def forward(self, ...):`")?;
        if c.ident().is_none() {
            return c.expected("the function name");
        }
        c.expect("(", "'(' after the function name")?;
        loop {
            c.spaces();
            if c.eat(")") {
                break;
            }
            let star = c.peek() == Some(b'*');
            let start = c.pos;
            while c.peek() == Some(b'*') {
                c.pos += 1;
            }
            let Some(name) = c.ident() else {
                return c.expected("a parameter name");
            };
            let target = c.text.get(start..c.pos).unwrap_or(name);
            c.spaces();
            let mut val = None;
            if c.eat(":") {
                c.spaces();
                val = self.annotation_at(&mut c)?;
                c.spaces();
            }
            let mut args = Vec::new();
            if c.eat("=") {
                let reader = ValueReader { names: &self.table };
                args.push(reader.value(&mut c, Place::Args)?);
                c.spaces();
            }
            if name != "self" || star {
                let mut meta = Dict::new();
                if let Some(val) = val {
                    meta.insert(Key::from("val"), val);
                }
                let node = Node {
                    name: name.to_string(),
                    op: Op::Placeholder,
                    target: target.into(),
                    args,
                    kwargs: Default::default(),
                    meta: meta.into(),
                    alias: None,
                    impure: None,
                    repr: None,
                };
                self.push(name, node)
                    .map_err(|e| Expected { at: start, ..e })?;
            }
            if c.eat(",") {
                continue;
            }
            c.spaces();
            if c.eat(")") {
                break;
            }
            return c.expected("',' or ')' in the parameter list");
        }
        c.spaces();
        if c.eat("->") {
            c.spaces();
            // The return annotation: a quoted string or a type expression up to the ':'.
            match c.peek() {
                Some(q @ (b'"' | b'\'')) => {
                    c.string_body(q)?;
                }
                _ => {
                    while c.peek().is_some_and(|b| b != b':') {
                        match c.peek() {
                            Some(b'[' | b'(') => c.skip_group()?,
                            _ => c.pos += 1,
                        }
                    }
                }
            }
            c.spaces();
        }
        c.expect(":", "':' at the end of the `def` line")?;
        if !c.rest().trim().is_empty() {
            return c.expected("the end of the `def` line");
        }
        Ok(())
    }

    /// `"f32[4][1]cpu"` or an unquoted type (`torch.Tensor`): the node's `val`, if it says.
    fn annotation_at(&mut self, c: &mut Cursor<'s>) -> Result<Option<PyValue>, Expected> {
        let text = match c.peek() {
            Some(q @ (b'"' | b'\'')) => {
                // Graphs repeat a few annotations many times: read each once.
                let body = c.text.get(c.pos + 1..).unwrap_or("");
                if let Some(end) = memchr::memchr2(q, b'\\', body.as_bytes()) {
                    if body.as_bytes().get(end) == Some(&q) {
                        let raw = body.get(..end).unwrap_or("");
                        c.pos += end + 2;
                        if let Some(value) = self.annotations.get(raw) {
                            return Ok(value.clone());
                        }
                        let value = annotation_value(raw);
                        if self.annotations.len() < ANNOTATION_CACHE {
                            self.annotations.insert(raw, value.clone());
                        }
                        return Ok(value);
                    }
                }
                c.string_body(q)?
            }
            _ => {
                let start = c.pos;
                loop {
                    match c.peek() {
                        None | Some(b'=' | b',' | b')') => break,
                        Some(b'[' | b'(') => c.skip_group()?,
                        Some(_) => c.pos += 1,
                    }
                }
                if c.pos == start {
                    return c.expected("a type annotation");
                }
                return Ok(None);
            }
        };
        Ok(annotation_value(&text))
    }

    /// `name[: ann] = rhs[;  a = b = None]`
    fn statement(&mut self, text: &'s str) -> Result<(), Expected> {
        let mut c = Cursor::new(text);
        let Some(name) = c.ident() else {
            return c
                .expected("a node statement `name: \"annotation\" = ...`, a comment or `return`");
        };
        c.spaces();
        let mut val = None;
        if c.eat(":") {
            c.spaces();
            val = self.annotation_at(&mut c)?;
            c.spaces();
        }
        if !c.eat("=") || c.peek() == Some(b'=') {
            return c.expected("' = ' after the node name");
        }
        c.spaces();
        let Some((op, target, args, kwargs)) = self.right_side(&mut c, name)? else {
            return Ok(());
        };
        c.spaces();
        if !(c.at_end() || c.eat(";")) {
            return c.expected("the end of the statement (or ';  name = None')");
        }
        let mut meta = self.summary_meta();
        if let Some(val) = val {
            meta.insert(Key::from("val"), val);
        }
        if !self.summary.truncated.is_empty() {
            self.truncated.push(name.to_string());
        }
        if self.summary.unreadable {
            self.unreadable.push(name.to_string());
        }
        let node = Node {
            name: name.to_string(),
            op,
            target: target.into(),
            args,
            kwargs: kwargs.into(),
            meta: meta.into(),
            alias: None,
            impure: None,
            repr: None,
        };
        self.push(name, node)
    }

    /// The node's op, target and arguments; `None` for a placeholder renaming line
    /// (`args = *args` is written `args = args` when a placeholder's target is not its name).
    #[allow(clippy::type_complexity)]
    fn right_side(
        &mut self,
        c: &mut Cursor<'s>,
        name: &'s str,
    ) -> Result<Option<(Op, String, Vec<PyValue>, Dict)>, Expected> {
        let reader = ValueReader { names: &self.table };
        let start = c.pos;
        // A unary operator: `-x`, `+x`, `~x`.
        if let Some(op) = match c.peek() {
            Some(b'-') => Some("neg"),
            Some(b'+') => Some("pos"),
            Some(b'~') => Some("invert"),
            _ => None,
        } {
            c.pos += 1;
            let operand = reader.operand(c, Place::Args)?;
            return Ok(Some(call(op_target(op), vec![operand])));
        }
        if let Some(path) = c.dotted() {
            let first = path.split('.').next().unwrap_or(path);
            let rest = path.get(first.len() + 1..);
            if c.peek() == Some(b'(') {
                c.pos += 1;
                let (mut args, kwargs) = self.call_args(c)?;
                return Ok(Some(if first == "self" {
                    (Op::CallModule, rest.unwrap_or("").to_string(), args, kwargs)
                } else if let (Some(index), Some(method)) = (self.table.position(first), rest) {
                    args.insert(
                        0,
                        PyValue::Node(NodeRef {
                            name: first.into(),
                            index: Some(index),
                        }),
                    );
                    (Op::CallMethod, method.to_string(), args, kwargs)
                } else {
                    (Op::CallFunction, canonical_target(path), args, kwargs)
                }));
            }
            let ends = {
                let save = c.pos;
                c.spaces();
                let ends = c.at_end() || c.peek() == Some(b';');
                c.pos = save;
                ends
            };
            if ends {
                if let Some(attr) = path.strip_prefix("self.") {
                    return Ok(Some((
                        Op::GetAttr,
                        attr.to_string(),
                        Vec::new(),
                        Dict::new(),
                    )));
                }
                if let (Some(index), Some(attr)) = (self.table.position(first), rest) {
                    if !attr.contains('.') {
                        let node = PyValue::Node(NodeRef {
                            name: first.into(),
                            index: Some(index),
                        });
                        return Ok(Some(call(
                            "builtins.getattr".into(),
                            vec![node, PyValue::Str(attr.to_string())],
                        )));
                    }
                }
                // `name = target`: the placeholder printed as its target in the signature is
                // the node `name` (FX writes this when the two differ).
                let placeholder = self.table.position(path).filter(|&i| {
                    self.nodes.get(i).is_some_and(|n| {
                        n.op == Op::Placeholder && n.target.trim_start_matches('*') == path
                    })
                });
                if let Some(index) = placeholder {
                    if let Some(node) = self.nodes.get_mut(index) {
                        self.stale |= index < self.sent;
                        self.table.by_name.remove(node.name.as_str());
                        node.name = name.to_string();
                        self.table.by_name.insert(name, index);
                        return Ok(None);
                    }
                }
            }
            c.pos = start;
        }
        // An operator the printer writes as syntax: `a + b`, `a == b`, `a[b]`.
        let left = reader.operand(c, Place::Args)?;
        c.spaces();
        if c.eat("[") {
            let index = reader.value(c, Place::Args)?;
            c.spaces();
            c.expect("]", "']' closing the subscript")?;
            return Ok(Some(call(op_target("getitem"), vec![left, index])));
        }
        let Some(op) = binary_operator(c) else {
            return c.expected("a call `target(...)`, an operator expression or `self.attr`");
        };
        c.spaces();
        let right = reader.operand(c, Place::Args)?;
        Ok(Some(call(op_target(op), vec![left, right])))
    }

    /// The arguments of a call after its `(`: positional values, then `key = value`.
    fn call_args(&self, c: &mut Cursor<'s>) -> Result<(Vec<PyValue>, Dict), Expected> {
        let reader = ValueReader { names: &self.table };
        let mut args = Vec::new();
        let mut kwargs = Dict::new();
        loop {
            c.spaces();
            if c.eat(")") {
                return Ok((args, kwargs));
            }
            let save = c.pos;
            let keyword = match c.ident() {
                Some(key) => {
                    c.spaces();
                    if c.peek() == Some(b'=') && c.text.as_bytes().get(c.pos + 1) != Some(&b'=') {
                        c.pos += 1;
                        Some(key)
                    } else {
                        c.pos = save;
                        None
                    }
                }
                None => None,
            };
            let value = reader.value(c, Place::Args)?;
            match keyword {
                Some(key) => {
                    kwargs.insert(Key::from(key), value);
                }
                None if kwargs.is_empty() => args.push(value),
                None => return c.expected("a keyword argument (positional ones come first)"),
            }
            c.spaces();
            if c.eat(",") {
                continue;
            }
            if c.peek() != Some(b')') {
                return c.expected("',' or ')' in the argument list");
            }
        }
    }

    /// `return value`: the output node.
    fn output(&mut self, text: &'s str) -> Result<(), Expected> {
        let reader = ValueReader { names: &self.table };
        let mut c = Cursor::new(text);
        c.spaces();
        let value = if c.at_end() {
            PyValue::None
        } else {
            reader.value(&mut c, Place::Args)?
        };
        c.spaces();
        if !c.at_end() {
            return c.expected("the end of the `return` line");
        }
        // The output node is `output` unless a node already has the name (FX numbers it then).
        let mut name = "output".to_string();
        let mut n = 0;
        while self.table.by_name.contains_key(name.as_str()) {
            n += 1;
            name = format!("output_{n}");
        }
        self.send();
        self.nodes.push(Node {
            name,
            op: Op::Output,
            target: "output".into(),
            args: vec![value],
            kwargs: Default::default(),
            meta: Default::default(),
            alias: None,
            impure: None,
            repr: None,
        });
        Ok(())
    }

    /// The metadata the current summary comment gives a node, as the exporter encodes it.
    fn summary_meta(&self) -> Dict {
        let s = &self.summary;
        let mut meta = Dict::new();
        if let Some(trace) = &s.stack_trace {
            meta.insert(Key::from("stack_trace"), PyValue::Str(trace.clone()));
        }
        if let Some(custom) = &s.custom {
            meta.insert(Key::from("custom"), custom.clone());
        }
        if !s.truncated.is_empty() {
            meta.insert(
                Key::from(TRUNCATED_KEY),
                PyValue::List(s.truncated.iter().cloned().map(PyValue::Str).collect()),
            );
        }
        if let Some(policy) = &s.recompute {
            // `encode_meta` writes the `CheckpointPolicy` enum as `{"repr": str(value)}`.
            meta.insert(
                Key::from("recompute"),
                PyValue::Opaque(format!("CheckpointPolicy.{policy}")),
            );
        }
        if let Some(id) = &s.ac_graph_id {
            meta.insert(Key::from("ac_graph_id"), id.clone());
        }
        if s.backward {
            meta.insert(Key::from("autograd_backward"), PyValue::Bool(true));
        }
        meta
    }
}

/// The `val` an annotation gives.
fn annotation_value(text: &str) -> Option<PyValue> {
    match annotation(text) {
        Annotation::Tensor(value) => Some(value),
        Annotation::Sym(expr) => Some(PyValue::Sym(expr)),
        Annotation::Other => None,
    }
}

/// How many distinct annotations a graph's reader remembers (bounded memory).
const ANNOTATION_CACHE: usize = 4096;

fn call(target: String, args: Vec<PyValue>) -> (Op, String, Vec<PyValue>, Dict) {
    (Op::CallFunction, target, args, Dict::new())
}

fn op_target(name: &str) -> String {
    format!("_operator.{name}")
}

/// The binary operators `torch.fx` prints as syntax (`magic_methods`), longest first.
fn binary_operator(c: &mut Cursor<'_>) -> Option<&'static str> {
    const OPS: &[(&str, &str)] = &[
        ("**", "pow"),
        ("//", "floordiv"),
        ("<<", "lshift"),
        (">>", "rshift"),
        ("==", "eq"),
        ("!=", "ne"),
        ("<=", "le"),
        (">=", "ge"),
        ("+", "add"),
        ("-", "sub"),
        ("*", "mul"),
        ("/", "truediv"),
        ("%", "mod"),
        ("&", "and_"),
        ("|", "or_"),
        ("^", "xor"),
        ("<", "lt"),
        (">", "gt"),
    ];
    OPS.iter()
        .find(|(token, _)| c.eat(token))
        .map(|(_, name)| *name)
}

/// The dump's canonical target for a function as the printer names it: `torch.ops.ns.op.ov`
/// → `ns.op.ov` (an overload; `ns.op` for a packet), a builtin (`getattr`) → `builtins.getattr`,
/// anything else as printed (`torch.sym_max`, `_operator.not_`).
pub fn canonical_target(printed: &str) -> String {
    if let Some(op) = printed.strip_prefix("torch.ops.") {
        return op.to_string();
    }
    if !printed.contains('.') {
        return format!("builtins.{printed}");
    }
    printed.to_string()
}

/// Reads a summary comment (the text after `#`):
/// `[ Annotation: {...}][ recompute: NAME | ac_graph_id: N[ - NAME]] [Backward of forward node: ]File: F:L in FN, code: CODE`
/// or `... No stacktrace found for following nodes`. Another comment gives no metadata.
fn summary(comment: &str) -> Result<Summary, Expected> {
    let mut s = Summary::default();
    let mut c = Cursor::new(comment);
    if c.eat(" Annotation: ") {
        let start = c.pos;
        let reader = ValueReader { names: &NoNames };
        match c.peek() {
            Some(b'{') => match reader.value(&mut c, Place::Meta) {
                Ok(PyValue::Dict(map)) => {
                    let (custom, truncated) = truncation(std::sync::Arc::unwrap_or_clone(map));
                    s.custom = Some(custom);
                    s.truncated = truncated;
                }
                // A value `repr` wrote in a form that is no literal: keep the text.
                _ => {
                    c.pos = start;
                    let end = [
                        " recompute: ",
                        " ac_graph_id: ",
                        " Backward of forward node: ",
                        " File: ",
                        " No stacktrace found",
                    ]
                    .iter()
                    .filter_map(|m| comment.get(start..).and_then(|r| r.rfind(m)))
                    .min()
                    .unwrap_or(comment.len() - start);
                    let text = comment.get(start..start + end).unwrap_or("");
                    s.custom = Some(PyValue::Opaque(text.to_string()));
                    s.unreadable = true;
                    c.pos = start + end;
                }
            },
            _ => return c.expected("a dict after `Annotation: `"),
        }
    }
    if c.eat(" recompute: ") {
        s.recompute = Some(policy_name(&mut c)?);
    } else if c.eat(" ac_graph_id: ") {
        let start = c.pos;
        while c.peek().is_some_and(|b| b != b' ') {
            c.pos += 1;
        }
        let id = c.text.get(start..c.pos).unwrap_or("");
        s.ac_graph_id = Some(match id.parse::<i128>() {
            Ok(i) => PyValue::int(i),
            Err(_) => PyValue::Opaque(id.to_string()),
        });
        if c.eat(" - ") {
            s.recompute = Some(policy_name(&mut c)?);
        }
    }
    if !c.eat(" ") {
        return Ok(Summary::default());
    }
    if c.eat("Backward of forward node: ") {
        s.backward = true;
    }
    if let Some(frame) = c.rest().strip_prefix("File: ") {
        s.stack_trace = Some(stack_trace(frame).ok_or(Expected {
            at: c.pos,
            what: "`File: PATH:LINE in FUNCTION, code: CODE`".into(),
        })?);
    }
    Ok(s)
}

fn policy_name(c: &mut Cursor<'_>) -> Result<String, Expected> {
    match c.ident() {
        Some(name) => Ok(name.to_string()),
        None => c.expected("a checkpoint policy name (MUST_SAVE, PREFER_RECOMPUTE, ...)"),
    }
}

struct NoNames;

impl Names for NoNames {
    fn position(&self, _: &str) -> Option<usize> {
        None
    }
}

/// The printed `custom` dict, and the keys whose values PyTorch cut: `str(value)[:40] + "..."`
/// is a 43-character string ending in `...`, and no value that was printed whole has that
/// form (it would have been longer than 40 characters, so cut).
fn truncation(map: Dict) -> (PyValue, Vec<String>) {
    let truncated = map
        .iter()
        .filter(|(_, v)| match v {
            PyValue::Str(s) => s.ends_with("...") && s.chars().count() == ANNOTATION_LIMIT + 3,
            _ => false,
        })
        .map(|(k, _)| k.to_string())
        .collect();
    (PyValue::Dict(std::sync::Arc::new(map)), truncated)
}

/// `PATH:LINE in FUNCTION, code: CODE` as a one-frame Python traceback, the form of
/// `node.stack_trace` (from which `torch.fx` printed it).
fn stack_trace(frame: &str) -> Option<String> {
    // The path may hold ':' (a Windows drive); the line number is the last `:DIGITS in `.
    let bytes = frame.as_bytes();
    let mut at = None;
    for (i, b) in bytes.iter().enumerate() {
        if *b != b':' {
            continue;
        }
        let digits = bytes
            .get(i + 1..)?
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 && frame.get(i + 1 + digits..)?.starts_with(" in ") {
            at = Some((i, digits));
            break;
        }
    }
    let (colon, digits) = at?;
    let path = frame.get(..colon)?;
    let line = frame.get(colon + 1..colon + 1 + digits)?;
    let rest = frame.get(colon + 1 + digits + 4..)?;
    let (function, code) = rest.split_once(", code: ")?;
    Some(format!(
        "  File \"{path}\", line {line}, in {function}\n    {code}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(code: &str) -> Result<ParsedGraph, SyntaxError> {
        parse_graph(
            code.lines().enumerate().map(|(i, l)| (i + 1, l)),
            16,
            &mut (),
        )
    }

    fn body_of(lines: &[&str]) -> String {
        let mut text = String::from(
            "class GraphModule(torch.nn.Module):\n    def forward(self, p: \"f32[4, 8][8, 1]cpu\", q):\n",
        );
        for line in lines {
            text.push_str("        ");
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    fn one(line: &str) -> Node {
        let g = graph(&body_of(&[line, "return None"])).unwrap();
        assert_eq!(g.nodes.len(), 4, "{:?}", g.nodes);
        g.nodes[2].clone()
    }

    fn node(name: &str, index: usize) -> PyValue {
        PyValue::Node(NodeRef {
            name: name.into(),
            index: Some(index),
        })
    }

    #[test]
    fn placeholders_from_the_signature() {
        let g = graph(&body_of(&["return (p, q)"])).unwrap();
        let names: Vec<_> = g.nodes.iter().map(|n| (n.name.as_str(), n.op)).collect();
        assert_eq!(
            names,
            [
                ("p", Op::Placeholder),
                ("q", Op::Placeholder),
                ("output", Op::Output)
            ]
        );
        assert!(g.nodes[0].meta("val").is_some());
        assert!(g.nodes[1].meta("val").is_none());
        assert_eq!(
            g.nodes[2].args,
            vec![PyValue::List(vec![node("p", 0), node("q", 1)])]
        );
        let sym = graph(
            "class G(torch.nn.Module):\n    def forward(self, s: \"Sym(s0)\", x: \"f32[s0][1]cpu\" = None) -> \"f32[s0]\":\n        return x\n",
        )
        .unwrap();
        assert_eq!(sym.nodes[0].meta("val"), Some(&PyValue::Sym("s0".into())));
        assert_eq!(sym.nodes[1].args, vec![PyValue::None]);
        assert_eq!(sym.nodes[2].args, vec![node("x", 1)]);
    }

    #[test]
    fn op_overloads_packets_and_functions() {
        let n = one("mm: \"f32[4, 4][4, 1]cpu\" = torch.ops.aten.mm.default(p, p);  p = None");
        assert_eq!(
            (n.op, n.target.as_str()),
            (Op::CallFunction, "aten.mm.default")
        );
        assert_eq!(n.args, vec![node("p", 0), node("p", 0)]);
        let n = one("rs = torch.ops._c10d_functional.reduce_scatter_tensor(p, 'avg', 4, '0')");
        assert_eq!(n.target, "_c10d_functional.reduce_scatter_tensor");
        assert_eq!(n.args[1], PyValue::Str("avg".into()));
        assert!(n.meta("val").is_none());
        assert_eq!(one("m = torch.sym_max(q, 2)").target, "torch.sym_max");
        assert_eq!(one("g = getattr(q, 'shape')").target, "builtins.getattr");
        assert_eq!(
            one("h = torch.ops.higher_order.wrap(p)").target,
            "higher_order.wrap"
        );
    }

    #[test]
    fn keyword_arguments() {
        let n = one("full: \"f32[][]cpu\" = torch.ops.aten.full.default([], 0.0, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)");
        assert_eq!(n.args, vec![PyValue::List(vec![]), PyValue::Float(0.0)]);
        let kw: Vec<_> = n
            .kwargs
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        assert_eq!(
            kw,
            [
                ("dtype", PyValue::Dtype("torch.float32".into())),
                ("layout", PyValue::Opaque("torch.strided".into())),
                ("device", PyValue::Device("cpu".into())),
                ("pin_memory", PyValue::Bool(false)),
            ]
        );
        let out = one("ag = torch.ops._c10d_functional.all_gather_into_tensor_out.default(p, 4, '0', out = q)");
        assert_eq!(out.kwargs.get("out"), Some(&node("q", 1)));
        assert!(graph(&body_of(&[
            "x = torch.ops.aten.f.default(a = p, q)",
            "return None"
        ]))
        .is_err());
    }

    #[test]
    fn getitem_operators_methods_modules_and_attributes() {
        let n = one("getitem: \"f32[4][1]cpu\" = q[0]");
        assert_eq!(n.target, "_operator.getitem");
        assert_eq!(n.args, vec![node("q", 1), PyValue::int(0)]);
        let n = one("add = q + 1");
        assert_eq!(
            (n.target.as_str(), n.args.clone()),
            ("_operator.add", vec![node("q", 1), PyValue::int(1)])
        );
        assert_eq!(one("f = q // 2").target, "_operator.floordiv");
        assert_eq!(one("e = q == p").target, "_operator.eq");
        assert_eq!(one("le = q <= p").target, "_operator.le");
        let n = one("neg = -q");
        assert_eq!(
            (n.target.as_str(), n.args.clone()),
            ("_operator.neg", vec![node("q", 1)])
        );
        let n = one("v = p.view(4, 8)");
        assert_eq!((n.op, n.target.as_str()), (Op::CallMethod, "view"));
        assert_eq!(n.args, vec![node("p", 0), PyValue::int(4), PyValue::int(8)]);
        let n = one("sub = self.sub.inner(p)");
        assert_eq!((n.op, n.target.as_str()), (Op::CallModule, "sub.inner"));
        let n = one("_tensor_constant0 = self._tensor_constant0");
        assert_eq!(
            (n.op, n.target.as_str()),
            (Op::GetAttr, "_tensor_constant0")
        );
        let n = one("shape = p.shape");
        assert_eq!(
            (n.target.as_str(), n.args.clone()),
            (
                "builtins.getattr",
                vec![node("p", 0), PyValue::Str("shape".into())]
            )
        );
    }

    #[test]
    fn summary_comments_give_metadata_to_the_nodes_after_them() {
        let g = graph(&body_of(&[
            "# Annotation: {'distributed.comm_semantics': \"{'version': 1, 'role': 'fsdp.param_unsha...\", 'short': 7} ac_graph_id: 9 - PREFER_RECOMPUTE Backward of forward node: File: /tmp/m.py:23 in compute, code: return x.redistribute(p)",
            "a = torch.ops.aten.relu.default(p)",
            "b = torch.ops.aten.relu.default(a)",
            "",
            "# No stacktrace found for following nodes",
            "c = torch.ops.aten.relu.default(b)",
            "return c",
        ]))
        .unwrap();
        let a = &g.nodes[2];
        assert_eq!(
            a.meta("stack_trace"),
            Some(&PyValue::Str(
                "  File \"/tmp/m.py\", line 23, in compute\n    return x.redistribute(p)\n".into()
            ))
        );
        assert_eq!(a.meta("autograd_backward"), Some(&PyValue::Bool(true)));
        assert_eq!(a.meta("ac_graph_id"), Some(&PyValue::int(9)));
        assert_eq!(
            a.meta("recompute"),
            Some(&PyValue::Opaque("CheckpointPolicy.PREFER_RECOMPUTE".into()))
        );
        let custom = a.meta("custom").and_then(PyValue::as_dict).unwrap();
        assert_eq!(custom.get("short"), Some(&PyValue::int(7)));
        assert_eq!(
            a.meta(TRUNCATED_KEY),
            Some(&PyValue::List(vec![PyValue::Str(
                "distributed.comm_semantics".into()
            )]))
        );
        assert_eq!(g.nodes[3].meta, a.meta);
        assert!(g.nodes[4].meta.is_empty());
        assert_eq!(g.truncated, ["a", "b"]);
        let complete = graph(&body_of(&[
            "# Annotation: {'pp': {'stage': 1}} recompute: MUST_SAVE File: C:\\m.py:3 in f, code: y",
            "a = torch.ops.aten.relu.default(p)",
            "return a",
        ]))
        .unwrap();
        let a = &complete.nodes[2];
        assert!(a.meta(TRUNCATED_KEY).is_none());
        assert_eq!(
            a.meta("recompute"),
            Some(&PyValue::Opaque("CheckpointPolicy.MUST_SAVE".into()))
        );
        assert_eq!(
            a.meta("stack_trace"),
            Some(&PyValue::Str(
                "  File \"C:\\m.py\", line 3, in f\n    y\n".into()
            ))
        );
    }

    #[test]
    fn submodules_and_meta_blocks_are_skipped() {
        let mut text = body_of(&[
            "\"\"\"",
            "val: 'x'",
            "\"\"\"",
            "a = torch.ops.aten.relu.default(p)",
            "return a",
        ]);
        text.push_str("\n    class submod_0(torch.nn.Module):\n        def forward(self, x):\n            return x\n");
        let g = graph(&text).unwrap();
        assert_eq!(g.nodes.len(), 4);
        assert_eq!(g.submodules, ["submod_0"]);
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let e = graph(&body_of(&[
            "a = torch.ops.aten.relu.default(zz)",
            "return a",
        ]))
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(
            e.expected,
            "a node defined earlier, a number, a string or a constant"
        );
        assert_eq!(e.found, "\"zz)\"");
        assert_eq!(e.column, 41);
        let e = graph(&body_of(&["a = torch.ops.aten.relu.default(p", "return a"])).unwrap_err();
        assert_eq!(e.expected, "',' or ')' in the argument list");
        let e = graph(&body_of(&["a = torch.ops.aten.relu.default(p)"])).unwrap_err();
        assert_eq!(e.expected, "the graph's `return` line");
        let e = graph(&body_of(&[
            "p = torch.ops.aten.relu.default(q)",
            "return p",
        ]))
        .unwrap_err();
        assert!(e.expected.contains("already defined"), "{e:?}");
        let e = graph(&body_of(&[
            "return p",
            "a = torch.ops.aten.relu.default(p)",
        ]))
        .unwrap_err();
        assert_eq!(e.expected, "nothing after the `return` line");
        let e = graph("    def forward(self):\n        return None\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(graph("").is_err());
        assert!(graph("class G(torch.nn.Module):\n").is_err());
    }

    #[test]
    fn canonical_targets() {
        assert_eq!(
            canonical_target("torch.ops.aten.mm.default"),
            "aten.mm.default"
        );
        assert_eq!(canonical_target("getattr"), "builtins.getattr");
        assert_eq!(canonical_target("torch.sym_sum"), "torch.sym_sum");
    }
}
