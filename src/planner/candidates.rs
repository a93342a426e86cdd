//! From tagged collectives to candidates (`_scan_collectives`, `_candidate`).
//!
//! Every check of `_candidate` that does not depend on the planner's arguments is made once
//! per graph (`Preparer`, into `Collectives`); a plan then only applies the argument-dependent
//! ones (group ranks, module plans, parallel mode) to compact records, in the reference's order.

use super::args::{self, ValidatedArgs};
use super::{Action, Candidate, CollectiveKind, CompatibilityKey, Decision, Reason, WireRecord};
use super::{FastMap, FastSet};
use crate::dotted::{DottedPaths, PathId};
use crate::dump::{lookup, Node, Op};
use crate::graph::{is_free_tensor_storage, is_op, CommTag, Graph, NodeFacts, NodeId};
use crate::value::PyValue;
use indexmap::IndexMap;
use std::borrow::Cow;
use std::sync::Arc;

/// What the scan reads of a tagged collective, as far as the planner's arguments do not
/// matter. Kept small (40 bytes) because every plan reads one per tagged collective; what
/// only admitted collectives need is in [`Facts`], apart.
#[derive(Clone, Debug)]
pub(crate) struct TaggedCollective {
    pub node: NodeId,
    /// Index of `meta["param_name"]` among the graph's distinct parameter names, when a
    /// non-empty `str`.
    pub param: Option<u32>,
    /// Index of `node.args[-1]` among the graph's distinct process-group names, when a `str`.
    pub group_name: Option<u32>,
    /// `node.args[-2]` when a static int above 1 that fits a `usize`, else 0: the group
    /// check wants `degree > 1 and degree == len(ranks)`, which no other value passes.
    pub degree: usize,
    pub kind: CollectiveKind,
    /// Checks before the group lookup: `unsupported_or_already_bucketed`, `phase_mismatch`,
    /// `unsupported_signature`.
    pub early: Option<Reason>,
    /// `node.args[0]` is a node.
    pub source_is_node: bool,
    /// Checks after the group lookup, in order: the index of the collective's [`Facts`] when
    /// every one passed, else the first failing reason.
    pub late: Result<u32, Reason>,
}

/// The parsed layout and scheduling bounds of a collective that passed every local check.
/// Strings and shapes are by id into per-graph tables, so the record stays at 80 bytes: a
/// plan reads one per candidate.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub state_idx: i128,
    /// `Candidate::size_bytes`, computed once.
    pub size_bytes: u128,
    pub wait: NodeId,
    pub source: NodeId,
    pub first_use: NodeId,
    /// Index of `(input_shape, output_shape)` in [`Collectives::layouts`].
    pub layout: u32,
    /// Index of the device string in [`Collectives::devices`].
    pub device: u32,
    /// The reduce-scatter's layout-preparation nodes (`rs_layout_preparation`), as a range of
    /// [`Collectives::preparations`].
    pub preparation: (u32, u32),
    /// Index in [`PLANNED_DTYPES`].
    pub dtype: u8,
    pub reduce_op: Option<ReduceOp>,
    pub backward: bool,
}

impl Facts {
    pub(crate) fn dtype(&self) -> &'static str {
        PLANNED_DTYPES[self.dtype as usize]
    }
}

/// The reduce ops a packable reduce-scatter may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ReduceOp {
    Sum,
    Avg,
}

impl ReduceOp {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Avg => "avg",
        }
    }
}

/// A collective's `(input_shape, output_shape)`, shared between collectives of one layout.
pub(crate) type ShapePair = (Arc<[i128]>, Arc<[i128]>);

/// Interned `(input_shape, output_shape)` pairs: a model's layers repeat a handful of them.
#[derive(Default)]
struct Layouts {
    ids: FastMap<(Vec<i128>, Vec<i128>), u32>,
    shapes: Vec<ShapePair>,
}

impl Layouts {
    fn id(&mut self, input: Vec<i128>, output: Vec<i128>) -> u32 {
        let key = (input, output);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.shapes.len() as u32;
        self.shapes
            .push((Arc::from(key.0.as_slice()), Arc::from(key.1.as_slice())));
        self.ids.insert(key, id);
        id
    }
}

/// The metadata keys the planner reads from a tagged collective, found in one pass over its
/// `meta` rather than one search per key.
#[derive(Default)]
struct PlannerMeta<'a> {
    param_name: Option<&'a PyValue>,
    state_idx: Option<&'a PyValue>,
    comm_group: Option<&'a PyValue>,
    bucket_spec: Option<&'a PyValue>,
    bucket_members: Option<&'a PyValue>,
}

impl<'a> PlannerMeta<'a> {
    fn read(node: &'a Node) -> PlannerMeta<'a> {
        let mut meta = PlannerMeta::default();
        // A dump's keys are unique, so the first match is `meta.get(key)`.
        for (key, value) in node.meta.decoded_entries() {
            let slot = match key.as_str() {
                "param_name" => &mut meta.param_name,
                "state_idx" => &mut meta.state_idx,
                "comm_group" => &mut meta.comm_group,
                "fsdp_bucket_spec" => &mut meta.bucket_spec,
                "fsdp_bucket_members" => &mut meta.bucket_members,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        meta
    }

    /// `meta["param_name"]` when a non-empty `str`.
    fn param_name(&self) -> Option<&'a str> {
        self.param_name
            .and_then(PyValue::as_str)
            .filter(|n| !n.is_empty())
    }
}

/// Distinct strings numbered in first-seen order. A dump has far fewer than 2^32 distinct
/// strings (each comes from a node of many bytes), so ids are `u32`.
#[derive(Default)]
pub(crate) struct NameIds {
    ids: FastMap<Box<str>, u32>,
}

impl NameIds {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(Box::from(name), id);
        id
    }

    /// The strings by id, allocated one after another in id order once the graph is read:
    /// a plan clones them in about that order for its candidates, so it reads them in memory
    /// order rather than wherever the reader's allocations left them.
    fn names(&self) -> Vec<Arc<str>> {
        let mut by_id = vec![""; self.ids.len()];
        for (name, &id) in &self.ids {
            by_id[id as usize] = name;
        }
        by_id.into_iter().map(Arc::from).collect()
    }
}

/// The module paths above a graph's parameters (`a` and `a.b` above `a.b.w`), each with its
/// parent: a plan finds a parameter's scope by walking up these ids instead of hashing every
/// dotted prefix of every name.
#[derive(Default)]
pub(crate) struct ModulePaths {
    paths: DottedPaths,
    /// The text of each path that is a parameter's parent, by id (the others are never
    /// asked for: spelled out, a deep name's every prefix grew with the square of its
    /// length).
    texts: Vec<Option<Box<str>>>,
    /// The parent found last: a parameter's siblings come one after another.
    last: Option<PathId>,
}

impl ModulePaths {
    /// The id of the module directly above `name` (its longest proper dotted prefix), when
    /// `name` has a dot; its ancestors are numbered too.
    fn parent_of(&mut self, name: &str) -> Option<PathId> {
        let (parent, _) = name.rsplit_once('.')?;
        if let Some(last) = self.last {
            if self.name(last) == Some(parent) {
                return Some(last);
            }
        }
        let id = self.paths.insert_each(parent, |_| {});
        if self.texts.len() < self.paths.len() {
            self.texts.resize(self.paths.len(), None);
        }
        self.texts[id as usize].get_or_insert_with(|| parent.into());
        self.last = Some(id);
        Some(id)
    }

    /// The text of `path`, when it is a parameter's parent ([`ModulePaths::parent_of`]).
    fn name(&self, path: PathId) -> Option<&str> {
        self.texts.get(path as usize)?.as_deref()
    }

    /// `path` and its ancestors, nearest first.
    fn up_from(&self, path: Option<PathId>) -> impl Iterator<Item = PathId> + '_ {
        self.paths.up_from(path)
    }
}

/// Prepares every tagged collective of a graph in two steps: what each node says of itself,
/// taken in graph order (while the reader has the node in cache, when it reads for planning),
/// then what needs the graph's users.
#[derive(Default)]
pub(crate) struct Preparer {
    layouts: Layouts,
    devices: NameIds,
    params: NameIds,
    /// By parameter id.
    param_parent: Vec<Option<u32>>,
    modules: ModulePaths,
    groups: NameIds,
    /// Tagged collectives after the checks their own nodes answer; the [`Facts`] of those
    /// that passed wait for `finish` to fill in `wait`, `first_use` and `preparation`.
    local: Vec<TaggedCollective>,
    facts: Vec<Facts>,
    preparations: Vec<NodeId>,
    /// Nodes visited.
    visited: usize,
    /// Reshard frees that are exactly `_free_tensor_storage(wait)`, with the wait they free,
    /// in graph order.
    freed_wait: Vec<(NodeId, NodeId)>,
}

/// A graph's tagged collectives, prepared: everything about them that no planner argument
/// changes.
pub(crate) struct Collectives {
    /// In graph order.
    pub tagged: Vec<TaggedCollective>,
    /// By [`TaggedCollective::late`] index.
    pub facts: Vec<Facts>,
    /// Distinct `(input_shape, output_shape)` pairs, by [`Facts::layout`].
    pub layouts: Vec<ShapePair>,
    /// Distinct device strings, by [`Facts::device`].
    pub devices: Vec<Arc<str>>,
    /// Every reduce-scatter's layout-preparation nodes, by [`Facts::preparation`] range.
    pub preparations: Vec<NodeId>,
    /// Distinct parameter names, by [`TaggedCollective::param`].
    pub param_names: Vec<Arc<str>>,
    /// The module directly above each parameter, by parameter id.
    pub param_parent: Vec<Option<u32>>,
    pub modules: ModulePaths,
    /// Distinct process-group names, by [`TaggedCollective::group_name`].
    pub group_names: Vec<Arc<str>>,
}

impl Collectives {
    /// A reduce-scatter's layout-preparation nodes.
    pub(crate) fn preparation(&self, facts: &Facts) -> &[NodeId] {
        let (start, len) = facts.preparation;
        let start = start as usize;
        self.preparations
            .get(start..start + len as usize)
            .unwrap_or_default()
    }
}

/// The per-graph preparation, finished.
pub(crate) struct Prepared {
    pub collectives: Collectives,
    pub freed_wait: Vec<(NodeId, NodeId)>,
}

impl Preparer {
    /// Room for the collectives of about `nodes` nodes: one in eight. (Natively the reader
    /// expects more nodes than a dump holds, so a real-shaped FSDP graph's one collective in
    /// six fits; past the room they grow.) Grown from nothing, these two vectors' copies and
    /// fresh pages were the largest of the checking thread's while a 500k-node dump was read
    /// (docs/performance.md).
    pub(crate) fn expect_nodes(&mut self, nodes: usize) {
        self.expect_collectives(nodes / 8);
    }

    /// Room for `count` tagged collectives.
    pub(crate) fn expect_collectives(&mut self, count: usize) {
        let _ = self.local.try_reserve(count);
        let _ = self.facts.try_reserve(count);
    }

    /// Whether [`Preparer::visit`] reads a node with these facts (other nodes it only counts).
    pub(crate) fn reads(facts: &NodeFacts) -> bool {
        CollectiveKind::from_tag(facts.tag).is_some() || facts.tag == CommTag::ReshardFree
    }

    /// Takes what node `id` says of itself; nodes come in graph order.
    pub(crate) fn visit(&mut self, id: NodeId, node: &Node, facts: NodeFacts) {
        self.visited += 1;
        if let Some(kind) = CollectiveKind::from_tag(facts.tag) {
            self.visit_collective(id, node, kind, facts.backward);
        } else if facts.tag == CommTag::ReshardFree
            && is_free_tensor_storage(node)
            && node.kwargs.is_empty()
            && node.args.len() == 1
        {
            if let Some(wait) = crate::dump::node_index(&node.args[0]) {
                self.freed_wait.push((id, wait));
            }
        }
    }

    fn visit_collective(&mut self, id: NodeId, node: &Node, kind: CollectiveKind, backward: bool) {
        let meta = PlannerMeta::read(node);
        let param = meta.param_name().map(|name| {
            let id = self.params.id(name);
            if id as usize == self.param_parent.len() {
                self.param_parent.push(self.modules.parent_of(name));
            }
            id
        });
        let group = node.args.last().and_then(PyValue::as_str);
        let group_name = group.map(|g| self.groups.id(g));
        let arity = if kind.is_reduce_scatter() { 4 } else { 3 };
        let early = early_reason(node, &meta, kind, backward, arity);
        let (source_is_node, degree) = if early.is_none() {
            (
                matches!(node.args[0], PyValue::Node(_)),
                node.args[arity - 2].static_int(),
            )
        } else {
            (false, None)
        };
        let late = match (early, group) {
            (None, Some(group)) => local_facts(
                node,
                &meta,
                kind,
                backward,
                group,
                degree,
                (&mut self.devices, &mut self.layouts),
            )
            .map(|facts| {
                self.facts.push(facts);
                (self.facts.len() - 1) as u32
            }),
            _ => Err(Reason::UnknownProcessGroup),
        };
        self.local.push(TaggedCollective {
            node: id,
            param,
            group_name,
            degree: degree
                .filter(|d| *d > 1)
                .and_then(|d| usize::try_from(d).ok())
                .unwrap_or(0),
            kind,
            early,
            source_is_node,
            late,
        });
    }

    pub(crate) fn visited(&self) -> usize {
        self.visited
    }

    /// The checks that need the graph's users, in the reference's order after the local ones.
    pub(crate) fn finish(mut self, graph: &Graph) -> Prepared {
        let mut scratch = ConsumerScratch::default();
        for collective in &mut self.local {
            if let Ok(index) = collective.late {
                let facts = &mut self.facts[index as usize];
                let buffers = (&mut scratch, &mut self.preparations);
                if let Err(reason) =
                    structural_facts(graph, collective.node, collective.kind, facts, buffers)
                {
                    collective.late = Err(reason);
                }
            }
        }
        Prepared {
            collectives: Collectives {
                tagged: self.local,
                facts: self.facts,
                layouts: self.layouts.shapes,
                devices: self.devices.names(),
                preparations: self.preparations,
                param_names: self.params.names(),
                param_parent: self.param_parent,
                modules: self.modules,
                group_names: self.groups.names(),
            },
            freed_wait: self.freed_wait,
        }
    }
}

/// The checks of `_candidate` and `_signature_reason` before the process group is looked up.
fn early_reason(
    node: &Node,
    meta: &PlannerMeta,
    kind: CollectiveKind,
    backward: bool,
    arity: usize,
) -> Option<Reason> {
    if !is_op(node, "_c10d_functional", kind.op())
        || meta.bucket_members.is_some_and(PyValue::truthy)
    {
        return Some(Reason::UnsupportedOrAlreadyBucketed);
    }
    if backward != (kind != CollectiveKind::AllGather) {
        return Some(Reason::PhaseMismatch);
    }
    if !node.kwargs.is_empty() || node.args.len() != arity {
        return Some(Reason::UnsupportedSignature);
    }
    None
}

/// The checks after the group lookup that the node answers by itself
/// (`group_metadata_mismatch` to `invalid_dim0_layout`); `degree` only matters once the group
/// check has passed, where it is a valid int. The reduce op is read here and judged in
/// [`structural_facts`], after the wait and consumer checks, as the reference orders them.
fn local_facts(
    node: &Node,
    meta: &PlannerMeta,
    kind: CollectiveKind,
    backward: bool,
    group: &str,
    degree: Option<i128>,
    (devices, layouts): (&mut NameIds, &mut Layouts),
) -> Result<Facts, Reason> {
    // `meta["comm_group"] != group`: only an equal `str` compares equal to a `str`.
    if let Some(comm_group) = meta.comm_group {
        if !matches!(comm_group, PyValue::Str(g) if g == group) {
            return Err(Reason::GroupMetadataMismatch);
        }
    }
    let state_idx = meta
        .state_idx
        .and_then(PyValue::static_int)
        .filter(|i| *i >= 0);
    let (true, Some(state_idx)) = (meta.param_name().is_some(), state_idx) else {
        return Err(Reason::MissingParameterIdentity);
    };
    let empty = IndexMap::new();
    // The reference calls `.get` on the spec; a non-dict spec is read as empty here.
    let spec = meta
        .bucket_spec
        .and_then(PyValue::as_dict)
        .unwrap_or(&empty);
    let Layout {
        input_shape,
        output_shape,
        dtype,
        device,
    } = layout(kind, degree.unwrap_or(0), spec)?;
    let reduce_op = if kind.is_reduce_scatter() {
        match node.args[1].as_str() {
            Some("sum") => Some(ReduceOp::Sum),
            Some("avg") => Some(ReduceOp::Avg),
            _ => None,
        }
    } else {
        None
    };
    let source = crate::dump::node_index(&node.args[0]).unwrap_or(0);
    let size_bytes = super::size_bytes(&input_shape, &output_shape, PLANNED_DTYPES[dtype]);
    Ok(Facts {
        state_idx,
        size_bytes,
        wait: 0,
        source,
        first_use: 0,
        layout: layouts.id(input_shape, output_shape),
        device: devices.id(device),
        preparation: (0, 0),
        dtype: dtype as u8,
        reduce_op,
        backward,
    })
}

/// The checks that follow the users (`unsupported_wait_users` onwards), completing `facts`.
fn structural_facts(
    graph: &Graph,
    id: NodeId,
    kind: CollectiveKind,
    facts: &mut Facts,
    (scratch, preparations): (&mut ConsumerScratch, &mut Vec<NodeId>),
) -> Result<(), Reason> {
    let waits = graph.users(id);
    if waits.len() != 1 || !graph.is_wait(waits[0]) {
        return Err(Reason::UnsupportedWaitUsers);
    }
    let wait = waits[0];
    let Some(consumers) = scratch.summarise(graph, wait) else {
        return Err(Reason::NoConsumer);
    };
    if kind.is_reduce_scatter() {
        if facts.reduce_op.is_none() {
            return Err(Reason::UnsupportedReduceOp);
        }
        if !consumers.all_output {
            return Err(Reason::NonOutputRsConsumer);
        }
        let start = preparations.len();
        preparations.extend(graph.rs_layout_preparation(id));
        facts.preparation = (start as u32, (preparations.len() - start) as u32);
    }
    facts.wait = wait;
    facts.first_use = consumers.first;
    Ok(())
}

/// A static shape: a non-empty list of positive ints.
pub fn static_shape(value: Option<&PyValue>) -> Option<Vec<i128>> {
    let items = value?.as_list()?;
    if items.is_empty() {
        return None;
    }
    items
        .iter()
        .map(|d| d.static_int().filter(|d| *d > 0))
        .collect()
}

const PLANNED_DTYPES: [&str; 4] = [
    "torch.float16",
    "torch.bfloat16",
    "torch.float32",
    "torch.float64",
];

/// Whether the planner buckets collectives of this dtype (else `unsupported_dtype`).
pub fn is_planned_dtype(dtype: &str) -> bool {
    PLANNED_DTYPES.contains(&dtype)
}

/// A packable layout read from `fsdp_bucket_spec`.
struct Layout<'a> {
    input_shape: Vec<i128>,
    output_shape: Vec<i128>,
    /// Index in [`PLANNED_DTYPES`].
    dtype: usize,
    device: &'a str,
}

/// `_layout_reason`, returning the parsed layout when it is packable.
fn layout(
    kind: CollectiveKind,
    degree: i128,
    spec: &crate::value::Dict,
) -> Result<Layout<'_>, Reason> {
    let input = static_shape(lookup(spec, "input_shape"));
    let output = static_shape(lookup(spec, "output_shape"));
    let (Some(input), Some(output)) = (input, output) else {
        return Err(Reason::UnknownOrDynamicShape);
    };
    let dtype = match lookup(spec, "dtype") {
        Some(PyValue::Dtype(d)) => match PLANNED_DTYPES.iter().position(|p| *p == d.as_str()) {
            Some(planned) => planned,
            None => return Err(Reason::UnsupportedDtype),
        },
        _ => return Err(Reason::UnsupportedDtype),
    };
    let device = match lookup(spec, "device") {
        Some(PyValue::Str(d)) if is_torch_device(d) => d.as_str(),
        _ => return Err(Reason::UnknownDevice),
    };
    let (smaller, larger) = if kind.is_reduce_scatter() {
        (&output, &input)
    } else {
        (&input, &output)
    };
    let expected_dim0 = smaller[0].checked_mul(degree);
    let matches = larger.len() == smaller.len()
        && expected_dim0 == Some(larger[0])
        && larger[1..] == smaller[1..];
    if !matches {
        return Err(Reason::InvalidDim0Layout);
    }
    Ok(Layout {
        input_shape: input,
        output_shape: output,
        dtype,
        device,
    })
}

/// Device types `torch.device(str)` accepts (`c10::Device` parsing).
const DEVICE_TYPES: &[&str] = &[
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

/// Whether `torch.device(text)` succeeds: `type` or `type:index`, the type a known device
/// type, the index decimal without leading zeros, fitting a device index.
pub fn is_torch_device(text: &str) -> bool {
    let (kind, index) = match text.split_once(':') {
        Some((kind, index)) => (kind, Some(index)),
        None => (text, None),
    };
    if !DEVICE_TYPES.contains(&kind) {
        return false;
    }
    match index {
        None => true,
        Some(index) => {
            !index.is_empty()
                && index.bytes().all(|b| b.is_ascii_digit())
                && (index == "0" || !index.starts_with('0'))
                // c10::DeviceIndex is an int8: larger indices wrap and fail validation.
                && index.parse::<u32>().is_ok_and(|i| i <= i8::MAX as u32)
        }
    }
}

/// What the planner needs of a wait's real consumers (`_consumers`).
struct ConsumerSummary {
    /// The earliest consumer's graph position.
    first: NodeId,
    /// Whether every consumer is the graph output.
    all_output: bool,
}

/// Reused buffers for walking view chains without allocating per collective.
#[derive(Default)]
struct ConsumerScratch {
    stack: Vec<NodeId>,
    seen: FastSet<NodeId>,
}

impl ConsumerScratch {
    /// `None` when nothing reads the waited result.
    fn summarise(&mut self, graph: &Graph, wait: NodeId) -> Option<ConsumerSummary> {
        self.stack.clear();
        self.seen.clear();
        self.stack.push(wait);
        let mut first = None::<NodeId>;
        let mut all_output = true;
        while let Some(current) = self.stack.pop() {
            for &user in graph.users(current) {
                if graph.is_view(user) {
                    if user != wait && self.seen.insert(user) {
                        self.stack.push(user);
                    }
                } else {
                    first = Some(first.map_or(user, |f| f.min(user)));
                    all_output &= graph.facts(user).op == Op::Output;
                }
            }
        }
        first.map(|first| ConsumerSummary { first, all_output })
    }
}

/// A module scope of one plan: the group's FQNs and the parameters it selected.
pub(crate) struct ScopeEntry {
    pub fqns: Arc<[String]>,
    pub first: Arc<str>,
    /// Parameter ids in first-seen order.
    pub params: Vec<usize>,
    /// Tagged collectives of this scope.
    pub collectives: usize,
}

impl ScopeEntry {
    fn new(fqns: Vec<String>) -> ScopeEntry {
        ScopeEntry {
            first: Arc::from(fqns[0].as_str()),
            fqns: Arc::from(fqns),
            params: Vec::new(),
            collectives: 0,
        }
    }
}

/// A tagged collective that passed every check of `_candidate`, by index: the full
/// [`Candidate`] is built once, when its bucket is final.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Admitted {
    /// Index in the planner's tagged collectives.
    pub tagged: u32,
    /// Index of its [`Facts`].
    pub facts: u32,
    /// Index in the plan's scopes.
    pub scope: u32,
    /// Index in the plan's process groups.
    pub group: u32,
}

/// The process groups of one plan, shared by its candidates.
pub(crate) struct Groups {
    pub entries: Vec<(Arc<str>, Arc<[i128]>)>,
    by_name: FastMap<Arc<str>, usize>,
}

impl Groups {
    fn new(args: &ValidatedArgs) -> Groups {
        let entries: Vec<(Arc<str>, Arc<[i128]>)> = args
            .groups
            .iter()
            .map(|(g, ranks)| (Arc::from(g.as_str()), Arc::from(ranks.as_slice())))
            .collect();
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.clone(), i))
            .collect();
        Groups { entries, by_name }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

pub(crate) struct ScanResult {
    pub candidates: Vec<Admitted>,
    pub groups: Groups,
    pub wire: IndexMap<String, Vec<WireRecord>>,
    pub scopes: Vec<ScopeEntry>,
    pub decisions: Vec<Decision>,
    pub tagged_count: usize,
}

/// `_scan_collectives` over prepared collectives: wire records, skip decisions and
/// candidates, in graph order.
pub(crate) fn scan(collectives: &Collectives, args: &ValidatedArgs) -> ScanResult {
    let Collectives {
        tagged,
        param_names,
        group_names,
        ..
    } = collectives;
    let mut decisions = Vec::new();
    let mut candidates = Vec::with_capacity(tagged.len());
    let groups = Groups::new(args);
    // The plan's group for each process-group name the graph uses, looked up once.
    let group_of_name: Vec<Option<usize>> =
        group_names.iter().map(|name| groups.find(name)).collect();
    // Wire records per process group, by the group's index in `groups`.
    let mut wire: Vec<Vec<WireRecord>> = vec![Vec::new(); groups.entries.len()];
    let mut scopes = PlanScopes::new(&collectives.modules, args.module_plans.as_ref());
    // A parameter's scope depends only on its name: resolve each once.
    let mut param_scope: Vec<Option<Option<usize>>> = vec![None; param_names.len()];
    let mut param_seen = vec![false; param_names.len()];
    for (index, collective) in tagged.iter().enumerate() {
        let param = collective.param.map(|p| p as usize);
        let scope = param.and_then(|pid| {
            *param_scope[pid].get_or_insert_with(|| {
                scopes.of_param(&param_names[pid], collectives.param_parent[pid])
            })
        });
        if let (Some(slot), Some(pid)) = (scope, param) {
            if !param_seen[pid] {
                param_seen[pid] = true;
                scopes.entries[slot].params.push(pid);
            }
            scopes.entries[slot].collectives += 1;
        }
        let group = collective
            .group_name
            .and_then(|name| group_of_name[name as usize]);
        if let Some(group) = group {
            wire[group].push(WireRecord {
                node: collective.node,
            });
        }
        let outcome = if !args.supported_mode {
            Err(Reason::UnsupportedParallelMode)
        } else {
            admit(collective, group, &groups, scope)
        };
        match outcome {
            Ok((facts, scope, group)) => candidates.push(Admitted {
                tagged: index as u32,
                facts,
                scope: scope as u32,
                group: group as u32,
            }),
            Err(reason) => decisions.push(Decision {
                node: collective.node,
                previous_node: None,
                action: Action::Skip,
                reason,
                cause: None,
            }),
        }
    }
    let wire = args.groups.keys().cloned().zip(wire).collect();
    ScanResult {
        candidates,
        groups,
        wire,
        scopes: scopes.entries,
        decisions,
        tagged_count: tagged.len(),
    }
}

/// The scopes of one plan. With module plans, scope `i` is plan group `i`; without, scopes are
/// parent modules (or `<parameter:NAME>`), opened in first-seen order.
struct PlanScopes<'a> {
    entries: Vec<ScopeEntry>,
    modules: &'a ModulePaths,
    plans: bool,
    /// With module plans: the group owning each module path, by path id (plans are disjoint,
    /// so at most one of a parameter's ancestors is owned). Without: each parent path's
    /// scope, filled as met.
    path_scope: Vec<Option<usize>>,
    by_name: FastMap<String, usize>,
}

impl<'a> PlanScopes<'a> {
    fn new(modules: &'a ModulePaths, plans: Option<&args::ModulePlans>) -> PlanScopes<'a> {
        let mut path_scope = vec![None; modules.paths.len()];
        for (index, group) in plans.into_iter().flatten().enumerate() {
            for fqn in group {
                if let Some(id) = modules.paths.find(fqn) {
                    path_scope[id as usize].get_or_insert(index);
                }
            }
        }
        PlanScopes {
            entries: plans
                .into_iter()
                .flatten()
                .map(|group| ScopeEntry::new(group.clone()))
                .collect(),
            modules,
            plans: plans.is_some(),
            path_scope,
            by_name: FastMap::default(),
        }
    }

    /// The scope of parameter `name`, whose parent module path is `parent`
    /// ([`ModulePaths::parent_of`]); `None` when module plans leave it unselected.
    fn of_param(&mut self, name: &str, parent: Option<u32>) -> Option<usize> {
        if self.plans {
            return self
                .modules
                .up_from(parent)
                .find_map(|path| self.path_scope[path as usize]);
        }
        match parent {
            Some(path) if self.modules.name(path).is_some_and(|m| !m.is_empty()) => {
                if let Some(slot) = self.path_scope[path as usize] {
                    return Some(slot);
                }
                let modules = self.modules;
                let slot = self.open(Cow::Borrowed(modules.name(path).unwrap_or_default()));
                self.path_scope[path as usize] = Some(slot);
                Some(slot)
            }
            _ => Some(self.open(Cow::Owned(format!("<parameter:{name}>")))),
        }
    }

    /// The scope named `key`, opened when new: scopes are found by name, so every parameter
    /// whose key spells one module shares it.
    fn open(&mut self, key: Cow<str>) -> usize {
        if let Some(&slot) = self.by_name.get(&*key) {
            return slot;
        }
        self.entries.push(ScopeEntry::new(vec![key.to_string()]));
        self.by_name
            .insert(key.into_owned(), self.entries.len() - 1);
        self.entries.len() - 1
    }
}

/// The argument-dependent checks of `_candidate`, in the reference's order around the local
/// ones made at preparation; the admitted collective's facts, scope and group.
fn admit(
    collective: &TaggedCollective,
    group: Option<usize>,
    groups: &Groups,
    scope: Option<usize>,
) -> Result<(u32, usize, usize), Reason> {
    if let Some(reason) = collective.early {
        return Err(reason);
    }
    // `group` is the index of the group the call names, if `group_ranks` has it.
    let Some(group) = group.filter(|_| collective.source_is_node) else {
        return Err(Reason::UnknownProcessGroup);
    };
    // `degree` is 0 unless above 1.
    if collective.degree != groups.entries[group].1.len() || collective.degree == 0 {
        return Err(Reason::GroupSizeMismatch);
    }
    let facts = collective.late?;
    let Some(scope) = scope else {
        return Err(Reason::OutsideModulePlan);
    };
    Ok((facts, scope, group))
}

impl Admitted {
    /// The full candidate (`_candidate`'s result), with its compatibility key.
    pub(crate) fn candidate(
        &self,
        collectives: &Collectives,
        scopes: &[ScopeEntry],
        key: &Arc<CompatibilityKey>,
    ) -> Candidate {
        let collective = &collectives.tagged[self.tagged as usize];
        let facts = &collectives.facts[self.facts as usize];
        let (input_shape, output_shape) = &collectives.layouts[facts.layout as usize];
        Candidate {
            launch: collective.node,
            wait: facts.wait,
            source: facts.source,
            ready: facts.source,
            first_use: facts.first_use,
            // Facts exist only for a collective with a parameter name.
            param_name: collective.param.map_or_else(
                || Arc::from(""),
                |p| collectives.param_names[p as usize].clone(),
            ),
            state_idx: facts.state_idx,
            input_shape: input_shape.clone(),
            output_shape: output_shape.clone(),
            key: key.clone(),
            module_fqns: scopes[self.scope as usize].fqns.clone(),
        }
    }

    /// The compatibility key (`Candidate.key`).
    pub(crate) fn key(
        &self,
        collectives: &Collectives,
        scopes: &[ScopeEntry],
        groups: &Groups,
    ) -> CompatibilityKey {
        let facts = &collectives.facts[self.facts as usize];
        let (group, ranks) = &groups.entries[self.group as usize];
        CompatibilityKey {
            kind: collectives.tagged[self.tagged as usize].kind,
            backward: facts.backward,
            scope: scopes[self.scope as usize].first.clone(),
            group: group.clone(),
            ranks: ranks.clone(),
            dtype: facts.dtype(),
            device: collectives.devices[facts.device as usize].clone(),
            reduce_op: facts.reduce_op.map(ReduceOp::as_str),
        }
    }
}

/// `_unmatched_module_paths`: scope paths that selected no parameter.
pub(crate) fn unmatched_module_paths(
    scopes: &[ScopeEntry],
    param_names: &[Arc<str>],
) -> Vec<String> {
    let mut unmatched = Vec::new();
    for scope in scopes {
        for path in scope.fqns.iter() {
            let matched = scope.params.iter().any(|&pid| {
                param_names[pid]
                    .strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            });
            if !matched {
                unmatched.push(path.clone());
            }
        }
    }
    unmatched
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMETERS: [&str; 10] = [
        "layers.0.w",
        "layers.01.w",
        "layers.10.attention.wq.weight",
        "layers.10.ffn.w",
        "norm.weight",
        "tok",
        "x.layers.0.w",
        ".w",
        "a..b",
        "<parameter:tok>.w",
    ];

    /// Scopes found by walking module paths are the reference's: `match_module_bucket` with
    /// module plans, the parent module (or `<parameter:NAME>`) without.
    #[test]
    fn plan_scopes_follow_the_reference_rules() {
        let mut modules = ModulePaths::default();
        let parents: Vec<Option<u32>> = PARAMETERS.iter().map(|p| modules.parent_of(p)).collect();
        let plans =
            args::normalize_module_bucket_plans(&PyValue::from_plain_json(&serde_json::json!([
                "layers.0",
                ["tok", "norm"],
                "layers.10.attention",
                "x"
            ])))
            .unwrap();
        let mut planned = PlanScopes::new(&modules, Some(&plans));
        for (name, parent) in PARAMETERS.iter().zip(&parents) {
            let scope = planned.of_param(name, *parent);
            assert_eq!(
                scope.map(|s| &*planned.entries[s].fqns),
                args::match_module_bucket(name, &plans),
                "{name}"
            );
        }
        let mut by_parent = PlanScopes::new(&modules, None);
        for (name, parent) in PARAMETERS.iter().zip(&parents) {
            let scope = by_parent.of_param(name, *parent).unwrap();
            let expected = match name.rsplit_once('.') {
                Some((head, _)) if !head.is_empty() => head.to_string(),
                _ => format!("<parameter:{name}>"),
            };
            assert_eq!(*by_parent.entries[scope].first, expected, "{name}");
        }
        // `tok` and `<parameter:tok>.w` name one scope, as the reference's dict keys do.
        let tok = by_parent.of_param("tok", parents[5]);
        assert_eq!(tok, by_parent.of_param("<parameter:tok>.w", parents[9]));
        assert_eq!(by_parent.entries.len(), 9);
    }

    #[test]
    fn torch_device_strings() {
        for ok in ["cpu", "cuda", "cuda:0", "cuda:7", "hpu:3", "meta", "xla:1"] {
            assert!(is_torch_device(ok), "{ok}");
        }
        for bad in [
            "gpu:0", "cuda:01", "cuda:", "", "cuda:-1", "cuda:0:1", "CUDA", "cuda:300",
        ] {
            assert!(!is_torch_device(bad), "{bad}");
        }
    }
}
