//! Reading graph dumps (`graph-dump-v1.md`): bytes in, a validated [`Dump`] or a
//! [`DumpError`] that names the node and the field out. Unknown keys are accepted.

use crate::value::{kind_of, Context, NodeRef, PyValue};
use indexmap::IndexMap;
use serde_json::Value as J;
use std::collections::HashMap;
use std::fmt;

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
    /// Problems that do not stop reading (dangling references in metadata).
    pub warnings: Vec<String>,
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
    pub target: String,
    pub args: Vec<PyValue>,
    pub kwargs: IndexMap<String, PyValue>,
    pub meta: IndexMap<String, PyValue>,
    /// Whether the result aliases an input without writing it; `None` when not recorded.
    pub alias: Option<bool>,
    /// `node.is_impure()` in the exporting PyTorch; `None` when not recorded.
    pub impure: Option<bool>,
    /// Python's `str(target)`, `str(args)`, `str(kwargs)` when recorded.
    pub repr: Option<NodeRepr>,
}

/// Python's own renderings of a node, used verbatim by the graph signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRepr {
    pub target: String,
    pub args: String,
    pub kwargs: String,
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
        self.meta.get(key).and_then(PyValue::as_str)
    }

    /// `bool(node.meta.get(key, False))`.
    pub fn meta_flag(&self, key: &str) -> bool {
        self.meta.get(key).is_some_and(PyValue::truthy)
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
                "invalid dump: not valid JSON at line {line}, column {column}: {message}"
            ),
            DumpError::Document { field, message } => {
                write!(f, "invalid dump: field \"{field}\": {message}")
            }
            DumpError::Node {
                index,
                name,
                field,
                message,
            } => match name {
                Some(name) => write!(
                    f,
                    "invalid dump: node {index} ({name:?}), field \"{field}\": {message}"
                ),
                None => write!(
                    f,
                    "invalid dump: node {index}, field \"{field}\": {message}"
                ),
            },
        }
    }
}

impl std::error::Error for DumpError {}

/// Reads a dump from its bytes (JSON, or gzip-compressed JSON recognised by its magic bytes).
pub fn read_dump(bytes: &[u8]) -> Result<Dump, DumpError> {
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

/// Decompresses gzip (possibly multi-member) data.
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, DumpError> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| DumpError::Gzip {
            message: e.to_string(),
        })?;
    Ok(out)
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

/// Validates a parsed JSON document as a dump.
pub fn read_document(document: J) -> Result<Dump, DumpError> {
    let J::Object(mut top) = document else {
        return Err(document_error(
            "(document)",
            format!("a dump is a JSON object, found {}", kind_of(&document)),
        ));
    };
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
    let nodes = match top.shift_remove("nodes") {
        Some(J::Array(nodes)) => nodes,
        Some(other) => {
            return Err(document_error(
                "nodes",
                format!("expected an array of nodes, found {}", kind_of(&other)),
            ))
        }
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
    let (nodes, warnings) = read_nodes(nodes)?;
    Ok(Dump {
        nodes,
        group_ranks,
        modules,
        state_fqns,
        source,
        planner,
        warnings,
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
        let node = read_node(i, item, &index)?;
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
    for node in &mut nodes {
        let owner = node.name.clone();
        for (key, value) in node.meta.iter_mut() {
            resolve_meta_refs(value, &index, &mut |name| {
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
    index: &HashMap<String, usize>,
    dangling: &mut dyn FnMut(&str),
) {
    match value {
        PyValue::Node(r) => {
            r.index = index.get(&r.name).copied();
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
            for item in map.values_mut() {
                resolve_meta_refs(item, index, dangling);
            }
        }
        _ => {}
    }
}

fn read_node(i: usize, item: J, index: &HashMap<String, usize>) -> Result<Node, DumpError> {
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
        resolve_arg_refs(value, index, op == Op::Output, &mut String::from(field))
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
                kwargs.insert(key, decoded);
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
                meta.insert(key, decoded);
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
            Some(NodeRepr {
                target: text("target")?,
                args: text("args")?,
                kwargs: text("kwargs")?,
            })
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
        target,
        args,
        kwargs,
        meta,
        alias,
        impure,
        repr,
    })
}

fn resolve_arg_refs(
    value: &mut PyValue,
    index: &HashMap<String, usize>,
    is_output: bool,
    path: &mut String,
) -> Result<(), (String, String)> {
    match value {
        PyValue::Node(r) => match index.get(&r.name) {
            Some(&position) => {
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
                resolve_arg_refs(item, index, is_output, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        PyValue::Dict(map) => {
            for (key, item) in map.iter_mut() {
                let len = path.len();
                path.push_str(&format!("[{key:?}]"));
                resolve_arg_refs(item, index, is_output, path)?;
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
