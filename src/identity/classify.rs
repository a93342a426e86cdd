//! Classification: payloads, producer tags, structural heuristics, precedence, derived
//! attributes, and the transform rules for nodes that record their provenance.
//!
//! Cost model: a large dump is far bigger than the caches, so the cost is the memory touched,
//! not the instructions. Classification therefore
//!
//! - walks the node list once (op, facts and, for calls, the target) to find the collectives
//!   and storage releases;
//! - reads each collective's metadata in one pass over its entries ([`MetaView`]), comparing
//!   key lengths before key text, instead of one hash lookup per key per question;
//! - answers ancestor and reachability questions (placeholder ancestors, backward inputs,
//!   unary path to the output, "after the first backward node") lazily and memoized, so only
//!   the neighbourhood of the collectives is visited, each node at most once per question;
//! - records evidence as structured [`Detail`]s (node ids) and renders text only for output
//!   and for diagnostics;
//! - decides the precedence of each collective while its data is still in cache (all-reduces
//!   and transformed nodes wait for the rules that need the whole graph).
//!
//! It stays linear in the size of the graph.

use super::payload::{
    self, read_payload, CommType, Location, Payload, PayloadError, FALLBACK_KEY, PAYLOAD_KEY,
};
use super::transform::{self, Combined, TransformKind};
use super::{
    rules, Classification, Code, CollectiveIdentity, Coverage, Detail, Diagnostic, Evidence,
    MemoryEvent, Phase, Role, Source, Transport,
};
use crate::dump::{Node, Op};
use crate::graph::{collective_op, is_op, split_op, Graph, NodeId};
use crate::value::PyValue;
use std::collections::HashMap;

/// Classifies every collective of `graph`. Transform provenance members are looked up by node
/// name in the graph itself.
pub fn classify(graph: &Graph) -> Classification {
    classify_with_members(graph, None)
}

/// Classifies `graph`, resolving transform provenance members (`from_node`,
/// `bucketing_*_sources`, `fsdp_bucket_members`) in `members` — the graph before the
/// transform and its classification — when given (as `audit` does).
pub fn classify_with_members(
    graph: &Graph,
    members: Option<(&Graph, &Classification)>,
) -> Classification {
    let mut structure = Structure::new(graph);
    let mut diags: Vec<(NodeId, Diagnostic)> = Vec::new();
    let mut memory_events = Vec::new();

    let capacity = (0..graph.len())
        .filter(|&id| graph.facts(id).collective)
        .count();
    let mut collectives: Vec<CollectiveIdentity> = Vec::with_capacity(capacity);
    // Entries decided later, with their declarations: all-reduces (group transitivity needs
    // the final all-gather roles) and transformed nodes (their rules need every base
    // identity).
    let mut all_reduces: Vec<(usize, Declared)> = Vec::new();
    let mut transformed: Vec<(usize, Declared)> = Vec::new();
    // Backward all-gathers that may re-gather a forward-gathered placeholder.
    let mut regathers: Vec<(usize, u32)> = Vec::new();
    let mut forward_gathered = Bitset::new(graph.len());

    // One pass over the nodes: collective starts and opaque fused ops are classified as they
    // are found (their node is in cache), storage releases become memory events.
    for (id, node) in graph.nodes().iter().enumerate() {
        if node.op != Op::CallFunction {
            continue;
        }
        let facts = graph.facts(id);
        let (transport, op) = if facts.collective {
            match collective_op(node) {
                Some(op) => (Transport::of_op(op), op),
                None => continue,
            }
        } else if facts.wait || node.target.len() < "symm_mem.fused_".len() {
            // A wait is `_c10d_functional.wait_tensor`; shorter targets are neither a fused
            // op nor a storage release: no need to read the target.
            continue;
        } else if let Some(op) = fused_op(node) {
            (Transport::Fused, op)
        } else {
            // Storage releases are the FSDP pass's `_free_tensor_storage` calls.
            if !facts.view && crate::graph::is_free_tensor_storage(node) {
                let tag = meta_get(node, "comm_type").and_then(PyValue::as_str);
                if let Some(tag) = tag {
                    if let Some(CommType::Free(phase)) = payload::comm_type(tag) {
                        memory_events.push(MemoryEvent {
                            node: id,
                            name: node.name.clone(),
                            comm_type: tag.to_string(),
                            param_name: meta_get(node, "param_name")
                                .and_then(PyValue::as_str)
                                .map(str::to_string),
                            phase,
                        });
                    }
                }
            }
            continue;
        };

        let index = collectives.len();
        let (mut entry, mut decl, placeholder, recompute_tag) =
            base_identity(graph, &mut structure, id, op, transport, &mut diags);
        let is_transformed = entry.transport == Transport::Fused
            || entry
                .provenance
                .as_ref()
                .is_some_and(|p| p.members.len() >= 2);
        if is_transformed {
            transformed.push((index, decl));
        } else if entry.transport == Transport::AllReduce {
            all_reduces.push((index, decl));
        } else {
            // Precedence now; nothing later changes a plain collective's declaration.
            decide(graph, &mut entry, &mut decl, &mut diags);
        }
        if entry.transport == Transport::AllGather {
            if let Some(p) = placeholder {
                match entry.phase {
                    Phase::Forward => forward_gathered.insert(p as usize),
                    Phase::Backward => regathers.push((index, p)),
                }
            }
        }
        entry.recomputed = entry.phase == Phase::Backward && recompute_tag;
        collectives.push(entry);
    }

    // Transforms: nodes made from several collectives get the identity the rules give,
    // judged on the members' base identities (before precedence).
    if !transformed.is_empty() {
        let base_snapshot: Vec<CollectiveIdentity>;
        let context: (&Graph, &[CollectiveIdentity], bool) = match members {
            Some((g, c)) => (g, &c.collectives, true),
            None => {
                base_snapshot = collectives
                    .iter()
                    .map(|c| CollectiveIdentity {
                        role: None,
                        source: None,
                        producer: None,
                        evidence: None,
                        recomputed: false,
                        ..c.clone()
                    })
                    .collect();
                (graph, &base_snapshot, false)
            }
        };
        for (i, decl) in &transformed {
            apply_transform(graph, &mut collectives[*i], decl, context, &mut diags);
        }
        for (i, mut decl) in transformed {
            let entry = &mut collectives[i];
            if entry.transport == Transport::AllReduce {
                all_reduces.push((i, decl));
            } else if entry.evidence.is_none() {
                decide(graph, entry, &mut decl, &mut diags);
            }
        }
        all_reduces.sort_unstable_by_key(|(i, _)| *i);
    }

    // Group transitivity for all-reduces from the final all-gather roles.
    if !all_reduces.is_empty() {
        let mut fsdp_groups: HashMap<&str, NodeId> = HashMap::new();
        for c in &collectives {
            if c.transport == Transport::AllGather && c.role == Some(Role::ParamUnshard) {
                if let Some(group) = &c.group {
                    fsdp_groups.entry(group.as_str()).or_insert(c.node);
                }
            }
        }
        let transitive: Vec<Option<NodeId>> = all_reduces
            .iter()
            .map(|(i, _)| {
                collectives[*i]
                    .group
                    .as_deref()
                    .and_then(|g| fsdp_groups.get(g).copied())
            })
            .collect();
        for ((i, mut decl), ag) in all_reduces.into_iter().zip(transitive) {
            let entry = &mut collectives[i];
            if let Some(ag) = ag {
                entry.heuristic = Some((
                    Role::GradReplicateReduce,
                    Evidence {
                        rule: rules::AR_GROUP_TRANSITIVITY,
                        detail: Detail::group_transitivity(entry.node, ag),
                    },
                ));
            }
            if entry.evidence.is_none() {
                decide(graph, entry, &mut decl, &mut diags);
            }
        }
    }

    // Derived: a backward all-gather of a placeholder gathered in the forward is a re-gather.
    for (i, p) in regathers {
        if forward_gathered.contains(p as usize) {
            collectives[i].recomputed = true;
        }
    }

    diags.sort_by_key(|(node, d)| (*node, d.code));
    let coverage = Coverage::of(&collectives);
    Classification {
        collectives,
        memory_events,
        diagnostics: diags.into_iter().map(|(_, d)| d.dedup_nodes()).collect(),
        coverage,
    }
}

/// An opaque communication-compute op: `symm_mem.fused_*`.
pub fn fused_op(node: &Node) -> Option<&str> {
    if node.op != Op::CallFunction {
        return None;
    }
    if !node.target.starts_with("symm_mem.fused_") {
        return None;
    }
    match split_op(&node.target) {
        Some(("symm_mem", op, _)) if op.starts_with("fused_") => Some(op),
        _ => None,
    }
}

/// `node.meta.get(key)` by a scan of the entries that compares lengths before text: the
/// entries of a node are contiguous, the key strings are not, and most keys differ in length.
pub(crate) fn meta_get<'a>(node: &'a Node, key: &str) -> Option<&'a PyValue> {
    node.meta
        .iter()
        .find(|(k, _)| k.len() == key.len() && k.as_str() == key)
        .map(|(_, v)| v)
}

/// `node.meta_flag("autograd_backward")`.
fn autograd_backward(node: &Node) -> bool {
    meta_get(node, "autograd_backward").is_some_and(PyValue::truthy)
}

/// Everything the classifier reads from one node's metadata, in one pass over its entries.
#[derive(Default)]
struct MetaView<'a> {
    /// `meta["comm_type"]` when it is a string.
    comm_type: Option<&'a str>,
    /// `meta["custom"]["distributed.comm_semantics"]`.
    custom_payload: Option<&'a PyValue>,
    /// `meta["comm_semantics"]`.
    fallback_payload: Option<&'a PyValue>,
    /// `bool(meta["autograd_backward"])`.
    autograd_backward: bool,
    /// `meta["recompute"]`.
    recompute: Option<&'a PyValue>,
    /// A provenance key is present (`bucketing_*_sources`, `fsdp_bucket_members`,
    /// `from_node`).
    provenance: bool,
}

impl<'a> MetaView<'a> {
    fn of(node: &'a Node) -> MetaView<'a> {
        let mut view = MetaView::default();
        for (key, value) in &node.meta {
            match key.len() {
                6 if key == "custom" => {
                    view.custom_payload = value.as_dict().and_then(|c| c.get(PAYLOAD_KEY));
                }
                9 => match key.as_str() {
                    "comm_type" => view.comm_type = value.as_str(),
                    "recompute" => view.recompute = Some(value),
                    "from_node" => view.provenance = true,
                    _ => {}
                },
                14 if key == FALLBACK_KEY => view.fallback_payload = Some(value),
                17 if key == "autograd_backward" => view.autograd_backward = value.truthy(),
                19 if key == "fsdp_bucket_members" => view.provenance = true,
                _ => {}
            }
            // "bucketing_sources" (17 bytes) is the shortest `bucketing_*_sources` key.
            if key.len() >= 17 && key.starts_with("bucketing_") && key.ends_with("_sources") {
                view.provenance = true;
            }
        }
        view
    }

    /// Only the payload keys (for waits and coalesced getitems).
    fn payloads_of(node: &'a Node) -> MetaView<'a> {
        let mut view = MetaView::default();
        for (key, value) in &node.meta {
            match key.len() {
                6 if key == "custom" => {
                    view.custom_payload = value.as_dict().and_then(|c| c.get(PAYLOAD_KEY));
                }
                14 if key == FALLBACK_KEY => view.fallback_payload = Some(value),
                _ => {}
            }
        }
        view
    }

    /// The payload values present, in precedence order (custom, then fallback).
    fn payloads(&self) -> impl Iterator<Item = (Location, &'a PyValue)> {
        self.custom_payload
            .map(|v| (Location::Custom, v))
            .into_iter()
            .chain(self.fallback_payload.map(|v| (Location::Fallback, v)))
    }
}

/// A fixed-size set of node positions.
struct Bitset(Vec<u64>);

impl Bitset {
    fn new(len: usize) -> Bitset {
        Bitset(vec![0; len.div_ceil(64)])
    }

    fn insert(&mut self, i: usize) {
        if let Some(word) = self.0.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    fn contains(&self, i: usize) -> bool {
        self.0
            .get(i / 64)
            .is_some_and(|word| word & (1 << (i % 64)) != 0)
    }
}

/// What the node itself declares, before the precedence decision.
#[derive(Clone, Debug, Default)]
pub(super) struct Declared {
    /// A valid explicit declaration: payload (explicit) or `comm_type`.
    pub explicit: Option<(Role, String, Evidence)>,
    /// A valid payload with `source: "inferred"` (a recorded earlier inference).
    pub recorded_inferred: Option<(Role, String, Evidence)>,
}

fn diag(
    node: NodeId,
    code: Code,
    nodes: Vec<String>,
    rule: &str,
    evidence: String,
    message: String,
) -> (NodeId, Diagnostic) {
    (
        node,
        Diagnostic {
            code,
            nodes,
            rule: rule.to_string(),
            evidence,
            message,
        },
    )
}

/// The call's process group: `group_name` keyword, else the last string argument, else
/// `meta["comm_group"]`.
pub(super) fn process_group(node: &Node) -> Option<String> {
    if let Some(PyValue::Str(group)) = node.kwargs.get("group_name") {
        return Some(group.clone());
    }
    if let Some(group) = node.args.iter().rev().find_map(PyValue::as_str) {
        if !matches!(
            group,
            "sum" | "avg" | "product" | "min" | "max" | "premul_sum"
        ) {
            return Some(group.to_string());
        }
    }
    meta_get(node, "comm_group")
        .and_then(PyValue::as_str)
        .map(str::to_string)
}

/// The waits of a start node, and the nodes between (coalesced getitems).
pub(super) fn waits_and_carriers(graph: &Graph, start: NodeId) -> (Vec<NodeId>, Vec<NodeId>) {
    let mut waits = Vec::new();
    let mut carriers = Vec::new();
    for &user in graph.users(start) {
        if is_wait(graph, user) {
            waits.push(user);
            carriers.push(user);
        } else if graph.node(user).target == "_operator.getitem" {
            carriers.push(user);
            for &inner in graph.users(user) {
                if is_wait(graph, inner) {
                    waits.push(inner);
                    carriers.push(inner);
                }
            }
        }
    }
    (waits, carriers)
}

fn is_wait(graph: &Graph, id: NodeId) -> bool {
    graph.is_wait(id) || is_op(graph.node(id), "c10d_functional", "wait_tensor")
}

/// Payloads, `comm_type` and the all-gather / reduce-scatter heuristics of one collective;
/// also its only placeholder ancestor (all-gathers) and its `recompute` tag.
fn base_identity(
    graph: &Graph,
    structure: &mut Structure,
    id: NodeId,
    op: &str,
    transport: Transport,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) -> (CollectiveIdentity, Declared, Option<u32>, bool) {
    let node = graph.node(id);
    let name = &node.name;
    let view = MetaView::of(node);
    let mut decl = Declared::default();

    // Payloads on the start node, in precedence order.
    let mut own: Vec<(Payload, Evidence)> = Vec::new();
    for (location, value) in view.payloads() {
        if let Some(valid) = validate(graph, id, None, location, value, transport, diags) {
            own.push(valid);
        }
    }
    // The waits, and payloads on waits / coalesced getitems (in `waits_and_carriers` order).
    let mut waits: Vec<NodeId> = Vec::new();
    let mut carried: Vec<(Payload, Evidence, NodeId)> = Vec::new();
    let mut carrier = |carrier: NodeId, diags: &mut Vec<(NodeId, Diagnostic)>| {
        for (location, value) in MetaView::payloads_of(graph.node(carrier)).payloads() {
            if let Some((p, e)) =
                validate(graph, id, Some(carrier), location, value, transport, diags)
            {
                carried.push((p, e, carrier));
            }
        }
    };
    for &user in graph.users(id) {
        if is_wait(graph, user) {
            waits.push(user);
            carrier(user, diags);
        } else if graph.node(user).target == "_operator.getitem" {
            carrier(user, diags);
            for &inner in graph.users(user) {
                if is_wait(graph, inner) {
                    waits.push(inner);
                    carrier(inner, diags);
                }
            }
        }
    }
    if let [(first, first_ev), rest @ ..] = own.as_slice() {
        for (other, other_ev) in rest {
            if other.role != first.role || other.source != first.source {
                diags.push(diag(
                    id,
                    Code::ExplicitConflict,
                    vec![name.clone()],
                    first_ev.rule,
                    format!(
                        "{}; {}",
                        first_ev.detail_text(graph),
                        other_ev.detail_text(graph)
                    ),
                    format!(
                        "{name}: the payloads in {} and {} disagree; the first is used",
                        Location::Custom.path(),
                        Location::Fallback.path()
                    ),
                ));
            }
        }
    }
    let chosen: Option<(Payload, Evidence)> = if let Some(first) = own.into_iter().next() {
        for (other, _, carrier) in &carried {
            if other.role != first.0.role || other.source != first.0.source {
                let carrier_name = &graph.node(*carrier).name;
                diags.push(diag(
                    id,
                    Code::ExplicitConflict,
                    vec![name.clone(), carrier_name.clone()],
                    rules::PAYLOAD_MOVED,
                    format!(
                        "{name}: role {} ({}); {carrier_name}: role {} ({})",
                        first.0.role.as_str(),
                        first.0.source.as_str(),
                        other.role.as_str(),
                        other.source.as_str()
                    ),
                    format!(
                        "{carrier_name} carries a payload that disagrees with the one on its \
                         start {name}; the start's is used"
                    ),
                ));
            }
        }
        Some(first)
    } else if let Some((p, e, carrier)) = carried.into_iter().next() {
        let carrier_name = &graph.node(carrier).name;
        diags.push(diag(
            id,
            Code::TagMovedFromWait,
            vec![name.clone(), carrier_name.clone()],
            rules::PAYLOAD_MOVED,
            e.detail_text(graph),
            format!(
                "the payload (role {}, {}) was found on {carrier_name}, not on the collective \
                 start; it was moved to {name}",
                p.role.as_str(),
                p.source.as_str()
            ),
        ));
        let detail = match e.detail.moved() {
            Some(moved) => moved,
            None => Detail::text(format!("{} (moved to the start)", e.detail_text(graph))),
        };
        Some((
            p,
            Evidence {
                rule: rules::PAYLOAD_MOVED,
                detail,
            },
        ))
    } else {
        None
    };

    // The FSDP pass's comm_type tag.
    let mut tagged: Option<(Role, Evidence)> = None;
    if let Some(tag) = view.comm_type {
        if let Some(CommType::Collective(role, _)) = payload::comm_type(tag) {
            let evidence = Evidence {
                rule: rules::COMM_TYPE,
                detail: Detail::comm_type(id),
            };
            if role.compatible_with(transport) {
                tagged = Some((role, evidence));
            } else {
                diags.push(diag(
                    id,
                    Code::RoleTransportConflict,
                    vec![name.clone()],
                    rules::COMM_TYPE,
                    evidence.detail_text(graph),
                    format!(
                        "{name} calls {op} (transport {}) but meta[\"comm_type\"] = {tag:?} \
                         means {}, which needs another transport; the tag is ignored",
                        transport.as_str(),
                        role.as_str()
                    ),
                ));
            }
        }
    }

    match chosen {
        Some((p, e)) if p.source == Source::Explicit => {
            if let Some((role, tag_ev)) = &tagged {
                if *role != p.role {
                    diags.push(diag(
                        id,
                        Code::ExplicitConflict,
                        vec![name.clone()],
                        e.rule,
                        format!("{}; {}", e.detail_text(graph), tag_ev.detail_text(graph)),
                        format!(
                            "{name}: the payload says {} but the comm_type tag says {}; the \
                             payload is used",
                            p.role.as_str(),
                            role.as_str()
                        ),
                    ));
                }
            }
            decl.explicit = Some((p.role, p.producer, e));
        }
        Some((p, e)) => {
            decl.recorded_inferred = Some((p.role, p.producer, e));
            if let Some((role, ev)) = tagged {
                decl.explicit = Some((role, payload::COMM_TYPE_PRODUCER.to_string(), ev));
            }
        }
        None => {
            if let Some((role, ev)) = tagged {
                decl.explicit = Some((role, payload::COMM_TYPE_PRODUCER.to_string(), ev));
            }
        }
    }

    // Structural heuristics for all-gathers and reduce-scatters.
    let mut placeholder = None;
    let heuristic = match transport {
        Transport::AllGather => {
            placeholder = structure.single_placeholder(id);
            placeholder.map(|p| {
                (
                    Role::ParamUnshard,
                    Evidence {
                        rule: rules::AG_SINGLE_PLACEHOLDER,
                        detail: Detail::single_placeholder(p as usize),
                    },
                )
            })
        }
        Transport::ReduceScatter => {
            let ok = !waits.is_empty() && waits.iter().all(|&w| structure.unary_to_output(w));
            ok.then(|| {
                (
                    Role::GradReduceShard,
                    Evidence {
                        rule: rules::RS_UNARY_TO_OUTPUT,
                        detail: Detail::unary_to_output(id),
                    },
                )
            })
        }
        _ => None,
    };

    // Forward or backward: the `comm_type` phase (collectives only, when the tag fits the
    // transport), else `autograd_backward`, else dependence on a backward input, else
    // position after the first backward node.
    let tag_phase = match view.comm_type.and_then(payload::comm_type) {
        Some(CommType::Collective(role, phase))
            if transport != Transport::Fused && role.compatible_with(transport) =>
        {
            Some(phase)
        }
        _ => None,
    };
    let phase = match tag_phase {
        Some(phase) => phase,
        None => {
            if view.autograd_backward
                || structure.backward_input(id)
                || structure.after_first_backward(id)
            {
                Phase::Backward
            } else {
                Phase::Forward
            }
        }
    };
    let recompute_tag = phase == Phase::Backward
        && view.recompute.is_some_and(|value| match value {
            PyValue::Bool(b) => *b,
            other => other.py_str().to_ascii_uppercase().contains("RECOMPUTE"),
        });

    let entry = CollectiveIdentity {
        node: id,
        name: name.clone(),
        op: op.to_string(),
        transport,
        group: process_group(node),
        waits,
        role: None,
        source: None,
        producer: None,
        phase,
        recomputed: false,
        evidence: None,
        heuristic,
        provenance: if view.provenance {
            transform::read_provenance(node)
        } else {
            None
        },
    };
    (entry, decl, placeholder, recompute_tag)
}

/// Validates one payload value found on the start (`carrier == None`) or a carrier node.
fn validate(
    graph: &Graph,
    start: NodeId,
    carrier: Option<NodeId>,
    location: Location,
    value: &PyValue,
    transport: Transport,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) -> Option<(Payload, Evidence)> {
    let start_name = &graph.node(start).name;
    let holder = carrier.unwrap_or(start);
    let holder_name = &graph.node(holder).name;
    let nodes = || {
        let mut nodes = vec![start_name.clone()];
        if carrier.is_some() {
            nodes.push(holder_name.clone());
        }
        nodes
    };
    let evidence = || {
        format!(
            "{} on {holder_name} = {}",
            location.path(),
            payload::describe(value)
        )
    };
    match truncated_payload(graph.node(holder), location).map_or_else(|| read_payload(value), Err) {
        Err(e) => {
            diags.push(diag(
                start,
                Code::MalformedPayload,
                nodes(),
                e.rule,
                evidence(),
                format!(
                    "the payload on {holder_name} is invalid and is ignored: {}",
                    e.message
                ),
            ));
            None
        }
        // On an opaque fused op no role fits; the fusion rule drops it and says so.
        Ok(p) if transport != Transport::Fused && !p.role.compatible_with(transport) => {
            diags.push(diag(
                start,
                Code::RoleTransportConflict,
                nodes(),
                "payload.role",
                evidence(),
                format!(
                    "role {} does not fit {start_name} (transport {}); the payload is ignored",
                    p.role.as_str(),
                    transport.as_str()
                ),
            ));
            None
        }
        Ok(p) => Some((
            p,
            Evidence {
                rule: if carrier.is_some() {
                    rules::PAYLOAD_MOVED
                } else if location == Location::Custom {
                    rules::PAYLOAD
                } else {
                    rules::PAYLOAD_FALLBACK
                },
                detail: Detail::payload(location, holder, false),
            },
        )),
    }
}

/// Trace-log hook: a payload PyTorch cut at 40 characters when it printed the graph
/// (`crate::tracelog::TRUNCATED_KEY` lists the cut `custom` keys) is text, never a valid
/// explicit identity; say why rather than report a shape error.
fn truncated_payload(holder: &Node, location: Location) -> Option<PayloadError> {
    use crate::tracelog::{ANNOTATION_LIMIT, TRUNCATED_KEY};
    let cut = meta_get(holder, TRUNCATED_KEY)?.as_list()?;
    (location == Location::Custom && cut.iter().any(|k| k.as_str() == Some(PAYLOAD_KEY))).then(
        || PayloadError {
            rule: "payload.truncated",
            message: format!(
                "it comes from a trace log, where PyTorch prints at most {ANNOTATION_LIMIT} \
                 characters of each `custom` value, and it was cut; a cut payload cannot be \
                 read as an explicit identity"
            ),
        },
    )
}

/// Precedence: explicit wins (mismatches reported); else the heuristics (inferred); else a
/// recorded inferred payload; else unclassified. Takes the declaration (decided once).
fn decide(
    graph: &Graph,
    entry: &mut CollectiveIdentity,
    decl: &mut Declared,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) {
    if entry.transport == Transport::Fused {
        return;
    }
    if let Some((role, producer, evidence)) = decl.explicit.take() {
        if let Some((h_role, h_ev)) = &entry.heuristic {
            if *h_role != role {
                diags.push(diag(
                    entry.node,
                    Code::HeuristicMismatch,
                    vec![entry.name.clone()],
                    h_ev.rule,
                    format!(
                        "explicit: {}; heuristic: {}",
                        evidence.detail_text(graph),
                        h_ev.detail_text(graph)
                    ),
                    format!(
                        "{} is explicitly {} (producer {producer}) but the heuristic {} would \
                         infer {}; the explicit role stands",
                        entry.name,
                        role.as_str(),
                        h_ev.rule,
                        h_role.as_str()
                    ),
                ));
            }
        }
        entry.role = Some(role);
        entry.source = Some(Source::Explicit);
        entry.producer = Some(producer);
        entry.evidence = Some(evidence);
        return;
    }
    if let Some((h_role, h_ev)) = &entry.heuristic {
        if let Some((r_role, r_producer, r_ev)) = &decl.recorded_inferred {
            if r_role != h_role {
                diags.push(diag(
                    entry.node,
                    Code::HeuristicMismatch,
                    vec![entry.name.clone()],
                    h_ev.rule,
                    format!(
                        "recorded: {}; heuristic: {}",
                        r_ev.detail_text(graph),
                        h_ev.detail_text(graph)
                    ),
                    format!(
                        "{} carries an inferred payload {} (producer {r_producer}) but the \
                         heuristic {} infers {}; the heuristic is used",
                        entry.name,
                        r_role.as_str(),
                        h_ev.rule,
                        h_role.as_str()
                    ),
                ));
            }
        }
        entry.role = Some(h_role.clone());
        entry.source = Some(Source::Inferred);
        entry.producer = Some("commlens.heuristics".to_string());
        entry.evidence = Some(h_ev.clone());
        return;
    }
    if let Some((role, producer, evidence)) = decl.recorded_inferred.take() {
        entry.role = Some(role);
        entry.source = Some(Source::Inferred);
        entry.producer = Some(producer);
        entry.evidence = Some(evidence);
    }
}

/// Transform rules for a node that records where it came from, and for opaque fused ops.
fn apply_transform(
    graph: &Graph,
    entry: &mut CollectiveIdentity,
    decl: &Declared,
    context: (&Graph, &[CollectiveIdentity], bool),
    diags: &mut Vec<(NodeId, Diagnostic)>,
) {
    let (ctx_graph, ctx, external) = context;
    let declared = decl
        .explicit
        .as_ref()
        .map(|(r, p, e)| (r, Source::Explicit, p, e))
        .or(decl
            .recorded_inferred
            .as_ref()
            .map(|(r, p, e)| (r, Source::Inferred, p, e)));
    let resolved: Vec<&CollectiveIdentity> = match &entry.provenance {
        Some(prov) => transform::resolve_members(prov, entry, ctx_graph, ctx, external),
        None => Vec::new(),
    };

    if entry.transport == Transport::Fused {
        let mut dropped: Vec<String> = Vec::new();
        if let Some((role, source, producer, ev)) = &declared {
            dropped.push(format!(
                "{} ({}, producer {producer}, {})",
                role.as_str(),
                source.as_str(),
                ev.detail_text(graph)
            ));
        }
        for m in &resolved {
            if let Some(role) = &m.role {
                dropped.push(format!("{} from member {}", role.as_str(), m.name));
            }
        }
        if !dropped.is_empty() {
            let mut nodes = vec![entry.name.clone()];
            nodes.extend(resolved.iter().map(|m| m.name.clone()));
            diags.push(diag(
                entry.node,
                Code::FusionRoleDropped,
                nodes,
                rules::FUSION,
                dropped.join("; "),
                format!(
                    "{} is an opaque communication-compute op ({}); the scalar role is \
                     dropped, provenance is kept",
                    entry.name, entry.op
                ),
            ));
        }
        entry.evidence = Some(Evidence {
            rule: rules::FUSION,
            detail: Detail::text(format!("opaque fused op {}: no scalar role", entry.op)),
        });
        return;
    }

    let Some(prov) = entry.provenance.clone() else {
        return;
    };
    let member_count = prov.members.len();
    if member_count < 2 {
        return;
    }
    let complete = if external {
        resolved.len() >= 2
    } else {
        resolved.len() == member_count
    };
    if !complete {
        // Members not visible: the node's own declaration stands, unverified.
        if let Some((role, source, producer, ev)) = &declared {
            if ev.rule != rules::COMM_TYPE {
                diags.push(diag(
                    entry.node,
                    Code::BucketUnverified,
                    vec![entry.name.clone()],
                    rules::BUCKETING,
                    format!(
                        "meta[{:?}] = [{}]; {}",
                        prov.key,
                        prov.members.join(", "),
                        ev.detail_text(graph)
                    ),
                    format!(
                        "{} was made from {member_count} members that are not in this dump; its \
                         payload ({}, {}, producer {producer}) may be a copy of the first \
                         member's and cannot be checked (audit it against the dump before the \
                         transform)",
                        entry.name,
                        role.as_str(),
                        source.as_str()
                    ),
                ));
            }
        }
        return;
    }

    let kind = transform::kind_of(&prov, &resolved, ctx_graph);
    let combined: Combined = transform::combine(kind, &resolved, ctx_graph);
    let producer = transform::producer_name(kind, &prov);
    let member_text = resolved
        .iter()
        .map(|m| {
            format!(
                "{} ({}, {})",
                m.name,
                m.role.as_ref().map(Role::as_str).unwrap_or("unclassified"),
                m.source.map(Source::as_str).unwrap_or("-")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut nodes = vec![entry.name.clone()];
    nodes.extend(resolved.iter().map(|m| m.name.clone()));
    let rule = kind.rule();
    if let Some(reason) = &combined.dropped {
        let (code, text) = match kind {
            TransformKind::Dedup => (
                Code::DedupRoleLost,
                "deduplicated reduce-scatters with different roles: the replacement gets no role",
            ),
            TransformKind::Bucketing => (
                Code::MixedRoleBucket,
                "bucket members are not all the same role with compatible transport, group, \
                 reduction and dtype: the bucket keeps no scalar role",
            ),
        };
        diags.push(diag(
            entry.node,
            code,
            nodes.clone(),
            rule,
            format!("members: {member_text}"),
            format!("{}: {text} ({reason})", entry.name),
        ));
    }
    if let Some((role, source, producer_decl, ev)) = &declared {
        let differs = combined.role.as_ref() != Some(*role) || combined.source != Some(*source);
        if differs {
            diags.push(diag(
                entry.node,
                Code::CopiedCustomUntrustworthy,
                nodes.clone(),
                rule,
                format!("{}; members: {member_text}", ev.detail_text(graph)),
                format!(
                    "{} carries {} ({}, producer {producer_decl}) but its members give {}; \
                     the members' identity is used",
                    entry.name,
                    role.as_str(),
                    source.as_str(),
                    match (&combined.role, combined.source) {
                        (Some(r), Some(s)) => format!("{} ({})", r.as_str(), s.as_str()),
                        _ => "no role".to_string(),
                    }
                ),
            ));
        }
    }
    entry.role = combined.role.clone();
    entry.source = combined.source;
    entry.producer = combined.role.as_ref().map(|_| producer.clone());
    entry.evidence = Some(Evidence {
        rule,
        detail: Detail::text(format!(
            "{} of {member_text} (meta[{:?}])",
            kind.noun(),
            prov.key
        )),
    });
    if let (Some(role), Some((h_role, h_ev))) = (&entry.role, &entry.heuristic) {
        if entry.source == Some(Source::Explicit) && h_role != role {
            diags.push(diag(
                entry.node,
                Code::HeuristicMismatch,
                vec![entry.name.clone()],
                h_ev.rule,
                h_ev.detail_text(graph),
                format!(
                    "{} is explicitly {} by its members but the heuristic {} would infer {}; \
                     the explicit role stands",
                    entry.name,
                    role.as_str(),
                    h_ev.rule,
                    h_role.as_str()
                ),
            ));
        }
    }
}

/// Whole-graph structural questions, answered on demand and memoized: each node is visited
/// at most once per question, and only the nodes a question reaches.
struct Structure<'g> {
    graph: &'g Graph,
    /// Placeholder ancestors of each node (the node itself included): `NO_PLACEHOLDER`,
    /// `MANY` (two or more), otherwise the placeholder's position + 1; `UNKNOWN_PLACEHOLDERS`
    /// until asked.
    placeholders: Vec<u32>,
    /// The node depends on a backward input (a `tangents_*` placeholder or one tagged
    /// `partitioner_tag: "is_backward"`): `UNKNOWN`, `NO` or `YES`.
    backward_input: Vec<u8>,
    /// Every path from the node reaches the output through single-input nodes (and it has
    /// at least one user): `UNKNOWN`, `NO` or `YES`.
    unary_to_output: Vec<u8>,
    /// Nodes before this position have been checked for `autograd_backward`.
    scanned: usize,
    /// The first node flagged `autograd_backward`, once found.
    first_backward: Option<NodeId>,
    stack: Vec<NodeId>,
}

const NO_PLACEHOLDER: u32 = 0;
const MANY: u32 = u32::MAX;
const UNKNOWN_PLACEHOLDERS: u32 = u32::MAX - 1;
const UNKNOWN: u8 = 0;
const NO: u8 = 1;
const YES: u8 = 2;

impl<'g> Structure<'g> {
    fn new(graph: &'g Graph) -> Structure<'g> {
        let n = graph.len();
        Structure {
            graph,
            placeholders: vec![UNKNOWN_PLACEHOLDERS; n],
            backward_input: vec![UNKNOWN; n],
            unary_to_output: vec![UNKNOWN; n],
            scanned: 0,
            first_backward: None,
            stack: Vec::new(),
        }
    }

    /// The node's only placeholder ancestor, when it has exactly one.
    fn single_placeholder(&mut self, id: NodeId) -> Option<u32> {
        if id >= self.graph.len() {
            return None;
        }
        match self.placeholders(id) {
            NO_PLACEHOLDER | MANY => None,
            p => Some(p - 1),
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

    /// Whether `root` depends on a backward input.
    fn backward_input(&mut self, root: NodeId) -> bool {
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
                node.name.starts_with("tangents")
                    || meta_get(node, "partitioner_tag").and_then(PyValue::as_str)
                        == Some("is_backward")
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

    /// Whether every path from `root` reaches the output through single-input nodes: it has
    /// users, and each is the output or a later single-input node for which this holds.
    fn unary_to_output(&mut self, root: NodeId) -> bool {
        let graph = self.graph;
        self.stack.clear();
        self.stack.push(root);
        while let Some(&id) = self.stack.last() {
            if self.unary_to_output[id] != UNKNOWN {
                self.stack.pop();
                continue;
            }
            let users = graph.users(id);
            let mut pending = false;
            let mut unary = !users.is_empty();
            for &u in users {
                if graph.node(u).op == Op::Output {
                    continue;
                }
                if !(u > id && graph.inputs(u).len() == 1) {
                    unary = false;
                    break;
                }
                match self.unary_to_output[u] {
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
            self.unary_to_output[id] = if unary { YES } else { NO };
            self.stack.pop();
        }
        self.unary_to_output[root] == YES
    }

    /// Whether some node before `id` is flagged `autograd_backward` (`id` comes after the
    /// first backward node). Scans forward only as far as asked.
    fn after_first_backward(&mut self, id: NodeId) -> bool {
        if let Some(first) = self.first_backward {
            return id > first;
        }
        let nodes = self.graph.nodes();
        while self.scanned < id.min(nodes.len()) {
            let j = self.scanned;
            self.scanned += 1;
            if autograd_backward(&nodes[j]) {
                self.first_backward = Some(j);
                return id > j;
            }
        }
        false
    }
}
