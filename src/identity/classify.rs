//! Classification: payloads, producer tags, structural heuristics, precedence, derived
//! attributes, and the transform rules for nodes that record their provenance.
//!
//! Ancestor and reachability questions are answered for all nodes at once, in one pass in
//! graph order (placeholder ancestors, capped at "many") and one in reverse order (unary path
//! to the output), so classification is linear in the size of the graph.

use super::payload::{self, raw_payloads, read_payload, CommType, Location, Payload};
use super::transform::{self, Combined, TransformKind};
use super::{
    rules, Classification, Code, CollectiveIdentity, Coverage, Diagnostic, Evidence, MemoryEvent,
    Phase, Role, Source, Transport,
};
use crate::dump::{Node, Op};
use crate::graph::{collective_op, is_op, split_op, Graph, NodeId};
use crate::value::PyValue;
use std::collections::{HashMap, HashSet};

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
    let structure = Structure::new(graph);
    let mut diags: Vec<(NodeId, Diagnostic)> = Vec::new();
    let mut collectives: Vec<CollectiveIdentity> = Vec::new();
    let mut declared: Vec<Declared> = Vec::new();
    let mut memory_events = Vec::new();

    for (id, node) in graph.nodes().iter().enumerate() {
        if node.op != Op::CallFunction {
            continue;
        }
        let facts = graph.facts(id);
        let (op, transport) = if facts.collective {
            match collective_op(node) {
                Some(op) => (op.to_string(), Transport::of_op(op)),
                None => continue,
            }
        } else if let Some(op) = fused_op(node) {
            (op.to_string(), Transport::Fused)
        } else {
            // Storage releases are the FSDP pass's `_free_tensor_storage` calls.
            if facts.wait || facts.view || !crate::graph::is_free_tensor_storage(node) {
                continue;
            }
            if let Some(tag) = node.meta_str("comm_type") {
                if let Some(CommType::Free(phase)) = payload::comm_type(tag) {
                    memory_events.push(MemoryEvent {
                        node: id,
                        name: node.name.clone(),
                        comm_type: tag.to_string(),
                        param_name: node.meta_str("param_name").map(str::to_string),
                        phase,
                    });
                }
            }
            continue;
        };
        let (entry, decl) = base_identity(graph, &structure, id, op, transport, &mut diags);
        collectives.push(entry);
        declared.push(decl);
    }

    // Transforms: nodes made from several collectives get the identity the rules give.
    let transformed = |c: &CollectiveIdentity| {
        c.transport == Transport::Fused
            || c.provenance.as_ref().is_some_and(|p| p.members.len() >= 2)
    };
    if collectives.iter().any(transformed) {
        let base_snapshot;
        let context: (&Graph, &[CollectiveIdentity], bool) = match members {
            Some((g, c)) => (g, &c.collectives, true),
            None => {
                base_snapshot = collectives.clone();
                (graph, &base_snapshot, false)
            }
        };
        for (entry, decl) in collectives.iter_mut().zip(&declared) {
            if transformed(entry) {
                apply_transform(entry, decl, context, &mut diags);
            }
        }
    }

    // Precedence for everything but all-reduces, then group transitivity for all-reduces from
    // the final all-gather roles.
    for (entry, decl) in collectives.iter_mut().zip(&declared) {
        if entry.evidence.is_none() && entry.transport != Transport::AllReduce {
            decide(entry, decl, &mut diags);
        }
    }
    let mut fsdp_groups: HashMap<String, String> = HashMap::new();
    for c in &collectives {
        if c.transport == Transport::AllGather && c.role == Some(Role::ParamUnshard) {
            if let Some(group) = &c.group {
                fsdp_groups
                    .entry(group.clone())
                    .or_insert_with(|| c.name.clone());
            }
        }
    }
    for (entry, decl) in collectives.iter_mut().zip(&declared) {
        if entry.transport != Transport::AllReduce {
            continue;
        }
        if let Some(ag) = entry.group.as_ref().and_then(|g| fsdp_groups.get(g)) {
            entry.heuristic = Some((
                Role::GradReplicateReduce,
                Evidence {
                    rule: rules::AR_GROUP_TRANSITIVITY,
                    detail: format!(
                        "process group {:?} also carries the FSDP all-gather {ag}",
                        entry.group.as_deref().unwrap_or_default()
                    ),
                },
            ));
        }
        if entry.evidence.is_none() {
            decide(entry, decl, &mut diags);
        }
    }

    // Derived attributes.
    let forward_gathered: HashSet<u32> = collectives
        .iter()
        .filter(|c| c.transport == Transport::AllGather && c.phase == Phase::Forward)
        .filter_map(|c| structure.single_placeholder(c.node))
        .collect();
    for entry in &mut collectives {
        let node = graph.node(entry.node);
        let regather = entry.transport == Transport::AllGather
            && entry.phase == Phase::Backward
            && structure
                .single_placeholder(entry.node)
                .is_some_and(|p| forward_gathered.contains(&p));
        let recompute_tag = entry.phase == Phase::Backward
            && node.meta("recompute").is_some_and(|value| match value {
                PyValue::Bool(b) => *b,
                other => other.py_str().to_ascii_uppercase().contains("RECOMPUTE"),
            });
        entry.recomputed = entry.phase == Phase::Backward && (regather || recompute_tag);
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
    node.meta_str("comm_group").map(str::to_string)
}

/// The waits of a start node, and the nodes between (coalesced getitems).
fn waits_and_carriers(graph: &Graph, start: NodeId) -> (Vec<NodeId>, Vec<NodeId>) {
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

/// Payloads, `comm_type` and the all-gather / reduce-scatter heuristics of one collective.
fn base_identity(
    graph: &Graph,
    structure: &Structure,
    id: NodeId,
    op: String,
    transport: Transport,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) -> (CollectiveIdentity, Declared) {
    let node = graph.node(id);
    let name = node.name.clone();
    let (waits, carriers) = waits_and_carriers(graph, id);
    let mut decl = Declared::default();

    // Payloads on the start node, in precedence order.
    let mut own: Vec<(Payload, Evidence)> = Vec::new();
    for (location, value) in raw_payloads(node) {
        if let Some(valid) = validate(graph, id, None, location, value, transport, diags) {
            own.push(valid);
        }
    }
    // Payloads on waits / coalesced getitems.
    let mut carried: Vec<(Payload, Evidence, NodeId)> = Vec::new();
    for &carrier in &carriers {
        for (location, value) in raw_payloads(graph.node(carrier)) {
            if let Some((p, e)) =
                validate(graph, id, Some(carrier), location, value, transport, diags)
            {
                carried.push((p, e, carrier));
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
                    format!("{}; {}", first_ev.detail, other_ev.detail),
                    format!(
                        "{name}: the payloads in {} and {} disagree; the first is used",
                        Location::Custom.path(),
                        Location::Fallback.path()
                    ),
                ));
            }
        }
    }
    let chosen: Option<(Payload, Evidence)> = if let Some(first) = own.first() {
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
        Some(first.clone())
    } else if let Some((p, e, carrier)) = carried.first() {
        let carrier_name = &graph.node(*carrier).name;
        diags.push(diag(
            id,
            Code::TagMovedFromWait,
            vec![name.clone(), carrier_name.clone()],
            rules::PAYLOAD_MOVED,
            e.detail.clone(),
            format!(
                "the payload (role {}, {}) was found on {carrier_name}, not on the collective \
                 start; it was moved to {name}",
                p.role.as_str(),
                p.source.as_str()
            ),
        ));
        Some((
            p.clone(),
            Evidence {
                rule: rules::PAYLOAD_MOVED,
                detail: format!("{} (moved to the start)", e.detail),
            },
        ))
    } else {
        None
    };

    // The FSDP pass's comm_type tag.
    let mut tagged: Option<(Role, Evidence)> = None;
    if let Some(tag) = node.meta_str("comm_type") {
        if let Some(CommType::Collective(role, _)) = payload::comm_type(tag) {
            let detail = format!("meta[\"comm_type\"] = {tag:?} on {name}");
            if role.compatible_with(transport) {
                tagged = Some((
                    role,
                    Evidence {
                        rule: rules::COMM_TYPE,
                        detail,
                    },
                ));
            } else {
                diags.push(diag(
                    id,
                    Code::RoleTransportConflict,
                    vec![name.clone()],
                    rules::COMM_TYPE,
                    detail,
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
                        format!("{}; {}", e.detail, tag_ev.detail),
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
    let heuristic = match transport {
        Transport::AllGather => structure.single_placeholder(id).map(|p| {
            (
                Role::ParamUnshard,
                Evidence {
                    rule: rules::AG_SINGLE_PLACEHOLDER,
                    detail: format!(
                        "the input's only graph-input ancestor is {}",
                        graph.node(p as usize).name
                    ),
                },
            )
        }),
        Transport::ReduceScatter => {
            let ok = !waits.is_empty() && waits.iter().all(|&w| structure.unary_to_output[w]);
            ok.then(|| {
                (
                    Role::GradReduceShard,
                    Evidence {
                        rule: rules::RS_UNARY_TO_OUTPUT,
                        detail: format!(
                            "every path from {} reaches the output through single-input nodes",
                            waits
                                .iter()
                                .map(|&w| graph.node(w).name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    },
                )
            })
        }
        _ => None,
    };

    let entry = CollectiveIdentity {
        node: id,
        name,
        op,
        transport,
        group: process_group(node),
        waits,
        role: None,
        source: None,
        producer: None,
        phase: structure.phase(graph, id),
        recomputed: false,
        evidence: None,
        heuristic,
        provenance: transform::read_provenance(node),
    };
    (entry, decl)
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
    let mut nodes = vec![start_name.clone()];
    if carrier.is_some() {
        nodes.push(holder_name.clone());
    }
    let evidence = format!(
        "{} on {holder_name} = {}",
        location.path(),
        payload::describe(value)
    );
    match read_payload(value) {
        Err(e) => {
            diags.push(diag(
                start,
                Code::MalformedPayload,
                nodes,
                e.rule,
                evidence,
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
                nodes,
                "payload.role",
                evidence,
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
                detail: format!("{} on {holder_name}", location.path()),
            },
        )),
    }
}

/// Precedence: explicit wins (mismatches reported); else the heuristics (inferred); else a
/// recorded inferred payload; else unclassified.
fn decide(entry: &mut CollectiveIdentity, decl: &Declared, diags: &mut Vec<(NodeId, Diagnostic)>) {
    if entry.transport == Transport::Fused {
        return;
    }
    if let Some((role, producer, evidence)) = &decl.explicit {
        if let Some((h_role, h_ev)) = &entry.heuristic {
            if h_role != role {
                diags.push(diag(
                    entry.node,
                    Code::HeuristicMismatch,
                    vec![entry.name.clone()],
                    h_ev.rule,
                    format!("explicit: {}; heuristic: {}", evidence.detail, h_ev.detail),
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
        entry.role = Some(role.clone());
        entry.source = Some(Source::Explicit);
        entry.producer = Some(producer.clone());
        entry.evidence = Some(evidence.clone());
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
                    format!("recorded: {}; heuristic: {}", r_ev.detail, h_ev.detail),
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
    if let Some((role, producer, evidence)) = &decl.recorded_inferred {
        entry.role = Some(role.clone());
        entry.source = Some(Source::Inferred);
        entry.producer = Some(producer.clone());
        entry.evidence = Some(evidence.clone());
    }
}

/// Transform rules for a node that records where it came from, and for opaque fused ops.
fn apply_transform(
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
                ev.detail
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
            detail: format!("opaque fused op {}: no scalar role", entry.op),
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
                        ev.detail
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
                format!("{}; members: {member_text}", ev.detail),
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
        detail: format!("{} of {member_text} (meta[{:?}])", kind.noun(), prov.key),
    });
    if let (Some(role), Some((h_role, h_ev))) = (&entry.role, &entry.heuristic) {
        if entry.source == Some(Source::Explicit) && h_role != role {
            diags.push(diag(
                entry.node,
                Code::HeuristicMismatch,
                vec![entry.name.clone()],
                h_ev.rule,
                h_ev.detail.clone(),
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

/// Whole-graph structural facts, computed once.
pub(super) struct Structure {
    /// Placeholder ancestors of each node (the node itself included): 0 = none, `MANY` = two
    /// or more, otherwise the placeholder's position + 1.
    placeholders: Vec<u32>,
    /// Every path from the node reaches the output through single-input nodes (and it has
    /// at least one user).
    pub unary_to_output: Vec<bool>,
    /// The node depends on a backward input (a `tangents_*` placeholder or one tagged
    /// `partitioner_tag: "is_backward"`).
    backward_input: Vec<bool>,
    /// The first node flagged `autograd_backward`.
    first_backward: Option<NodeId>,
}

const MANY: u32 = u32::MAX;

impl Structure {
    pub fn new(graph: &Graph) -> Structure {
        let n = graph.len();
        let mut placeholders = vec![0u32; n];
        let mut backward_input = vec![false; n];
        let mut first_backward = None;
        let mut is_output = vec![false; n];
        for (id, node) in graph.nodes().iter().enumerate() {
            is_output[id] = node.op == Op::Output;
            if first_backward.is_none() && node.meta_flag("autograd_backward") {
                first_backward = Some(id);
            }
            if node.op == Op::Placeholder {
                placeholders[id] = u32::try_from(id + 1).unwrap_or(MANY);
                backward_input[id] = node.name.starts_with("tangents")
                    || node.meta_str("partitioner_tag") == Some("is_backward");
                continue;
            }
            let mut summary = 0u32;
            let mut backward = false;
            for &input in graph.inputs(id) {
                if input >= id {
                    continue;
                }
                backward |= backward_input[input];
                summary = match (summary, placeholders[input]) {
                    (s, 0) => s,
                    (0, p) => p,
                    (MANY, _) | (_, MANY) => MANY,
                    (s, p) if s == p => s,
                    _ => MANY,
                };
            }
            placeholders[id] = summary;
            backward_input[id] = backward;
        }
        let mut unary_to_output = vec![false; n];
        for id in (0..n).rev() {
            let users = graph.users(id);
            unary_to_output[id] = !users.is_empty()
                && users.iter().all(|&u| {
                    is_output[u] || (u > id && graph.inputs(u).len() == 1 && unary_to_output[u])
                });
        }
        Structure {
            placeholders,
            unary_to_output,
            backward_input,
            first_backward,
        }
    }

    /// The node's only placeholder ancestor, when it has exactly one.
    pub fn single_placeholder(&self, id: NodeId) -> Option<u32> {
        match self.placeholders.get(id).copied() {
            Some(0) | Some(MANY) | None => None,
            Some(p) => Some(p - 1),
        }
    }

    /// Forward or backward: the `comm_type` phase, else `autograd_backward`, else dependence
    /// on a backward input, else position after the first backward node.
    pub fn phase(&self, graph: &Graph, id: NodeId) -> Phase {
        let node = graph.node(id);
        if let Some(CommType::Collective(role, phase)) =
            node.meta_str("comm_type").and_then(payload::comm_type)
        {
            let transport = collective_op(node).map(Transport::of_op);
            if transport.is_some_and(|t| role.compatible_with(t)) {
                return phase;
            }
        }
        let backward = node.meta_flag("autograd_backward")
            || self.backward_input.get(id).copied().unwrap_or(false)
            || self.first_backward.is_some_and(|first| id > first);
        if backward {
            Phase::Backward
        } else {
            Phase::Forward
        }
    }
}
