//! Writing a [`Dump`] as a graph dump (`graph-dump-v1.md`), in the exporter's layout (one
//! top-level key per line, one node per line), so a graph read from a trace log can be saved
//! and opened anywhere a dump is. Reading the text back gives the same nodes.

use crate::dump::{Dump, Node, FORMAT};
use crate::value::PyValue;
use serde_json::{Map, Value as J};

/// The dump as JSON text.
pub fn write_dump(dump: &Dump) -> String {
    let mut lines = vec![
        format!("{}: {}", J::from("format"), J::from(FORMAT)),
        format!("{}: 1", J::from("version")),
    ];
    let mut field = |key: &str, value: J| lines.push(format!("{}: {}", J::from(key), value));
    if let Some(source) = &dump.source {
        field("source", source.clone());
    }
    if let Some(ranks) = &dump.group_ranks {
        field("group_ranks", meta(ranks));
    }
    if !dump.modules.is_empty() {
        let modules = dump
            .modules
            .iter()
            .map(|m| {
                let mut o = Map::new();
                o.insert("fqn".into(), J::from(m.fqn.clone()));
                o.insert("type".into(), J::from(m.type_name.clone()));
                J::Object(o)
            })
            .collect();
        field("modules", J::Array(modules));
    }
    if !dump.state_fqns.is_empty() {
        field("state_fqns", J::from(dump.state_fqns.clone()));
    }
    if let Some(planner) = &dump.planner {
        field("planner", planner.clone());
    }
    if let Some(objects) = &dump.script_objects {
        field("script_objects", objects.clone());
    }
    let nodes: Vec<String> = dump.nodes.iter().map(|n| node(n).to_string()).collect();
    lines.push(if nodes.is_empty() {
        "\"nodes\": []".to_string()
    } else {
        format!("\"nodes\": [\n{}\n]", nodes.join(",\n"))
    });
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

fn node(n: &Node) -> J {
    let mut o = Map::new();
    o.insert("name".into(), J::from(n.name.clone()));
    o.insert("op".into(), J::from(n.op.as_str()));
    o.insert("target".into(), J::from(n.target.as_str()));
    o.insert("args".into(), J::Array(n.args.iter().map(arg).collect()));
    o.insert(
        "kwargs".into(),
        J::Object(
            n.kwargs
                .iter()
                .map(|(k, v)| (k.to_string(), arg(v)))
                .collect(),
        ),
    );
    o.insert(
        "meta".into(),
        J::Object(
            n.meta
                .iter()
                .map(|(k, v)| (k.to_string(), meta(v)))
                .collect(),
        ),
    );
    if let Some(alias) = n.alias {
        o.insert("alias".into(), J::from(alias));
    }
    if let Some(impure) = n.impure {
        o.insert("impure".into(), J::from(impure));
    }
    if let Some(r) = &n.repr {
        let mut repr = Map::new();
        repr.insert("target".into(), J::from(r.target()));
        repr.insert("args".into(), J::from(r.args()));
        repr.insert("kwargs".into(), J::from(r.kwargs()));
        o.insert("repr".into(), J::Object(repr));
    }
    J::Object(o)
}

fn one(key: &str, value: J) -> J {
    let mut o = Map::new();
    o.insert(key.into(), value);
    J::Object(o)
}

/// Shared by both encodings: everything but dicts, dtypes and tensors.
fn scalar(value: &PyValue) -> Option<J> {
    Some(match value {
        PyValue::None => J::Null,
        PyValue::Bool(b) => J::from(*b),
        PyValue::Int(i) => match (i64::try_from(i.get()), u64::try_from(i.get())) {
            (Ok(i), _) => J::from(i),
            (_, Ok(u)) => J::from(u),
            _ => one("repr", J::from(i.to_string())),
        },
        PyValue::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            // Non-finite floats are written `{"repr": "inf"}`.
            None => one("repr", J::from(crate::pyjson::float_repr(*f))),
        },
        PyValue::Str(s) => J::from(s.clone()),
        PyValue::Node(r) => one("node", J::from(r.name.to_string())),
        PyValue::Device(d) => one("device", J::from(d.clone())),
        PyValue::Sym(s) => one("sym", J::from(s.clone())),
        PyValue::Opaque(s) => one("repr", J::from(s.clone())),
        PyValue::List(_) | PyValue::Dict(_) | PyValue::Dtype(_) | PyValue::Tensor(_) => {
            return None
        }
    })
}

/// An argument: a dtype as `{"dtype": ...}`, a dict (which the exporter cannot encode as an
/// argument) as its `repr`.
fn arg(value: &PyValue) -> J {
    if let Some(j) = scalar(value) {
        return j;
    }
    match value {
        PyValue::List(items) => J::Array(items.iter().map(arg).collect()),
        PyValue::Dtype(d) => one("dtype", J::from(d.clone())),
        PyValue::Tensor(summary) => one("tensor", meta(summary)),
        other => one("repr", J::from(other.py_repr())),
    }
}

/// A metadata value: dicts as objects, a dtype as its plain string, a tensor as
/// `{"tensor": {...}}`.
fn meta(value: &PyValue) -> J {
    if let Some(j) = scalar(value) {
        return j;
    }
    match value {
        PyValue::List(items) => J::Array(items.iter().map(meta).collect()),
        PyValue::Dict(map) => {
            J::Object(map.iter().map(|(k, v)| (k.to_string(), meta(v))).collect())
        }
        PyValue::Dtype(d) => J::from(d.clone()),
        PyValue::Tensor(summary) => one("tensor", meta(summary)),
        other => one("repr", J::from(other.py_repr())),
    }
}
