//! The FSDP bucket planner: a faithful port of the reference `plan_fsdp_buckets`
//! (`../shared/seeds/planner_reference.py`). Same candidates, same skip/split/singleton
//! decisions with the same reason strings, same bucket and member order, same summary.
//!
//! One deliberate difference in *how* (never in *what*): the reference rescans every node
//! between a bucket's first member and each new candidate. Here each node is classified once
//! (`buckets::Barriers`) and a bucket only scans the nodes it has not yet passed, jumping straight to
//! the next node that could stop it, so planning grows near-linearly with graph size.

pub mod args;
mod buckets;
mod candidates;
pub mod report;
pub mod validate;

pub use candidates::{is_planned_dtype, is_torch_device, static_shape};

use crate::dump::{read_dump_into, Dump, DumpError, Node, NodeSink};
use crate::graph::{CommTag, FactsSink, Graph, GraphBuilder, NodeId};
use crate::value::PyValue;
pub use args::{ArgError, BucketPolicy, ModulePlans, PlannerArgs, ValidatedArgs};
use indexmap::IndexMap;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// The collective kinds the planner buckets (`_KINDS`), by `comm_type` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectiveKind {
    AllGather,
    AllGatherBackward,
    ReduceScatter,
}

impl CollectiveKind {
    pub fn from_comm_type(tag: &str) -> Option<CollectiveKind> {
        CollectiveKind::from_tag(CommTag::parse(Some(tag)))
    }

    pub fn from_tag(tag: CommTag) -> Option<CollectiveKind> {
        match tag {
            CommTag::AllGather => Some(CollectiveKind::AllGather),
            CommTag::AllGatherBackward => Some(CollectiveKind::AllGatherBackward),
            CommTag::ReduceScatter => Some(CollectiveKind::ReduceScatter),
            _ => None,
        }
    }

    /// The `comm_type` tag, which is also the report's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveKind::AllGather => "fsdp_all_gather",
            CollectiveKind::AllGatherBackward => "fsdp_all_gather_backward",
            CollectiveKind::ReduceScatter => "fsdp_reduce_scatter",
        }
    }

    /// The op the tagged node must call.
    fn op(self) -> &'static str {
        match self {
            CollectiveKind::ReduceScatter => "reduce_scatter_tensor",
            _ => "all_gather_into_tensor",
        }
    }

    pub fn is_reduce_scatter(self) -> bool {
        self == CollectiveKind::ReduceScatter
    }
}

pub(crate) use crate::hashing::{FastMap, FastSet};

/// Why the planner did what it did to one collective; the strings are the reference's.
/// Ordered as declared: skips, then splits, then the singleton reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    // skip
    UnsupportedOrAlreadyBucketed,
    PhaseMismatch,
    UnsupportedSignature,
    UnknownProcessGroup,
    GroupSizeMismatch,
    GroupMetadataMismatch,
    MissingParameterIdentity,
    UnknownOrDynamicShape,
    UnsupportedDtype,
    UnknownDevice,
    InvalidDim0Layout,
    UnsupportedWaitUsers,
    NoConsumer,
    UnsupportedReduceOp,
    NonOutputRsConsumer,
    OutsideModulePlan,
    UnsupportedParallelMode,
    // split
    IncompatibleKey,
    RepeatedParameterInstance,
    Capacity,
    InputDistance,
    ConsumerDistance,
    DependencyConflict,
    EffectOrStorageRelease,
    InterveningCollective,
    PhaseBoundary,
    // singleton
    Oversized,
}

impl Reason {
    pub const SKIPS: [Reason; 17] = [
        Reason::UnsupportedOrAlreadyBucketed,
        Reason::PhaseMismatch,
        Reason::UnsupportedSignature,
        Reason::UnknownProcessGroup,
        Reason::GroupSizeMismatch,
        Reason::GroupMetadataMismatch,
        Reason::MissingParameterIdentity,
        Reason::UnknownOrDynamicShape,
        Reason::UnsupportedDtype,
        Reason::UnknownDevice,
        Reason::InvalidDim0Layout,
        Reason::UnsupportedWaitUsers,
        Reason::NoConsumer,
        Reason::UnsupportedReduceOp,
        Reason::NonOutputRsConsumer,
        Reason::OutsideModulePlan,
        Reason::UnsupportedParallelMode,
    ];
    pub const SPLITS: [Reason; 9] = [
        Reason::IncompatibleKey,
        Reason::RepeatedParameterInstance,
        Reason::Capacity,
        Reason::InputDistance,
        Reason::ConsumerDistance,
        Reason::DependencyConflict,
        Reason::EffectOrStorageRelease,
        Reason::InterveningCollective,
        Reason::PhaseBoundary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::UnsupportedOrAlreadyBucketed => "unsupported_or_already_bucketed",
            Reason::PhaseMismatch => "phase_mismatch",
            Reason::UnsupportedSignature => "unsupported_signature",
            Reason::UnknownProcessGroup => "unknown_process_group",
            Reason::GroupSizeMismatch => "group_size_mismatch",
            Reason::GroupMetadataMismatch => "group_metadata_mismatch",
            Reason::MissingParameterIdentity => "missing_parameter_identity",
            Reason::UnknownOrDynamicShape => "unknown_or_dynamic_shape",
            Reason::UnsupportedDtype => "unsupported_dtype",
            Reason::UnknownDevice => "unknown_device",
            Reason::InvalidDim0Layout => "invalid_dim0_layout",
            Reason::UnsupportedWaitUsers => "unsupported_wait_users",
            Reason::NoConsumer => "no_consumer",
            Reason::UnsupportedReduceOp => "unsupported_reduce_op",
            Reason::NonOutputRsConsumer => "non_output_rs_consumer",
            Reason::OutsideModulePlan => "outside_module_plan",
            Reason::UnsupportedParallelMode => "unsupported_parallel_mode",
            Reason::IncompatibleKey => "incompatible_key",
            Reason::RepeatedParameterInstance => "repeated_parameter_instance",
            Reason::Capacity => "capacity",
            Reason::InputDistance => "input_distance",
            Reason::ConsumerDistance => "consumer_distance",
            Reason::DependencyConflict => "dependency_conflict",
            Reason::EffectOrStorageRelease => "effect_or_storage_release",
            Reason::InterveningCollective => "intervening_collective",
            Reason::PhaseBoundary => "phase_boundary",
            Reason::Oversized => "oversized",
        }
    }

    pub fn parse(text: &str) -> Option<Reason> {
        Reason::SKIPS
            .iter()
            .chain(Reason::SPLITS.iter())
            .chain([Reason::Oversized].iter())
            .copied()
            .find(|r| r.as_str() == text)
    }

    /// What the reason means, in plain words, for people reading a plan.
    pub fn explain(self) -> &'static str {
        match self {
            Reason::UnsupportedOrAlreadyBucketed => "the tagged node does not call the op its tag names, or it is already a bucket (fsdp_bucket_members is set)",
            Reason::PhaseMismatch => "autograd_backward disagrees with the tag: forward gathers must be forward, backward gathers and reduce-scatters backward",
            Reason::UnsupportedSignature => "the call has keyword arguments or an unexpected number of arguments",
            Reason::UnknownProcessGroup => "the input is not a node, or the process group is not a string named in group_ranks",
            Reason::GroupSizeMismatch => "the group-size argument is not an integer above 1 equal to the number of ranks in the group",
            Reason::GroupMetadataMismatch => "meta['comm_group'] names a different process group than the call",
            Reason::MissingParameterIdentity => "param_name is not a non-empty string or state_idx is not a non-negative integer",
            Reason::UnknownOrDynamicShape => "fsdp_bucket_spec has no static positive input/output shape",
            Reason::UnsupportedDtype => "the communication dtype is not float16, bfloat16, float32 or float64",
            Reason::UnknownDevice => "the bucket spec's device is missing or not a valid torch device string",
            Reason::InvalidDim0Layout => "the larger shape is not the smaller one with dim 0 multiplied by the group size",
            Reason::UnsupportedWaitUsers => "the collective is not read by exactly one wait_tensor",
            Reason::NoConsumer => "nothing reads the waited result (through views)",
            Reason::UnsupportedReduceOp => "the reduce-scatter reduces with something other than sum or avg",
            Reason::NonOutputRsConsumer => "the reduced gradient is read by something other than the graph output",
            Reason::OutsideModulePlan => "the parameter belongs to no module group of the plan",
            Reason::UnsupportedParallelMode => "only pure FSDP (pp_degree 1, dp_mode fsdp) is planned",
            Reason::IncompatibleKey => "kind, phase, module group, process group, ranks, dtype, device or reduce op differ",
            Reason::RepeatedParameterInstance => "the parameter (name or state index) is already in the bucket",
            Reason::Capacity => "adding it would exceed cap_bytes",
            Reason::InputDistance => "its input is produced too far from the other members' inputs (max_input_distance)",
            Reason::ConsumerDistance => "its first consumer is too far from the other members' (max_consumer_distance)",
            Reason::DependencyConflict => "the latest member input is produced at or after the earliest member consumer, so one launch cannot serve all",
            Reason::EffectOrStorageRelease => "a side-effecting node or a storage release the bucket does not own stands between the members",
            Reason::InterveningCollective => "another collective stands between the members",
            Reason::PhaseBoundary => "a node of the other phase (forward/backward) stands between the members",
            Reason::Oversized => "the collective alone exceeds cap_bytes, so it stays a singleton",
        }
    }
}

/// What happened to one collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Skip,
    Split,
    Singleton,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Skip => "skip",
            Action::Split => "split",
            Action::Singleton => "singleton",
        }
    }
}

/// One planner decision (`decisions` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub node: NodeId,
    /// For a split: the last member of the bucket that was closed.
    pub previous_node: Option<NodeId>,
    pub action: Action,
    pub reason: Reason,
    /// For a split the nodes between the members decided (`effect_or_storage_release`,
    /// `intervening_collective`, `phase_boundary`): the first node that stopped the bucket,
    /// the one the reference's scan returns at. Not part of the report; shown to people.
    pub cause: Option<NodeId>,
}

/// One communication instance with static layout and scheduling bounds (`Candidate`).
///
/// What every candidate of a compatibility group has in common is one shared
/// [`CompatibilityKey`]: a plan of a large graph builds hundreds of thousands of candidates,
/// and each costs what it copies and what it reference-counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub launch: NodeId,
    pub wait: NodeId,
    pub source: NodeId,
    /// Graph position of the input (the reference keeps it apart from `source`).
    pub ready: NodeId,
    /// Graph position of the earliest real consumer of the waited result.
    pub first_use: NodeId,
    pub param_name: Arc<str>,
    pub state_idx: i128,
    pub input_shape: Arc<[i128]>,
    pub output_shape: Arc<[i128]>,
    /// `(kind, backward, scope, group, ranks, dtype, device, reduce_op)`.
    pub key: Arc<CompatibilityKey>,
    /// The owning module group's FQNs; `key.scope` is the first.
    pub module_fqns: Arc<[String]>,
}

/// Bytes per element of the dtypes the planner accepts.
pub fn itemsize(dtype: &str) -> u128 {
    match dtype {
        "torch.float16" | "torch.bfloat16" => 2,
        "torch.float64" => 8,
        _ => 4,
    }
}

/// `math.prod(shape)` over positive dims, saturating where Python would hold a huge int.
pub fn numel(shape: &[i128]) -> u128 {
    shape
        .iter()
        .try_fold(1u128, |acc, &d| acc.checked_mul(d.max(0) as u128))
        .unwrap_or(u128::MAX)
}

/// `Candidate.size_bytes`: `max(numel(input), numel(output)) * itemsize`.
pub fn size_bytes(input_shape: &[i128], output_shape: &[i128], dtype: &str) -> u128 {
    numel(input_shape)
        .max(numel(output_shape))
        .saturating_mul(itemsize(dtype))
}

impl Candidate {
    /// `max(numel(input), numel(output)) * itemsize`.
    pub fn size_bytes(&self) -> u128 {
        size_bytes(&self.input_shape, &self.output_shape, self.key.dtype)
    }

    /// `device_type` of the report: the device string before `:`.
    pub fn device_type(&self) -> &str {
        let device = &self.key.device;
        device.split(':').next().unwrap_or(device)
    }

    /// Elements this member contributes to the packed local buffer.
    pub fn local_numel(&self) -> u128 {
        if self.key.kind.is_reduce_scatter() {
            numel(&self.output_shape)
        } else {
            numel(&self.input_shape)
        }
    }
}

/// Everything that must match for two collectives to share one launch (`Candidate.key`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompatibilityKey {
    pub kind: CollectiveKind,
    pub backward: bool,
    /// The first FQN of the owning module group.
    pub scope: Arc<str>,
    pub group: Arc<str>,
    pub ranks: Arc<[i128]>,
    /// One of the four planned dtypes (`torch.float32`, ...).
    pub dtype: &'static str,
    pub device: Arc<str>,
    /// `sum` or `avg` for a reduce-scatter.
    pub reduce_op: Option<&'static str>,
}

/// Ordered members of a proposed bucket; a singleton means no fusion.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub bucket_id: BucketId,
    pub members: BucketMembers,
}

/// A bucket's members, in order: a range of one array that the plan's buckets share. A plan
/// of a large graph has hundreds of thousands of buckets, most of them singletons; they cost
/// one allocation, written front to back, rather than one each.
#[derive(Clone)]
pub struct BucketMembers {
    all: Arc<Vec<Candidate>>,
    start: usize,
    end: usize,
}

impl BucketMembers {
    /// Each bucket's members: `ranges` of one array of every bucket's members.
    pub(crate) fn split(
        all: Vec<Candidate>,
        ranges: impl Iterator<Item = (usize, usize)>,
    ) -> impl Iterator<Item = BucketMembers> {
        let all = Arc::new(all);
        ranges.map(move |(start, end)| BucketMembers {
            all: all.clone(),
            start,
            end,
        })
    }
}

impl std::ops::Deref for BucketMembers {
    type Target = [Candidate];

    fn deref(&self) -> &[Candidate] {
        self.all.get(self.start..self.end).unwrap_or_default()
    }
}

impl<'a> IntoIterator for &'a BucketMembers {
    type Item = &'a Candidate;
    type IntoIter = std::slice::Iter<'a, Candidate>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for BucketMembers {
    fn eq(&self, other: &BucketMembers) -> bool {
        **self == **other
    }
}

impl fmt::Debug for BucketMembers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A bucket's id, `"<first 12 characters of the graph signature>:bucket_<index>"`, written
/// out when shown: a plan of a large graph has hundreds of thousands of buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketId {
    /// `"<signature[:12]>:bucket_"`, shared by the plan's buckets.
    prefix: Arc<str>,
    index: usize,
}

impl BucketId {
    /// The prefix of every bucket id of a graph with this signature.
    pub(crate) fn prefix(signature: &str) -> Arc<str> {
        Arc::from(format!(
            "{}:bucket_",
            signature.get(..12).unwrap_or(signature)
        ))
    }

    pub(crate) fn with_prefix(prefix: &Arc<str>, index: usize) -> BucketId {
        BucketId {
            prefix: prefix.clone(),
            index,
        }
    }

    /// The id as text, made at its length without the formatting machinery: reports, the
    /// timeline and the bucket identities make one per bucket (63k at 500k nodes, where
    /// `to_string` was 7 ms of `plan`'s report).
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.prefix.len() + 8);
        self.push_to(&mut text);
        text
    }

    /// The id's text, after `out`.
    pub fn push_to(&self, out: &mut String) {
        out.push_str(&self.prefix);
        out.push_str(itoa::Buffer::new().format(self.index));
    }
}

impl fmt::Display for BucketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.prefix)?;
        f.write_str(itoa::Buffer::new().format(self.index))
    }
}

impl Bucket {
    pub fn supports_rs_rewrite(&self) -> bool {
        self.members.len() > 1 && self.members[0].key.kind.is_reduce_scatter()
    }

    pub fn supports_ag_rewrite(&self) -> bool {
        self.members.len() > 1 && !self.members[0].key.kind.is_reduce_scatter()
    }

    pub fn size_bytes(&self) -> u128 {
        self.members
            .iter()
            .fold(0u128, |acc, m| acc.saturating_add(m.size_bytes()))
    }

    /// The latest member input (`latest_input`).
    pub fn latest_input(&self) -> NodeId {
        self.members.iter().map(|m| m.ready).max().unwrap_or(0)
    }

    /// The earliest member consumer (`earliest_consumer`).
    pub fn earliest_consumer(&self) -> NodeId {
        self.members.iter().map(|m| m.first_use).min().unwrap_or(0)
    }

    /// The earliest member launch: buckets are ordered by it.
    pub fn first_launch(&self) -> NodeId {
        self.members.iter().map(|m| m.launch).min().unwrap_or(0)
    }

    pub fn fusable(&self) -> bool {
        self.members.len() > 1
    }
}

/// A per-group record of every tagged collective, skipped or not, compared across ranks:
/// `(comm_type, param_name, state_idx, spec with the device type only, reduce_op)`, read from
/// the node when a digest needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireRecord {
    pub node: NodeId,
}

impl WireRecord {
    /// The record as the reference builds it (`_record_wire_collective`).
    pub fn to_value(self, graph: &Graph) -> PyValue {
        let node = graph.node(self.node);
        let mut spec = match node.meta("fsdp_bucket_spec") {
            Some(PyValue::Dict(map)) => (**map).clone(),
            _ => IndexMap::new(),
        };
        if let Some(device) = spec.get_mut("device") {
            let text = device.py_str();
            *device = PyValue::Str(text.split(':').next().unwrap_or_default().to_string());
        }
        let is_rs = node.meta_str("comm_type") == Some(CollectiveKind::ReduceScatter.as_str());
        let reduce_op = if is_rs && node.args.len() > 1 {
            node.args[1].clone()
        } else {
            PyValue::None
        };
        let meta = |key: &str| node.meta(key).cloned().unwrap_or(PyValue::None);
        PyValue::List(vec![
            meta("comm_type"),
            meta("param_name"),
            meta("state_idx"),
            PyValue::Dict(std::sync::Arc::new(spec)),
            reduce_op,
        ])
    }
}

/// The summary counters of a plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub tagged_collectives: usize,
    pub selected_parameters: usize,
    pub selected_collectives: usize,
    pub candidate_collectives: usize,
    pub buckets: usize,
    pub singletons: usize,
    pub rs_rewrite_candidates: usize,
    pub ag_rewrite_candidates: usize,
    /// Per action, reason → count, in first-seen order.
    pub reason_counts: Vec<(Action, Vec<(Reason, usize)>)>,
    pub unmatched_module_paths: Vec<String>,
}

/// A dry-run plan tied to one graph snapshot (`BucketPlan`).
#[derive(Clone, Debug, PartialEq)]
pub struct BucketPlan {
    pub buckets: Vec<Bucket>,
    pub decisions: Vec<Decision>,
    pub signature: String,
    pub group_ranks: IndexMap<String, Vec<i128>>,
    pub wire_collectives: IndexMap<String, Vec<WireRecord>>,
    pub module_bucket_plans: Option<ModulePlans>,
    pub summary: Summary,
}

impl BucketPlan {
    /// The decision about a node, if any (a node may have a split and a singleton decision;
    /// the first is returned).
    pub fn decisions_for(&self, node: NodeId) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().filter(move |d| d.node == node)
    }
}

/// Reads a dump and prepares it for planning in the same pass: each node's graph facts,
/// inputs and planner-local checks are taken while the reader has it in cache, so what is
/// left touches only compact per-node facts and the tagged collectives' users. The result is
/// the same as `Planner::new(Graph::new(read_dump(bytes)?))`.
pub fn read_prepared<G: Borrow<Graph> + From<Graph>>(
    bytes: &[u8],
) -> Result<Planner<G>, DumpError> {
    read_prepared_with(bytes, &mut ())
}

/// [`read_prepared`], also handing each node and its graph facts to `extra` while the reader
/// has it in cache (the cost model's per-node work rides along this way). `extra` sees the
/// nodes in order only if the reader does; check its count against the graph's.
pub fn read_prepared_with<G: Borrow<Graph> + From<Graph>>(
    bytes: &[u8],
    extra: &mut dyn FactsSink,
) -> Result<Planner<G>, DumpError> {
    prepare_while_reading(|sink| read_dump_into(bytes, sink), extra)
}

/// [`read_prepared_with`] for any reader that hands each node to a [`NodeSink`] as it reads it
/// (the dump reader, the trace-log reader): `read` gets the sink and returns the dump.
pub fn prepare_while_reading<G: Borrow<Graph> + From<Graph>, E>(
    read: impl FnOnce(&mut dyn NodeSink) -> Result<Dump, E>,
    extra: &mut dyn FactsSink,
) -> Result<Planner<G>, E> {
    struct Sink<'a> {
        graph: GraphBuilder,
        planner: candidates::Preparer,
        extra: &'a mut dyn FactsSink,
    }
    impl NodeSink for Sink<'_> {
        fn begin(&mut self) {
            self.graph.begin();
            self.planner = candidates::Preparer::default();
            self.extra.begin();
        }

        fn expect_nodes(&mut self, nodes: usize) {
            self.graph.expect_nodes(nodes);
            self.planner.expect_nodes(nodes);
        }

        fn node(&mut self, index: usize, node: &Node) {
            self.graph.node(index, node);
            if let Some(facts) = self.graph.facts(index) {
                self.planner.visit(index, node, facts);
                self.extra.node(index, node, facts);
            }
        }

        fn keeps_repr(&self) -> bool {
            self.extra.keeps_repr()
        }
    }
    let mut sink = Sink {
        graph: GraphBuilder::default(),
        planner: candidates::Preparer::default(),
        extra,
    };
    let dump = read(&mut sink)?;
    let count = dump.nodes.len();
    let graph = sink.graph.finish(dump);
    if sink.planner.visited() != count {
        // Not every node reached the sink in order: prepare from the graph instead.
        return Ok(Planner::new(G::from(graph)));
    }
    Ok(Planner::prepared(G::from(graph), sink.planner))
}

/// Plans buckets for a graph: validates the arguments (reference order and messages), then
/// runs `plan_fsdp_buckets`. To plan one graph many times (live re-planning), keep a
/// [`Planner`].
pub fn plan(graph: &Graph, args: &PlannerArgs) -> Result<BucketPlan, ArgError> {
    Planner::new(graph).plan(args)
}

/// `plan_fsdp_buckets` with already validated arguments.
pub fn plan_validated(graph: &Graph, args: &ValidatedArgs) -> BucketPlan {
    Planner::new(graph).plan_validated(args)
}

/// A graph prepared for planning: what does not depend on the planner's arguments (the
/// tagged collectives, where a bucket could be stopped, the graph signature) is computed
/// once, so each re-plan only does the argument-dependent work.
///
/// `G` is how the planner holds its graph: borrowed (`Planner<&Graph>`) for one-off plans, or
/// shared (`Planner<Rc<Graph>>`) where it lives as long as the view that re-plans it.
pub struct Planner<G: Borrow<Graph>> {
    graph: G,
    barriers: buckets::Barriers,
    /// Nodes whose `comm_type` is a planned kind, in graph order, with their local checks.
    collectives: candidates::Collectives,
    signature: String,
}

impl<G: Borrow<Graph>> Planner<G> {
    pub fn new(graph: G) -> Planner<G> {
        let view = graph.borrow();
        let mut preparer = candidates::Preparer::default();
        // Counted first (a scan of small facts), so the collectives' vectors are not grown
        // by doubling: that was a tenth of the plan's thread in `commlens render`.
        let tagged = view
            .all_facts()
            .iter()
            .filter(|facts| CollectiveKind::from_tag(facts.tag).is_some())
            .count();
        preparer.expect_collectives(tagged);
        // Only the nodes the preparer reads are visited, each brought into cache a few
        // visits ahead (and then what it points to): after the read the nodes are out of
        // cache, and a visit otherwise waits for memory at each step of the chain.
        let nodes = view.nodes();
        let wanted: Vec<u32> = view
            .all_facts()
            .iter()
            .enumerate()
            .filter(|(_, facts)| candidates::Preparer::reads(facts))
            .map(|(id, _)| id as u32)
            .collect();
        const AHEAD: usize = 12;
        for (k, &id) in wanted.iter().enumerate() {
            if let Some(&far) = wanted.get(k + AHEAD) {
                nodes[far as usize].prefetch();
            }
            if let Some(&near) = wanted.get(k + AHEAD / 2) {
                nodes[near as usize].prefetch_parts();
            }
            let id = id as usize;
            preparer.visit(id, &nodes[id], view.all_facts()[id]);
        }
        Planner::prepared(graph, preparer)
    }

    /// The planner over a graph whose nodes `preparer` has visited.
    fn prepared(graph: G, preparer: candidates::Preparer) -> Planner<G> {
        let view = graph.borrow();
        // The reader hashed the signature while reading; only a hand-assembled dump is
        // hashed here. Inside `digest_elsewhere` it is left to the host (`set_signature`).
        let signature = match &view.dump.signature {
            Some(signature) => signature.clone(),
            None if crate::signature::digesting_elsewhere() => String::new(),
            None => report::graph_signature(view),
        };
        let prepared = preparer.finish(view);
        let barriers = buckets::Barriers::new(view, &prepared.freed_wait);
        Planner {
            graph,
            barriers,
            collectives: prepared.collectives,
            signature,
        }
    }

    pub fn graph(&self) -> &Graph {
        self.graph.borrow()
    }

    /// The nodes a plan's wire records can name, in graph order: the tagged collectives with
    /// a process-group name (which of them a plan keeps depends on its groups).
    pub fn wire_record_nodes(&self) -> Vec<NodeId> {
        self.collectives
            .tagged
            .iter()
            .filter(|c| c.group_name.is_some())
            .map(|c| c.node)
            .collect()
    }

    /// The graph signature the plans carry (their bucket ids start with its first 12
    /// characters).
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// Sets the graph signature: the hex SHA-256 of the bytes a reader handed out inside
    /// [`crate::signature::digest_elsewhere`], digested by the host.
    pub fn set_signature(&mut self, signature: String) {
        self.signature = signature;
    }

    /// The graph, as the planner holds it (an `Rc<Graph>` to share, say).
    pub fn graph_holder(&self) -> &G {
        &self.graph
    }

    /// The graph, as the planner holds it.
    pub fn into_graph(self) -> G {
        self.graph
    }

    /// Validates the arguments (reference order and messages) and plans.
    pub fn plan(&self, args: &PlannerArgs) -> Result<BucketPlan, ArgError> {
        let validated = args::validate(args, &self.graph().dump.modules)?;
        Ok(self.plan_validated(&validated))
    }

    /// `plan_fsdp_buckets` with already validated arguments.
    pub fn plan_validated(&self, args: &ValidatedArgs) -> BucketPlan {
        plan_prepared(self, args)
    }
}

fn plan_prepared<G: Borrow<Graph>>(planner: &Planner<G>, args: &ValidatedArgs) -> BucketPlan {
    let graph = planner.graph();
    let scan = candidates::scan(&planner.collectives, args);
    let candidates::ScanResult {
        candidates,
        groups,
        wire,
        scopes,
        mut decisions,
        tagged_count,
    } = scan;
    let candidate_count = candidates.len();
    let buckets = buckets::physical_buckets(
        graph,
        &planner.barriers,
        buckets::Admissions {
            admitted: &candidates,
            collectives: &planner.collectives,
            scopes: &scopes,
            groups: &groups,
        },
        &args.policy,
        &BucketId::prefix(&planner.signature),
        &mut decisions,
    );
    let signature = planner.signature.clone();
    let unmatched_module_paths = if args.module_plans.is_some() {
        candidates::unmatched_module_paths(&scopes, &planner.collectives.param_names)
    } else {
        Vec::new()
    };
    let mut reason_counts = Vec::new();
    for action in [Action::Skip, Action::Split, Action::Singleton] {
        let mut counts: Vec<(Reason, usize)> = Vec::new();
        for decision in decisions.iter().filter(|d| d.action == action) {
            match counts.iter_mut().find(|(r, _)| *r == decision.reason) {
                Some((_, n)) => *n += 1,
                None => counts.push((decision.reason, 1)),
            }
        }
        reason_counts.push((action, counts));
    }
    let summary = Summary {
        tagged_collectives: tagged_count,
        selected_parameters: scopes.iter().map(|s| s.params.len()).sum(),
        selected_collectives: scopes.iter().map(|s| s.collectives).sum(),
        candidate_collectives: candidate_count,
        buckets: buckets.len(),
        singletons: buckets.iter().filter(|b| b.members.len() == 1).count(),
        rs_rewrite_candidates: buckets.iter().filter(|b| b.supports_rs_rewrite()).count(),
        ag_rewrite_candidates: buckets.iter().filter(|b| b.supports_ag_rewrite()).count(),
        reason_counts,
        unmatched_module_paths,
    };
    BucketPlan {
        buckets,
        decisions,
        signature,
        group_ranks: args.groups.clone(),
        wire_collectives: wire,
        module_bucket_plans: args.module_plans.clone(),
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass or two, the same plan; and a document that repeats `nodes` (the last array
    /// counts) is prepared from the last array only.
    #[test]
    fn reading_for_planning_matches_planning_a_read_graph() {
        use crate::synth::{synthetic_dump, SynthSpec};
        let small = synthetic_dump(SynthSpec {
            layers: 1,
            degree: 2,
            hidden: 8,
        });
        let other = synthetic_dump(SynthSpec {
            layers: 3,
            degree: 4,
            hidden: 16,
        });
        let other: serde_json::Value = serde_json::from_str(&other).unwrap();
        let repeated = small.replacen('{', &format!("{{\"nodes\": {},", other["nodes"]), 1);
        for text in [&small, &repeated] {
            let graph = Graph::new(crate::read_dump(text.as_bytes()).unwrap());
            let args = crate::resolve_args(&graph, None);
            let two_pass = Planner::new(&graph).plan(&args).unwrap();
            let one_pass: Planner<Graph> = read_prepared(text.as_bytes()).unwrap();
            assert_eq!(one_pass.graph().len(), graph.len());
            let plan = one_pass.plan(&args).unwrap();
            assert_eq!(
                report::plan_to_json(&plan, one_pass.graph()),
                report::plan_to_json(&two_pass, &graph)
            );
            assert!(!plan.buckets.is_empty());
        }
    }

    /// Buckets are cut over compact key ids and each key is built once per plan; every
    /// candidate's key is still what its own node says, and a bucket's members share it. Some
    /// collectives are moved to another device or dtype so that keys differ within a scope.
    #[test]
    fn every_candidate_has_its_own_nodes_key() {
        use crate::dump::lookup;
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec {
            layers: 3,
            degree: 4,
            hidden: 16,
        });
        let mut varied = String::new();
        for (i, chunk) in text.split("\"fsdp_bucket_spec\"").enumerate() {
            if i > 0 {
                varied.push_str("\"fsdp_bucket_spec\"");
            }
            let chunk = match i % 6 {
                2 => chunk.replacen("cuda:0", "cuda:1", 1),
                4 => chunk.replacen("torch.float32", "torch.bfloat16", 1),
                _ => chunk.to_string(),
            };
            varied.push_str(&chunk);
        }
        let planner: Planner<Graph> = read_prepared(varied.as_bytes()).unwrap();
        let graph = planner.graph();
        let plan = planner.plan(&crate::resolve_args(graph, None)).unwrap();
        assert!(plan.buckets.iter().any(|b| b.members.len() > 1));
        let mut devices = std::collections::BTreeSet::new();
        let mut dtypes = std::collections::BTreeSet::new();
        for bucket in &plan.buckets {
            assert!(bucket
                .members
                .iter()
                .all(|m| m.key == bucket.members[0].key));
            for member in &bucket.members {
                let node = graph.node(member.launch);
                let spec = node
                    .meta("fsdp_bucket_spec")
                    .and_then(PyValue::as_dict)
                    .unwrap();
                let key = &member.key;
                assert_eq!(
                    Some(&*key.device),
                    lookup(spec, "device").and_then(PyValue::as_str)
                );
                let dtype = match lookup(spec, "dtype") {
                    Some(PyValue::Dtype(d)) => d.as_str(),
                    other => panic!("dtype {other:?}"),
                };
                assert_eq!(key.dtype, dtype);
                assert_eq!(
                    Some(&*key.group),
                    node.args.last().and_then(PyValue::as_str)
                );
                assert_eq!(
                    key.kind.as_str(),
                    node.meta("comm_type").and_then(PyValue::as_str).unwrap()
                );
                assert_eq!(key.backward, graph.facts(member.launch).backward);
                // The synthetic dump plans one module group per layer.
                assert_eq!(*key.scope, member.module_fqns[0]);
                assert!(member.module_fqns.iter().any(|fqn| member
                    .param_name
                    .strip_prefix(fqn.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))));
                devices.insert(key.device.to_string());
                dtypes.insert(key.dtype);
            }
        }
        assert_eq!(devices.len(), 2);
        assert_eq!(dtypes.len(), 2);
    }

    #[test]
    fn reasons_round_trip_and_count() {
        assert_eq!(Reason::SKIPS.len(), 17);
        assert_eq!(Reason::SPLITS.len(), 9);
        for r in Reason::SKIPS.iter().chain(Reason::SPLITS.iter()) {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
        }
    }
}
