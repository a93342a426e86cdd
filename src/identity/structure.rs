//! Whole-graph structural questions, and torch Inductor's FSDP predicates built on them.
//!
//! The structural verdicts are, rule for rule, torch 2.15's functions (the Python test suite
//! calls them on the same graphs and requires the same answer for every collective):
//!
//! - all-gather: `fx_passes/fsdp.py: is_fsdp_all_gather` (which `bucketing.py:
//!   is_fsdp_all_gather` delegates to): only `_c10d_functional.all_gather_into_tensor` and its
//!   `_out` form; a backward walk over `all_input_nodes` must meet exactly one `placeholder`
//!   (`get_attr` does not count).
//! - reduce-scatter: `fx_passes/fsdp.py: is_fsdp_reduce_scatter_wait`, the filter Inductor's
//!   FSDP bucketing (`bucket_fsdp_reduce_scatter`, `pre_bucket_fsdp_collectives`) applies to
//!   each `wait_tensor` of a `_c10d_functional.reduce_scatter_tensor`: the wait has users, and
//!   every node reached forward from it, the output aside, has exactly one input node. The
//!   chain need not reach the output (wait → abs → sum, unused, passes). `bucketing.py:
//!   is_fsdp_reduce_scatter`, used only by the manual overlap scheduler, starts from the
//!   reduce-scatter itself and so also accepts a wait without users; we follow `fsdp.py`,
//!   which is what buckets.
//! - all-reduce: the group rule of `fx_passes/fsdp.py: identify_fsdp_groups` and
//!   `bucket_fsdp_all_reduce`: a `_c10d_functional.all_reduce` whose `group_name` is the group
//!   of an all-gather with a structural FSDP verdict (never of an explicit role).
//!
//! Everything else gets no verdict: coalesced forms, `_c10d_functional_autograd`, the legacy
//! `c10d_functional` namespace and the non-functional c10d ops are not what those predicates
//! test.
//!
//! Each question is answered on demand and memoized: each node is visited at most once per
//! question, and only the nodes a question reaches.

use super::classify::meta_get;
use crate::dump::Op;
use crate::graph::{Graph, NodeId};
use crate::ops::{is_inductor_wait, CollectiveCall};
use crate::value::PyValue;

pub(super) struct Structure<'g> {
    graph: &'g Graph,
    /// Placeholder ancestors of each node (the node itself included): `NO_PLACEHOLDER`,
    /// `MANY` (two or more), otherwise the placeholder's position + 1; `UNKNOWN_PLACEHOLDERS`
    /// until asked.
    placeholders: Vec<u32>,
    /// The node depends on a backward input (a `tangents_*` placeholder or one tagged
    /// `partitioner_tag: "is_backward"`): `UNKNOWN`, `NO` or `YES`.
    backward_input: Vec<u8>,
    /// Every node reached forward from this one through its users, the output aside, has
    /// exactly one input node: `UNKNOWN`, `NO` or `YES`.
    unary_closed: Vec<u8>,
    /// Nodes before this position have been checked for `autograd_backward`.
    scanned: usize,
    /// The first node flagged `autograd_backward`, once found.
    first_backward: Option<NodeId>,
    /// The gradient seed, once looked for: `Some(None)` when the graph has none.
    seed: Option<Option<NodeId>>,
    /// Whether any node carries autograd metadata (`autograd_backward`, a backward
    /// placeholder), once looked for.
    backward_marker: Option<bool>,
    stack: Vec<NodeId>,
}

const NO_PLACEHOLDER: u32 = 0;
const MANY: u32 = u32::MAX;
const UNKNOWN_PLACEHOLDERS: u32 = u32::MAX - 1;
const UNKNOWN: u8 = 0;
const NO: u8 = 1;
const YES: u8 = 2;

impl<'g> Structure<'g> {
    pub(super) fn new(graph: &'g Graph) -> Structure<'g> {
        let n = graph.len();
        Structure {
            graph,
            placeholders: vec![UNKNOWN_PLACEHOLDERS; n],
            backward_input: vec![UNKNOWN; n],
            unary_closed: vec![UNKNOWN; n],
            scanned: 0,
            first_backward: None,
            seed: None,
            backward_marker: None,
            stack: Vec::new(),
        }
    }

    /// `is_fsdp_all_gather(node)`: the call is `all_gather_into_tensor` (or `_out`) and its
    /// inputs have exactly one placeholder among their ancestors; returns that placeholder.
    pub(super) fn fsdp_all_gather(&mut self, id: NodeId, call: &CollectiveCall) -> Option<NodeId> {
        let node = self.graph.node(id);
        if !(call.is_inductor_op(node, "all_gather_into_tensor")
            || call.is_inductor_op(node, "all_gather_into_tensor_out"))
        {
            return None;
        }
        self.single_placeholder(id)
    }

    /// `is_fsdp_reduce_scatter_wait(wait)` for a wait of the `reduce_scatter_tensor` `id`:
    /// returns the first wait that passes (Inductor buckets the reduce-scatter when any of its
    /// waits passes the filter).
    pub(super) fn fsdp_reduce_scatter(
        &mut self,
        id: NodeId,
        call: &CollectiveCall,
    ) -> Option<NodeId> {
        let graph = self.graph;
        if !call.is_inductor_op(graph.node(id), "reduce_scatter_tensor") {
            return None;
        }
        let waits: Vec<NodeId> = graph
            .users(id)
            .iter()
            .copied()
            .filter(|&w| {
                let wait = graph.node(w);
                is_inductor_wait(wait)
                    && wait.args.first().and_then(crate::dump::node_index) == Some(id)
            })
            .collect();
        waits
            .into_iter()
            .find(|&w| !graph.users(w).is_empty() && self.unary_closed(w))
    }

    /// The node's only placeholder ancestor, when it has exactly one.
    pub(super) fn single_placeholder(&mut self, id: NodeId) -> Option<NodeId> {
        if id >= self.graph.len() {
            return None;
        }
        match self.placeholders(id) {
            NO_PLACEHOLDER | MANY => None,
            p => Some(p as usize - 1),
        }
    }

    /// The placeholder summary of `root`: a placeholder is its own; any other node joins its
    /// earlier inputs' (none + x = x, x + x = x, otherwise many).
    fn placeholders(&mut self, root: NodeId) -> u32 {
        let graph = self.graph;
        self.stack.clear();
        self.stack.push(root);
        while let Some(&id) = self.stack.last() {
            if self.placeholders[id] != UNKNOWN_PLACEHOLDERS {
                self.stack.pop();
                continue;
            }
            if graph.node(id).op == Op::Placeholder {
                self.placeholders[id] = u32::try_from(id + 1).unwrap_or(MANY);
                self.stack.pop();
                continue;
            }
            let mut pending = false;
            let mut summary = NO_PLACEHOLDER;
            for &input in graph.inputs(id) {
                if input >= id {
                    continue;
                }
                let p = self.placeholders[input];
                if p == UNKNOWN_PLACEHOLDERS {
                    self.stack.push(input);
                    pending = true;
                    continue;
                }
                summary = match (summary, p) {
                    (s, NO_PLACEHOLDER) => s,
                    (NO_PLACEHOLDER, p) => p,
                    (MANY, _) | (_, MANY) => MANY,
                    (s, p) if s == p => s,
                    _ => MANY,
                };
            }
            if !pending {
                self.placeholders[id] = summary;
                self.stack.pop();
            }
        }
        self.placeholders[root]
    }

    /// Whether every node reached forward from `root` through users, the output aside, has
    /// exactly one input node (the walk of `is_fsdp_reduce_scatter_wait`).
    pub(super) fn unary_closed(&mut self, root: NodeId) -> bool {
        let graph = self.graph;
        self.stack.clear();
        self.stack.push(root);
        while let Some(&id) = self.stack.last() {
            if self.unary_closed[id] != UNKNOWN {
                self.stack.pop();
                continue;
            }
            let mut pending = false;
            let mut unary = true;
            for &u in graph.users(id) {
                if graph.node(u).op == Op::Output {
                    continue;
                }
                // Users stand later than the node in a valid graph; anything else would be a
                // cycle in the walk, which torch's visited set also stops.
                if u <= id || graph.inputs(u).len() != 1 {
                    unary = false;
                    break;
                }
                match self.unary_closed[u] {
                    YES => {}
                    NO => {
                        unary = false;
                        break;
                    }
                    _ => {
                        self.stack.push(u);
                        pending = true;
                    }
                }
            }
            if pending && unary {
                continue;
            }
            self.unary_closed[id] = if unary { YES } else { NO };
            self.stack.pop();
        }
        self.unary_closed[root] == YES
    }

    /// The first user of `root`'s forward closure in `graph` that has several inputs (why
    /// [`Structure::unary_closed`] fails), for explanations. It needs nothing a `Structure`
    /// holds: an audit asks it for every reduce-scatter whose verdict changed, and building
    /// a `Structure` (three arrays the graph's size) each time grew with the square.
    pub(super) fn first_multi_input_user(graph: &Graph, root: NodeId) -> Option<NodeId> {
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            for &u in graph.users(id) {
                if graph.node(u).op == Op::Output || !seen.insert(u) {
                    continue;
                }
                if graph.inputs(u).len() != 1 {
                    return Some(u);
                }
                stack.push(u);
            }
        }
        None
    }

    /// Whether `root` depends on a backward input.
    pub(super) fn backward_input(&mut self, root: NodeId) -> bool {
        let graph = self.graph;
        self.stack.clear();
        self.stack.push(root);
        while let Some(&id) = self.stack.last() {
            if self.backward_input[id] != UNKNOWN {
                self.stack.pop();
                continue;
            }
            let node = graph.node(id);
            let value = if node.op == Op::Placeholder {
                is_backward_placeholder(node)
            } else {
                let mut pending = false;
                let mut backward = false;
                for &input in graph.inputs(id) {
                    if input >= id {
                        continue;
                    }
                    match self.backward_input[input] {
                        YES => {
                            backward = true;
                            break;
                        }
                        NO => {}
                        _ => {
                            self.stack.push(input);
                            pending = true;
                        }
                    }
                }
                if pending && !backward {
                    continue;
                }
                backward
            };
            self.backward_input[id] = if value { YES } else { NO };
            self.stack.pop();
        }
        self.backward_input[root] == YES
    }

    /// The first node flagged `autograd_backward` before `id`, if any. Scans forward only as
    /// far as asked.
    pub(super) fn first_backward_before(&mut self, id: NodeId) -> Option<NodeId> {
        if let Some(first) = self.first_backward {
            return (id > first).then_some(first);
        }
        let nodes = self.graph.nodes();
        while self.scanned < id.min(nodes.len()) {
            let j = self.scanned;
            self.scanned += 1;
            if meta_get(&nodes[j], "autograd_backward").is_some_and(PyValue::truthy) {
                self.first_backward = Some(j);
                return (id > j).then_some(j);
            }
        }
        None
    }

    /// Whether the graph records which nodes are backward anywhere: a node flagged
    /// `autograd_backward`, or a backward placeholder. Only a graph without any uses the
    /// gradient seed.
    pub(super) fn any_backward_marker(&mut self) -> bool {
        if let Some(known) = self.backward_marker {
            return known;
        }
        let known = self.graph.nodes().iter().any(|node| {
            (node.op == Op::Placeholder && is_backward_placeholder(node))
                || meta_get(node, "autograd_backward").is_some_and(PyValue::truthy)
        });
        self.backward_marker = Some(known);
        known
    }

    /// The gradient seed of a joint graph traced without autograd metadata (`make_fx` of a
    /// step that calls `loss.backward()` or `torch.autograd.grad(loss, ...)`): the first
    /// `aten.ones_like` of a 0-dimensional tensor — the `ones_like(loss)` autograd creates
    /// when no gradient is given. Everything traced after it is the backward pass.
    pub(super) fn gradient_seed(&mut self) -> Option<NodeId> {
        if let Some(seed) = self.seed {
            return seed;
        }
        let graph = self.graph;
        let seed = (0..graph.len()).find(|&id| {
            let node = graph.node(id);
            node.op == Op::CallFunction
                && crate::graph::target_is_op(&node.target, "aten", "ones_like")
                && node
                    .args
                    .first()
                    .and_then(crate::dump::node_index)
                    .is_some_and(|input| input < id && is_scalar(graph.node(input)))
        });
        self.seed = Some(seed);
        seed
    }
}

/// A placeholder of the backward graph: `tangents_*`, or tagged `partitioner_tag:
/// "is_backward"` by AOTAutograd.
fn is_backward_placeholder(node: &crate::dump::Node) -> bool {
    node.name.starts_with("tangents")
        || meta_get(node, "partitioner_tag").and_then(PyValue::as_str) == Some("is_backward")
}

/// Whether the node's recorded value is a 0-dimensional tensor.
fn is_scalar(node: &crate::dump::Node) -> bool {
    match node.meta.get_once("val").as_deref() {
        Some(PyValue::Tensor(summary)) => summary
            .as_dict()
            .and_then(|d| d.get("shape"))
            .and_then(PyValue::as_list)
            .is_some_and(<[PyValue]>::is_empty),
        _ => false,
    }
}
