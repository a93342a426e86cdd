//! Transform rules: provenance, bucketing, reduce-scatter deduplication, and the identity of
//! the planner's buckets.

use super::{
    rules, Classification, Code, CollectiveIdentity, Diagnostic, Provenance, Role, Source,
    Transport,
};
use crate::dump::Node;
use crate::graph::{target_is_op, Graph, NodeId};
use crate::hashing::{FastMap, FastSet};
use crate::planner::{Bucket, BucketPlan};
use crate::value::PyValue;

/// The producer of the identity of the planner's buckets.
pub const PLANNER_PRODUCER: &str = "commlens.bucket_planner";

/// Which many-to-one rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransformKind {
    Bucketing,
    Dedup,
}

impl TransformKind {
    pub fn rule(self) -> &'static str {
        match self {
            TransformKind::Bucketing => rules::BUCKETING,
            TransformKind::Dedup => rules::DEDUP,
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            TransformKind::Bucketing => "bucket",
            TransformKind::Dedup => "deduplication",
        }
    }
}

/// The result of a many-to-one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combined {
    pub role: Option<Role>,
    pub source: Option<Source>,
    /// Why members with roles produced no role.
    pub dropped: Option<String>,
}

/// Metadata keys Inductor's bucketing copies from its members (`_populate_node_meta`): the
/// members' values, not their names.
const COPIED_MEMBER_META: &[&str] = &[
    "bucketing_nn_module_stack_sources",
    "bucketing_fwd_nn_module_stack_sources",
    "bucketing_stack_trace_sources",
    "bucketing_custom_sources",
];

/// The transform provenance recorded on a node: member names from `bucketing_*_sources`
/// (other than the member metadata Inductor copies), else `fsdp_bucket_members` (two or more
/// parameter names), else `from_node`; with Inductor's `bucketing_custom_sources`, the
/// members' identity payloads.
pub fn read_provenance(node: &Node) -> Option<Provenance> {
    let member_payloads = node
        .meta("bucketing_custom_sources")
        .and_then(PyValue::as_list)
        .map(|customs| {
            customs
                .iter()
                .map(|custom| {
                    custom
                        .as_dict()
                        .and_then(|c| c.get(super::PAYLOAD_KEY))
                        .and_then(|p| super::read_payload(p).ok())
                })
                .collect::<Vec<_>>()
        });
    let mut found: Option<Provenance> = None;
    for (key, value) in node.meta.decoded_entries() {
        if key.starts_with("bucketing_")
            && key.ends_with("_sources")
            && !COPIED_MEMBER_META.contains(&key.as_str())
        {
            let (members, pass_name) = entry_names(value);
            if !members.is_empty() {
                found = Some(Provenance {
                    key: key.to_string(),
                    members,
                    pass_name,
                    member_payloads: None,
                });
                break;
            }
        }
    }
    if found.is_none() {
        if let Some(PyValue::List(items)) = node.meta("fsdp_bucket_members") {
            let mut members: Vec<String> = Vec::new();
            // Distinct by a set: a list may name thousands of members.
            let mut seen: FastSet<&str> = FastSet::default();
            for item in items {
                if let Some(name) = item.as_str() {
                    if seen.insert(name) {
                        members.push(name.to_string());
                    }
                }
            }
            if members.len() >= 2 {
                found = Some(Provenance {
                    key: "fsdp_bucket_members".into(),
                    members,
                    pass_name: None,
                    member_payloads: None,
                });
            }
        }
    }
    if found.is_none() {
        if let Some(value) = node.meta("from_node") {
            let (members, pass_name) = entry_names(value);
            if !members.is_empty() {
                found = Some(Provenance {
                    key: "from_node".into(),
                    members,
                    pass_name,
                    member_payloads: None,
                });
            }
        }
    }
    match (found, member_payloads) {
        (Some(mut prov), payloads) => {
            prov.member_payloads = payloads;
            Some(prov)
        }
        // Member payloads without member names: the dict count is all there is.
        (None, Some(payloads)) if payloads.len() >= 2 => Some(Provenance {
            key: "bucketing_custom_sources".into(),
            members: (0..payloads.len()).map(|i| format!("member {i}")).collect(),
            pass_name: None,
            member_payloads: Some(payloads),
        }),
        _ => None,
    }
}

/// Inductor's `dedup_fsdp_reduce_scatter` rewrite, recognised against the graph before it:
/// `add(wait(RS(a)), wait(RS(b)))` became `wait(RS(add(a, b)))` (repeatedly, for add trees),
/// leaving no provenance. `entry` (a reduce-scatter of `graph`, the after graph) is that
/// rewrite when its input is a tree of `add`s that the before graph does not have, whose
/// leaves are the inputs of two or more before reduce-scatters that the after graph no longer
/// has.
pub fn dedup_rewrite(
    graph: &Graph,
    entry: &CollectiveIdentity,
    before: &Graph,
    removed: &RemovedReduceScatters,
) -> Option<Provenance> {
    if before.find(&entry.name).is_some() {
        return None;
    }
    let input = graph
        .node(entry.node)
        .args
        .first()
        .and_then(crate::dump::node_index)?;
    // A removed reduce-scatter of the before graph that read `name`, if any.
    let removed_rs_reading = |name: &str| removed.reading(before.find(name)?);
    // Walk the add tree down to its leaves: inputs of removed reduce-scatters.
    let mut members: Vec<String> = Vec::new();
    let mut stack = vec![input];
    let mut visited = 0usize;
    while let Some(id) = stack.pop() {
        visited += 1;
        if visited > 4096 {
            return None;
        }
        let node = graph.node(id);
        if let Some(rs) = removed_rs_reading(&node.name) {
            if !members.contains(&rs.name) {
                members.push(rs.name.clone());
            }
        } else if target_is_op(&node.target, "aten", "add") && !graph.inputs(id).is_empty() {
            stack.extend(graph.inputs(id).iter().rev().copied().filter(|&i| i < id));
        } else {
            return None;
        }
    }
    (members.len() >= 2).then(|| Provenance {
        key: "dedup_rewrite".into(),
        members,
        pass_name: Some("dedup_fsdp_reduce_scatter".into()),
        member_payloads: None,
    })
}

/// The reduce-scatters of a graph before a transform that the graph after no longer has, by
/// the node each reads (its first argument): what [`dedup_rewrite`] looks its add trees'
/// leaves up in, found once for all the reduce-scatters it is asked about (searched for each
/// leaf, an audit of two 400k-node graphs took 19 s).
pub struct RemovedReduceScatters<'c> {
    /// The first such reduce-scatter (in the before graph's order) reading each node.
    by_input: FastMap<NodeId, &'c CollectiveIdentity>,
}

impl<'c> RemovedReduceScatters<'c> {
    pub fn new(graph: &Graph, before: &Graph, before_c: &'c Classification) -> Self {
        let mut by_input = FastMap::default();
        for c in &before_c.collectives {
            if c.transport != Transport::ReduceScatter || graph.find(&c.name).is_some() {
                continue;
            }
            let input = before
                .node(c.node)
                .args
                .first()
                .and_then(crate::dump::node_index);
            if let Some(input) = input {
                by_input.entry(input).or_insert(c);
            }
        }
        RemovedReduceScatters { by_input }
    }

    /// The removed reduce-scatter that read node `input` of the before graph.
    fn reading(&self, input: NodeId) -> Option<&'c CollectiveIdentity> {
        self.by_input.get(&input).copied()
    }
}

/// The collectives of a context graph by their `param_name`, made when first asked for: what
/// [`resolve_members`] resolves provenance by parameter against, instead of scanning every
/// collective of the context for each node that records one.
#[derive(Default)]
pub struct ByParameter<'c> {
    index: std::cell::OnceCell<FastMap<&'c str, Vec<u32>>>,
}

impl<'c> ByParameter<'c> {
    /// Positions in `ctx` of the collectives whose `param_name` is `name`, in order.
    fn named(&self, ctx_graph: &'c Graph, ctx: &[CollectiveIdentity], name: &str) -> &[u32] {
        let index = self.index.get_or_init(|| {
            let mut index: FastMap<&'c str, Vec<u32>> = FastMap::default();
            for (position, c) in ctx.iter().enumerate() {
                if let Some(param) = ctx_graph.node(c.node).meta_str("param_name") {
                    index.entry(param).or_default().push(position as u32);
                }
            }
            index
        });
        index.get(name).map_or(&[], Vec::as_slice)
    }
}

/// Names in a provenance list: strings, node references, or `NodeSource` dicts (`name`,
/// `pass_name`). Distinct, in order; the first `pass_name` found.
fn entry_names(value: &PyValue) -> (Vec<String>, Option<String>) {
    let mut names: Vec<String> = Vec::new();
    // Distinct by a set: a list may name thousands of nodes.
    let mut seen: FastSet<&str> = FastSet::default();
    let mut pass_name = None;
    let items: &[PyValue] = match value {
        PyValue::List(items) => items,
        other => std::slice::from_ref(other),
    };
    for item in items {
        let name = match item {
            PyValue::Str(s) => Some(s.as_str()),
            PyValue::Node(r) => Some(&*r.name),
            PyValue::Dict(d) => {
                if pass_name.is_none() {
                    pass_name = d
                        .get("pass_name")
                        .and_then(PyValue::as_str)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string);
                }
                match d.get("name") {
                    Some(PyValue::Str(s)) => Some(s.as_str()),
                    Some(PyValue::Node(r)) => Some(&*r.name),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(name) = name {
            if !name.is_empty() && seen.insert(name) {
                names.push(name.to_string());
            }
        }
    }
    (names, pass_name)
}

/// The provenance members that are collectives of the context. By name: nodes of that name
/// (in the graph itself, the node is not its own member). By parameter (only in another
/// graph): collectives of the same transport and phase whose `param_name` is a member.
pub fn resolve_members<'a, 'c>(
    prov: &Provenance,
    entry: &CollectiveIdentity,
    ctx_graph: &'c Graph,
    ctx: &'a [CollectiveIdentity],
    external: bool,
    by_parameter: &ByParameter<'c>,
) -> Vec<&'a CollectiveIdentity> {
    let lookup = |id: NodeId| {
        ctx.binary_search_by_key(&id, |c| c.node)
            .ok()
            .map(|i| &ctx[i])
    };
    if prov.by_parameter() {
        if !external {
            return Vec::new();
        }
        // In the context's order, once each, as a scan of it would find them.
        let mut positions: Vec<u32> = prov
            .members
            .iter()
            .flat_map(|m| by_parameter.named(ctx_graph, ctx, m).iter().copied())
            .collect();
        positions.sort_unstable();
        positions.dedup();
        return positions
            .into_iter()
            .map(|p| &ctx[p as usize])
            .filter(|c| c.transport == entry.transport && c.phase == entry.phase)
            .collect();
    }
    prov.members
        .iter()
        .filter_map(|name| ctx_graph.find(name))
        .filter(|&id| external || id != entry.node)
        .filter_map(lookup)
        .collect()
}

/// Deduplication when every member is a reduce-scatter and either the provenance names a
/// dedup pass or the members' waits meet in one `aten.add`; bucketing otherwise.
pub fn kind_of(prov: &Provenance, members: &[&CollectiveIdentity], graph: &Graph) -> TransformKind {
    if members.len() < 2
        || members
            .iter()
            .any(|m| m.transport != Transport::ReduceScatter)
    {
        return TransformKind::Bucketing;
    }
    let named = prov.key.contains("dedup")
        || prov
            .pass_name
            .as_deref()
            .is_some_and(|p| p.to_ascii_lowercase().contains("dedup"));
    if named {
        return TransformKind::Dedup;
    }
    let consumers: Vec<Vec<NodeId>> = members
        .iter()
        .map(|m| {
            let mut all: Vec<NodeId> = m.waits.iter().flat_map(|&w| graph.consumers(w)).collect();
            all.sort_unstable();
            all.dedup();
            all
        })
        .collect();
    let meet = consumers[0].iter().any(|&c| {
        target_is_op(&graph.node(c).target, "aten", "add")
            && consumers[1..]
                .iter()
                .all(|set| set.binary_search(&c).is_ok())
    });
    if meet {
        TransformKind::Dedup
    } else {
        TransformKind::Bucketing
    }
}

/// The transform named as the producer of a combined identity.
pub fn producer_name(kind: TransformKind, prov: &Provenance) -> String {
    if let Some(pass) = &prov.pass_name {
        return pass.clone();
    }
    match kind {
        TransformKind::Dedup => "inductor.reduce_scatter_dedup".into(),
        TransformKind::Bucketing if prov.by_parameter() => {
            "hyper_parallel.fsdp_pass.bucketing".into()
        }
        TransformKind::Bucketing if prov.key.starts_with("bucketing_") => {
            "inductor.bucketing".into()
        }
        TransformKind::Bucketing => "bucketing".into(),
    }
}

/// The reduction of a reduce-scatter or all-reduce call.
fn reduce_op(node: &Node) -> Option<String> {
    node.kwargs
        .get("reduce_op")
        .or_else(|| node.args.get(1))
        .and_then(PyValue::as_str)
        .map(str::to_string)
}

/// The dtype of `meta["val"]`'s tensor (the first, for a tuple), decoded.
fn val_dtype_decoded(node: &Node) -> Option<String> {
    let from_tensor = |value: &PyValue| match value {
        PyValue::Tensor(summary) => summary
            .as_dict()
            .and_then(|d| d.get("dtype"))
            .map(PyValue::py_str),
        _ => None,
    };
    node.meta.get_once("val").and_then(|v| match &*v {
        PyValue::List(items) => items.first().and_then(from_tensor),
        other => from_tensor(other),
    })
}

/// The communication dtype: `meta["val"]`'s, else `fsdp_bucket_spec`'s.
fn dtype(node: &Node) -> Option<String> {
    // Read once per bucket member: decoding the whole metadata of every collective (and
    // keeping it) cost more than the rest of `commlens roles` (docs/performance.md). Read by
    // scanning where the text allows, else decoded alone.
    let val = node
        .meta
        .scan_tensor_dtype("val")
        .unwrap_or_else(|| val_dtype_decoded(node));
    val.or_else(|| {
        node.meta("fsdp_bucket_spec")
            .and_then(PyValue::as_dict)
            .and_then(|d| d.get("dtype"))
            .map(PyValue::py_str)
    })
}

/// The rule's result for members of `graph`: bucketing keeps a role only when every member
/// has it with the same transport, group, reduction and dtype; deduplication only when every
/// member has the same role. `explicit` only when every member was.
pub fn combine(kind: TransformKind, members: &[&CollectiveIdentity], graph: &Graph) -> Combined {
    let none = |dropped: Option<String>| Combined {
        role: None,
        source: None,
        dropped,
    };
    if members.is_empty() || members.iter().all(|m| m.role.is_none()) {
        return none(None);
    }
    let first = members[0];
    let roles_agree = members
        .iter()
        .all(|m| m.role.is_some() && m.role == first.role);
    if !roles_agree {
        let listed = members
            .iter()
            .map(|m| {
                format!(
                    "{}: {}",
                    m.name,
                    m.role.as_ref().map(Role::as_str).unwrap_or("unclassified")
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        return none(Some(format!("roles differ: {listed}")));
    }
    if kind == TransformKind::Bucketing {
        let differs = |what: &str, values: Vec<Option<String>>| -> Option<String> {
            let known: Vec<&String> = values.iter().flatten().collect();
            let mixed = known.windows(2).any(|w| w[0] != w[1])
                || (what == "process group" && known.len() != values.len() && !known.is_empty());
            mixed.then(|| {
                let listed = members
                    .iter()
                    .zip(&values)
                    .map(|(m, v)| format!("{}: {}", m.name, v.as_deref().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("{what}s differ: {listed}")
            })
        };
        // In order, each only while the ones before agree: a bucket's members were read from
        // the graph once per check, and most buckets of a real plan pass them all. One member
        // agrees with itself, so a single member's bucket is not read at all.
        if members.len() > 1 {
            let reason = differs(
                "transport",
                members
                    .iter()
                    .map(|m| Some(m.transport.as_str().to_string()))
                    .collect(),
            )
            .or_else(|| {
                differs(
                    "process group",
                    members
                        .iter()
                        .map(|m| m.group.as_deref().map(str::to_string))
                        .collect(),
                )
            })
            .or_else(|| {
                differs(
                    "reduction",
                    members
                        .iter()
                        .map(|m| reduce_op(graph.node(m.node)))
                        .collect(),
                )
            })
            .or_else(|| {
                differs(
                    "dtype",
                    members.iter().map(|m| dtype(graph.node(m.node))).collect(),
                )
            });
            if let Some(reason) = reason {
                return none(Some(reason));
            }
        }
    }
    let all_explicit = members.iter().all(|m| m.source == Some(Source::Explicit));
    Combined {
        role: first.role.clone(),
        source: Some(if all_explicit {
            Source::Explicit
        } else {
            Source::Inferred
        }),
        dropped: None,
    }
}

/// The bucketing rule over the members' payloads as Inductor records them
/// (`bucketing_custom_sources`): `members` members, one payload slot per recorded `custom`
/// dict (members without one are not recorded). A role is kept only when every member
/// carries a valid payload of that role, compatible with the bucket's transport; explicit
/// only when every payload is. (Inductor buckets one group, reduction and dtype at a time, so
/// the bucket's own call stands for those.)
pub fn combine_payloads(
    payloads: &[Option<super::Payload>],
    members: usize,
    transport: Transport,
) -> Combined {
    let none = |dropped: Option<String>| Combined {
        role: None,
        source: None,
        dropped,
    };
    let carried: Vec<&super::Payload> = payloads.iter().flatten().collect();
    if carried.is_empty() {
        return none(None);
    }
    let total = members.max(payloads.len());
    if carried.len() < total {
        return none(Some(format!(
            "{} of {total} members carry no identity payload",
            total - carried.len()
        )));
    }
    let first = carried[0];
    if carried.iter().any(|p| p.role != first.role) {
        return none(Some(format!(
            "roles differ: {}",
            describe_payloads(payloads, members)
        )));
    }
    if !first.role.compatible_with(transport) {
        return none(Some(format!(
            "role {} does not fit the bucket's transport {}",
            first.role.as_str(),
            transport.as_str()
        )));
    }
    let all_explicit = carried.iter().all(|p| p.source == Source::Explicit);
    Combined {
        role: Some(first.role.clone()),
        source: Some(if all_explicit {
            Source::Explicit
        } else {
            Source::Inferred
        }),
        dropped: None,
    }
}

/// The members' payloads in words: `tp.sequence_gather (explicit), tp.weight_gather
/// (explicit), 1 without payload`.
pub fn describe_payloads(payloads: &[Option<super::Payload>], members: usize) -> String {
    let mut parts: Vec<String> = payloads
        .iter()
        .map(|p| match p {
            Some(p) => format!("{} ({})", p.role.as_str(), p.source.as_str()),
            None => "a custom dict without a valid payload".to_string(),
        })
        .collect();
    let unrecorded = members.saturating_sub(payloads.len());
    if unrecorded > 0 {
        parts.push(format!("{unrecorded} without a custom dict"));
    }
    parts.join(", ")
}

/// The identity of one of the planner's buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketIdentity {
    pub bucket_id: String,
    /// Member launch nodes, in the plan's member order.
    pub members: Vec<NodeId>,
    pub role: Option<Role>,
    pub source: Option<Source>,
    /// [`PLANNER_PRODUCER`] when the bucket has a role.
    pub producer: Option<String>,
}

/// The identity of each bucket of the plan, by the bucketing rule over its members'
/// identities, and a `planner_bucket_mixed_roles` diagnostic where the reference planner's
/// compatibility key put collectives of different roles together (the plan is unchanged).
pub fn bucket_identities(
    graph: &Graph,
    classification: &Classification,
    plan: &BucketPlan,
) -> (Vec<BucketIdentity>, Vec<Diagnostic>) {
    // Each bucket by itself, so natively the second half is done on a second thread: reading
    // each member's dtype from its kept metadata made this as long as classifying (0.1 s at
    // 500k nodes).
    let half = plan.buckets.len() / 2;
    if half == 0 {
        return identities_of(graph, classification, &plan.buckets);
    }
    let ((mut buckets, mut diagnostics), (more_buckets, more_diagnostics)) = crate::parallel::join(
        "commlens-buckets",
        || identities_of(graph, classification, &plan.buckets[..half]),
        || identities_of(graph, classification, &plan.buckets[half..]),
    );
    buckets.extend(more_buckets);
    diagnostics.extend(more_diagnostics);
    (buckets, diagnostics)
}

/// [`bucket_identities`] on the calling thread alone, for a caller whose other core is busy.
pub(crate) fn bucket_identities_on_this_thread(
    graph: &Graph,
    classification: &Classification,
    plan: &BucketPlan,
) -> (Vec<BucketIdentity>, Vec<Diagnostic>) {
    identities_of(graph, classification, &plan.buckets)
}

/// [`bucket_identities`] of some of the plan's buckets.
fn identities_of(
    graph: &Graph,
    classification: &Classification,
    plan_buckets: &[Bucket],
) -> (Vec<BucketIdentity>, Vec<Diagnostic>) {
    let mut buckets = Vec::with_capacity(plan_buckets.len());
    let mut diagnostics = Vec::new();
    for bucket in plan_buckets {
        let members: Vec<&CollectiveIdentity> = bucket
            .members
            .iter()
            .filter_map(|m| classification.get(m.launch))
            .collect();
        let combined = combine(TransformKind::Bucketing, &members, graph);
        if let Some(reason) = &combined.dropped {
            diagnostics.push(Diagnostic {
                code: Code::PlannerBucketMixedRoles,
                nodes: members.iter().map(|m| m.name.clone()).collect(),
                rule: rules::BUCKETING.into(),
                evidence: members
                    .iter()
                    .map(|m| {
                        format!(
                            "{}: {} ({})",
                            m.name,
                            m.role.as_ref().map(Role::as_str).unwrap_or("unclassified"),
                            m.source.map(Source::as_str).unwrap_or("-")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                message: format!(
                    "planner bucket {} mixes roles under the reference's compatibility key \
                     ({reason}); the bucket has no role (the plan itself is the reference's)",
                    bucket.bucket_id
                ),
            });
        }
        buckets.push(BucketIdentity {
            bucket_id: bucket.bucket_id.text(),
            members: bucket.members.iter().map(|m| m.launch).collect(),
            producer: combined.role.as_ref().map(|_| PLANNER_PRODUCER.to_string()),
            role: combined.role,
            source: combined.source,
        });
    }
    (buckets, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::val_dtype_decoded;
    use crate::dump::{read_dump, Dump};

    /// `meta["val"]`'s dtype read by scanning the kept text is the decoded one, wherever the
    /// scan answers, for the metadata read from whole text and read as it decompresses; and
    /// the scan answers for the common form.
    #[test]
    fn scanned_val_dtype_is_the_decoded_one() {
        let forms = [
            r#"{"tensor": {"shape": [4, 8], "dtype": "torch.float32", "device": "cuda:0"}}"#,
            r#"{ "tensor" : { "dtype" : "torch.bfloat16" , "shape" : [ ] } }"#,
            r#"{"tensor": {"shape": [4], "dtype": "torch.float32", "dtype": "torch.int8"}}"#,
            r#"{"tensor": {"shape": [4], "device": "cpu"}}"#,
            r#"{"tensor": {}}"#,
            r#"{"tensor": {"dtype": "not.a.dtype"}}"#,
            r#"{"tensor": {"dtype": "torch.\u0066loat32"}}"#,
            r#"{"tensor": {"dtype": {"dtype": "torch.float16"}}}"#,
            r#"{"tensor": {"dtype": 3}}"#,
            r#"{"tensor": {"dtype": null}}"#,
            r#"{"tensor": {"shape": [{"sym": "s0"}, 4], "dtype": "torch.float32"}}"#,
            r#"{"tensor": {"shape": [[1, 2]], "dtype": "torch.float32"}}"#,
            r#"{"tensor": {"shape": [1.5e3, -2, true, null, "x"], "dtype": "torch.float32"}}"#,
            r#"{"tensor": {"stride": {"node": "a"}, "dtype": "torch.float32"}}"#,
            r#"{"tensor": {"dtype": "torch.float32"}, "x": 1}"#,
            r#"{"tensor": {"dtype": "torch.float32"}, "tensor": {"dtype": "torch.int8"}}"#,
            r#"{"tensor": [1]}"#,
            r#"{"tensor": "torch.float32"}"#,
            r#"{"\u0074ensor": {"dtype": "torch.float32"}}"#,
            r#"[{"tensor": {"dtype": "torch.float16"}}, {"tensor": {"dtype": "torch.int8"}}]"#,
            r#"[]"#,
            r#"7"#,
            r#"null"#,
            r#""torch.float32""#,
            r#"{"dtype": "torch.float32"}"#,
        ];
        let mut nodes = vec![
            r#"{"name": "a", "op": "placeholder", "target": "a", "meta": {"x": 1}}"#.to_string(),
        ];
        for (i, form) in forms.iter().enumerate() {
            nodes.push(format!(
                r#"{{"name": "n{i}", "op": "placeholder", "target": "n{i}", "meta": {{"seq_nr": {i}, "val": {form}}}}}"#
            ));
        }
        nodes
            .push(r#"{"name": "output", "op": "output", "target": "output", "args": [[]]}"#.into());
        let text = format!(
            "{{\"format\": \"commlens.graph\", \"version\": 1, \"nodes\": [\n{}\n]}}",
            nodes.join(",\n")
        );
        let synthetic = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(3000));
        let mut dumps: Vec<Dump> = Vec::new();
        for text in [
            text.as_str(),
            &synthetic,
            include_str!("../../examples/mlp_fsdp.json"),
        ] {
            dumps.push(read_dump(text.as_bytes()).expect("read whole"));
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
            dumps.push(read_dump(&gz.finish().unwrap()).expect("read as it decompresses"));
        }
        for (d, dump) in dumps.iter().enumerate() {
            let mut scanned = 0;
            for node in &dump.nodes {
                if let Some(dtype) = node.meta.scan_tensor_dtype("val") {
                    assert_eq!(
                        dtype,
                        val_dtype_decoded(node),
                        "dump {d}, node {}",
                        node.name
                    );
                    scanned += 1;
                }
            }
            // Every node but those of forms the scan leaves to the decoder.
            if d < 2 {
                // The plain forms above are scanned, whatever their spacing.
                for name in ["n0", "n1", "n3", "n12"] {
                    let node = dump.nodes.iter().find(|n| n.name == name).expect("a node");
                    assert!(node.meta.scan_tensor_dtype("val").is_some(), "{name}");
                }
            } else {
                assert!(
                    scanned * 10 >= dump.nodes.len() * 8,
                    "dump {d}: {scanned} scanned"
                );
            }
        }
    }
}
