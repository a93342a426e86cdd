//! The graph view over a dump: node order, inputs, users, and the helper predicates the
//! planner imports (`planner-helpers.md`), computed once per node.

use crate::dump::{Dump, Node, Op};
use crate::value::PyValue;
use std::collections::HashMap;

/// Graph position of a node (its index in `nodes`).
pub type NodeId = usize;

/// Functional collective starts (`is_collective`).
const COLLECTIVE_OPS: &[&str] = &[
    "all_gather_into_tensor",
    "all_gather_into_tensor_out",
    "all_gather_into_tensor_coalesced",
    "reduce_scatter_tensor",
    "reduce_scatter_tensor_out",
    "reduce_scatter_tensor_coalesced",
    "all_reduce",
    "all_reduce_",
    "all_reduce_coalesced",
    "all_reduce_coalesced_",
    "all_to_all_single",
    "broadcast",
    "broadcast_",
];
const COLLECTIVE_NAMESPACES: &[&str] = &["_c10d_functional", "c10d_functional"];

/// aten ops that only view their input (`is_view` without an `alias` field).
const VIEW_OPS: &[&str] = &[
    "view",
    "reshape",
    "t",
    "transpose",
    "permute",
    "expand",
    "slice",
    "select",
    "split",
    "split_with_sizes",
    "chunk",
    "unsqueeze",
    "squeeze",
    "as_strided",
    "alias",
    "unflatten",
    "flatten",
    "narrow",
    "diagonal",
    "unbind",
    "view_as",
    "expand_as",
    "detach",
];

/// Ops that only reshape a reduce-scatter's input (`rs_layout_preparation`).
const RS_LAYOUT_OPS: &[(&str, &str)] = &[
    ("aten", "view"),
    ("aten", "reshape"),
    ("aten", "_unsafe_view"),
    ("aten", "t"),
    ("aten", "transpose"),
    ("aten", "permute"),
    ("aten", "contiguous"),
    ("aten", "clone"),
    ("aten", "flatten"),
    ("prims", "convert_element_type"),
    ("aten", "_to_copy"),
];

/// The FSDP pass's storage release function, matched by its last dotted component.
pub const FREE_TENSOR_STORAGE: &str = "_free_tensor_storage";

/// Facts about one node that the planner and classifier ask again and again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub collective: bool,
    pub wait: bool,
    pub view: bool,
    pub barrier: bool,
}

/// A graph dump with its derived structure.
#[derive(Clone, Debug)]
pub struct Graph {
    pub dump: Dump,
    by_name: HashMap<String, NodeId>,
    /// Distinct input nodes of each node (args then kwargs), as `node.all_input_nodes`.
    inputs: Vec<Vec<NodeId>>,
    /// Users of each node in graph order, as `node.users`.
    users: Vec<Vec<NodeId>>,
    facts: Vec<NodeFacts>,
}

impl Graph {
    pub fn new(dump: Dump) -> Graph {
        let count = dump.nodes.len();
        let mut by_name = HashMap::with_capacity(count);
        let mut inputs = Vec::with_capacity(count);
        let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); count];
        let mut facts = Vec::with_capacity(count);
        for (id, node) in dump.nodes.iter().enumerate() {
            by_name.insert(node.name.clone(), id);
            let mut own = Vec::new();
            for value in node.args.iter().chain(node.kwargs.values()) {
                collect_refs(value, &mut own);
            }
            for &input in &own {
                if input < count {
                    users[input].push(id);
                }
            }
            inputs.push(own);
            facts.push(node_facts(node));
        }
        Graph {
            dump,
            by_name,
            inputs,
            users,
            facts,
        }
    }

    pub fn nodes(&self) -> &[Node] {
        &self.dump.nodes
    }

    pub fn len(&self) -> usize {
        self.dump.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dump.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.dump.nodes[id]
    }

    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn inputs(&self, id: NodeId) -> &[NodeId] {
        &self.inputs[id]
    }

    pub fn users(&self, id: NodeId) -> &[NodeId] {
        &self.users[id]
    }

    pub fn facts(&self, id: NodeId) -> NodeFacts {
        self.facts[id]
    }

    pub fn is_collective(&self, id: NodeId) -> bool {
        self.facts[id].collective
    }

    pub fn is_view(&self, id: NodeId) -> bool {
        self.facts[id].view
    }

    pub fn is_barrier(&self, id: NodeId) -> bool {
        self.facts[id].barrier
    }

    /// `is_op(node, c10d.wait_tensor)`.
    pub fn is_wait(&self, id: NodeId) -> bool {
        self.facts[id].wait
    }

    /// Real consumers of a wait: users reached through chains of views only (`_consumers`).
    /// Sorted by graph position.
    pub fn consumers(&self, wait: NodeId) -> Vec<NodeId> {
        let mut consumers = Vec::new();
        let mut seen = vec![wait];
        let mut stack = vec![wait];
        while let Some(current) = stack.pop() {
            for &user in &self.users[current] {
                if self.facts[user].view {
                    if !seen.contains(&user) {
                        seen.push(user);
                        stack.push(user);
                    }
                } else {
                    consumers.push(user);
                }
            }
        }
        consumers.sort_unstable();
        consumers.dedup();
        consumers
    }

    /// The nodes that only reshape a reduce-scatter's input (`rs_layout_preparation`).
    pub fn rs_layout_preparation(&self, rs: NodeId) -> Vec<NodeId> {
        let mut chain = Vec::new();
        let mut previous = rs;
        let mut current = self.node(rs).args.first().and_then(crate::dump::node_index);
        while let Some(id) = current {
            let node = self.node(id);
            let only_user = self.users[id].len() == 1 && self.users[id][0] == previous;
            let reshapes = node.op == Op::CallFunction
                && RS_LAYOUT_OPS
                    .iter()
                    .any(|(ns, op)| target_is_op(&node.target, ns, op));
            if !(only_user && reshapes) || chain.contains(&id) {
                break;
            }
            chain.push(id);
            previous = id;
            current = node.args.iter().find_map(crate::dump::node_index);
        }
        chain
    }
}

fn collect_refs(value: &PyValue, out: &mut Vec<NodeId>) {
    match value {
        PyValue::Node(r) => {
            if let Some(index) = r.index {
                if !out.contains(&index) {
                    out.push(index);
                }
            }
        }
        PyValue::List(items) => items.iter().for_each(|item| collect_refs(item, out)),
        PyValue::Dict(map) => map.values().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

/// A canonical target split as `namespace.op[.overload]`, for ops only.
pub fn split_op(target: &str) -> Option<(&str, &str, Option<&str>)> {
    let mut parts = target.split('.');
    let namespace = parts.next()?;
    let op = parts.next()?;
    let overload = parts.next();
    if parts.next().is_some() || namespace.is_empty() || op.is_empty() {
        return None;
    }
    Some((namespace, op, overload))
}

/// Whether `target` is op `namespace.op`: the packet or any of its overloads.
pub fn target_is_op(target: &str, namespace: &str, op: &str) -> bool {
    matches!(split_op(target), Some((ns, name, _)) if ns == namespace && name == op)
}

/// `is_op(node, namespace.op)`.
pub fn is_op(node: &Node, namespace: &str, op: &str) -> bool {
    node.op == Op::CallFunction && target_is_op(&node.target, namespace, op)
}

/// Whether the node calls the FSDP pass's `_free_tensor_storage`.
pub fn is_free_tensor_storage(node: &Node) -> bool {
    node.op == Op::CallFunction && node.target.rsplit('.').next() == Some(FREE_TENSOR_STORAGE)
}

/// The collective's op name (`all_gather_into_tensor`, ...) when the node is a collective start.
pub fn collective_op(node: &Node) -> Option<&str> {
    if node.op != Op::CallFunction {
        return None;
    }
    let (namespace, op, _) = split_op(&node.target)?;
    (COLLECTIVE_NAMESPACES.contains(&namespace) && COLLECTIVE_OPS.contains(&op)).then_some(op)
}

fn is_wait_target(target: &str) -> bool {
    COLLECTIVE_NAMESPACES
        .iter()
        .any(|ns| target_is_op(target, ns, "wait_tensor"))
}

fn node_facts(node: &Node) -> NodeFacts {
    if node.op != Op::CallFunction {
        return NodeFacts::default();
    }
    let collective = collective_op(node).is_some();
    let wait_any = is_wait_target(&node.target);
    let view = match node.alias {
        Some(alias) => alias,
        None => {
            node.target == "_operator.getitem"
                || VIEW_OPS
                    .iter()
                    .any(|op| target_is_op(&node.target, "aten", op))
        }
    };
    let barrier = !collective
        && !wait_any
        && match node.impure {
            Some(impure) => impure,
            None => effectful_by_name(&node.target),
        };
    NodeFacts {
        collective,
        wait: target_is_op(&node.target, "_c10d_functional", "wait_tensor"),
        view,
        barrier,
    }
}

/// `is_barrier`'s name-based fallback for dumps without the `impure` field.
fn effectful_by_name(target: &str) -> bool {
    if target.starts_with("higher_order.with_effects") || target.contains("record_function") {
        return true;
    }
    match split_op(target) {
        Some((namespace, op, _)) => {
            (namespace == "aten" && op.ends_with('_'))
                || matches!(
                    (namespace, op),
                    ("aten", "copy_")
                        | ("inductor", "resize_storage_bytes_")
                        | ("aten", "set_")
                        | ("aten", "_assert_async")
                        | ("aten", "record_stream")
                )
                || namespace == "profiler"
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_match_packets_and_overloads() {
        assert!(target_is_op(
            "_c10d_functional.all_gather_into_tensor",
            "_c10d_functional",
            "all_gather_into_tensor"
        ));
        assert!(target_is_op(
            "_c10d_functional.all_gather_into_tensor.default",
            "_c10d_functional",
            "all_gather_into_tensor"
        ));
        assert!(!target_is_op(
            "_c10d_functional.all_gather_into_tensor_out.default",
            "_c10d_functional",
            "all_gather_into_tensor"
        ));
        assert!(!target_is_op("a.b.c.d", "a", "b"));
    }

    #[test]
    fn name_fallback_for_effects() {
        assert!(effectful_by_name("aten.add_.Tensor"));
        assert!(effectful_by_name("inductor.resize_storage_bytes_.default"));
        assert!(effectful_by_name(
            "profiler._record_function_enter_new.default"
        ));
        assert!(effectful_by_name("higher_order.with_effects"));
        assert!(!effectful_by_name("aten.mm.default"));
        assert!(!effectful_by_name(
            "hyper_parallel.compile.passes.parallel.fsdp_pass._free_tensor_storage"
        ));
    }
}
