//! Semantic identity of collectives (`semantic-identity.md`, PyTorch RFC-0057 phase 1).
//!
//! Every collective start node gets a role (`fsdp.param_unshard`, ...), where the role came
//! from (`explicit` payload or producer tag, or `inferred` by a structural heuristic), which
//! rule produced it (its evidence), and derived attributes (phase, recomputed). Transforms
//! (bucketing, reduce-scatter deduplication, opaque fusion) are resolved by the spec's rules,
//! never by trusting a copied `custom` dict. Problems are [`Diagnostic`]s with stable codes.
//!
//! Entry points, shared by the CLI and the browser app:
//!
//! - [`classify`]: one graph → [`Classification`] (collectives, diagnostics, coverage).
//! - [`bucket_identities`]: the planner's buckets → their identity by the bucketing rule.
//! - [`audit`]: a graph before and after a transform → what happened to each identity.
//! - [`json::roles_value`] / [`json::audit_value`]: the stable JSON forms (`commlens roles
//!   --json`, `commlens audit --json`).
//!
//! Nothing here panics on any input: malformed metadata becomes a diagnostic.

mod audit;
mod classify;
pub mod json;
pub(crate) mod payload;
mod structure;
mod transform;

pub use audit::{audit, Audit, AuditEntry, AuditStatus};
pub use classify::{classify, classify_beside, classify_with_members};
pub use payload::{read_payload, Payload, PAYLOAD_KEY};
pub(crate) use transform::bucket_identities_on_this_thread;
pub use transform::{bucket_identities, BucketIdentity, PLANNER_PRODUCER};

use crate::graph::{Graph, NodeId};
pub use crate::ops::{Api, Transport};
use indexmap::IndexMap;
use std::sync::Arc;

/// A collective's purpose.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `fsdp.param_unshard`: materialise sharded parameters (forward gather or backward re-gather).
    ParamUnshard,
    /// `fsdp.grad_reduce_shard`: reduce gradients into their sharded form.
    GradReduceShard,
    /// `fsdp.grad_replicate_reduce`: reduce gradients across the replicated dimension (HSDP).
    GradReplicateReduce,
    /// A namespaced role of another producer (`tp.*`, `cp.*`, `ep.*`, `pp.*`, `dtensor.*`,
    /// `user`): accepted from explicit payloads only, never inferred.
    Other(String),
}

/// Namespaces of the non-FSDP roles the classifier accepts from explicit payloads.
pub const OTHER_ROLE_NAMESPACES: &[&str] = &["tp.", "cp.", "ep.", "pp.", "dtensor."];

impl Role {
    /// The three phase-1 FSDP roles, in table order.
    pub const FSDP: [Role; 3] = [
        Role::ParamUnshard,
        Role::GradReduceShard,
        Role::GradReplicateReduce,
    ];

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "fsdp.param_unshard" => Some(Role::ParamUnshard),
            "fsdp.grad_reduce_shard" => Some(Role::GradReduceShard),
            "fsdp.grad_replicate_reduce" => Some(Role::GradReplicateReduce),
            "user" => Some(Role::Other(text.to_string())),
            _ => OTHER_ROLE_NAMESPACES
                .iter()
                .any(|ns| {
                    text.len() > ns.len()
                        && text.starts_with(ns)
                        && text[ns.len()..]
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                })
                .then(|| Role::Other(text.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::ParamUnshard => "fsdp.param_unshard",
            Role::GradReduceShard => "fsdp.grad_reduce_shard",
            Role::GradReplicateReduce => "fsdp.grad_replicate_reduce",
            Role::Other(name) => name,
        }
    }

    pub fn is_fsdp(&self) -> bool {
        !matches!(self, Role::Other(_))
    }

    /// The role/transport table: FSDP roles each belong to one transport; other producers'
    /// roles fit any ordinary collective; no role fits an opaque fused op.
    pub fn compatible_with(&self, transport: Transport) -> bool {
        match self {
            Role::ParamUnshard => transport == Transport::AllGather,
            Role::GradReduceShard => transport == Transport::ReduceScatter,
            Role::GradReplicateReduce => transport == Transport::AllReduce,
            Role::Other(_) => transport != Transport::Fused,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Declared by the producer (a valid payload, or an unambiguous producer tag).
    Explicit,
    /// Decided by a structural heuristic or a transform rule over inferred members.
    Inferred,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Explicit => "explicit",
            Source::Inferred => "inferred",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Forward,
    Backward,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
        }
    }
}

/// Stable rule names: which rule gave a role (evidence) or which rule a diagnostic applies.
pub mod rules {
    /// A valid payload in `meta["custom"]["distributed.comm_semantics"]`.
    pub const PAYLOAD: &str = "payload";
    /// A valid payload in the fallback location `meta["comm_semantics"]`.
    pub const PAYLOAD_FALLBACK: &str = "payload_fallback";
    /// A valid payload found on the wait (or coalesced getitem) and moved to the start.
    pub const PAYLOAD_MOVED: &str = "payload_moved_from_wait";
    /// The FSDP pass's `meta["comm_type"]` tag (a producer that predates the payload).
    pub const COMM_TYPE: &str = "comm_type";
    /// Heuristic: all-gather whose input has exactly one placeholder ancestor.
    pub const AG_SINGLE_PLACEHOLDER: &str = "ag_single_placeholder";
    /// Heuristic: reduce-scatter whose wait has users and whose forward closure has only
    /// single-input nodes (Inductor's `is_fsdp_reduce_scatter_wait`).
    pub const RS_UNARY_TO_OUTPUT: &str = "rs_unary_chain_to_output";
    /// Heuristic: all-reduce on a group that carries an all-gather with a structural FSDP
    /// verdict (Inductor's `identify_fsdp_groups`).
    pub const AR_GROUP_TRANSITIVITY: &str = "ar_group_transitivity";
    /// Transform rule: many collectives became one.
    pub const BUCKETING: &str = "bucketing";
    /// Transform rule: `add(wait(RS a), wait(RS b))` became one reduce-scatter.
    pub const DEDUP: &str = "dedup";
    /// Transform rule: fused into an opaque communication-compute op.
    pub const FUSION: &str = "fusion";
    /// Transform rule: one-to-one copy, recompute copy, retrace, reorder.
    pub const COPY: &str = "copy";
}

/// Stable names of the rules that decide a collective's phase (forward or backward).
pub mod phase_rules {
    /// The FSDP pass's `comm_type` tag names the phase.
    pub const COMM_TYPE: &str = "comm_type";
    /// `meta["autograd_backward"]` is set on the node.
    pub const AUTOGRAD_BACKWARD: &str = "autograd_backward";
    /// The node depends on a backward input (`tangents_*`, `partitioner_tag: is_backward`).
    pub const BACKWARD_INPUT: &str = "backward_input";
    /// The node stands after the first node flagged `autograd_backward`.
    pub const AFTER_FIRST_BACKWARD: &str = "after_first_backward";
    /// No autograd metadata: the node stands after the gradient seed (`ones_like(loss)`) of
    /// a traced joint graph.
    pub const GRADIENT_SEED: &str = "gradient_seed";
    /// Nothing marks it as backward.
    pub const FORWARD: &str = "forward";
}

/// Why a collective has its role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// A stable rule name from [`rules`].
    pub rule: &'static str,
    /// Human-readable detail (the metadata location, the ancestor, the members...), rendered
    /// on demand: [`Evidence::detail_text`].
    pub detail: Detail,
}

impl Evidence {
    /// The human-readable detail, rendered against the graph that was classified.
    pub fn detail_text(&self, graph: &Graph) -> String {
        self.detail.render(graph)
    }
}

/// The detail of an [`Evidence`]: structured (node ids) for the rules that fire on every
/// collective, so classification builds no text; rendered only for output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detail(DetailRepr);

/// Sixteen bytes, not thirty-two: a collective holds three details (its phase's, its role's,
/// its structural verdict's), so at 85k collectives this is 4 MB of the classification.
/// Node positions are kept as [`Id`], the rare text behind one pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DetailRepr {
    // Boxed to be one pointer wide, not three words: the rare text keeps the others small.
    #[allow(clippy::box_collection)]
    Text(Box<String>),
    /// `meta["comm_type"] = "<tag>" on <node>`.
    CommType(Id),
    /// `<payload location> on <holder>[ (moved to the start)]`.
    Payload {
        location: payload::Location,
        holder: Id,
        moved: bool,
    },
    /// The all-gather's only placeholder ancestor.
    SinglePlaceholder(Id),
    /// The reduce-scatter's wait whose forward closure has only single-input nodes.
    UnaryClosedWait(Id),
    /// A phase decided by structure: the rule (its index in [`PHASE_RULES`]) and its anchor
    /// node (first backward node, seed).
    PhaseAnchor { rule: u8, anchor: Option<Id> },
    /// The all-reduce and the FSDP all-gather on its process group.
    GroupTransitivity { collective: Id, all_gather: Id },
}

/// A node position in 32 bits. A graph of 2^32 nodes would need hundreds of gigabytes to
/// hold; a position past that is kept as `u32::MAX` and renders as an unknown node (`?`)
/// rather than as another node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Id(u32);

impl Id {
    fn new(node: NodeId) -> Id {
        Id(u32::try_from(node).unwrap_or(u32::MAX))
    }

    fn get(self) -> Option<NodeId> {
        (self.0 != u32::MAX).then_some(self.0 as NodeId)
    }

    fn node(self, graph: &Graph) -> Option<&crate::dump::Node> {
        self.get().and_then(|id| graph.dump.nodes.get(id))
    }

    /// The node's name, or `?` for a position the graph does not have.
    fn name(self, graph: &Graph) -> &str {
        self.node(graph).map_or("?", |node| node.name.as_str())
    }
}

/// The phase rules a [`DetailRepr::PhaseAnchor`] names, by index.
const PHASE_RULES: [&str; 6] = [
    phase_rules::COMM_TYPE,
    phase_rules::AUTOGRAD_BACKWARD,
    phase_rules::BACKWARD_INPUT,
    phase_rules::AFTER_FIRST_BACKWARD,
    phase_rules::GRADIENT_SEED,
    phase_rules::FORWARD,
];

/// `format!("{text:?}")` appended to `out`: plain printable ASCII is only quoted (as `Debug`
/// quotes it, char by char and slower); anything else goes through `Debug`.
fn push_debug_quoted(out: &mut String, text: &str) {
    let plain = text
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'\''));
    if plain {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        use std::fmt::Write;
        let _ = write!(out, "{text:?}");
    }
}

impl Detail {
    /// A detail given as text.
    pub fn text(text: impl Into<String>) -> Detail {
        Detail(DetailRepr::Text(Box::new(text.into())))
    }

    pub(crate) fn comm_type(node: NodeId) -> Detail {
        Detail(DetailRepr::CommType(Id::new(node)))
    }

    pub(crate) fn payload(location: payload::Location, holder: NodeId, moved: bool) -> Detail {
        Detail(DetailRepr::Payload {
            location,
            holder: Id::new(holder),
            moved,
        })
    }

    /// The same payload detail, moved from a wait to its start.
    pub(crate) fn moved(&self) -> Option<Detail> {
        match &self.0 {
            DetailRepr::Payload {
                location, holder, ..
            } => Some(Detail(DetailRepr::Payload {
                location: *location,
                holder: *holder,
                moved: true,
            })),
            _ => None,
        }
    }

    pub(crate) fn single_placeholder(placeholder: NodeId) -> Detail {
        Detail(DetailRepr::SinglePlaceholder(Id::new(placeholder)))
    }

    pub(crate) fn unary_closed_wait(wait: NodeId) -> Detail {
        Detail(DetailRepr::UnaryClosedWait(Id::new(wait)))
    }

    pub(crate) fn phase(rule: &'static str, anchor: Option<NodeId>) -> Detail {
        // A rule outside the table renders as `forward`'s text, as an unknown name did.
        let rule = PHASE_RULES
            .iter()
            .position(|&known| known == rule)
            .unwrap_or(PHASE_RULES.len() - 1) as u8;
        Detail(DetailRepr::PhaseAnchor {
            rule,
            anchor: anchor.map(Id::new),
        })
    }

    pub(crate) fn group_transitivity(collective: NodeId, all_gather: NodeId) -> Detail {
        Detail(DetailRepr::GroupTransitivity {
            collective: Id::new(collective),
            all_gather: Id::new(all_gather),
        })
    }

    /// The node a phase rule is anchored at (the first backward node, the gradient seed).
    pub fn anchor(&self) -> Option<NodeId> {
        match &self.0 {
            DetailRepr::PhaseAnchor { anchor, .. } => anchor.and_then(Id::get),
            _ => None,
        }
    }

    /// The all-gather that made the process group an FSDP group, for a group-rule detail.
    pub(crate) fn group_all_gather(&self) -> Option<NodeId> {
        match &self.0 {
            DetailRepr::GroupTransitivity { all_gather, .. } => all_gather.get(),
            _ => None,
        }
    }

    /// The text, rendered against the graph that was classified.
    pub fn render(&self, graph: &Graph) -> String {
        let mut text = String::new();
        self.render_into(graph, &mut text);
        text
    }

    /// [`Detail::render`] appended to `out`.
    pub fn render_into(&self, graph: &Graph, out: &mut String) {
        use std::fmt::Write;
        // Writing to a `String` cannot fail.
        let _ = match &self.0 {
            DetailRepr::Text(text) => {
                out.push_str(text);
                Ok(())
            }
            DetailRepr::CommType(id) => {
                let Some(node) = id.node(graph) else {
                    out.push_str("meta[\"comm_type\"] on ?");
                    return;
                };
                let tag = classify::meta_get(node, "comm_type")
                    .and_then(crate::value::PyValue::as_str)
                    .unwrap_or_default();
                // The most common detail (one a tagged collective): built without `format!`.
                out.push_str("meta[\"comm_type\"] = ");
                push_debug_quoted(out, tag);
                out.push_str(" on ");
                out.push_str(&node.name);
                Ok(())
            }
            DetailRepr::Payload {
                location,
                holder,
                moved,
            } => write!(
                out,
                "{} on {}{}",
                location.path(),
                holder.name(graph),
                if *moved { " (moved to the start)" } else { "" }
            ),
            DetailRepr::SinglePlaceholder(p) => {
                write!(
                    out,
                    "the input's only graph-input ancestor is {}",
                    p.name(graph)
                )
            }
            DetailRepr::UnaryClosedWait(wait) => write!(
                out,
                "{} has users, and every node reached from it (the output aside) has a single \
                 input",
                wait.name(graph)
            ),
            DetailRepr::PhaseAnchor { rule, anchor } => {
                let name = |id: &Option<Id>| id.map_or("", |id| id.name(graph));
                match PHASE_RULES
                    .get(usize::from(*rule))
                    .copied()
                    .unwrap_or_default()
                {
                    phase_rules::COMM_TYPE => out.write_str("the comm_type tag names the phase"),
                    phase_rules::AUTOGRAD_BACKWARD => {
                        out.write_str("meta[\"autograd_backward\"] is set")
                    }
                    phase_rules::BACKWARD_INPUT => out.write_str(
                        "depends on a backward input (a tangents placeholder or one tagged \
                         partitioner_tag is_backward)",
                    ),
                    phase_rules::AFTER_FIRST_BACKWARD => write!(
                        out,
                        "stands after {}, the first node flagged autograd_backward",
                        name(anchor)
                    ),
                    phase_rules::GRADIENT_SEED => write!(
                        out,
                        "no autograd metadata in the graph; stands after the gradient seed {} \
                         (ones_like of the scalar loss), so it runs in the backward pass",
                        name(anchor)
                    ),
                    _ => out.write_str("nothing marks it as backward"),
                }
            }
            DetailRepr::GroupTransitivity {
                collective,
                all_gather,
            } => write!(
                out,
                "process group {:?} also carries {}, an all-gather with a structural FSDP \
                 verdict",
                collective
                    .node(graph)
                    .and_then(|node| {
                        crate::ops::collective_call(node)
                            .and_then(|call| classify::process_group(graph, node, &call))
                    })
                    .unwrap_or_default(),
                all_gather.name(graph)
            ),
        };
    }
}

/// Where a node came from when a transform made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// The metadata key that records it (`from_node`, `bucketing_ag_sources`,
    /// `fsdp_bucket_members`, or `dedup_rewrite` for a recognised reduce-scatter
    /// deduplication).
    pub key: String,
    /// Member node names (or parameter names, for `fsdp_bucket_members`).
    pub members: Vec<String>,
    /// The `pass_name` recorded in `from_node`, when any.
    pub pass_name: Option<String>,
    /// The members' identity payloads as Inductor's bucketing records them
    /// (`bucketing_custom_sources`: the `custom` dict of each member that had one), one entry
    /// per recorded dict, `None` where it holds no valid payload.
    pub member_payloads: Option<Vec<Option<payload::Payload>>>,
}

impl Provenance {
    /// Members are parameter names rather than node names.
    pub fn by_parameter(&self) -> bool {
        self.key == "fsdp_bucket_members"
    }
}

/// The identity of one collective start node.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveIdentity {
    pub node: NodeId,
    pub name: String,
    /// The op name (`all_gather_into_tensor`, `fused_all_gather_matmul`, ...). The op, the
    /// group and the producer are shared among the collectives that have the same one: a
    /// handful of values among tens of thousands of collectives.
    pub op: Arc<str>,
    /// How the graph calls it (functional, functional autograd, c10d, fused).
    pub api: Api,
    pub transport: Transport,
    /// The process group named by the call (`group_name`), else `meta["comm_group"]`.
    pub group: Option<Arc<str>>,
    /// Where the collective completes: its wait nodes (through coalesced `getitem`s); for a
    /// c10d op, the user of its `Work` handle, else the `getitem` of its output.
    pub waits: Box<[NodeId]>,
    pub role: Option<Role>,
    pub source: Option<Source>,
    pub producer: Option<Arc<str>>,
    pub phase: Phase,
    /// Why the phase is what it is (a [`phase_rules`] name and its anchor).
    pub phase_evidence: Evidence,
    pub recomputed: bool,
    /// The rule that gave the role; `None` when unclassified.
    pub evidence: Option<Evidence>,
    /// What torch Inductor's structural predicates say of the node, whatever the final role
    /// (see `structure.rs`).
    pub heuristic: Option<(Role, Evidence)>,
    /// The transform that made this node, when recorded.
    pub provenance: Option<Box<Provenance>>,
    /// For an all-gather: the only graph input (placeholder) among its input's ancestors —
    /// the parameter it gathers — when there is exactly one.
    pub input_placeholder: Option<NodeId>,
}

/// A storage release tagged by the FSDP pass (`fsdp_reshard_free*`): not a collective.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEvent {
    pub node: NodeId,
    pub name: String,
    /// Shared, as a collective's op and group are.
    pub comm_type: Arc<str>,
    pub param_name: Option<String>,
    pub phase: Phase,
}

/// Stable diagnostic codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// A payload breaks a validity rule (version, role, source, producer, shape).
    MalformedPayload,
    /// A payload's (or comm_type's) role does not fit the node's transport.
    RoleTransportConflict,
    /// Two explicit sources on one node disagree (payload vs comm_type, custom vs fallback,
    /// start vs wait); the first by precedence is used.
    ExplicitConflict,
    /// The heuristics claim a different role than the explicit one.
    HeuristicMismatch,
    /// A payload found on a wait or coalesced getitem was moved to its start.
    TagMovedFromWait,
    /// A bucket's members disagree (role, transport, group, reduction, dtype): no role.
    MixedRoleBucket,
    /// Deduplicated reduce-scatters had different roles: the replacement has none.
    DedupRoleLost,
    /// A role was dropped by fusion into an opaque op.
    FusionRoleDropped,
    /// A transformed node carries a payload that disagrees with its members' identity.
    CopiedCustomUntrustworthy,
    /// A bucket's payload could not be checked because its members are not in the dump.
    BucketUnverified,
    /// An identity present before a transform is gone after it.
    IdentityLost,
    /// An inferred identity was presented as explicit after a transform.
    InferredUpgraded,
    /// A collective kept its identity across a transform but changed role.
    IdentityChanged,
    /// The reference planner put collectives of different roles in one bucket.
    PlannerBucketMixedRoles,
    /// A bucket names members that the dump before the transform does not have.
    BucketMemberMissing,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::MalformedPayload => "malformed_payload",
            Code::RoleTransportConflict => "role_transport_conflict",
            Code::ExplicitConflict => "explicit_conflict",
            Code::HeuristicMismatch => "heuristic_mismatch",
            Code::TagMovedFromWait => "tag_moved_from_wait",
            Code::MixedRoleBucket => "mixed_role_bucket",
            Code::DedupRoleLost => "dedup_role_lost",
            Code::FusionRoleDropped => "fusion_role_dropped",
            Code::CopiedCustomUntrustworthy => "copied_custom_untrustworthy",
            Code::BucketUnverified => "bucket_unverified",
            Code::IdentityLost => "identity_lost",
            Code::InferredUpgraded => "inferred_upgraded",
            Code::IdentityChanged => "identity_changed",
            Code::PlannerBucketMixedRoles => "planner_bucket_mixed_roles",
            Code::BucketMemberMissing => "bucket_member_missing",
        }
    }

    pub const ALL: [Code; 15] = [
        Code::MalformedPayload,
        Code::RoleTransportConflict,
        Code::ExplicitConflict,
        Code::HeuristicMismatch,
        Code::TagMovedFromWait,
        Code::MixedRoleBucket,
        Code::DedupRoleLost,
        Code::FusionRoleDropped,
        Code::CopiedCustomUntrustworthy,
        Code::BucketUnverified,
        Code::IdentityLost,
        Code::InferredUpgraded,
        Code::IdentityChanged,
        Code::PlannerBucketMixedRoles,
        Code::BucketMemberMissing,
    ];
}

/// A finding about one or more nodes, with the rule it concerns and the evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    /// Node names (the collective first).
    pub nodes: Vec<String>,
    /// The spec rule concerned (a [`rules`] name or a payload field rule like
    /// `payload.version`).
    pub rule: String,
    /// The metadata or structure that shows it.
    pub evidence: String,
    pub message: String,
}

impl Diagnostic {
    /// Node names once each, in first-mention order (a transformed node may keep the name of
    /// its first member).
    pub(crate) fn dedup_nodes(mut self) -> Diagnostic {
        let mut seen: Vec<String> = Vec::with_capacity(self.nodes.len());
        for name in self.nodes.drain(..) {
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
        self.nodes = seen;
        self
    }
}

/// Counts by source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub explicit: usize,
    pub inferred: usize,
    pub unclassified: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.explicit + self.inferred + self.unclassified
    }

    fn add(&mut self, source: Option<Source>) {
        match source {
            Some(Source::Explicit) => self.explicit += 1,
            Some(Source::Inferred) => self.inferred += 1,
            None => self.unclassified += 1,
        }
    }
}

/// Coverage: explicit / inferred / unclassified, overall, per role and per process group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub all: Counts,
    /// Role name → counts (`unclassified` is always 0 here); FSDP roles first, always present.
    pub by_role: IndexMap<String, Counts>,
    /// Process group → counts, sorted by name; collectives without a group under `(unknown)`.
    pub by_group: IndexMap<String, Counts>,
}

/// The group key used for collectives whose process group is not known.
pub const UNKNOWN_GROUP: &str = "(unknown)";

impl Coverage {
    pub fn of(collectives: &[CollectiveIdentity]) -> Coverage {
        let mut coverage = Coverage::default();
        for role in Role::FSDP {
            coverage
                .by_role
                .insert(role.as_str().to_string(), Counts::default());
        }
        let mut others: Vec<(String, Option<Source>)> = Vec::new();
        let mut groups: IndexMap<String, Counts> = IndexMap::new();
        // Consecutive collectives mostly share a group: remember the last one's slot.
        let mut last_group: Option<usize> = None;
        for c in collectives {
            coverage.all.add(c.source);
            if let Some(role) = &c.role {
                // The FSDP roles are the first entries of `by_role`, in `Role::FSDP` order.
                let fsdp_slot = match role {
                    Role::ParamUnshard => Some(0),
                    Role::GradReduceShard => Some(1),
                    Role::GradReplicateReduce => Some(2),
                    Role::Other(_) => None,
                };
                match fsdp_slot {
                    Some(slot) => {
                        if let Some((_, counts)) = coverage.by_role.get_index_mut(slot) {
                            counts.add(c.source);
                        }
                    }
                    None => others.push((role.as_str().to_string(), c.source)),
                }
            }
            let group = c.group.as_deref().unwrap_or(UNKNOWN_GROUP);
            let slot = match last_group {
                Some(i) if groups.get_index(i).is_some_and(|(name, _)| name == group) => i,
                _ => match groups.get_index_of(group) {
                    Some(i) => i,
                    None => groups.insert_full(group.to_string(), Counts::default()).0,
                },
            };
            last_group = Some(slot);
            if let Some((_, counts)) = groups.get_index_mut(slot) {
                counts.add(c.source);
            }
        }
        others.sort_by(|a, b| a.0.cmp(&b.0));
        for (role, source) in others {
            coverage.by_role.entry(role).or_default().add(source);
        }
        let mut names: Vec<String> = groups.keys().cloned().collect();
        names.sort_by(|a, b| {
            (a == UNKNOWN_GROUP)
                .cmp(&(b == UNKNOWN_GROUP))
                .then(a.cmp(b))
        });
        for name in names {
            let counts = groups[&name];
            coverage.by_group.insert(name, counts);
        }
        coverage
    }
}

/// The identity of every collective of a graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Classification {
    /// One entry per collective start node (and opaque fused op), in graph order.
    pub collectives: Vec<CollectiveIdentity>,
    /// FSDP storage releases (`fsdp_reshard_free*`), shown as memory events.
    pub memory_events: Vec<MemoryEvent>,
    pub diagnostics: Vec<Diagnostic>,
    pub coverage: Coverage,
}

impl Classification {
    /// The entry of a node, when it is a collective.
    pub fn get(&self, node: NodeId) -> Option<&CollectiveIdentity> {
        self.collectives
            .binary_search_by_key(&node, |c| c.node)
            .ok()
            .map(|i| &self.collectives[i])
    }
}

#[cfg(test)]
mod tests {
    use super::{phase_rules, Detail, PHASE_RULES};

    /// A detail is two words at most, renders every phase rule as its own text, and names a
    /// position the graph does not have as `?` instead of failing.
    #[test]
    fn details_are_small_and_render_what_they_were_given() {
        assert!(std::mem::size_of::<Detail>() <= 16);
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(100));
        let graph = crate::graph::Graph::new(crate::read_dump(text.as_bytes()).expect("dump"));
        let first = &graph.node(0).name;
        let rendered: Vec<String> = PHASE_RULES
            .iter()
            .map(|rule| Detail::phase(rule, Some(0)).render(&graph))
            .collect();
        for (i, text) in rendered.iter().enumerate() {
            assert!(!rendered[..i].contains(text), "{text}");
        }
        assert!(rendered[3].contains(first.as_str()), "{}", rendered[3]);
        assert_eq!(
            Detail::phase(phase_rules::GRADIENT_SEED, Some(7)).anchor(),
            Some(7)
        );
        for past in [graph.len(), usize::MAX] {
            assert_eq!(
                Detail::single_placeholder(past).render(&graph),
                "the input's only graph-input ancestor is ?"
            );
            assert_eq!(
                Detail::comm_type(past).render(&graph),
                "meta[\"comm_type\"] on ?"
            );
        }
        assert_eq!(
            Detail::phase(phase_rules::AFTER_FIRST_BACKWARD, Some(usize::MAX)).anchor(),
            None
        );
    }

    #[test]
    fn quoted_text_is_debugs() {
        let mut texts: Vec<String> = (0u8..=0x7f).map(|b| char::from(b).to_string()).collect();
        texts.extend(
            [
                "",
                "fsdp_all_gather",
                "a\"b",
                "a'b",
                "back\\slash",
                "tab\there",
                "é",
                "日本",
                "\u{7f}",
                "\u{200b}",
                "\u{301}a",
            ]
            .map(String::from),
        );
        for text in texts {
            let mut out = String::from("x");
            super::push_debug_quoted(&mut out, &text);
            assert_eq!(out, format!("x{text:?}"), "{text:?}");
        }
    }
}
