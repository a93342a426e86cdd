//! Audit of a transform: the same graph before and after, collective by collective.

use super::transform::resolve_members;
use super::{rules, Classification, Code, CollectiveIdentity, Diagnostic, Source, Transport};
use crate::graph::{Graph, NodeId};
use std::collections::HashMap;

/// What happened to a collective's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuditStatus {
    /// Still one collective (same name or one-to-one provenance) with its identity.
    Kept,
    /// Combined with others (bucketing, deduplication); the result follows the rule.
    Combined,
    /// A rule dropped the role (opaque fusion, mixed bucket, cross-role deduplication).
    Dropped,
    /// The identity vanished: no collective after claims it, or the one that does has no role
    /// and no rule explains it.
    Lost,
    /// The same node, untouched by the transform, whose inferred identity changed because
    /// its context did (a structural verdict that depends on other nodes, such as Inductor's
    /// group rule for all-reduces).
    ContextChanged,
}

impl AuditStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Kept => "kept",
            AuditStatus::Combined => "combined",
            AuditStatus::Dropped => "dropped",
            AuditStatus::Lost => "lost",
            AuditStatus::ContextChanged => "context_changed",
        }
    }
}

/// One collective of the "before" graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// The collective in the before graph.
    pub node: NodeId,
    pub status: AuditStatus,
    /// The after-graph collectives that claim it.
    pub into: Vec<NodeId>,
    /// How it was matched: `name` or the provenance key (`from_node`, ...).
    pub matched_by: Option<String>,
    /// The transform rule applied (`copy`, `bucketing`, `dedup`, `fusion`).
    pub rule: Option<&'static str>,
}

/// The audit of a transform.
#[derive(Clone, Debug, PartialEq)]
pub struct Audit {
    pub before: Classification,
    /// Classified with provenance members resolved in the before graph.
    pub after: Classification,
    /// One entry per before collective, in graph order.
    pub entries: Vec<AuditEntry>,
    /// After-graph collectives that match nothing before.
    pub new: Vec<NodeId>,
    /// The after graph's transform diagnostics, then the audit's own.
    pub diagnostics: Vec<Diagnostic>,
    /// Set when the two graphs do not look like one graph before and after a transform
    /// (they share fewer than half of their inputs): matches by name then mean little.
    pub unrelated: Option<String>,
}

/// A transform keeps a graph's inputs: its placeholders, by name and value (shape, dtype).
/// Two graphs sharing fewer than half of them are different graphs, whatever their
/// collectives are called. The note says so, with the counts.
fn unrelated_note(before: &Graph, after: &Graph) -> Option<String> {
    fn inputs(g: &Graph) -> HashMap<&str, Option<&crate::value::PyValue>> {
        g.dump
            .nodes
            .iter()
            .filter(|n| n.op == crate::dump::Op::Placeholder)
            .map(|n| (n.name.as_str(), n.meta("val")))
            .collect()
    }
    let (b, a) = (inputs(before), inputs(after));
    let most = b.len().max(a.len());
    if most == 0 {
        return None;
    }
    let shared = b
        .iter()
        .filter(|(name, val)| a.get(*name) == Some(val))
        .count();
    (shared * 2 < most).then(|| {
        format!(
            "the two graphs look unrelated: they share {shared} of their inputs ({} before, {} \
             after; placeholders by name and value), where a transform keeps them all, so \
             collectives matched by name here may be different collectives",
            b.len(),
            a.len()
        )
    })
}

fn describe(c: &CollectiveIdentity) -> String {
    match (&c.role, c.source) {
        (Some(role), Some(source)) => format!("{} ({})", role.as_str(), source.as_str()),
        _ => "no role".into(),
    }
}

/// Matches collectives of `before` and `after` (by name, `from_node` and provenance) and
/// reports each before collective as kept, combined, dropped by a rule, or lost.
pub fn audit(before: &Graph, after: &Graph) -> Audit {
    let (before_c, after_c) = super::classify::classify_before_and_after(before, after);

    // The before collectives each after collective comes from.
    let mut claims: HashMap<NodeId, Vec<(NodeId, String, usize)>> = HashMap::new();
    let mut new = Vec::new();
    let by_parameter = super::transform::ByParameter::default();
    for a in &after_c.collectives {
        let mut sources: Vec<NodeId> = Vec::new();
        let mut matched_by = String::new();
        // A node that keeps its name is itself, unless it records a many-to-one transform:
        // a one-entry `from_node` names where it came from in an earlier graph (dynamo's,
        // before AOT tracing), not a node of `before`.
        let same_name = before.find(&a.name).and_then(|id| before_c.get(id));
        let many = a.provenance.as_ref().is_some_and(|p| p.members.len() >= 2);
        if let (Some(b), false) = (same_name, many) {
            sources.push(b.node);
            matched_by = "name".into();
        } else if let Some(prov) = &a.provenance {
            sources = resolve_members(prov, a, before, &before_c.collectives, true, &by_parameter)
                .iter()
                .map(|m| m.node)
                .collect();
            matched_by = prov.key.clone();
        }
        if sources.is_empty() {
            if let Some(b) = same_name {
                sources.push(b.node);
                matched_by = "name".into();
            }
        }
        if sources.is_empty() {
            new.push(a.node);
        }
        let count = sources.len();
        for source in sources {
            claims
                .entry(source)
                .or_default()
                .push((a.node, matched_by.clone(), count));
        }
    }

    let mut entries = Vec::new();
    let mut diagnostics = after_c.diagnostics.clone();
    for b in &before_c.collectives {
        let Some(claimants) = claims.get(&b.node) else {
            if b.role.is_some() {
                diagnostics.push(Diagnostic {
                    code: Code::IdentityLost,
                    nodes: vec![b.name.clone()],
                    rule: rules::COPY.into(),
                    evidence: format!(
                        "before: {}; after: no collective named {} and none records it as a \
                         source",
                        describe(b),
                        b.name
                    ),
                    message: format!(
                        "{} ({}) vanished without provenance: its identity is lost",
                        b.name,
                        describe(b)
                    ),
                });
            }
            entries.push(AuditEntry {
                node: b.node,
                status: AuditStatus::Lost,
                into: Vec::new(),
                matched_by: None,
                rule: None,
            });
            continue;
        };
        let into: Vec<NodeId> = claimants.iter().map(|c| c.0).collect();
        let (first, matched_by, count) = &claimants[0];
        let Some(a) = after_c.get(*first) else {
            continue;
        };
        let (status, rule) = if a.transport == Transport::Fused {
            (AuditStatus::Dropped, Some(rules::FUSION))
        } else if *count >= 2 {
            // The many-to-one rule that applied; a node whose members had no role takes its
            // own verdict, but was still made by that rule.
            let rule = match a.evidence.as_ref().map(|e| e.rule) {
                Some(rule @ (rules::BUCKETING | rules::DEDUP)) => rule,
                _ if a
                    .provenance
                    .as_ref()
                    .is_some_and(|p| p.key == "dedup_rewrite") =>
                {
                    rules::DEDUP
                }
                _ => rules::BUCKETING,
            };
            if a.role.is_some() || b.role.is_none() {
                (AuditStatus::Combined, Some(rule))
            } else {
                (AuditStatus::Dropped, Some(rule))
            }
        } else {
            let mut status = AuditStatus::Kept;
            let mut nodes = vec![b.name.clone()];
            nodes.extend(into.iter().map(|&id| after.node(id).name.clone()));
            let evidence = format!("before: {}; after {}: {}", describe(b), a.name, describe(a));
            let inferred_or_none =
                |c: &CollectiveIdentity| c.source.is_none() || c.source == Some(Source::Inferred);
            let context_changed = matched_by == "name"
                && b.role != a.role
                && inferred_or_none(b)
                && inferred_or_none(a);
            if context_changed {
                let cause = context_cause(before, after, &after_c, &claims, b, a);
                diagnostics.push(Diagnostic {
                    code: Code::IdentityChanged,
                    nodes,
                    rule: b
                        .evidence
                        .as_ref()
                        .or(a.evidence.as_ref())
                        .map(|e| e.rule)
                        .unwrap_or(rules::COPY)
                        .into(),
                    evidence,
                    message: format!(
                        "{} is the same node after the transform, but its inferred identity \
                         changed from {} to {} because its context changed: {cause}",
                        b.name,
                        describe(b),
                        describe(a)
                    ),
                });
                entries.push(AuditEntry {
                    node: b.node,
                    status: AuditStatus::ContextChanged,
                    into,
                    matched_by: Some(matched_by.clone()),
                    rule: Some(rules::COPY),
                });
                continue;
            }
            match (&b.role, &a.role) {
                (Some(_), None) => {
                    status = AuditStatus::Lost;
                    diagnostics.push(Diagnostic {
                        code: Code::IdentityLost,
                        nodes,
                        rule: rules::COPY.into(),
                        evidence,
                        message: format!(
                            "{} became {} (matched by {matched_by}) but its identity did not \
                             survive: a copy keeps the identity by value",
                            b.name, a.name
                        ),
                    });
                }
                (Some(rb), Some(ra))
                    if b.source == Some(Source::Explicit) && a.source != Some(Source::Explicit) =>
                {
                    status = AuditStatus::Lost;
                    diagnostics.push(Diagnostic {
                        code: Code::IdentityLost,
                        nodes,
                        rule: rules::COPY.into(),
                        evidence,
                        message: format!(
                            "{} became {} (matched by {matched_by}) but its explicit identity {} \
                             did not survive; after the transform it is only inferred ({})",
                            b.name,
                            a.name,
                            rb.as_str(),
                            ra.as_str()
                        ),
                    });
                }
                (Some(rb), Some(ra)) if rb != ra => diagnostics.push(Diagnostic {
                    code: Code::IdentityChanged,
                    nodes,
                    rule: rules::COPY.into(),
                    evidence,
                    message: format!(
                        "{} changed role from {} to {} across the transform",
                        b.name,
                        rb.as_str(),
                        ra.as_str()
                    ),
                }),
                (Some(_), Some(_))
                    if b.source == Some(Source::Inferred) && a.source == Some(Source::Explicit) =>
                {
                    diagnostics.push(Diagnostic {
                        code: Code::InferredUpgraded,
                        nodes,
                        rule: rules::COPY.into(),
                        evidence,
                        message: format!(
                            "{} was inferred before the transform but {} claims it is \
                             explicit: an inferred identity never becomes explicit",
                            b.name, a.name
                        ),
                    })
                }
                _ => {}
            }
            (status, Some(rules::COPY))
        };
        entries.push(AuditEntry {
            node: b.node,
            status,
            into,
            matched_by: Some(matched_by.clone()),
            rule,
        });
    }
    let diagnostics = diagnostics
        .into_iter()
        .map(Diagnostic::dedup_nodes)
        .collect();
    Audit {
        before: before_c,
        after: after_c,
        entries,
        new,
        diagnostics,
        unrelated: unrelated_note(before, after),
    }
}

/// Why the inferred identity of a node that the transform left in place changed: the
/// structural verdict it rested on (or gained) depends on other nodes, and names the change.
fn context_cause(
    before: &Graph,
    after: &Graph,
    after_c: &Classification,
    claims: &HashMap<NodeId, Vec<(NodeId, String, usize)>>,
    b: &CollectiveIdentity,
    a: &CollectiveIdentity,
) -> String {
    let group = b.group.as_deref().or(a.group.as_deref()).unwrap_or("?");
    let rule_of = |c: &CollectiveIdentity| c.evidence.as_ref().map(|e| e.rule);
    match (rule_of(b), rule_of(a)) {
        (Some(rules::AR_GROUP_TRANSITIVITY), _) => {
            let Some(ag) = b
                .evidence
                .as_ref()
                .and_then(|e| e.detail.group_all_gather())
            else {
                return format!("process group {group:?} is no longer an FSDP group");
            };
            let ag_name = &before.node(ag).name;
            let fate = match claims.get(&ag) {
                None => format!("{ag_name} is gone from the graph"),
                Some(into) => {
                    let names: Vec<String> = into
                        .iter()
                        .map(|(id, _, _)| after.node(*id).name.clone())
                        .collect();
                    let verdict_kept = into.iter().any(|(id, _, _)| {
                        after_c.get(*id).is_some_and(|c| {
                            c.heuristic
                                .as_ref()
                                .is_some_and(|(_, ev)| ev.rule == rules::AG_SINGLE_PLACEHOLDER)
                        })
                    });
                    if into.iter().any(|(_, _, count)| *count >= 2) {
                        format!(
                            "{ag_name} was combined into {} by the transform, and the combined \
                             all-gather has {} structural FSDP verdict (its input has several \
                             graph-input ancestors)",
                            names.join(", "),
                            if verdict_kept { "a" } else { "no" }
                        )
                    } else if verdict_kept {
                        format!("{ag_name} still has its verdict")
                    } else {
                        format!(
                            "{ag_name} (now {}) lost its structural FSDP verdict",
                            names.join(", ")
                        )
                    }
                }
            };
            format!(
                "Inductor counts process group {group:?} as FSDP only while an all-gather on it \
                 has a structural FSDP verdict; before the transform that was {ag_name}; {fate}, \
                 so no all-gather on {group:?} makes it an FSDP group any more"
            )
        }
        (_, Some(rules::AR_GROUP_TRANSITIVITY)) => {
            let ag = a
                .evidence
                .as_ref()
                .and_then(|e| e.detail.group_all_gather())
                .map(|id| after.node(id).name.clone())
                .unwrap_or_default();
            format!(
                "after the transform, {ag} on process group {group:?} has a structural FSDP \
                 verdict, which makes Inductor count the group as FSDP"
            )
        }
        (Some(rules::AG_SINGLE_PLACEHOLDER), _) | (_, Some(rules::AG_SINGLE_PLACEHOLDER)) => {
            format!(
                "the graph inputs among its input's ancestors changed (before: {}; after: {})",
                placeholder_words(b),
                placeholder_words(a)
            )
        }
        (Some(rules::RS_UNARY_TO_OUTPUT), _) | (_, Some(rules::RS_UNARY_TO_OUTPUT)) => {
            let culprit = a
                .waits
                .iter()
                .find_map(|&w| super::structure::Structure::first_multi_input_user(after, w));
            match culprit {
                Some(id) => format!(
                    "a node reached from its wait now has several inputs: {}",
                    after.node(id).name
                ),
                None => "the users of its wait changed".to_string(),
            }
        }
        _ => "the structure around it changed".to_string(),
    }
}

/// "exactly one graph input" / "no single graph input", from a collective's verdict.
fn placeholder_words(c: &CollectiveIdentity) -> &'static str {
    match &c.heuristic {
        Some((_, ev)) if ev.rule == rules::AG_SINGLE_PLACEHOLDER => "exactly one graph input",
        _ => "not exactly one graph input",
    }
}
