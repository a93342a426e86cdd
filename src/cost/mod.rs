//! A time axis for a graph and its plan: what each collective, bucket and compute node costs
//! on given hardware, and a simulated training step.
//!
//! * [`comm`]: torch 2.15's analytical NCCL model (`torch/_inductor/comm_analysis.py`).
//! * [`flops`]: torch's FLOP formulas (`torch/utils/flop_counter.py`).
//! * [`roofline`]: compute time as Inductor's overlap scheduler estimates it, with presets.
//! * [`simulate`]: one compute stream and one communication stream per process group.
//! * [`report`]: `commlens cost`'s JSON and text.
//!
//! The work is split by what it depends on, so the app pays each part only when its input
//! changes: [`GraphWork`] (per graph: which nodes compute or communicate, their FLOPs and
//! bytes), [`Timing`] (per hardware and process-group sizes: microseconds per node and per
//! collective), and [`CostModel::unbucketed`] / [`CostModel::planned`] (per plan: a linear
//! sweep over the nodes). See `docs/cost-model.md` for provenance and limits.

pub mod comm;
pub mod flops;
pub mod report;
pub mod roofline;
pub mod simulate;
pub mod tensor;

pub use comm::{
    collective_time, AlgoProto, CollectiveTime, CollectiveType, GpuGeneration, Network,
};
pub use flops::Formula;
pub use report::CostReport;
pub use roofline::Roofline;
pub use simulate::{Launch, Stall, Step, StepSummary};

use crate::dump::{lookup, node_index, Node, Op};
use crate::graph::{Graph, NodeId};
use crate::ops::{Api, Transport};
use crate::planner::BucketPlan;
use crate::value::PyValue;
use indexmap::IndexMap;
use tensor::{for_each_tensor, TensorMeta};

/// The hardware a graph is costed on: the network the NCCL model reads and the roofline.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    pub network: Network,
    pub roofline: Roofline,
}

impl Hardware {
    /// A generation with torch's defaults (8 GPUs per node, NVLink, no bandwidth overrides)
    /// and its roofline preset.
    pub fn preset(gpu: GpuGeneration) -> Hardware {
        Hardware::with_network(Network {
            gpu,
            ..Network::default()
        })
    }

    /// `network`'s GPU generation's preset roofline, with `network` (at least one GPU per
    /// node): what `commlens cost` and the app build from the same options.
    pub fn with_network(network: Network) -> Hardware {
        Hardware {
            roofline: Roofline::preset(network.gpu),
            network: Network {
                gpus_per_node: network.gpus_per_node.max(1),
                ..network
            },
        }
    }
}

impl Default for Hardware {
    /// What torch's model assumes on a machine without a GPU (Ampere).
    fn default() -> Hardware {
        Hardware::preset(Network::default().gpu)
    }
}

/// How the cost model treats a communication op: how the graph calls it, its type, its
/// process group and its own `group_size` argument.
#[derive(Clone, Copy, Debug)]
struct CommOp<'n> {
    api: Api,
    coll: CollectiveType,
    group: Option<&'n str>,
    group_size: Option<u64>,
}

/// The communication ops the cost model times: the functional collectives (`crate::ops`),
/// which return a tensor that a `wait_tensor` completes. Non-functional `c10d` ops are listed
/// with no time (torch's model cannot resolve their process group); fused
/// communication-compute ops (`symm_mem.fused_*`) run on the compute stream, costed by the
/// roofline, as torch's overlap scheduler costs them.
fn comm_op(node: &Node) -> Option<CommOp<'_>> {
    let call = crate::ops::collective_call(node)?;
    let legacy = node.target.starts_with("c10d_functional.");
    let size_arg = match call.api {
        Api::Fused => return None,
        Api::C10d => None,
        // The legacy ops end with `ranks, group_size`.
        _ if legacy => node.args.last(),
        _ => match call.transport {
            Transport::AllGather => node.args.get(1),
            Transport::ReduceScatter => node.args.get(2),
            _ => None,
        },
    };
    let group_size = lookup(&node.kwargs, "group_size")
        .filter(|_| call.api != Api::C10d)
        .or(size_arg)
        .and_then(PyValue::static_int)
        .and_then(|g| u64::try_from(g).ok());
    Some(CommOp {
        api: call.api,
        coll: CollectiveType::from_kernel_name(call.op),
        group: call.group_argument(node).and_then(PyValue::as_str),
        group_size,
    })
}

/// A compute node's work: what the roofline needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeWork {
    pub node: NodeId,
    /// What `FlopCounterMode` counts for the node: `None` for an op with a formula whose count
    /// is unknown here (symbolic sizes, shapes torch's formula would reject); 0 for an op
    /// without a formula. Counts saturate at `u64::MAX`.
    pub flops: Option<u64>,
    /// The FLOPs the roofline uses (flex attention scaled by `sparsity_hint`).
    time_flops: u64,
    /// Bytes read and written (`get_transfer_time`).
    pub bytes: u64,
    /// Index into `TORCH_DTYPES` of the first output tensor's dtype.
    dtype: Option<u8>,
}

/// A communication op's work: what the NCCL model needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommWork {
    pub node: NodeId,
    /// How the graph calls it (a non-functional `c10d` op is listed, never timed).
    pub api: Api,
    pub coll: CollectiveType,
    /// `estimate_fx_collective_size`: input and output tensor bytes.
    pub bytes: u64,
    /// The process group's name (index into [`GraphWork::groups`]), when it is a string.
    pub group: Option<u32>,
    /// The op's own `group_size` argument (or the legacy ops' `ranks`).
    pub group_size_arg: Option<u64>,
}

/// Everything about a graph that the cost depends on and the hardware does not: computed
/// once per graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphWork {
    pub len: usize,
    pub compute: Vec<ComputeWork>,
    pub comms: Vec<CommWork>,
    /// `(wait node, comm index)`, in graph order: where compute blocks on a collective.
    pub waits: Vec<(NodeId, u32)>,
    /// Process-group names, by first appearance.
    pub groups: Vec<String>,
    /// Each of `groups` by name: a graph may hold as many groups as collectives.
    group_ids: crate::hashing::FastMap<String, u32>,
    /// The comm index of each node that is a communication op (`u32::MAX` otherwise).
    comm_at: Vec<u32>,
    /// `getitem` nodes of a coalesced collective's result: node → comm index.
    item_of: crate::hashing::FastMap<NodeId, u32>,
}

const NO_COMM: u32 = u32::MAX;

/// What the estimators read of a node's own result (`meta["val"]`), summarised once per node
/// in graph order: a node's users read this compact record instead of following the
/// pointers of their inputs' metadata again (a 100k-node graph's inputs are all over memory).
#[derive(Clone, Copy, Debug, Default)]
struct ValInfo {
    /// `val` is one tensor: its bytes as `estimate_fx_collective_size` counts them.
    tensor: Option<u64>,
    /// `val` is a list or tuple: the bytes of its tensor elements, likewise.
    elements: Option<u64>,
    /// Bytes of every tensor in `val` (`get_num_bytes`, broadcast dimensions once).
    transfer: u64,
    /// The first tensor's dtype, as an index into `TORCH_DTYPES`.
    dtype: Option<u8>,
    /// `val` is present (the roofline gives a node without one no time).
    present: bool,
    /// `val` is one tensor of static shape: its dimensions, `(start, len)` in the shape table.
    shape: Option<(u32, u8)>,
}

/// `str(dtype)` to its index in `TORCH_DTYPES`, built once per graph.
struct Dtypes(crate::hashing::FastMap<&'static str, u8>);

impl Dtypes {
    fn new() -> Dtypes {
        Dtypes(
            crate::value::TORCH_DTYPES
                .iter()
                .enumerate()
                .map(|(i, d)| (*d, i as u8))
                .collect(),
        )
    }

    fn index(&self, dtype: &str) -> Option<u8> {
        self.0.get(dtype).copied()
    }
}

fn saturate(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl ValInfo {
    fn of(node: &Node, dtypes: &Dtypes, shapes: &mut Vec<u64>) -> ValInfo {
        let mut info = ValInfo::default();
        let Some(val) = tensor::val(node) else {
            return info;
        };
        let val = &*val;
        info.present = true;
        let mut transfer = 0u128;
        let (mut dtype, mut first) = (None, true);
        let mut add = |t: TensorMeta| {
            transfer = transfer.saturating_add(t.transfer_bytes());
            if first {
                first = false;
                dtype = dtypes.index(t.dtype);
            }
        };
        match val {
            PyValue::Tensor(_) => {
                if let Some(t) = TensorMeta::of(val) {
                    info.tensor = t.collective_bytes().map(saturate);
                    let start = shapes.len();
                    let dims = t
                        .shape
                        .iter()
                        .map(|d| tensor::static_dim(d).and_then(|d| u64::try_from(d).ok()));
                    let fits = dims.len() <= usize::from(u8::MAX) && u32::try_from(start).is_ok();
                    if fits && dims.clone().all(|d| d.is_some()) {
                        shapes.extend(dims.flatten());
                        info.shape = Some((start as u32, t.shape.len() as u8));
                    }
                    add(t);
                }
            }
            PyValue::List(items) => {
                let mut elements = 0u128;
                for item in items {
                    if let Some(t) = TensorMeta::of(item) {
                        elements = elements.saturating_add(t.collective_bytes().unwrap_or(0));
                        add(t);
                    } else {
                        for_each_tensor(item, &mut add);
                    }
                }
                info.elements = Some(saturate(elements));
            }
            other => for_each_tensor(other, &mut add),
        }
        info.transfer = saturate(transfer);
        info.dtype = dtype;
        info
    }
}

/// The per-node records a node's users read: value summaries and the shape table.
#[derive(Default)]
struct Values {
    vals: Vec<ValInfo>,
    shapes: Vec<u64>,
}

impl flops::InputShapes for Values {
    fn shape(&self, node: usize) -> Option<&[u64]> {
        let (start, len) = self.vals.get(node)?.shape?;
        let start = start as usize;
        self.shapes.get(start..start + usize::from(len))
    }
}

/// Builds a [`GraphWork`] one node at a time, in graph order: from a graph in memory
/// ([`GraphWork::new`]), or while a reader has each node in cache.
pub struct GraphWorkBuilder {
    dtypes: Dtypes,
    values: Values,
    work: GraphWork,
    calls: crate::graph::TargetCache<CallKind>,
}

/// What the cost model makes of a `call_function` node by its target alone.
#[derive(Clone, Copy)]
struct CallKind {
    /// A collective ([`crate::ops::collective_call`]).
    collective: bool,
    /// A functional `wait_tensor` ([`crate::ops::is_wait`]).
    wait: bool,
    /// `_operator.getitem`.
    getitem: bool,
    formula: Option<Formula>,
}

impl CallKind {
    fn of(target: &str) -> CallKind {
        CallKind {
            collective: crate::ops::collective_target(target).is_some(),
            wait: crate::ops::is_wait_target(target),
            getitem: target == "_operator.getitem",
            formula: Formula::of(target),
        }
    }
}

impl Default for GraphWorkBuilder {
    fn default() -> GraphWorkBuilder {
        GraphWorkBuilder::with_capacity(0)
    }
}

impl GraphWorkBuilder {
    pub fn with_capacity(nodes: usize) -> GraphWorkBuilder {
        GraphWorkBuilder {
            dtypes: Dtypes::new(),
            values: Values {
                vals: Vec::with_capacity(nodes),
                shapes: Vec::with_capacity(nodes * 2),
            },
            work: GraphWork {
                comm_at: Vec::with_capacity(nodes),
                compute: Vec::with_capacity(nodes / 2),
                ..GraphWork::default()
            },
            calls: crate::graph::TargetCache::default(),
        }
    }

    /// How many nodes were added.
    pub fn len(&self) -> usize {
        self.values.vals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.vals.is_empty()
    }

    /// Adds the next node; `view` is its graph fact (`NodeFacts::view`): it launches no kernel.
    pub fn add(&mut self, node: &Node, view: bool) {
        let id = self.values.vals.len();
        let own = ValInfo::of(node, &self.dtypes, &mut self.values.shapes);
        self.work.comm_at.push(NO_COMM);
        if node.op == Op::CallFunction {
            self.add_call(id, node, &own, view);
        }
        self.values.vals.push(own);
    }

    pub fn finish(mut self) -> GraphWork {
        self.work.len = self.values.vals.len();
        self.work
    }

    fn add_call(&mut self, id: NodeId, node: &Node, own: &ValInfo, view: bool) {
        let kind = self.calls.get(&node.target, CallKind::of);
        let work = &mut self.work;
        let values = &self.values;
        if let Some(comm) = kind.collective.then(|| comm_op(node)).flatten() {
            work.add_comm(id, node, own, &values.vals, comm);
            return;
        }
        if kind.wait {
            work.add_wait(id, node);
            return;
        }
        if kind.getitem {
            // An element of a coalesced collective's result, which a wait may name.
            let source = node.args.first().and_then(node_index);
            if let Some(comm) = source.and_then(|s| work.comm_at(s)) {
                work.item_of.insert(id, comm as u32);
            }
        }
        // Views and `getitem` launch no kernel. (torch's roofline gives `getitem` the bytes
        // of its whole input; see docs/cost-model.md.)
        if view {
            return;
        }
        let formula = kind.formula;
        let flops = formula.map(|f| {
            f.count(&flops::Call {
                node,
                inputs: values,
            })
        });
        let mut compute = ComputeWork {
            node: id,
            flops: flops.unwrap_or(Some(0)).map(saturate),
            time_flops: 0,
            bytes: 0,
            dtype: None,
        };
        if own.present {
            // `get_transfer_time`: every tensor argument (as often as it is passed) and every
            // output tensor.
            let mut read = 0u64;
            for_each_input(node, &mut |input| {
                if let Some(v) = values.vals.get(input) {
                    read = read.saturating_add(v.transfer);
                }
            });
            compute.bytes = read.saturating_add(own.transfer);
            compute.dtype = own.dtype;
            if let (Some(formula), Some(Some(count))) = (formula, flops) {
                if own.dtype.is_some() {
                    let count = if formula.reads_sparsity_hint() {
                        flops::apply_sparsity_hint(count, node)
                    } else {
                        count
                    };
                    compute.time_flops = saturate(count);
                }
            }
        }
        work.compute.push(compute);
    }
}

/// The builder as the reader's ride-along pass: nodes must come in order from 0, as they do
/// from [`crate::planner::read_prepared_with`]; [`GraphWorkBuilder::finish_for`] falls back
/// to a second pass otherwise.
impl crate::graph::FactsSink for GraphWorkBuilder {
    fn begin(&mut self) {
        *self = GraphWorkBuilder::default();
    }

    fn node(&mut self, index: usize, node: &Node, facts: crate::graph::NodeFacts) {
        if index == self.len() {
            self.add(node, facts.view);
        }
    }
}

impl GraphWorkBuilder {
    /// The work of `graph`, whose nodes this builder saw as the reader read them; built again
    /// from the graph if it did not see all of them in order.
    pub fn finish_for(self, graph: &Graph) -> GraphWork {
        if self.len() == graph.len() {
            self.finish()
        } else {
            GraphWork::new(graph)
        }
    }
}

impl GraphWork {
    pub fn new(graph: &Graph) -> GraphWork {
        let mut builder = GraphWorkBuilder::with_capacity(graph.len());
        for (node, facts) in graph.nodes().iter().zip(graph.all_facts()) {
            builder.add(node, facts.view);
        }
        builder.finish()
    }

    /// The comm index of node `id`, if it is a communication op.
    pub fn comm_at(&self, id: NodeId) -> Option<usize> {
        self.comm_at
            .get(id)
            .filter(|&&c| c != NO_COMM)
            .map(|&c| c as usize)
    }

    fn group_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.group_ids.get(name) {
            return id;
        }
        let id = self.groups.len() as u32;
        self.groups.push(name.to_string());
        self.group_ids.insert(name.to_string(), id);
        id
    }

    fn add_comm(&mut self, id: NodeId, node: &Node, own: &ValInfo, vals: &[ValInfo], op: CommOp) {
        let group = op.group.map(|name| self.group_id(name));
        let index = self.comms.len() as u32;
        if let Some(slot) = self.comm_at.get_mut(id) {
            *slot = index;
        }
        self.comms.push(CommWork {
            node: id,
            api: op.api,
            coll: op.coll,
            bytes: collective_size(node, own, vals),
            group,
            group_size_arg: op.group_size,
        });
    }

    /// A wait blocks on the collective it reads, directly or through a `getitem` of a
    /// coalesced collective's result (`_get_collective_node_from_wait`).
    fn add_wait(&mut self, id: NodeId, node: &Node) {
        let mut block_on = |target: usize| {
            let comm = self
                .comm_at(target)
                .or_else(|| self.item_of.get(&target).map(|&c| c as usize));
            if let Some(comm) = comm {
                self.waits.push((id, comm as u32));
            }
        };
        match node.args.first() {
            Some(PyValue::List(items)) => {
                items.iter().filter_map(node_index).for_each(&mut block_on)
            }
            Some(value) => node_index(value).into_iter().for_each(&mut block_on),
            None => {}
        }
    }
}

/// Calls `f` with every node the call passes (args, then kwargs; nested lists and dicts; as
/// often as it is passed).
fn for_each_input(node: &Node, f: &mut impl FnMut(usize)) {
    fn walk(value: &PyValue, f: &mut impl FnMut(usize)) {
        match value {
            PyValue::Node(_) => node_index(value).into_iter().for_each(&mut *f),
            PyValue::List(items) => items.iter().for_each(|v| walk(v, f)),
            PyValue::Dict(map) => map.values().for_each(|v| walk(v, f)),
            _ => {}
        }
    }
    node.args.iter().for_each(|v| walk(v, f));
    node.kwargs.values().for_each(|v| walk(v, f));
}

/// `estimate_fx_collective_size(node)`: the bytes of every tensor the call reads (each node
/// argument whose `val` is a tensor, the `out` keyword left out) plus the bytes of its result
/// (a tensor, or the tensors of a list); 0 when it reads no tensor or has no result.
fn collective_size(node: &Node, own: &ValInfo, vals: &[ValInfo]) -> u64 {
    fn inputs(value: &PyValue, vals: &[ValInfo], total: &mut Option<u64>) {
        match value {
            PyValue::Node(_) => {
                if let Some(bytes) = node_index(value)
                    .and_then(|i| vals.get(i))
                    .and_then(|v| v.tensor)
                {
                    *total = Some(total.unwrap_or(0).saturating_add(bytes));
                }
            }
            PyValue::List(items) => items.iter().for_each(|v| inputs(v, vals, total)),
            PyValue::Dict(map) => map.values().for_each(|v| inputs(v, vals, total)),
            _ => {}
        }
    }
    let mut input = None;
    node.args.iter().for_each(|v| inputs(v, vals, &mut input));
    for (key, value) in &node.kwargs {
        if key.as_str() != "out" {
            inputs(value, vals, &mut input);
        }
    }
    let Some(input) = input else {
        return 0;
    };
    let output = match (own.tensor, own.elements) {
        (Some(bytes), _) | (None, Some(bytes)) => bytes,
        // A tensor whose bytes cannot be read (unknown dtype), or no tensor result.
        (None, None) => return 0,
    };
    input.saturating_add(output)
}

/// One collective's modelled cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommTime {
    /// `_get_group_size_by_name(group)`: from `group_ranks`, else the op's own argument.
    pub group_size: Option<u64>,
    pub time: CollectiveTime,
}

/// Microseconds per node and per collective on one piece of hardware: computed once per
/// hardware (and group sizes), reused by every plan.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Roofline time of every node (0 for nodes that are not compute).
    pub node_us: Vec<f64>,
    /// Parallel to [`GraphWork::comms`].
    pub comms: Vec<CommTime>,
    /// Group size per [`GraphWork::groups`] entry, from `group_ranks`.
    pub group_sizes: Vec<Option<u64>>,
}

impl Timing {
    pub fn new(
        work: &GraphWork,
        hardware: &Hardware,
        group_ranks: &IndexMap<String, Vec<i128>>,
    ) -> Timing {
        let peaks: Vec<f64> = crate::value::TORCH_DTYPES
            .iter()
            .map(|d| hardware.roofline.peak(d))
            .collect();
        let mut node_us = vec![0.0; work.len];
        for c in &work.compute {
            let peak = c
                .dtype
                .and_then(|d| peaks.get(d as usize))
                .copied()
                .unwrap_or(0.0);
            let compute = if c.time_flops > 0 {
                hardware.roofline.compute_ns(c.time_flops, peak)
            } else {
                0.0
            };
            let us = f64::max(compute, hardware.roofline.transfer_ns(c.bytes)) / 1e3;
            if let Some(slot) = node_us.get_mut(c.node) {
                *slot = if us.is_finite() { us } else { 0.0 };
            }
        }
        let group_sizes: Vec<Option<u64>> = work
            .groups
            .iter()
            .map(|g| group_ranks.get(g).map(|ranks| ranks.len() as u64))
            .collect();
        let comms = work
            .comms
            .iter()
            .map(|c| {
                let group_size = c
                    .group
                    .and_then(|g| group_sizes.get(g as usize).copied().flatten())
                    .or(c.group_size_arg);
                let time = match group_size {
                    Some(size) if c.api != Api::C10d => {
                        collective_time(c.bytes, size, c.coll, &hardware.network)
                    }
                    _ => CollectiveTime {
                        us: 0.0,
                        algo: None,
                    },
                };
                CommTime { group_size, time }
            })
            .collect();
        Timing {
            node_us,
            comms,
            group_sizes,
        }
    }
}

/// A planned bucket's cost: its bucketed collective (the members' tensors together).
#[derive(Clone, Debug, PartialEq)]
pub struct BucketCost {
    /// Index into the plan's buckets.
    pub bucket: usize,
    pub bytes: u64,
    pub group_size: Option<u64>,
    pub coll: CollectiveType,
    pub time: CollectiveTime,
    /// Where the bucket is issued (after its latest input) and where compute waits for it
    /// (its earliest consumer).
    pub issue_at: NodeId,
    pub block_at: NodeId,
}

/// A step simulated with a plan: the step, and each bucket's cost.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedStep {
    pub step: Step,
    pub buckets: Vec<BucketCost>,
    /// Index into `step.launches` of each bucket's launch (parallel to `buckets`).
    pub bucket_launch: Vec<usize>,
    /// Index into `step.launches` of each collective left as it is (parallel to
    /// [`GraphWork::comms`]; `None` for a bucket member).
    pub comm_launch: Vec<Option<usize>>,
}

/// A graph's cost model on one piece of hardware: build once per graph (and per hardware
/// change, with [`CostModel::set_hardware`]), then simulate each plan.
#[derive(Clone, Debug)]
pub struct CostModel {
    pub work: GraphWork,
    pub hardware: Hardware,
    pub timing: Timing,
    group_ranks: IndexMap<String, Vec<i128>>,
}

impl CostModel {
    /// `group_ranks` gives process-group sizes (a plan's `group_ranks`).
    pub fn new(
        graph: &Graph,
        hardware: Hardware,
        group_ranks: &IndexMap<String, Vec<i128>>,
    ) -> CostModel {
        CostModel::with_work(GraphWork::new(graph), hardware, group_ranks)
    }

    /// The model over work already gathered (by the reader's ride-along pass, say).
    pub fn with_work(
        work: GraphWork,
        hardware: Hardware,
        group_ranks: &IndexMap<String, Vec<i128>>,
    ) -> CostModel {
        let timing = Timing::new(&work, &hardware, group_ranks);
        CostModel {
            work,
            hardware,
            timing,
            group_ranks: group_ranks.clone(),
        }
    }

    /// Re-times the graph on other hardware (the graph's work is kept).
    pub fn set_hardware(&mut self, hardware: Hardware) {
        self.timing = Timing::new(&self.work, &hardware, &self.group_ranks);
        self.hardware = hardware;
    }

    /// Re-times collectives when a plan's `group_ranks` differ from the model's.
    pub fn set_group_ranks(&mut self, group_ranks: &IndexMap<String, Vec<i128>>) {
        if *group_ranks != self.group_ranks {
            self.group_ranks = group_ranks.clone();
            self.timing = Timing::new(&self.work, &self.hardware, group_ranks);
        }
    }

    /// Stream of a collective: its process group (unknown groups share one stream).
    fn stream(&self, group: Option<u32>) -> u32 {
        group.unwrap_or(self.work.groups.len() as u32)
    }

    /// The graph as it is: every collective issued at its node, waited at its waits.
    pub fn unbucketed(&self) -> Step {
        let launches: Vec<Launch> = self
            .work
            .comms
            .iter()
            .zip(&self.timing.comms)
            .map(|(c, t)| Launch {
                issue_at: c.node,
                stream: self.stream(c.group),
                us: t.time.us,
            })
            .collect();
        let blocks: Vec<(NodeId, usize)> = self
            .work
            .waits
            .iter()
            .map(|&(node, comm)| (node, comm as usize))
            .collect();
        simulate::run(&self.timing.node_us, launches, blocks)
    }

    /// The graph with `plan`'s buckets: each bucket replaces its members by one collective of
    /// their tensors together, issued after its latest input and waited before its earliest
    /// consumer; every other collective stays where it is.
    pub fn planned(&self, plan: &BucketPlan) -> PlannedStep {
        let mut member = vec![false; self.work.comms.len()];
        let mut buckets = Vec::with_capacity(plan.buckets.len());
        for (index, bucket) in plan.buckets.iter().enumerate() {
            let mut bytes = 0u64;
            let mut coll = CollectiveType::Unsupported;
            let mut group = None;
            let mut single_time = None;
            for m in bucket.members.iter() {
                if let Some(c) = self.work.comm_at(m.launch) {
                    if let Some(flag) = member.get_mut(c) {
                        *flag = true;
                    }
                    if let Some(work) = self.work.comms.get(c) {
                        bytes = bytes.saturating_add(work.bytes);
                        coll = work.coll;
                        group = work.group;
                    }
                    if bucket.members.len() == 1 {
                        single_time = self.timing.comms.get(c).copied();
                    }
                }
            }
            let size = bucket.members.first().map_or(0, |m| m.key.ranks.len()) as u64;
            let time = match single_time {
                // A singleton is its own collective: reuse its time when the sizes agree.
                Some(t) if t.group_size == Some(size) => t.time,
                _ => collective_time(bytes, size, coll, &self.hardware.network),
            };
            buckets.push((
                BucketCost {
                    bucket: index,
                    bytes,
                    group_size: Some(size),
                    coll,
                    time,
                    issue_at: bucket.latest_input().saturating_add(1),
                    block_at: bucket.earliest_consumer(),
                },
                group,
            ));
        }
        // Buckets first: at the same position a bucket issued after its latest input precedes
        // a collective issued at that node.
        let mut launches = Vec::with_capacity(buckets.len() + self.work.comms.len());
        let mut blocks = Vec::with_capacity(buckets.len() + self.work.waits.len());
        let mut bucket_launch = Vec::with_capacity(buckets.len());
        for (b, group) in &buckets {
            bucket_launch.push(launches.len());
            blocks.push((b.block_at, launches.len()));
            launches.push(Launch {
                issue_at: b.issue_at,
                stream: self.stream(*group),
                us: b.time.us,
            });
        }
        let mut comm_launch = vec![None; self.work.comms.len()];
        for (i, (c, t)) in self.work.comms.iter().zip(&self.timing.comms).enumerate() {
            if member.get(i).copied().unwrap_or(false) {
                continue;
            }
            comm_launch[i] = Some(launches.len());
            launches.push(Launch {
                issue_at: c.node,
                stream: self.stream(c.group),
                us: t.time.us,
            });
        }
        for &(node, comm) in &self.work.waits {
            if let Some(&Some(l)) = comm_launch.get(comm as usize) {
                blocks.push((node, l));
            }
        }
        let step = simulate::run(&self.timing.node_us, launches, blocks);
        PlannedStep {
            step,
            buckets: buckets.into_iter().map(|(b, _)| b).collect(),
            bucket_launch,
            comm_launch,
        }
    }
}

/// `commlens cost` as a function: the plan's graph costed on `hardware`.
pub fn cost_report<'g>(graph: &'g Graph, plan: &BucketPlan, hardware: Hardware) -> CostReport<'g> {
    let model = CostModel::new(graph, hardware, &plan.group_ranks);
    CostReport::new(graph, plan, &model)
}
