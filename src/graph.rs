//! The graph view over a dump: node order, inputs, users, and the helper predicates the
//! planner imports (`planner-helpers.md`), computed once per node.

use crate::dump::{Dump, Node, NodeSink, Op};
use crate::value::PyValue;
use std::sync::OnceLock;

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

/// What `node.meta["comm_type"]` says, as far as the planner acts on it: the tags of the
/// FSDP pass (`_KINDS` and `_FREES` of the reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CommTag {
    /// No `comm_type`, or one that is not a `str`.
    #[default]
    Untagged,
    /// A `str` the planner neither buckets nor treats as a storage release.
    Other,
    /// `fsdp_all_gather`.
    AllGather,
    /// `fsdp_all_gather_backward`.
    AllGatherBackward,
    /// `fsdp_reduce_scatter`.
    ReduceScatter,
    /// `fsdp_reshard_free` or `fsdp_reshard_free_backward`.
    ReshardFree,
}

impl CommTag {
    pub fn parse(tag: Option<&str>) -> CommTag {
        match tag {
            None => CommTag::Untagged,
            Some("fsdp_all_gather") => CommTag::AllGather,
            Some("fsdp_all_gather_backward") => CommTag::AllGatherBackward,
            Some("fsdp_reduce_scatter") => CommTag::ReduceScatter,
            Some("fsdp_reshard_free" | "fsdp_reshard_free_backward") => CommTag::ReshardFree,
            Some(_) => CommTag::Other,
        }
    }
}

/// Facts about one node that the planner and classifier ask again and again. Seven bytes, so
/// a pass over every node's facts stays in cache where a pass over the nodes would not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    pub op: Op,
    pub collective: bool,
    pub wait: bool,
    pub view: bool,
    pub barrier: bool,
    /// `bool(node.meta.get("autograd_backward", False))`.
    pub backward: bool,
    pub tag: CommTag,
}

impl NodeFacts {
    /// A node that calls nothing the helpers recognise.
    fn plain(op: Op) -> NodeFacts {
        NodeFacts {
            op,
            collective: false,
            wait: false,
            view: false,
            barrier: false,
            backward: false,
            tag: CommTag::Untagged,
        }
    }
}

/// A graph dump with its derived structure.
#[derive(Clone, Debug)]
pub struct Graph {
    pub dump: Dump,
    /// Built on the first [`Graph::find`]: reading and drawing a dump never need it.
    by_name: OnceLock<NameTable>,
    /// Distinct input nodes of each node (args then kwargs), as `node.all_input_nodes`:
    /// node `id`'s are `input_list[input_start[id]..input_start[id + 1]]`.
    input_start: Vec<usize>,
    input_list: Vec<NodeId>,
    /// Users of each node in graph order, as `node.users`, laid out like the inputs.
    user_start: Vec<usize>,
    user_list: Vec<NodeId>,
    facts: Vec<NodeFacts>,
}

/// Builds a [`Graph`]'s per-node parts (facts and input lists) one node at a time, in graph
/// order: from a dump already in memory ([`Graph::new`]) or as the reader's [`NodeSink`]
/// while each node is still in cache ([`crate::dump::read_dump_into`]).
#[derive(Default)]
pub struct GraphBuilder {
    /// Input references at or beyond this position are no inputs; `None` while reading,
    /// where a node's arguments can only name earlier nodes.
    known_len: Option<usize>,
    input_start: Vec<usize>,
    input_list: Vec<NodeId>,
    /// Users per node, counted as inputs arrive; one extra slot for the offsets.
    user_count: Vec<usize>,
    facts: Vec<NodeFacts>,
    /// `last_reader[i]` is the last node that listed node `i` as an input: inputs are
    /// deduplicated in constant time, even for an output node that reads every gradient.
    last_reader: Vec<usize>,
    targets: TargetFactsCache,
}

/// What a `call_function` node's facts take from its target alone.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TargetFacts {
    collective: bool,
    /// A `wait_tensor` of any collective namespace.
    wait_any: bool,
    /// `_c10d_functional.wait_tensor`.
    wait: bool,
    /// A view by its name (when the node does not record `alias`).
    view: bool,
    /// Effectful by its name (when the node does not record `impure`).
    effectful: bool,
}

impl TargetFacts {
    fn of(target: &str) -> TargetFacts {
        // `collective_op`, `is_wait_target` and `target_is_op` on one split of the target.
        let split = split_op(target);
        TargetFacts {
            collective: matches!(split, Some((ns, op, _))
                if COLLECTIVE_NAMESPACES.contains(&ns) && COLLECTIVE_OPS.contains(&op)),
            wait_any: matches!(split, Some((ns, "wait_tensor", _))
                if COLLECTIVE_NAMESPACES.contains(&ns)),
            wait: matches!(split, Some(("_c10d_functional", "wait_tensor", _))),
            view: target == "_operator.getitem"
                || matches!(split, Some(("aten", op, _)) if VIEW_OPS.contains(&op)),
            effectful: effectful_by_name(target),
        }
    }
}

/// What a node's target alone decides (its [`TargetFacts`], the cost model's kind of op),
/// remembered for the targets seen last by the shared string: a graph has a few dozen targets
/// over its many nodes, and the reader gives the nodes of one target one string. Splitting the
/// target and looking its parts up in the op lists, for every node, was 2% of a `plan` run's
/// checking thread, and a third of the cost model's pass over the nodes.
pub(crate) struct TargetCache<T> {
    /// Direct-mapped by the string's address; each entry holds its target, so the address
    /// cannot be reused by another string while the entry stands.
    slots: Vec<Option<(crate::dump::Target, T)>>,
}

impl<T> Default for TargetCache<T> {
    fn default() -> TargetCache<T> {
        TargetCache { slots: Vec::new() }
    }
}

impl<T: Copy> TargetCache<T> {
    pub(crate) const SLOTS: usize = 64;

    /// `of(target)`, or what it gave for this same string last time.
    pub(crate) fn get(&mut self, target: &crate::dump::Target, of: impl FnOnce(&str) -> T) -> T {
        if self.slots.is_empty() {
            self.slots.resize_with(Self::SLOTS, || None);
        }
        // Allocations are at least 16-byte aligned: the low bits say nothing.
        let slot = &mut self.slots[(target.address() >> 4) % Self::SLOTS];
        match slot {
            Some((held, value)) if held.is(target) => *value,
            _ => {
                let value = of(target);
                *slot = Some((target.clone(), value));
                value
            }
        }
    }
}

type TargetFactsCache = TargetCache<TargetFacts>;

impl GraphBuilder {
    /// For the nodes of a dump of `count` nodes, which may refer to later nodes.
    fn for_dump(count: usize) -> GraphBuilder {
        GraphBuilder {
            known_len: Some(count),
            input_start: Vec::with_capacity(count + 1),
            input_list: Vec::with_capacity(count * 2),
            user_count: vec![0; count + 1],
            facts: Vec::with_capacity(count),
            last_reader: vec![usize::MAX; count],
            targets: TargetFactsCache::default(),
        }
    }

    /// The facts of node `id`, once added.
    pub fn facts(&self, id: NodeId) -> Option<NodeFacts> {
        self.facts.get(id).copied()
    }

    /// Room for `nodes` more nodes (and twice as many inputs). Grown by doubling instead, the
    /// builder's five vectors were a fifth of the checking thread's copies and fresh pages
    /// while a 500k-node dump was read (docs/performance.md). Room that is not used is not
    /// touched.
    fn reserve(&mut self, nodes: usize) {
        let _ = self.input_start.try_reserve(nodes + 1);
        let _ = self.input_list.try_reserve(nodes.saturating_mul(2));
        let _ = self.user_count.try_reserve(nodes + 2);
        let _ = self.facts.try_reserve(nodes);
        let _ = self.last_reader.try_reserve(nodes);
    }

    /// Adds the next node.
    pub fn add(&mut self, node: &Node) -> NodeFacts {
        let id = self.facts.len();
        if self.input_start.is_empty() {
            self.input_start.push(0);
        }
        let bound = self.known_len.unwrap_or(id);
        if self.last_reader.len() <= id {
            self.last_reader.resize(id + 1, usize::MAX);
            self.user_count.resize(id + 2, 0);
        }
        let start = self.input_list.len();
        let mut inputs = InputCollector {
            reader: id,
            bound,
            last_reader: &mut self.last_reader,
            out: &mut self.input_list,
        };
        for value in node.args.iter().chain(node.kwargs.values()) {
            inputs.collect(value);
        }
        for &input in &self.input_list[start..] {
            self.user_count[input] += 1;
        }
        self.input_start.push(self.input_list.len());
        let facts = node_facts(node, || self.targets.get(&node.target, TargetFacts::of));
        self.facts.push(facts);
        facts
    }

    /// The graph over `dump`, whose nodes must be the ones added, in order; otherwise the
    /// graph is built again from the dump.
    pub fn finish(self, dump: Dump) -> Graph {
        let count = dump.nodes.len();
        if self.facts.len() != count {
            return Graph::new(dump);
        }
        let GraphBuilder {
            mut input_start,
            input_list,
            user_count,
            facts,
            ..
        } = self;
        if input_start.is_empty() {
            input_start.push(0);
        }
        // Users: counts to offsets, then each node appended to its inputs' lists in graph
        // order, so every list is sorted as `node.users` is.
        let mut user_start = Vec::with_capacity(count + 1);
        let mut total = 0;
        for c in user_count.iter().take(count) {
            user_start.push(total);
            total += c;
        }
        user_start.push(total);
        let mut cursor = user_start.clone();
        let mut user_list = vec![0; total];
        for id in 0..count {
            for &input in &input_list[input_start[id]..input_start[id + 1]] {
                user_list[cursor[input]] = id;
                cursor[input] += 1;
            }
        }
        Graph {
            dump,
            by_name: OnceLock::new(),
            input_start,
            input_list,
            user_start,
            user_list,
            facts,
        }
    }
}

/// Receives each node with its graph facts while the reader has it in cache (a pass that
/// rides along [`crate::planner::read_prepared_with`]).
pub trait FactsSink {
    /// A `nodes` array begins: forget any nodes received.
    fn begin(&mut self);

    fn node(&mut self, index: usize, node: &Node, facts: NodeFacts);

    /// Whether the nodes keep their `repr` once read and hashed ([`NodeSink::keeps_repr`]).
    fn keeps_repr(&self) -> bool {
        true
    }
}

/// No extra pass.
impl FactsSink for () {
    fn begin(&mut self) {}

    fn node(&mut self, _: usize, _: &Node, _: NodeFacts) {}
}

impl NodeSink for GraphBuilder {
    fn begin(&mut self) {
        *self = GraphBuilder::default();
    }

    fn expect_nodes(&mut self, nodes: usize) {
        self.reserve(nodes);
    }

    fn node(&mut self, index: usize, node: &Node) {
        // The reader hands nodes over in order; anything else is rebuilt by `finish`.
        if index == self.facts.len() {
            self.add(node);
        }
    }
}

impl Graph {
    pub fn new(dump: Dump) -> Graph {
        let mut builder = GraphBuilder::for_dump(dump.nodes.len());
        for node in &dump.nodes {
            builder.add(node);
        }
        builder.finish(dump)
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
        let nodes = &self.dump.nodes;
        self.by_name
            .get_or_init(|| NameTable::new(nodes))
            .find(nodes, name)
    }

    pub fn inputs(&self, id: NodeId) -> &[NodeId] {
        &self.input_list[self.input_start[id]..self.input_start[id + 1]]
    }

    pub fn users(&self, id: NodeId) -> &[NodeId] {
        &self.user_list[self.user_start[id]..self.user_start[id + 1]]
    }

    pub fn facts(&self, id: NodeId) -> NodeFacts {
        self.facts[id]
    }

    /// Every node's facts, in graph order.
    pub fn all_facts(&self) -> &[NodeFacts] {
        &self.facts
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
            for &user in self.users(current) {
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
    ///
    /// The chain is a set (the reference's): a node met again ends it. Each step's node has
    /// the previous one as its only user, so a node cannot come again, but the check stays,
    /// and a long chain (a hostile dump's 100k views) is checked against a set, not searched
    /// (searched, 100k views took 1.2 s, growing with the square).
    pub fn rs_layout_preparation(&self, rs: NodeId) -> Vec<NodeId> {
        /// Chains up to this long are searched (a real one has a few nodes).
        const SEARCHED: usize = 16;
        let mut chain = Vec::new();
        let mut met = crate::hashing::FastSet::default();
        let mut previous = rs;
        let mut current = self.node(rs).args.first().and_then(crate::dump::node_index);
        while let Some(id) = current {
            let node = self.node(id);
            let only_user = self.users(id) == [previous];
            let reshapes = node.op == Op::CallFunction
                && split_op(&node.target)
                    .is_some_and(|(ns, op, _)| RS_LAYOUT_OPS.contains(&(ns, op)));
            let again = match chain.len() < SEARCHED {
                true => chain.contains(&id),
                false => {
                    if met.is_empty() {
                        met.extend(chain.iter().copied());
                    }
                    !met.insert(id)
                }
            };
            if !(only_user && reshapes) || again {
                break;
            }
            chain.push(id);
            previous = id;
            current = node.args.iter().find_map(crate::dump::node_index);
        }
        chain
    }
}

/// Appends one node's distinct input nodes, in first-reference order (`all_input_nodes`).
struct InputCollector<'a> {
    reader: NodeId,
    /// References at or beyond this position are no inputs.
    bound: usize,
    last_reader: &'a mut [usize],
    out: &'a mut Vec<NodeId>,
}

impl InputCollector<'_> {
    fn collect(&mut self, value: &PyValue) {
        match value {
            PyValue::Node(r) => {
                // A resolved index is a position in the dump; one that is not (a dump
                // assembled by hand) is no input.
                let Some(index) = r.index.filter(|i| *i < self.bound) else {
                    return;
                };
                if let Some(seen) = self.last_reader.get_mut(index) {
                    if *seen != self.reader {
                        *seen = self.reader;
                        self.out.push(index);
                    }
                }
            }
            PyValue::List(items) => items.iter().for_each(|item| self.collect(item)),
            PyValue::Dict(map) => map.values().for_each(|item| self.collect(item)),
            _ => {}
        }
    }
}

/// FxHash (as rustc uses it, with rustc-hash 2's multiplier and final rotation): fast for the
/// short node names of a dump. Not DoS-resistant, which a reader of local files does not need.
#[derive(Clone, Copy, Default)]
struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0xf135_7aea_2e62_a9c5;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // The length in the top byte: the short word of `11` and of `111` is the same.
            let length = (rest.len() as u64) << 56;
            self.add(crate::words::short_word(rest) ^ length);
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(byte as u64);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash.rotate_left(26)
    }
}

fn name_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = FxHasher::default();
    name.hash(&mut hasher);
    hasher.finish()
}

/// Node name to position without copying the names: an open-addressing table of node
/// positions with their names' hashes, compared against the nodes' own names. Inserting a
/// name again replaces its position (as inserting into a map would).
///
/// Every entry sits at most [`NameTable::MAX_PROBE`] slots past its hash's home slot. The hash
/// is fast, not secret: names chosen to share home slots (a hostile dump, easily computed)
/// would make every probe walk one ever longer run, quadratic over the graph (80,000 such
/// names took 6 s to read, a million would take hours). An entry that cannot be placed within
/// the bound moves the whole table to an ordered map of the names instead, which costs
/// `O(log n)` a lookup whatever the names are. The bound also lets a lookup stop early: a name
/// not within it is not in the table.
#[derive(Clone, Debug)]
pub(crate) struct NameTable {
    /// (position, the hash's low 32 bits); `EMPTY` positions are free. Eight bytes a slot, not
    /// sixteen: the table is probed at random, once for each name and each reference, and at
    /// 500k nodes its 16 MB did not stay in cache.
    slots: Vec<(u32, u32)>,
    len: usize,
    /// Every name, once a probe ran past the bound (`slots` is then unused).
    ordered: Option<std::collections::BTreeMap<Box<str>, NodeId>>,
}

/// Where a probe for a name ended.
enum Probe {
    /// The slot holding the name.
    Found(usize),
    /// The free slot where the name would go.
    Free(usize),
    /// Neither within [`NameTable::MAX_PROBE`] slots.
    TooFar,
}

impl NameTable {
    const EMPTY: u32 = u32::MAX;
    /// How far past its home slot an entry may sit. With the table at most half full and a
    /// well-spread hash, runs this long do not happen by chance.
    const MAX_PROBE: usize = 128;

    /// A table for about `count` names (it grows beyond).
    pub(crate) fn with_capacity(count: usize) -> NameTable {
        let size = (count * 2).max(16).next_power_of_two();
        NameTable {
            slots: vec![(Self::EMPTY, 0); size],
            len: 0,
            ordered: None,
        }
    }

    fn new(nodes: &[Node]) -> NameTable {
        let mut table = NameTable::with_capacity(nodes.len());
        for id in 0..nodes.len() {
            table.insert(nodes, id);
        }
        table
    }

    /// Whether the table moved to the ordered map (names that collide on purpose).
    #[cfg(test)]
    fn is_ordered(&self) -> bool {
        self.ordered.is_some()
    }

    /// Probes for `name` from its home slot, at most [`NameTable::MAX_PROBE`] slots on.
    fn probe(&self, nodes: &[Node], name: &str, hash: u32) -> Probe {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        for _ in 0..=Self::MAX_PROBE {
            let (slot, slot_hash) = self.slots[at];
            if slot == Self::EMPTY {
                return Probe::Free(at);
            }
            if slot_hash == hash && nodes[slot as usize].name == name {
                return Probe::Found(at);
            }
            at = (at + 1) & mask;
        }
        Probe::TooFar
    }

    /// Moves every name to the ordered map.
    fn order(&mut self, nodes: &[Node]) {
        let slots = std::mem::take(&mut self.slots);
        self.ordered.get_or_insert_with(|| {
            slots
                .into_iter()
                .filter(|&(id, _)| id != Self::EMPTY)
                .map(|(id, _)| (Box::from(nodes[id as usize].name.as_str()), id as usize))
                .collect()
        });
    }

    /// Adds `nodes[id]` under its name.
    pub(crate) fn insert(&mut self, nodes: &[Node], id: NodeId) {
        let _ = self.add(nodes, id, true);
    }

    /// Adds `nodes[id]` under its name unless the name is taken; then the node that holds
    /// it. One hash and one probe: the reader checks every name for uniqueness as it adds it.
    pub(crate) fn insert_new(&mut self, nodes: &[Node], id: NodeId) -> Result<(), NodeId> {
        self.add(nodes, id, false)
    }

    /// Adds `nodes[id]`; a name already held is replaced when `replace`, else its node is
    /// the error.
    fn add(&mut self, nodes: &[Node], id: NodeId, replace: bool) -> Result<(), NodeId> {
        let name = nodes[id].name.as_str();
        if self.ordered.is_none() && (self.len + 1) * 2 > self.slots.len() {
            self.grow(nodes);
        }
        if let Some(ordered) = &mut self.ordered {
            return match ordered.entry(Box::from(name)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(id);
                    Ok(())
                }
                std::collections::btree_map::Entry::Occupied(mut o) if replace => {
                    o.insert(id);
                    Ok(())
                }
                std::collections::btree_map::Entry::Occupied(o) => Err(*o.get()),
            };
        }
        // Positions from `EMPTY` on do not fit a slot (the ordered map takes them).
        let Some(slot_id) = u32::try_from(id).ok().filter(|&id| id != Self::EMPTY) else {
            self.order(nodes);
            return self.add(nodes, id, replace);
        };
        let hash = name_hash(name) as u32;
        match self.probe(nodes, name, hash) {
            Probe::Free(at) => {
                self.len += 1;
                self.slots[at] = (slot_id, hash);
                Ok(())
            }
            Probe::Found(at) if replace => {
                self.slots[at] = (slot_id, hash);
                Ok(())
            }
            Probe::Found(at) => Err(self.slots[at].0 as usize),
            Probe::TooFar => {
                self.order(nodes);
                self.add(nodes, id, replace)
            }
        }
    }

    /// Doubles the table; the stored hashes place the entries without reading the names.
    /// An entry that lands past the bound moves the table to the ordered map.
    fn grow(&mut self, nodes: &[Node]) {
        let size = self.slots.len() * 2;
        // A slot's hash is 32 bits: a larger table could not place by it.
        if u32::try_from(size - 1).is_err() {
            self.order(nodes);
            return;
        }
        let mut slots = vec![(Self::EMPTY, 0); size];
        let mask = size - 1;
        for &(id, hash) in &self.slots {
            if id == Self::EMPTY {
                continue;
            }
            let mut at = hash as usize & mask;
            let mut steps = 0;
            while slots[at].0 != Self::EMPTY {
                steps += 1;
                if steps > Self::MAX_PROBE {
                    self.order(nodes);
                    return;
                }
                at = (at + 1) & mask;
            }
            slots[at] = (id, hash);
        }
        self.slots = slots;
    }

    /// Asks the processor to bring the slot `name` starts its probe at into cache, ahead of
    /// adding or finding it: the table is probed at random, and at 500k nodes waiting for
    /// that slot was most of adding a name (8% of a `plan` run). A hint only: it changes
    /// nothing, and does nothing where there is no such instruction.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn prefetch(&self, name: &str) {
        // Where there is no prefetch instruction, the hash is not worth working out.
        if self.ordered.is_none() && cfg!(target_arch = "x86_64") {
            let at = name_hash(name) as u32 as usize & (self.slots.len() - 1);
            crate::hashing::prefetch(&self.slots[at]);
        }
    }

    pub(crate) fn find(&self, nodes: &[Node], name: &str) -> Option<NodeId> {
        if let Some(ordered) = &self.ordered {
            return ordered.get(name).copied();
        }
        match self.probe(nodes, name, name_hash(name) as u32) {
            Probe::Found(at) => Some(self.slots[at].0 as usize),
            // Every entry is within the bound of its home slot (see the type's comment).
            Probe::Free(_) | Probe::TooFar => None,
        }
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

/// The node's facts; `target` gives [`TargetFacts::of`] its target (asked for
/// `call_function` nodes only).
fn node_facts(node: &Node, target: impl FnOnce() -> TargetFacts) -> NodeFacts {
    // Metadata the planner and classifier ask of every node, read once here.
    let backward = node.meta_flag("autograd_backward");
    let tag = CommTag::parse(node.meta_str("comm_type"));
    if node.op != Op::CallFunction {
        return NodeFacts {
            backward,
            tag,
            ..NodeFacts::plain(node.op)
        };
    }
    let target = target();
    let barrier = !target.collective
        && !target.wait_any
        && match node.impure {
            Some(impure) => impure,
            None => target.effectful,
        };
    NodeFacts {
        op: node.op,
        collective: target.collective,
        wait: target.wait,
        view: node.alias.unwrap_or(target.view),
        barrier,
        backward,
        tag,
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
    fn room_made_for_the_expected_nodes_is_not_grown() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(3000));
        let dump = crate::read_dump(text.as_bytes()).expect("synthetic");
        let count = dump.nodes.len();
        let mut builder = GraphBuilder::default();
        builder.begin();
        builder.expect_nodes(count);
        let rooms = |b: &GraphBuilder| {
            [
                b.input_start.as_ptr() as usize,
                b.user_count.as_ptr() as usize,
                b.facts.as_ptr() as usize,
                b.last_reader.as_ptr() as usize,
            ]
        };
        let before = rooms(&builder);
        for (i, node) in dump.nodes.iter().enumerate() {
            builder.node(i, node);
        }
        assert_eq!(rooms(&builder), before, "a vector was grown");
        // The room changes nothing built.
        let whole = Graph::new(dump.clone());
        let built = builder.finish(dump);
        assert_eq!(built.all_facts(), whole.all_facts());
        for id in 0..count {
            assert_eq!(built.inputs(id), whole.inputs(id), "inputs of {id}");
            assert_eq!(built.users(id), whole.users(id), "users of {id}");
        }
    }

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

    /// A hand-assembled dump of `nodes` and nothing else.
    fn dump_of(nodes: Vec<Node>) -> Dump {
        Dump {
            nodes,
            group_ranks: None,
            modules: Vec::new(),
            state_fqns: Vec::new(),
            source: None,
            planner: None,
            script_objects: None,
            signature: None,
            warnings: Vec::new(),
        }
    }

    fn node(name: &str, target: &str, alias: Option<bool>, impure: Option<bool>) -> Node {
        Node {
            name: name.into(),
            op: Op::CallFunction,
            target: target.into(),
            args: Vec::new(),
            kwargs: Default::default(),
            meta: Default::default(),
            alias,
            impure,
            repr: None,
        }
    }

    /// The builder's facts come from targets it has seen before (by the shared string) and
    /// must be each node's own: targets that share a string, targets with equal text in
    /// different strings, and more targets than the cache has slots, in an order that keeps
    /// evicting them.
    #[test]
    fn facts_from_remembered_targets_are_each_nodes_own() {
        let shared: Vec<crate::dump::Target> =
            ["aten.mm.default", "_c10d_functional.wait_tensor.default"]
                .map(crate::dump::Target::from)
                .to_vec();
        let mut nodes = Vec::new();
        for round in 0..3 {
            for k in 0..3 * TargetFactsCache::SLOTS {
                let target = match k % 4 {
                    0 => format!("aten.view{k}.default"),
                    1 => "aten.view.default".to_string(),
                    2 => "_c10d_functional.all_gather_into_tensor.default".to_string(),
                    _ => format!("aten.add_{k}.Tensor"),
                };
                let mut n = node(&format!("n{round}_{k}"), &target, None, None);
                if k % 5 == 0 {
                    n.target = shared[k % 2].clone();
                }
                nodes.push(n);
            }
        }
        let graph = Graph::new(dump_of(nodes));
        for id in 0..graph.len() {
            let n = graph.node(id);
            let expected = node_facts(n, || TargetFacts::of(&n.target));
            assert_eq!(graph.facts(id), expected, "{}", n.target.as_str());
        }
    }

    /// `node_facts` splits the target once; it must agree with the helpers it stands for.
    #[test]
    fn node_facts_agree_with_the_helpers() {
        let mut targets: Vec<String> = vec![
            "_operator.getitem".into(),
            "aten".into(),
            "aten.".into(),
            ".view".into(),
            "a.b.c.d".into(),
            "higher_order.with_effects".into(),
            "profiler._record_function_enter_new.default".into(),
        ];
        for ns in [
            "aten",
            "prims",
            "_c10d_functional",
            "c10d_functional",
            "inductor",
        ] {
            let ops = VIEW_OPS.iter().chain(COLLECTIVE_OPS).chain(&[
                "wait_tensor",
                "mm",
                "copy_",
                "add_",
                "resize_storage_bytes_",
            ]);
            for op in ops {
                for overload in ["", ".default", ".Tensor", ".x.y"] {
                    targets.push(format!("{ns}.{op}{overload}"));
                }
            }
        }
        for target in &targets {
            for alias in [None, Some(false), Some(true)] {
                for impure in [None, Some(false), Some(true)] {
                    let n = node("n", target, alias, impure);
                    let collective = collective_op(&n).is_some();
                    let wait_any = COLLECTIVE_NAMESPACES
                        .iter()
                        .any(|ns| target_is_op(target, ns, "wait_tensor"));
                    let expected = NodeFacts {
                        op: Op::CallFunction,
                        collective,
                        wait: target_is_op(target, "_c10d_functional", "wait_tensor"),
                        view: alias.unwrap_or_else(|| {
                            target == "_operator.getitem"
                                || VIEW_OPS.iter().any(|op| target_is_op(target, "aten", op))
                        }),
                        barrier: !collective
                            && !wait_any
                            && impure.unwrap_or_else(|| effectful_by_name(target)),
                        backward: false,
                        tag: CommTag::Untagged,
                    };
                    let facts = node_facts(&n, || TargetFacts::of(&n.target));
                    assert_eq!(facts, expected, "{target} {alias:?} {impure:?}");
                }
            }
        }
    }

    #[test]
    fn names_find_their_last_node() {
        let names = ["a", "b", "a", "", "ccccccccccccccccc", "b"];
        let graph = Graph::new(dump_of(
            names
                .iter()
                .map(|n| node(n, "aten.mm", None, None))
                .collect(),
        ));
        assert_eq!(graph.find("a"), Some(2));
        assert_eq!(graph.find("b"), Some(5));
        assert_eq!(graph.find(""), Some(3));
        assert_eq!(graph.find("ccccccccccccccccc"), Some(4));
        assert_eq!(graph.find("c"), None);
        let many: Vec<Node> = (0..5000)
            .map(|i| node(&format!("n{i}"), "aten.mm", None, None))
            .collect();
        let graph = Graph::new(Dump {
            nodes: many,
            ..graph.dump.clone()
        });
        for i in 0..5000 {
            assert_eq!(graph.find(&format!("n{i}")), Some(i));
        }
        assert_eq!(graph.find("n5000"), None);
    }

    #[test]
    fn comm_tags_name_the_fsdp_pass_tags() {
        assert_eq!(CommTag::parse(None), CommTag::Untagged);
        assert_eq!(CommTag::parse(Some("fsdp_all_gather")), CommTag::AllGather);
        assert_eq!(
            CommTag::parse(Some("fsdp_all_gather_backward")),
            CommTag::AllGatherBackward
        );
        assert_eq!(
            CommTag::parse(Some("fsdp_reduce_scatter")),
            CommTag::ReduceScatter
        );
        for free in ["fsdp_reshard_free", "fsdp_reshard_free_backward"] {
            assert_eq!(CommTag::parse(Some(free)), CommTag::ReshardFree);
        }
        for other in ["", "FSDP_ALL_GATHER", "tp_all_reduce", "fsdp_all_gather "] {
            assert_eq!(CommTag::parse(Some(other)), CommTag::Other);
        }
    }

    /// `all_input_nodes` order: first reference first, each node once, however nested or
    /// repeated; a reference that names no node of the dump is no input.
    #[test]
    fn inputs_are_distinct_in_first_reference_order() {
        let to = |name: &str, index: Option<usize>| {
            PyValue::Node(crate::value::NodeRef {
                name: name.into(),
                index,
            })
        };
        let mut nodes: Vec<Node> = ["a", "b", "c"]
            .iter()
            .map(|n| node(n, "aten.mm", None, None))
            .collect();
        let mut reader = node("d", "aten.cat", None, None);
        reader.args = vec![
            to("b", Some(1)),
            PyValue::List(vec![to("a", Some(0)), to("b", Some(1)), to("x", None)]),
            to("ghost", Some(99)),
            to("a", Some(0)),
        ];
        reader.kwargs.insert(
            "k".into(),
            PyValue::List(vec![to("c", Some(2)), to("b", Some(1))]),
        );
        nodes.push(reader);
        let graph = Graph::new(dump_of(nodes));
        assert_eq!(graph.inputs(3), &[1, 0, 2]);
        for input in 0..3 {
            assert_eq!(graph.users(input), &[3]);
        }
    }

    /// The flat input and user lists hold what per-node lists built the plain way hold.
    #[test]
    fn inputs_and_users_as_node_lists() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(3000));
        let graph = Graph::new(crate::read_dump(text.as_bytes()).expect("dump"));
        let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); graph.len()];
        for (id, node) in graph.nodes().iter().enumerate() {
            let mut own: Vec<NodeId> = Vec::new();
            for value in node.args.iter().chain(node.kwargs.values()) {
                fn walk(value: &PyValue, out: &mut Vec<NodeId>) {
                    match value {
                        PyValue::Node(r) => {
                            if let Some(i) = r.index {
                                if !out.contains(&i) {
                                    out.push(i);
                                }
                            }
                        }
                        PyValue::List(items) => items.iter().for_each(|v| walk(v, out)),
                        PyValue::Dict(map) => map.values().for_each(|v| walk(v, out)),
                        _ => {}
                    }
                }
                walk(value, &mut own);
            }
            for &input in &own {
                users[input].push(id);
            }
            assert_eq!(graph.inputs(id), &own[..]);
        }
        let mut edges = 0;
        for (id, expected) in users.iter().enumerate() {
            assert_eq!(graph.users(id), &expected[..]);
            edges += expected.len();
        }
        assert!(edges > graph.len());
    }

    /// `n` distinct eight-character names (printable ASCII, none that JSON escapes) whose hashes share their low 24 bits, so they share a
    /// home slot in any table of up to 2^24 slots: computed by inverting [`name_hash`]
    /// (multiplication by an odd constant and rotation are bijections), as an attacker would.
    pub(crate) fn colliding_names(n: usize) -> Vec<String> {
        let inverse = {
            // Newton's iteration for the inverse of an odd number modulo 2^64.
            let mut x = FX_SEED;
            for _ in 0..6 {
                x = x.wrapping_mul(2u64.wrapping_sub(FX_SEED.wrapping_mul(x)));
            }
            x
        };
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut names = std::collections::BTreeSet::new();
        while names.len() < n {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // `finish` of the hash wanted; undo the rotation, the multiply of the `0xff`
            // that ends a `str`, and the multiply of the one eight-byte word.
            let wanted = (state << 24) | 0x5a_5a5a;
            let after_ff = wanted.rotate_right(26).wrapping_mul(inverse);
            let word = (after_ff ^ 0xff).rotate_right(5).wrapping_mul(inverse);
            let bytes = word.to_le_bytes();
            if bytes
                .iter()
                .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            {
                names.insert(String::from_utf8(bytes.to_vec()).unwrap());
            }
        }
        names.into_iter().collect()
    }

    #[test]
    fn colliding_names_collide() {
        let names = colliding_names(50);
        let home = name_hash(&names[0]) & 0xff_ffff;
        assert!(names.iter().all(|n| name_hash(n) & 0xff_ffff == home));
    }

    /// Names that share a home slot move the table to the ordered map instead of making each
    /// probe walk one ever longer run; every name is still found, duplicates still refused.
    #[test]
    fn names_chosen_to_collide_do_not_make_the_table_quadratic() {
        for crafted in [false, true] {
            let names: Vec<String> = if crafted {
                colliding_names(2_000)
            } else {
                (0..2_000).map(|i| format!("node_{i}")).collect()
            };
            let nodes: Vec<Node> = names
                .iter()
                .map(|n| node(n, "aten.mm", None, None))
                .collect();
            let mut table = NameTable::with_capacity(0);
            for id in 0..nodes.len() {
                assert_eq!(table.insert_new(&nodes, id), Ok(()));
            }
            assert_eq!(table.is_ordered(), crafted, "crafted names: {crafted}");
            for (id, n) in names.iter().enumerate() {
                assert_eq!(table.find(&nodes, n), Some(id));
            }
            assert_eq!(table.find(&nodes, "absent"), None);
            let again = node(&names[7], "aten.mm", None, None);
            let mut more = nodes.clone();
            more.push(again);
            assert_eq!(table.insert_new(&more, more.len() - 1), Err(7));
            table.insert(&more, more.len() - 1);
            assert_eq!(table.find(&more, &names[7]), Some(more.len() - 1));
            // Built in one go (`Graph::new`'s way), the same.
            let built = NameTable::new(&nodes);
            assert_eq!(built.is_ordered(), crafted);
            assert!(names
                .iter()
                .enumerate()
                .all(|(id, n)| built.find(&nodes, n) == Some(id)));
        }
    }

    /// A dump of names chosen to collide reads as any other: its references resolved through
    /// the ordered map, a dangling one reported as before. (How long such a dump takes is in
    /// docs/performance.md: the crafted names are slow to make in a debug build.)
    #[test]
    fn a_dump_of_colliding_names_reads_as_any_other() {
        let names = colliding_names(5_000);
        let mut text = String::from(r#"{"format": "commlens.graph", "version": 1, "nodes": ["#);
        for (i, name) in names.iter().enumerate() {
            let args = match i {
                0 => String::new(),
                _ => format!(r#"{{"node": "{}"}}"#, names[i - 1]),
            };
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str(&format!(
                r#"{{"name": "{name}", "op": "call_function", "target": "aten.relu.default", "args": [{args}], "kwargs": {{}}, "meta": {{}}}}"#
            ));
        }
        text.push_str("]}");
        let graph = Graph::new(crate::dump::read_dump(text.as_bytes()).unwrap());
        assert_eq!(graph.len(), names.len());
        assert_eq!(graph.find(&names[4_000]), Some(4_000));
        assert!(graph.by_name.get().is_some_and(NameTable::is_ordered));
        let dangling = text.replacen(
            &format!(r#"{{"node": "{}"}}"#, names[9]),
            r#"{"node": "nowhere"}"#,
            1,
        );
        let error = crate::dump::read_dump(dangling.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("nowhere"), "{error}");
    }

    /// Inserts, replacements and lookups agree with a plain map, whether the table moves to
    /// the ordered map while it grows, while it holds many names, or never.
    #[test]
    fn the_name_table_agrees_with_a_map() {
        let crafted = colliding_names(600);
        for (plain_first, crafted_count) in [(0, 600), (50, 600), (3_000, 300), (3_000, 0)] {
            let mut names: Vec<String> = (0..plain_first).map(|i| format!("n{i}")).collect();
            names.extend(crafted.iter().take(crafted_count).cloned());
            names.extend((0..500).map(|i| format!("late_{i}")));
            // Each name twice: the second node with it is refused by `insert_new`, then
            // replaces the first through `insert`, in a scrambled order.
            let mut nodes: Vec<Node> = Vec::new();
            let mut table = NameTable::with_capacity(0);
            let mut model: std::collections::HashMap<String, NodeId> = Default::default();
            let mut state: u64 = 0x2545_f491_4f6c_dd1d;
            for round in 0..2 {
                for (i, name) in names.iter().enumerate() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    nodes.push(node(name, "aten.mm", None, None));
                    let id = nodes.len() - 1;
                    if round == 0 {
                        assert_eq!(table.insert_new(&nodes, id), Ok(()), "{name}");
                        model.insert(name.clone(), id);
                    } else if state.is_multiple_of(2) {
                        assert_eq!(table.insert_new(&nodes, id), Err(model[name]), "{name}");
                    } else {
                        table.insert(&nodes, id);
                        model.insert(name.clone(), id);
                    }
                    let probe = &names[(state as usize) % (i + 1)];
                    assert_eq!(
                        table.find(&nodes, probe),
                        model.get(probe).copied(),
                        "{probe}"
                    );
                }
            }
            for (name, &id) in &model {
                assert_eq!(table.find(&nodes, name), Some(id), "{name}");
            }
            assert_eq!(table.find(&nodes, "never"), None);
            assert_eq!(table.is_ordered(), crafted_count > 0);
        }
    }
}
