//! The FSDP bucket planner: a faithful port of the reference `plan_fsdp_buckets`
//! (`../shared/seeds/planner_reference.py`). Same candidates, same skip/split/singleton
//! decisions with the same reason strings, same bucket and member order, same summary.
//!
//! One deliberate difference in *how* (never in *what*): the reference rescans every node
//! between a bucket's first member and each new candidate. Here each node is classified once
//! ([`Barriers`]) and a bucket only scans the nodes it has not yet passed, jumping straight to
//! the next node that could stop it, so planning grows near-linearly with graph size.

pub mod args;
pub mod report;

use crate::dump::Op;
use crate::graph::{is_free_tensor_storage, is_op, Graph, NodeId};
use crate::value::PyValue;
pub use args::{ArgError, BucketPolicy, ModulePlans, PlannerArgs, ValidatedArgs};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
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
        match tag {
            "fsdp_all_gather" => Some(CollectiveKind::AllGather),
            "fsdp_all_gather_backward" => Some(CollectiveKind::AllGatherBackward),
            "fsdp_reduce_scatter" => Some(CollectiveKind::ReduceScatter),
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

/// `comm_type` tags of the FSDP pass's storage releases (`_FREES`).
pub const FREE_TAGS: [&str; 2] = ["fsdp_reshard_free", "fsdp_reshard_free_backward"];

/// Why the planner did what it did to one collective; the strings are the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
}

/// One communication instance with static layout and scheduling bounds (`Candidate`).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub launch: NodeId,
    pub wait: NodeId,
    pub source: NodeId,
    pub param_name: String,
    pub state_idx: i128,
    pub kind: CollectiveKind,
    pub backward: bool,
    /// The first FQN of the owning module group (shared by the group's candidates).
    pub scope: Arc<str>,
    pub module_fqns: Arc<[String]>,
    pub group: Arc<str>,
    pub ranks: Arc<[i128]>,
    /// One of the four planned dtypes (`torch.float32`, ...).
    pub dtype: &'static str,
    pub device: Arc<str>,
    pub input_shape: Vec<i128>,
    pub output_shape: Vec<i128>,
    /// Graph position of the input.
    pub ready: NodeId,
    /// Graph position of the earliest real consumer of the waited result.
    pub first_use: NodeId,
    /// `sum` or `avg` for a reduce-scatter.
    pub reduce_op: Option<&'static str>,
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

impl Candidate {
    /// `max(numel(input), numel(output)) * itemsize`.
    pub fn size_bytes(&self) -> u128 {
        numel(&self.input_shape)
            .max(numel(&self.output_shape))
            .saturating_mul(itemsize(self.dtype))
    }

    /// The compatibility key (`Candidate.key`).
    pub fn key(&self) -> CompatibilityKey {
        CompatibilityKey {
            kind: self.kind,
            backward: self.backward,
            scope: self.scope.clone(),
            group: self.group.clone(),
            ranks: self.ranks.clone(),
            dtype: self.dtype,
            device: self.device.clone(),
            reduce_op: self.reduce_op,
        }
    }

    /// Whether two candidates have the same compatibility key, without building it.
    pub fn same_key(&self, other: &Candidate) -> bool {
        self.kind == other.kind
            && self.backward == other.backward
            && self.scope == other.scope
            && self.group == other.group
            && self.ranks == other.ranks
            && self.dtype == other.dtype
            && self.device == other.device
            && self.reduce_op == other.reduce_op
    }

    /// `device_type` of the report: the device string before `:`.
    pub fn device_type(&self) -> &str {
        self.device.split(':').next().unwrap_or(&self.device)
    }

    /// Elements this member contributes to the packed local buffer.
    pub fn local_numel(&self) -> u128 {
        if self.kind.is_reduce_scatter() {
            numel(&self.output_shape)
        } else {
            numel(&self.input_shape)
        }
    }
}

/// Everything that must match for two collectives to share one launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompatibilityKey {
    pub kind: CollectiveKind,
    pub backward: bool,
    pub scope: Arc<str>,
    pub group: Arc<str>,
    pub ranks: Arc<[i128]>,
    pub dtype: &'static str,
    pub device: Arc<str>,
    pub reduce_op: Option<&'static str>,
}

/// Ordered members of a proposed bucket; a singleton means no fusion.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub bucket_id: String,
    pub members: Vec<Candidate>,
}

impl Bucket {
    pub fn supports_rs_rewrite(&self) -> bool {
        self.members.len() > 1 && self.members[0].kind.is_reduce_scatter()
    }

    pub fn supports_ag_rewrite(&self) -> bool {
        self.members.len() > 1 && !self.members[0].kind.is_reduce_scatter()
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
            Some(PyValue::Dict(map)) => map.clone(),
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
            PyValue::Dict(spec),
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
pub struct Planner<'g> {
    graph: &'g Graph,
    barriers: Barriers,
    /// Nodes whose `comm_type` is a planned kind, in graph order.
    tagged: Vec<(NodeId, CollectiveKind)>,
    signature: String,
}

impl<'g> Planner<'g> {
    pub fn new(graph: &'g Graph) -> Planner<'g> {
        let tagged = graph
            .nodes()
            .iter()
            .enumerate()
            .filter_map(|(id, node)| {
                let kind = CollectiveKind::from_comm_type(node.meta_str("comm_type")?)?;
                Some((id, kind))
            })
            .collect();
        Planner {
            graph,
            barriers: Barriers::new(graph),
            tagged,
            signature: report::graph_signature(graph),
        }
    }

    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Validates the arguments (reference order and messages) and plans.
    pub fn plan(&self, args: &PlannerArgs) -> Result<BucketPlan, ArgError> {
        let validated = args::validate(args, &self.graph.dump.modules)?;
        Ok(self.plan_validated(&validated))
    }

    /// `plan_fsdp_buckets` with already validated arguments.
    pub fn plan_validated(&self, args: &ValidatedArgs) -> BucketPlan {
        plan_prepared(self, args)
    }
}

fn plan_prepared(planner: &Planner<'_>, args: &ValidatedArgs) -> BucketPlan {
    let graph = planner.graph;
    let scan = scan_collectives(graph, &planner.tagged, args);
    let ScanResult {
        candidates,
        wire,
        scopes,
        mut decisions,
        tagged_count,
    } = scan;
    let candidate_count = candidates.len();
    let mut buckets = physical_buckets(
        graph,
        &planner.barriers,
        candidates,
        &args.policy,
        &mut decisions,
    );
    let signature = planner.signature.clone();
    for (index, bucket) in buckets.iter_mut().enumerate() {
        bucket.bucket_id = format!("{}:bucket_{index}", &signature[..12]);
    }
    let unmatched_module_paths = if args.module_plans.is_some() {
        unmatched_module_paths(&scopes)
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
        selected_parameters: scopes.iter().map(|s| s.names.len()).sum(),
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

/// A module scope seen while scanning: the group's FQNs and the parameters it selected.
struct ScopeEntry<'g> {
    fqns: Arc<[String]>,
    first: Arc<str>,
    /// Parameter names in first-seen order.
    names: Vec<&'g str>,
    name_set: HashSet<&'g str>,
    /// Tagged collectives of this scope.
    collectives: usize,
}

impl<'g> ScopeEntry<'g> {
    fn new(fqns: Vec<String>) -> ScopeEntry<'g> {
        ScopeEntry {
            first: Arc::from(fqns[0].as_str()),
            fqns: Arc::from(fqns),
            names: Vec::new(),
            name_set: HashSet::new(),
            collectives: 0,
        }
    }
}

struct ScanResult<'g> {
    candidates: Vec<Candidate>,
    wire: IndexMap<String, Vec<WireRecord>>,
    scopes: Vec<ScopeEntry<'g>>,
    decisions: Vec<Decision>,
    tagged_count: usize,
}

/// Shared, reference-counted strings the candidates point to, one per distinct value.
struct Interned {
    groups: HashMap<String, (Arc<str>, Arc<[i128]>)>,
    devices: HashMap<String, Arc<str>>,
}

impl Interned {
    fn device(&mut self, device: &str) -> Arc<str> {
        if let Some(shared) = self.devices.get(device) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(device);
        self.devices.insert(device.to_string(), shared.clone());
        shared
    }
}

/// `_scan_collectives`: wire records, skip decisions and candidates, in graph order.
fn scan_collectives<'g>(
    graph: &'g Graph,
    tagged: &[(NodeId, CollectiveKind)],
    args: &ValidatedArgs,
) -> ScanResult<'g> {
    let mut decisions = Vec::new();
    let mut candidates = Vec::new();
    let mut wire: IndexMap<String, Vec<WireRecord>> = args
        .groups
        .keys()
        .map(|g| (g.clone(), Vec::new()))
        .collect();
    let mut interned = Interned {
        groups: args
            .groups
            .iter()
            .map(|(g, ranks)| {
                let shared: (Arc<str>, Arc<[i128]>) = (Arc::from(g.as_str()), Arc::from(ranks.as_slice()));
                (g.clone(), shared)
            })
            .collect(),
        devices: HashMap::new(),
    };
    // With module plans, scope `i` is plan group `i`; without, scopes are parent modules
    // (or `<parameter:NAME>`), found by name.
    let mut scopes: Vec<ScopeEntry<'g>> = args
        .module_plans
        .iter()
        .flatten()
        .map(|group| ScopeEntry::new(group.clone()))
        .collect();
    let mut scope_by_name: HashMap<String, usize> = HashMap::new();
    let module_index = args.module_plans.as_ref().map(args::ModuleIndex::new);
    let mut tagged_count = 0;
    let mut scratch = ConsumerScratch::default();
    for &(id, kind) in tagged {
        let node = graph.node(id);
        tagged_count += 1;
        let name = node
            .meta("param_name")
            .and_then(PyValue::as_str)
            .filter(|n| !n.is_empty());
        let scope = name.and_then(|name| match &module_index {
            Some(index) => index.group_of(name),
            None => {
                let parent = name.rsplit_once('.').map_or("", |(head, _)| head);
                if let Some(&slot) = scope_by_name.get(parent).filter(|_| !parent.is_empty()) {
                    return Some(slot);
                }
                let key = if parent.is_empty() {
                    format!("<parameter:{name}>")
                } else {
                    parent.to_string()
                };
                Some(*scope_by_name.entry(key).or_insert_with_key(|key| {
                    scopes.push(ScopeEntry::new(vec![key.clone()]));
                    scopes.len() - 1
                }))
            }
        });
        if let (Some(slot), Some(name)) = (scope, name) {
            let entry = &mut scopes[slot];
            if entry.name_set.insert(name) {
                entry.names.push(name);
            }
            entry.collectives += 1;
        }
        if let Some(PyValue::Str(group)) = node.args.last() {
            if let Some(records) = wire.get_mut(group) {
                records.push(WireRecord { node: id });
            }
        }
        let outcome = if !args.supported_mode {
            Err(Reason::UnsupportedParallelMode)
        } else {
            let scope = scope.map(|slot| &scopes[slot]);
            candidate(graph, id, kind, scope, args, &mut interned, &mut scratch)
        };
        match outcome {
            Ok(candidate) => candidates.push(candidate),
            Err(reason) => decisions.push(Decision {
                node: id,
                previous_node: None,
                action: Action::Skip,
                reason,
            }),
        }
    }
    ScanResult {
        candidates,
        wire,
        scopes,
        decisions,
        tagged_count,
    }
}

/// `_signature_reason`.
fn signature_reason(
    node: &crate::dump::Node,
    kind: CollectiveKind,
    groups: &IndexMap<String, Vec<i128>>,
) -> Option<Reason> {
    let backward = node.meta_flag("autograd_backward");
    if backward != (kind != CollectiveKind::AllGather) {
        return Some(Reason::PhaseMismatch);
    }
    let arity = if kind.is_reduce_scatter() { 4 } else { 3 };
    if !node.kwargs.is_empty() || node.args.len() != arity {
        return Some(Reason::UnsupportedSignature);
    }
    let (source, group) = (&node.args[0], &node.args[arity - 1]);
    let group = match (source, group) {
        (PyValue::Node(_), PyValue::Str(group)) if groups.contains_key(group) => group,
        _ => return Some(Reason::UnknownProcessGroup),
    };
    match node.args[arity - 2].static_int() {
        Some(degree) if degree > 1 && degree == groups[group].len() as i128 => {}
        _ => return Some(Reason::GroupSizeMismatch),
    }
    if let Some(comm_group) = node.meta("comm_group") {
        if !comm_group.py_eq(&PyValue::Str(group.clone())) {
            return Some(Reason::GroupMetadataMismatch);
        }
    }
    let name_ok = node
        .meta("param_name")
        .and_then(PyValue::as_str)
        .is_some_and(|n| !n.is_empty());
    let index_ok = node
        .meta("state_idx")
        .and_then(PyValue::static_int)
        .is_some_and(|i| i >= 0);
    if !name_ok || !index_ok {
        return Some(Reason::MissingParameterIdentity);
    }
    None
}

/// A static shape: a non-empty list of positive ints.
fn static_shape(value: Option<&PyValue>) -> Option<Vec<i128>> {
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

/// `_layout_reason`, returning the parsed layout when it is packable.
fn layout(
    kind: CollectiveKind,
    degree: i128,
    spec: &IndexMap<String, PyValue>,
) -> Result<(Vec<i128>, Vec<i128>, &'static str, &str), Reason> {
    let input = static_shape(spec.get("input_shape"));
    let output = static_shape(spec.get("output_shape"));
    let (Some(input), Some(output)) = (input, output) else {
        return Err(Reason::UnknownOrDynamicShape);
    };
    let dtype = match spec.get("dtype") {
        Some(PyValue::Dtype(d)) => match PLANNED_DTYPES.iter().find(|p| **p == d.as_str()) {
            Some(planned) => *planned,
            None => return Err(Reason::UnsupportedDtype),
        },
        _ => return Err(Reason::UnsupportedDtype),
    };
    let device = match spec.get("device") {
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
    Ok((input, output, dtype, device))
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

/// `_candidate`: a bucketable collective, or why it is skipped.
fn candidate(
    graph: &Graph,
    id: NodeId,
    kind: CollectiveKind,
    scope: Option<&ScopeEntry<'_>>,
    args: &ValidatedArgs,
    interned: &mut Interned,
    scratch: &mut ConsumerScratch,
) -> Result<Candidate, Reason> {
    let node = graph.node(id);
    if !is_op(node, "_c10d_functional", kind.op()) || node.meta_flag("fsdp_bucket_members") {
        return Err(Reason::UnsupportedOrAlreadyBucketed);
    }
    if let Some(reason) = signature_reason(node, kind, &args.groups) {
        return Err(reason);
    }
    let arity = node.args.len();
    let degree = node.args[arity - 2].static_int().unwrap_or_default();
    let empty = IndexMap::new();
    // The reference calls `.get` on the spec; a non-dict spec is read as empty here.
    let spec = node
        .meta("fsdp_bucket_spec")
        .and_then(PyValue::as_dict)
        .unwrap_or(&empty);
    let (input_shape, output_shape, dtype, device) = layout(kind, degree, spec)?;
    let waits = graph.users(id);
    if waits.len() != 1 || !graph.is_wait(waits[0]) {
        return Err(Reason::UnsupportedWaitUsers);
    }
    let wait = waits[0];
    let Some(consumers) = scratch.summarise(graph, wait) else {
        return Err(Reason::NoConsumer);
    };
    let mut reduce_op = None;
    if kind.is_reduce_scatter() {
        match node.args[1].as_str() {
            Some("sum") => reduce_op = Some("sum"),
            Some("avg") => reduce_op = Some("avg"),
            _ => return Err(Reason::UnsupportedReduceOp),
        }
        if !consumers.all_output {
            return Err(Reason::NonOutputRsConsumer);
        }
    }
    let Some(scope) = scope else {
        return Err(Reason::OutsideModulePlan);
    };
    let group_name = node.args[arity - 1].as_str().unwrap_or_default();
    let (group, ranks) = match interned.groups.get(group_name) {
        Some(shared) => shared.clone(),
        None => (Arc::from(group_name), Arc::from(Vec::new())),
    };
    let source = crate::dump::node_index(&node.args[0]).unwrap_or(0);
    Ok(Candidate {
        launch: id,
        wait,
        source,
        param_name: node.meta_str("param_name").unwrap_or_default().to_string(),
        state_idx: node
            .meta("state_idx")
            .and_then(PyValue::static_int)
            .unwrap_or_default(),
        kind,
        backward: node.meta_flag("autograd_backward"),
        scope: scope.first.clone(),
        module_fqns: scope.fqns.clone(),
        group,
        ranks,
        dtype,
        device: interned.device(device),
        input_shape,
        output_shape,
        ready: source,
        first_use: consumers.first,
        reduce_op,
    })
}

/// What the planner needs of a wait's real consumers (`_consumers`), found without
/// allocating per collective.
struct ConsumerSummary {
    /// The earliest consumer's graph position.
    first: NodeId,
    /// Whether every consumer is the graph output.
    all_output: bool,
}

#[derive(Default)]
struct ConsumerScratch {
    stack: Vec<NodeId>,
    seen: HashSet<NodeId>,
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
                    all_output &= graph.node(user).op == Op::Output;
                }
            }
        }
        first.map(|first| ConsumerSummary { first, all_output })
    }
}

/// Per-node facts the split checks need, computed once per plan.
struct Barriers {
    /// `comm_type` is a reshard free.
    free_tagged: Vec<bool>,
    /// Next node at or after `i` that could stop a bucket of the given phase
    /// (`[forward, backward]`); `len` when there is none.
    next_stop: [Vec<usize>; 2],
    /// `bool(meta.autograd_backward)` for nodes that take part in the phase check.
    phase: Vec<Option<bool>>,
}

impl Barriers {
    fn new(graph: &Graph) -> Barriers {
        let n = graph.len();
        let mut free_tagged = vec![false; n];
        let mut phase = vec![None; n];
        let mut next_stop = [vec![n; n + 1], vec![n; n + 1]];
        for i in (0..n).rev() {
            let node = graph.node(i);
            free_tagged[i] = node
                .meta_str("comm_type")
                .is_some_and(|t| FREE_TAGS.contains(&t));
            if !matches!(node.op, Op::Placeholder | Op::GetAttr | Op::Output) {
                phase[i] = Some(node.meta_flag("autograd_backward"));
            }
            let effect_or_collective =
                free_tagged[i] || graph.is_barrier(i) || graph.is_collective(i);
            for (slot, backward) in [false, true].into_iter().enumerate() {
                let other_phase = phase[i].is_some_and(|p| p != backward);
                next_stop[slot][i] = if effect_or_collective || other_phase {
                    i
                } else {
                    next_stop[slot][i + 1]
                };
            }
        }
        Barriers {
            free_tagged,
            next_stop,
            phase,
        }
    }
}

/// The bucket being filled, with what its split checks need kept up to date.
struct OpenBucket {
    members: Vec<Candidate>,
    param_names: HashSet<String>,
    state_indices: HashSet<i128>,
    size_bytes: u128,
    launches: HashSet<NodeId>,
    waits: HashSet<NodeId>,
    preparations: HashSet<NodeId>,
    /// Nodes before this position have been checked against the bucket.
    scanned_to: NodeId,
}

impl OpenBucket {
    fn new(graph: &Graph, first: Candidate) -> OpenBucket {
        let mut bucket = OpenBucket {
            members: Vec::new(),
            param_names: HashSet::new(),
            state_indices: HashSet::new(),
            size_bytes: 0,
            launches: HashSet::new(),
            waits: HashSet::new(),
            preparations: HashSet::new(),
            scanned_to: 0,
        };
        bucket.start(graph, first);
        bucket
    }

    /// Empties the bucket (keeping its allocations) and opens it with `first`.
    fn start(&mut self, graph: &Graph, first: Candidate) {
        self.members.clear();
        self.param_names.clear();
        self.state_indices.clear();
        self.size_bytes = 0;
        self.launches.clear();
        self.waits.clear();
        self.preparations.clear();
        self.scanned_to = first.launch + 1;
        let preparation = preparation_of(graph, &first);
        self.push(first, preparation);
    }

    fn push(&mut self, candidate: Candidate, preparation: Vec<NodeId>) {
        self.param_names.insert(candidate.param_name.clone());
        self.state_indices.insert(candidate.state_idx);
        self.size_bytes = self.size_bytes.saturating_add(candidate.size_bytes());
        self.launches.insert(candidate.launch);
        self.waits.insert(candidate.wait);
        self.preparations.extend(preparation);
        self.scanned_to = self.scanned_to.max(candidate.launch);
        self.members.push(candidate);
    }

    /// `_membership_reason`.
    fn membership_reason(&self, candidate: &Candidate, policy: &BucketPolicy) -> Option<Reason> {
        let last = self.members.last()?;
        if !last.same_key(candidate) {
            return Some(Reason::IncompatibleKey);
        }
        if self.param_names.contains(&candidate.param_name)
            || self.state_indices.contains(&candidate.state_idx)
        {
            return Some(Reason::RepeatedParameterInstance);
        }
        if let Some(cap) = policy.cap_bytes {
            if self.size_bytes.saturating_add(candidate.size_bytes()) > cap {
                return Some(Reason::Capacity);
            }
        }
        None
    }

    /// `_window_reason`.
    fn window_reason(&self, candidate: &Candidate, policy: &BucketPolicy) -> Option<Reason> {
        let all = || self.members.iter().chain(std::iter::once(candidate));
        let span = |values: &mut dyn Iterator<Item = usize>| {
            let (mut lo, mut hi) = (usize::MAX, 0);
            for v in values {
                lo = lo.min(v);
                hi = hi.max(v);
            }
            (lo, hi)
        };
        let (ready_lo, ready_hi) = span(&mut all().map(|m| m.ready));
        let (use_lo, use_hi) = span(&mut all().map(|m| m.first_use));
        if let Some(limit) = policy.max_input_distance {
            if (ready_hi - ready_lo) as u128 > limit {
                return Some(Reason::InputDistance);
            }
        }
        if let Some(limit) = policy.max_consumer_distance {
            if (use_hi - use_lo) as u128 > limit {
                return Some(Reason::ConsumerDistance);
            }
        }
        // Only immutable result views may move after the latest input; real consumers
        // (including frees) must stay after that insertion point.
        if ready_hi >= use_lo {
            return Some(Reason::DependencyConflict);
        }
        None
    }

    /// `_intervening_reason` over the nodes this bucket has not yet passed. Nodes already
    /// passed cannot stop it now: every exemption only grows as members join, and the phase
    /// and kind are part of the compatibility key.
    fn intervening_reason(
        &self,
        graph: &Graph,
        barriers: &Barriers,
        candidate: &Candidate,
        preparation: &[NodeId],
    ) -> Option<Reason> {
        let slot = candidate.backward as usize;
        let mut i = barriers.next_stop[slot][self.scanned_to.min(graph.len())];
        while i < candidate.launch {
            if let Some(reason) = self.stop_reason(graph, barriers, candidate, preparation, i) {
                return Some(reason);
            }
            i = barriers.next_stop[slot][i + 1];
        }
        None
    }

    /// The reference's per-node test, in its order.
    fn stop_reason(
        &self,
        graph: &Graph,
        barriers: &Barriers,
        candidate: &Candidate,
        preparation: &[NodeId],
        i: NodeId,
    ) -> Option<Reason> {
        if self.preparations.contains(&i) || preparation.contains(&i) {
            // Only these default, private RS layout nodes are known pure here.
            return None;
        }
        if barriers.free_tagged[i] {
            // Copy-out preserves each member's storage and free point: only that exact
            // materialization may be crossed.
            if !self.owns_free(graph, candidate, i) {
                return Some(Reason::EffectOrStorageRelease);
            }
        } else if graph.is_barrier(i) {
            return Some(Reason::EffectOrStorageRelease);
        }
        if graph.is_collective(i) && !self.launches.contains(&i) && i != candidate.launch {
            return Some(Reason::InterveningCollective);
        }
        if barriers.phase[i].is_some_and(|p| p != candidate.backward) {
            return Some(Reason::PhaseBoundary);
        }
        None
    }

    /// `_owned_free`: the node frees exactly one member's waited result.
    fn owns_free(&self, graph: &Graph, candidate: &Candidate, i: NodeId) -> bool {
        let node = graph.node(i);
        !candidate.kind.is_reduce_scatter()
            && is_free_tensor_storage(node)
            && node.kwargs.is_empty()
            && node.args.len() == 1
            && crate::dump::node_index(&node.args[0])
                .is_some_and(|w| self.waits.contains(&w) || w == candidate.wait)
    }

    /// `_finalize_bucket`: members in `(state_idx, param_name)` order.
    fn finish(&mut self) -> Bucket {
        let mut members = std::mem::take(&mut self.members);
        members.sort_by(|a, b| (a.state_idx, &a.param_name).cmp(&(b.state_idx, &b.param_name)));
        Bucket {
            bucket_id: String::new(),
            members,
        }
    }
}

fn preparation_of(graph: &Graph, candidate: &Candidate) -> Vec<NodeId> {
    if candidate.kind.is_reduce_scatter() {
        graph.rs_layout_preparation(candidate.launch)
    } else {
        Vec::new()
    }
}

/// `_physical_buckets`: group by compatibility key, then cut where a split reason appears.
fn physical_buckets(
    graph: &Graph,
    barriers: &Barriers,
    candidates: Vec<Candidate>,
    policy: &BucketPolicy,
    decisions: &mut Vec<Decision>,
) -> Vec<Bucket> {
    let mut compatible: IndexMap<CompatibilityKey, Vec<Candidate>> = IndexMap::new();
    for candidate in candidates {
        compatible
            .entry(candidate.key())
            .or_default()
            .push(candidate);
    }
    let mut buckets = Vec::new();
    let mut open: Option<OpenBucket> = None;
    for group in compatible.into_values() {
        let mut filling = false;
        for candidate in group {
            let oversized = policy
                .cap_bytes
                .is_some_and(|cap| candidate.size_bytes() > cap);
            let launch = candidate.launch;
            match open.as_mut() {
                None => open = Some(OpenBucket::new(graph, candidate)),
                Some(bucket) if !filling => bucket.start(graph, candidate),
                Some(bucket) => {
                    let preparation = preparation_of(graph, &candidate);
                    let reason = bucket
                        .membership_reason(&candidate, policy)
                        .or_else(|| bucket.window_reason(&candidate, policy))
                        .or_else(|| {
                            bucket.intervening_reason(graph, barriers, &candidate, &preparation)
                        });
                    match reason {
                        Some(reason) => {
                            let previous = bucket.members.last().map(|m| m.launch);
                            buckets.push(bucket.finish());
                            decisions.push(Decision {
                                node: launch,
                                previous_node: previous,
                                action: Action::Split,
                                reason,
                            });
                            bucket.start(graph, candidate);
                        }
                        None => bucket.push(candidate, preparation),
                    }
                }
            }
            filling = true;
            if oversized {
                decisions.push(Decision {
                    node: launch,
                    previous_node: None,
                    action: Action::Singleton,
                    reason: Reason::Oversized,
                });
            }
        }
        if filling {
            if let Some(bucket) = open.as_mut() {
                buckets.push(bucket.finish());
            }
        }
    }
    // Model declaration order never silently reorders the collective stream.
    buckets.sort_by_key(Bucket::first_launch);
    buckets
}

/// `_unmatched_module_paths`: scope paths that selected no parameter.
fn unmatched_module_paths(scopes: &[ScopeEntry<'_>]) -> Vec<String> {
    let mut unmatched = Vec::new();
    for scope in scopes {
        for path in scope.fqns.iter() {
            let matched = scope.names.iter().any(|name| {
                name.strip_prefix(path.as_str())
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

    /// `incompatible_key` cannot be reached through `plan` (candidates are grouped by key
    /// first), so the membership check is exercised directly.
    #[test]
    fn membership_rejects_an_incompatible_key_first() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec { layers: 1, degree: 2, hidden: 8 });
        let graph = Graph::new(crate::read_dump(text.as_bytes()).unwrap());
        let validated = args::validate(&crate::resolve_args(&graph, None), &graph.dump.modules).unwrap();
        let planner = Planner::new(&graph);
        let scan = scan_collectives(&graph, &planner.tagged, &validated);
        let forward = scan.candidates.iter().find(|c| c.kind == CollectiveKind::AllGather).unwrap();
        let mut other = forward.clone();
        other.dtype = "torch.bfloat16".into();
        other.param_name = "other".into();
        other.state_idx = 999;
        let open = OpenBucket::new(&graph, forward.clone());
        assert_eq!(open.membership_reason(&other, &BucketPolicy::default()), Some(Reason::IncompatibleKey));
        let mut repeated = forward.clone();
        repeated.launch += 1;
        assert_eq!(open.membership_reason(&repeated, &BucketPolicy::default()), Some(Reason::RepeatedParameterInstance));
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
