//! The graph signature (`graph_signature`): SHA-256 over each node's name, `str(target)`,
//! `str(args)`, `str(kwargs)` and planning metadata, exactly as the reference computes it, so a
//! plan can be matched to the graph snapshot it was made from — and to a report the Python
//! planner logged. The reader hashes each node as it reads it ([`crate::Dump::signature`]),
//! while the node is still in cache; [`graph_signature`] recomputes it from any graph.

use crate::dump::Node;
use crate::graph::Graph;
use crate::pyjson;
use crate::value::{py_repr_str, PyValue};
use std::borrow::Cow;

/// Metadata keys the signature covers: every `fsdp_*` key and these.
const SIGNATURE_KEYS: [&str; 5] = [
    "comm_type",
    "comm_group",
    "param_name",
    "state_idx",
    "autograd_backward",
];

/// `graph_signature`: SHA-256 over each node's name, target, args, kwargs and planning
/// metadata, so a plan can be matched to the graph snapshot it was made from.
pub fn graph_signature(graph: &Graph) -> String {
    let mut hasher = SignatureHasher::default();
    for node in graph.nodes() {
        hasher.add(node);
    }
    hasher.finish()
}

/// `graph_signature`, streamed: each node's record is hashed as it is visited, in graph order,
/// and the records' JSON is never held whole.
pub struct SignatureHasher {
    hasher: sha2::Sha256,
    buffer: String,
    count: usize,
}

impl Default for SignatureHasher {
    fn default() -> Self {
        use sha2::Digest;
        let mut buffer = String::with_capacity(1 << 16);
        buffer.push('[');
        SignatureHasher {
            hasher: sha2::Sha256::new(),
            buffer,
            count: 0,
        }
    }
}

impl SignatureHasher {
    /// Adds the next node's record: `(name, str(target), str(args), str(kwargs), metadata)`.
    pub fn add(&mut self, node: &Node) {
        use sha2::Digest;
        if self.count > 0 {
            self.buffer.push_str(", ");
        }
        self.count += 1;
        let (target, args, kwargs) = python_strings(node);
        self.buffer.push('[');
        for text in [node.name.as_str(), &target, &args, &kwargs] {
            pyjson::write_string(&mut self.buffer, text);
            self.buffer.push_str(", ");
        }
        let mut metadata: Vec<(&str, &PyValue)> = node
            .meta
            .decoded_entries()
            .filter(|(k, _)| k.starts_with("fsdp_") || SIGNATURE_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        pyjson::write_dict_entries(&mut self.buffer, &mut metadata);
        self.buffer.push(']');
        if self.buffer.len() >= 1 << 15 {
            self.hasher.update(self.buffer.as_bytes());
            self.buffer.clear();
        }
    }

    /// The hex digest of all records added.
    pub fn finish(mut self) -> String {
        use sha2::Digest;
        self.buffer.push(']');
        self.hasher.update(self.buffer.as_bytes());
        pyjson::hex(&self.hasher.finalize())
    }
}

/// `str(node.target)`, `str(node.args)`, `str(node.kwargs)`: from the dump's `repr` field
/// when present, else rendered as Python would print them (best effort: a dump cannot say
/// whether an array was a tuple or a list).
pub fn python_strings(node: &Node) -> (Cow<'_, str>, Cow<'_, str>, Cow<'_, str>) {
    if let Some(repr) = &node.repr {
        return (
            Cow::Borrowed(repr.target()),
            Cow::Borrowed(repr.args()),
            Cow::Borrowed(repr.kwargs()),
        );
    }
    let target = python_target_str(node);
    let args = PyValue::py_repr_tuple(&node.args);
    let kwargs = {
        let mut out = String::from("{");
        for (i, (k, v)) in node.kwargs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&py_repr_str(k));
            out.push_str(": ");
            out.push_str(&v.py_repr());
        }
        out.push('}');
        out
    };
    (Cow::Owned(target), Cow::Owned(args), Cow::Owned(kwargs))
}

/// Namespaces of `torch.ops` whose `str()` is the canonical name itself.
const OP_NAMESPACES: &[&str] = &[
    "aten",
    "prims",
    "_c10d_functional",
    "c10d_functional",
    "c10d",
    "inductor",
    "higher_order",
    "profiler",
    "quantized",
    "symm_mem",
    "_dtensor",
];

fn python_target_str(node: &Node) -> String {
    use crate::dump::Op;
    if node.op != Op::CallFunction {
        return node.target.to_string();
    }
    if let Some(name) = node.target.strip_prefix("_operator.") {
        return format!("<built-in function {name}>");
    }
    let namespace = node.target.split('.').next().unwrap_or_default();
    if OP_NAMESPACES.contains(&namespace) {
        return node.target.to_string();
    }
    let last = node.target.rsplit('.').next().unwrap_or(&node.target);
    format!("<function {last}>")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader's signature (hashed while reading) equals one recomputed from the graph, on
    /// both reading paths.
    #[test]
    fn signature_hashed_while_reading_matches_recomputation() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec {
            layers: 2,
            degree: 2,
            hidden: 8,
        });
        let streamed = crate::read_dump(text.as_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let from_value = crate::dump::read_document(value).unwrap();
        let recomputed = graph_signature(&Graph::new(streamed.clone()));
        assert_eq!(streamed.signature.as_deref(), Some(recomputed.as_str()));
        assert_eq!(from_value.signature.as_deref(), Some(recomputed.as_str()));
        let mut by_hand = streamed;
        by_hand.signature = None;
        let planner = crate::planner::Planner::new(Graph::new(by_hand));
        let plan = planner.plan(&crate::PlannerArgs::default()).unwrap();
        assert_eq!(plan.signature, recomputed);
    }
}
