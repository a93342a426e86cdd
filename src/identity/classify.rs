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
use super::structure::Structure;
use super::transform::{self, Combined, TransformKind};
use super::{
    phase_rules, rules, Classification, Code, CollectiveIdentity, Coverage, Detail, Diagnostic,
    Evidence, MemoryEvent, Phase, Role, Source, Transport,
};
use crate::dump::{Node, Op};
use crate::graph::{Graph, NodeId};
use crate::ops::{collective_call, Api, CollectiveCall};
use crate::value::PyValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Classifies every collective of `graph`. Transform provenance members are looked up by node
/// name in the graph itself.
pub fn classify(graph: &Graph) -> Classification {
    classify_with_members(graph, None)
}

/// [`classify`] on two threads, with other work for the second: the pass over the nodes is
/// split between this thread and a second one, which then runs `beside` (the plan, for
/// `commlens render`) while this one joins the halves, decides the rest and runs `then` on
/// the classification (the timeline's rows). The pass was nearly all of classifying (0.07 s
/// at 500k nodes on one thread); the plan starts as soon as the second half is done, not
/// after the whole classification. (Classifying on one thread beside the whole plan was
/// shorter still, but held all of the classification beside the plan's peak.) The two
/// halves hold their entries apart until they are joined, so the peak is higher than
/// [`classify`]'s by about a third of the classification while they are. In wasm, and where
/// no thread can be started, the same work runs on this thread.
pub fn classify_beside<T: Send, U>(
    graph: &Graph,
    beside: impl FnOnce() -> T + Send,
    then: impl FnOnce(Classification) -> U,
) -> (T, U) {
    // This thread takes two thirds of the pass, the other a third before it plans: the plan
    // (0.10 s at 500k nodes) is longer than joining the halves and making the rows (0.06 s).
    // At 500k nodes, split in halves the plan ended 0.02 s later; split at 85%, the
    // classification was held beside more of the plan and the peak rose by 0.1× the JSON.
    classify_split_beside(graph, graph.len() / 3 * 2, beside, then)
}

/// [`classify_beside`] with the nodes split before node `at`.
fn classify_split_beside<T: Send, U>(
    graph: &Graph,
    at: NodeId,
    beside: impl FnOnce() -> T + Send,
    then: impl FnOnce(Classification) -> U,
) -> (T, U) {
    let at = at.min(graph.len());
    // The second half, made by whichever thread asks first: the second thread, unless it
    // could not start (then this one makes it when it needs it, instead of waiting forever).
    let second_half = std::sync::OnceLock::new();
    let second = || {
        second_half
            .get_or_init(|| Mutex::new(Some(FirstPass::over(graph, at..graph.len(), graph.len()))))
    };
    crate::parallel::join(
        "commlens-classify",
        || {
            second();
            beside()
        },
        || {
            let first = FirstPass::over(graph, 0..at, graph.len());
            let later = second()
                .lock()
                .ok()
                .and_then(|mut half| half.take())
                // Not reached: the half is taken once, here.
                .unwrap_or_else(|| FirstPass::over(graph, at..graph.len(), graph.len()));
            then(decide_the_rest(graph, None, first.then(later)))
        },
    )
}

/// [`classify`] with the pass split before node `at`, as [`classify_beside`] splits it.
#[cfg(test)]
pub(crate) fn classify_split_at(graph: &Graph, at: NodeId) -> Classification {
    classify_split_beside(graph, at, || (), |classification| classification).1
}

/// The classifications of a graph and of the graph a transform made of it, as `audit` needs
/// them: [`classify`] of `before`, and [`classify_with_members`] of `after` resolving its
/// members in `before`. Only the last step of the second needs the first, so the pass over
/// the graph after's nodes is made on a second core while the graph before is classified.
pub(super) fn classify_before_and_after(
    before: &Graph,
    after: &Graph,
) -> (Classification, Classification) {
    let (after_pass, before_c) = crate::parallel::join(
        "commlens-classify",
        || FirstPass::over(after, 0..after.len(), after.len()),
        || classify(before),
    );
    let after_c = decide_the_rest(after, Some((before, &before_c)), after_pass);
    (before_c, after_c)
}

/// Classifies `graph`, resolving transform provenance members (`from_node`,
/// `bucketing_*_sources`, `fsdp_bucket_members`) in `members` — the graph before the
/// transform and its classification — when given (as `audit` does). With `members`, a
/// reduce-scatter whose input is an `add` tree of the inputs of reduce-scatters that the
/// transform removed is recognised as Inductor's `dedup_fsdp_reduce_scatter` rewrite.
pub fn classify_with_members(
    graph: &Graph,
    members: Option<(&Graph, &Classification)>,
) -> Classification {
    decide_the_rest(
        graph,
        members,
        FirstPass::over(graph, 0..graph.len(), graph.len()),
    )
}

/// What one pass over some of the nodes found: each collective start and opaque fused op
/// classified as it is found (its node is in cache), and storage releases as memory events.
/// Indices are into `collectives`.
struct FirstPass {
    collectives: Vec<CollectiveIdentity>,
    memory_events: Vec<MemoryEvent>,
    diags: Vec<(NodeId, Diagnostic)>,
    /// Entries decided later, with their declarations: all-reduces (Inductor's group rule
    /// needs every all-gather's structural verdict) and transformed nodes (their rules need
    /// every base identity).
    all_reduces: Vec<(usize, Declared)>,
    transformed: Vec<(usize, Declared)>,
    /// Backward all-gathers that may re-gather a forward-gathered placeholder.
    regathers: Vec<(usize, NodeId)>,
    forward_gathered: Bitset,
    /// Groups of all-gathers with a structural FSDP verdict, with the first such all-gather
    /// (`identify_fsdp_groups`).
    fsdp_groups: HashMap<Arc<str>, NodeId>,
    texts: SharedTexts,
}

/// Texts that repeat across collectives (op names, process groups, producers), each kept
/// once and shared: a handful of distinct values among tens of thousands of collectives,
/// where a copy each was a seventh of the classification's memory. The newest values are
/// looked through first; past [`SharedTexts::KEPT`] distinct values, a new one is not kept
/// (so an unusual graph costs a copy each, as before, not a longer search).
#[derive(Default)]
pub(super) struct SharedTexts(Vec<Arc<str>>);

impl SharedTexts {
    const KEPT: usize = 16;

    pub(super) fn share(&mut self, text: &str) -> Arc<str> {
        if let Some(at) = self.0.iter().rposition(|kept| **kept == *text) {
            return Arc::clone(&self.0[at]);
        }
        let shared: Arc<str> = Arc::from(text);
        if self.0.len() < Self::KEPT {
            self.0.push(Arc::clone(&shared));
        }
        shared
    }
}

impl FirstPass {
    /// The pass over `nodes`, with room for the entries of the nodes up to `room_to` (the
    /// first of two passes takes the second's in: room made now is not made twice).
    fn over(graph: &Graph, nodes: std::ops::Range<NodeId>, room_to: NodeId) -> FirstPass {
        let mut structure = Structure::new(graph);
        let capacity = (nodes.start..room_to.max(nodes.end))
            .filter(|&id| graph.facts(id).collective)
            .count();
        let mut pass = FirstPass {
            collectives: Vec::with_capacity(capacity),
            // The FSDP pass frees what each all-gather gathered, forward and backward: a
            // storage release for two collectives in three (grown from nothing, this
            // vector's copies were most of the pass's own).
            memory_events: Vec::with_capacity(capacity - capacity / 3),
            diags: Vec::new(),
            all_reduces: Vec::new(),
            transformed: Vec::new(),
            regathers: Vec::new(),
            forward_gathered: Bitset::new(graph.len()),
            fsdp_groups: HashMap::new(),
            texts: SharedTexts::default(),
        };
        for id in nodes {
            pass.visit(graph, &mut structure, id);
        }
        pass
    }

    fn visit(&mut self, graph: &Graph, structure: &mut Structure, id: NodeId) {
        let node = graph.node(id);
        if node.op != Op::CallFunction {
            return;
        }
        let facts = graph.facts(id);
        let call = if facts.collective {
            collective_call(node)
        } else if facts.wait {
            None
        } else if may_be_collective(&node.target) {
            collective_call(node)
        } else {
            // Storage releases are the FSDP pass's `_free_tensor_storage` calls.
            if !facts.view && crate::graph::is_free_tensor_storage(node) {
                if let Some(event) = memory_event(id, node, &mut self.texts) {
                    self.memory_events.push(event);
                }
            }
            None
        };
        let Some(call) = call else {
            return;
        };

        let index = self.collectives.len();
        let (mut entry, mut decl, placeholder, recompute_tag) = base_identity(
            graph,
            structure,
            id,
            &call,
            &mut self.texts,
            &mut self.diags,
        );
        if entry.transport == Transport::AllGather {
            if let (Some((_, ev)), Some(group)) = (&entry.heuristic, &entry.group) {
                if ev.rule == rules::AG_SINGLE_PLACEHOLDER {
                    self.fsdp_groups.entry(group.clone()).or_insert(id);
                }
            }
        }
        let is_transformed = entry.transport == Transport::Fused
            || entry
                .provenance
                .as_ref()
                .is_some_and(|p| p.members.len() >= 2);
        if is_transformed {
            self.transformed.push((index, decl));
        } else if call.is_inductor_op(node, "all_reduce") {
            self.all_reduces.push((index, decl));
        } else {
            // Precedence now; nothing later changes a plain collective's declaration.
            decide(
                graph,
                &mut entry,
                &mut decl,
                &mut self.texts,
                &mut self.diags,
            );
        }
        if entry.transport == Transport::AllGather {
            if let Some(p) = placeholder {
                match entry.phase {
                    Phase::Forward => self.forward_gathered.insert(p),
                    Phase::Backward => self.regathers.push((index, p)),
                }
            }
        }
        entry.recomputed = entry.phase == Phase::Backward && recompute_tag;
        self.collectives.push(entry);
    }

    /// This pass followed by `later`, the pass over the nodes after this one's: what one pass
    /// over both would have found.
    fn then(mut self, later: FirstPass) -> FirstPass {
        let offset = self.collectives.len();
        self.collectives.extend(later.collectives);
        self.memory_events.extend(later.memory_events);
        self.diags.extend(later.diags);
        let shifted = |(i, x)| (i + offset, x);
        self.all_reduces
            .extend(later.all_reduces.into_iter().map(shifted));
        self.transformed
            .extend(later.transformed.into_iter().map(shifted));
        self.regathers
            .extend(later.regathers.into_iter().map(|(i, p)| (i + offset, p)));
        self.forward_gathered.union(&later.forward_gathered);
        // The first all-gather of a group is the earlier pass's when it has one.
        for (group, id) in later.fsdp_groups {
            self.fsdp_groups.entry(group).or_insert(id);
        }
        self
    }
}

/// What needs every collective's base identity: the transform rules, Inductor's group rule
/// for all-reduces, re-gathers, and the diagnostics in node order.
fn decide_the_rest(
    graph: &Graph,
    members: Option<(&Graph, &Classification)>,
    pass: FirstPass,
) -> Classification {
    let FirstPass {
        mut collectives,
        memory_events,
        mut diags,
        mut all_reduces,
        mut transformed,
        regathers,
        forward_gathered,
        fsdp_groups,
        mut texts,
    } = pass;

    // Inductor's `dedup_fsdp_reduce_scatter` leaves no provenance: with the graph before the
    // transform at hand, a new reduce-scatter over an `add` tree of removed reduce-scatters'
    // inputs is that rewrite.
    if let Some((before, before_c)) = members {
        let removed = transform::RemovedReduceScatters::new(graph, before, before_c);
        for (index, entry) in collectives.iter_mut().enumerate() {
            if entry.provenance.is_some() || entry.transport != Transport::ReduceScatter {
                continue;
            }
            if let Some(prov) = transform::dedup_rewrite(graph, entry, before, &removed) {
                entry.provenance = Some(Box::new(prov));
                // Re-decided by the dedup rule below, whatever was decided on the spot.
                let decl = Declared::default();
                entry.role = None;
                entry.source = None;
                entry.producer = None;
                entry.evidence = None;
                all_reduces.retain(|(i, _)| *i != index);
                transformed.push((index, decl));
            }
        }
        transformed.sort_unstable_by_key(|(i, _)| *i);
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
        let by_parameter = transform::ByParameter::default();
        for (i, decl) in &transformed {
            let entry = &mut collectives[*i];
            apply_transform(graph, entry, decl, context, &by_parameter, &mut diags);
        }
        for (i, mut decl) in transformed {
            let entry = &mut collectives[i];
            let call_is_all_reduce = collective_call(graph.node(entry.node))
                .is_some_and(|c| c.is_inductor_op(graph.node(entry.node), "all_reduce"));
            if call_is_all_reduce {
                all_reduces.push((i, decl));
            } else if entry.evidence.is_none() {
                decide(graph, entry, &mut decl, &mut texts, &mut diags);
            }
        }
        all_reduces.sort_unstable_by_key(|(i, _)| *i);
    }

    // Inductor's group rule for all-reduces, from the all-gathers' structural verdicts.
    for (i, mut decl) in all_reduces {
        let entry = &mut collectives[i];
        let ag = entry
            .group
            .as_deref()
            .and_then(|g| fsdp_groups.get(g).copied());
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
            decide(graph, entry, &mut decl, &mut texts, &mut diags);
        }
    }

    // Derived: a backward all-gather of a placeholder gathered in the forward is a re-gather.
    for (i, p) in regathers {
        if forward_gathered.contains(p) {
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

/// Whether a target not in the planner's collective set may still name one: a non-functional
/// c10d op, a functional autograd collective, or an opaque fused op. (Cheap prefix tests: the
/// target of most nodes is an `aten` op.)
fn may_be_collective(target: &str) -> bool {
    target.starts_with("c10d.")
        || target.starts_with("_c10d_functional")
        || target.starts_with("c10d_functional.")
        || target.starts_with("symm_mem.fused_")
}

/// A storage release tagged by the FSDP pass, as a memory event.
fn memory_event(id: NodeId, node: &Node, texts: &mut SharedTexts) -> Option<MemoryEvent> {
    let tag = meta_get(node, "comm_type").and_then(PyValue::as_str)?;
    let Some(CommType::Free(phase)) = payload::comm_type(tag) else {
        return None;
    };
    Some(MemoryEvent {
        node: id,
        name: node.name.clone(),
        comm_type: texts.share(tag),
        param_name: meta_get(node, "param_name")
            .and_then(PyValue::as_str)
            .map(str::to_string),
        phase,
    })
}

/// `node.meta.get(key)`.
pub(crate) fn meta_get<'a>(node: &'a Node, key: &str) -> Option<&'a PyValue> {
    node.meta.get(key)
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
        for (key, value) in node.meta.decoded_entries() {
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
        for (key, value) in node.meta.decoded_entries() {
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

    fn union(&mut self, other: &Bitset) {
        for (word, more) in self.0.iter_mut().zip(&other.0) {
            *word |= more;
        }
    }
}

/// What the node itself declares, before the precedence decision.
#[derive(Clone, Debug, Default)]
pub(super) struct Declared {
    /// A valid explicit declaration: payload (explicit) or `comm_type`.
    pub explicit: Option<(Role, Arc<str>, Evidence)>,
    /// A valid payload with `source: "inferred"` (a recorded earlier inference).
    pub recorded_inferred: Option<(Role, Arc<str>, Evidence)>,
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

/// The collective's process group: the group argument of the op's schema (a functional
/// collective's `group_name`; for a c10d op, the process-group script object, named through
/// the dump's `script_objects`), else `meta["comm_group"]`. Borrowed where the dump writes it
/// as a string: classifying shares it among the collectives rather than keeping a copy.
pub(super) fn process_group<'g>(
    graph: &'g Graph,
    node: &'g Node,
    call: &CollectiveCall,
) -> Option<Cow<'g, str>> {
    let named = match call.group_argument(node) {
        Some(PyValue::Str(group)) => Some(Cow::Borrowed(group.as_str())),
        Some(PyValue::Int(group)) => Some(Cow::Owned(group.to_string())),
        Some(PyValue::Node(r)) => r
            .index
            .filter(|&i| i < graph.len())
            .and_then(|i| script_object_group(graph, i)),
        // Opaque fused ops have no schema here: their last string argument that is not a
        // reduction names the group (`fused_all_gather_matmul(A, Bs, dim, group_name)`).
        _ if call.api == Api::Fused => node
            .kwargs
            .get("group_name")
            .and_then(PyValue::as_str)
            .or_else(|| {
                node.args
                    .iter()
                    .rev()
                    .find_map(PyValue::as_str)
                    .filter(|g| {
                        !matches!(*g, "sum" | "avg" | "product" | "min" | "max" | "premul_sum")
                    })
            })
            .map(Cow::Borrowed),
        _ => None,
    };
    named.or_else(|| {
        meta_get(node, "comm_group")
            .and_then(PyValue::as_str)
            .map(Cow::Borrowed)
    })
}

/// The group name of the process-group script object a `get_attr` node reads, as the exporter
/// records it in the dump's `script_objects`.
fn script_object_group(graph: &Graph, id: NodeId) -> Option<Cow<'_, str>> {
    let node = graph.node(id);
    if node.op != Op::GetAttr {
        return None;
    }
    let object = graph
        .dump
        .script_objects
        .as_ref()?
        .get(node.target.as_str())?;
    match object.get("group_name")? {
        serde_json::Value::String(name) => Some(Cow::Borrowed(name.as_str())),
        serde_json::Value::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

/// Where a collective completes. A functional collective: its waits, and the nodes between
/// (coalesced getitems). A c10d op (which returns a `Work` handle, alone or beside its
/// output): the users of the handle when the graph waits on it, else the `getitem` of its
/// output (in a trace the op ran to completion there); carriers are the getitems.
pub(super) fn waits_and_carriers(
    graph: &Graph,
    start: NodeId,
    api: Api,
) -> (Vec<NodeId>, Vec<NodeId>) {
    // Room for one: nearly every collective has one wait, and its identity keeps them
    // boxed, which then needs no copy.
    let mut waits = Vec::with_capacity(1);
    let mut carriers = Vec::new();
    if api == Api::C10d {
        let mut output = Vec::new();
        let mut handle_users = Vec::new();
        for &user in graph.users(start) {
            let node = graph.node(user);
            if node.target == "_operator.getitem" {
                carriers.push(user);
                match node.args.get(1) {
                    Some(PyValue::Int(i)) if i.get() == 1 => {
                        handle_users.extend_from_slice(graph.users(user))
                    }
                    _ => output.push(user),
                }
            } else {
                // An op that returns only its `Work`: whatever reads the handle.
                handle_users.push(user);
            }
        }
        waits = if handle_users.is_empty() {
            output
        } else {
            handle_users
        };
        return (waits, carriers);
    }
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
    graph.is_wait(id) || crate::ops::is_wait(graph.node(id))
}

/// Payloads, `comm_type` and Inductor's all-gather / reduce-scatter verdicts of one
/// collective; also its only placeholder ancestor (all-gathers) and its `recompute` tag.
fn base_identity(
    graph: &Graph,
    structure: &mut Structure,
    id: NodeId,
    call: &CollectiveCall,
    texts: &mut SharedTexts,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) -> (CollectiveIdentity, Declared, Option<NodeId>, bool) {
    let transport = call.transport;
    let op = call.op;
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
    let (waits, carriers) = waits_and_carriers(graph, id, call.api);
    let mut carried: Vec<(Payload, Evidence, NodeId)> = Vec::new();
    for &carrier in &carriers {
        for (location, value) in MetaView::payloads_of(graph.node(carrier)).payloads() {
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
            decl.explicit = Some((p.role, texts.share(&p.producer), e));
        }
        Some((p, e)) => {
            decl.recorded_inferred = Some((p.role, texts.share(&p.producer), e));
            if let Some((role, ev)) = tagged {
                decl.explicit = Some((role, texts.share(payload::COMM_TYPE_PRODUCER), ev));
            }
        }
        None => {
            if let Some((role, ev)) = tagged {
                decl.explicit = Some((role, texts.share(payload::COMM_TYPE_PRODUCER), ev));
            }
        }
    }

    // Inductor's structural verdicts for all-gathers and reduce-scatters (all-reduces get
    // theirs from the group rule once every all-gather is known).
    let placeholder = match transport {
        Transport::AllGather => structure.single_placeholder(id),
        _ => None,
    };
    let heuristic = match transport {
        Transport::AllGather => structure.fsdp_all_gather(id, call).map(|p| {
            (
                Role::ParamUnshard,
                Evidence {
                    rule: rules::AG_SINGLE_PLACEHOLDER,
                    detail: Detail::single_placeholder(p),
                },
            )
        }),
        Transport::ReduceScatter => structure.fsdp_reduce_scatter(id, call).map(|wait| {
            (
                Role::GradReduceShard,
                Evidence {
                    rule: rules::RS_UNARY_TO_OUTPUT,
                    detail: Detail::unary_closed_wait(wait),
                },
            )
        }),
        _ => None,
    };

    // Forward or backward: the `comm_type` phase (collectives only, when the tag fits the
    // transport), else `autograd_backward`, else dependence on a backward input, else
    // position after the first backward node, else (a joint graph traced without autograd
    // metadata) position after the gradient seed.
    let tag_phase = match view.comm_type.and_then(payload::comm_type) {
        Some(CommType::Collective(role, phase))
            if transport != Transport::Fused && role.compatible_with(transport) =>
        {
            Some(phase)
        }
        _ => None,
    };
    let (phase, phase_rule, anchor) = if let Some(phase) = tag_phase {
        (phase, phase_rules::COMM_TYPE, None)
    } else if view.autograd_backward {
        (Phase::Backward, phase_rules::AUTOGRAD_BACKWARD, None)
    } else if structure.backward_input(id) {
        (Phase::Backward, phase_rules::BACKWARD_INPUT, None)
    } else if let Some(first) = structure.first_backward_before(id) {
        (
            Phase::Backward,
            phase_rules::AFTER_FIRST_BACKWARD,
            Some(first),
        )
    } else if let Some(seed) = structure
        .gradient_seed()
        .filter(|&seed| seed < id && !structure.any_backward_marker())
    {
        (Phase::Backward, phase_rules::GRADIENT_SEED, Some(seed))
    } else {
        (Phase::Forward, phase_rules::FORWARD, None)
    };
    let phase_evidence = Evidence {
        rule: phase_rule,
        detail: Detail::phase(phase_rule, anchor),
    };
    let recompute_tag = phase == Phase::Backward
        && view.recompute.is_some_and(|value| match value {
            PyValue::Bool(b) => *b,
            other => other.py_str().to_ascii_uppercase().contains("RECOMPUTE"),
        });

    let entry = CollectiveIdentity {
        node: id,
        name: name.clone(),
        op: texts.share(op),
        api: call.api,
        transport,
        group: process_group(graph, node, call).map(|group| texts.share(&group)),
        waits: waits.into_boxed_slice(),
        role: None,
        source: None,
        producer: None,
        phase,
        phase_evidence,
        recomputed: false,
        evidence: None,
        heuristic,
        provenance: if view.provenance {
            transform::read_provenance(node).map(Box::new)
        } else {
            None
        },
        input_placeholder: placeholder,
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
    texts: &mut SharedTexts,
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
        entry.producer = Some(texts.share("commlens.heuristics"));
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
fn apply_transform<'c>(
    graph: &Graph,
    entry: &mut CollectiveIdentity,
    decl: &Declared,
    context: (&'c Graph, &[CollectiveIdentity], bool),
    by_parameter: &transform::ByParameter<'c>,
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
        Some(prov) => {
            transform::resolve_members(prov, entry, ctx_graph, ctx, external, by_parameter)
        }
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
    if external && !prov.by_parameter() && resolved.len() < member_count {
        let missing: Vec<&str> = prov
            .members
            .iter()
            .filter(|name| !resolved.iter().any(|m| &m.name == *name))
            .map(String::as_str)
            .collect();
        let mut nodes = vec![entry.name.clone()];
        nodes.extend(missing.iter().map(|m| m.to_string()));
        diags.push(diag(
            entry.node,
            Code::BucketMemberMissing,
            nodes,
            rules::BUCKETING,
            format!("meta[{:?}] = [{}]", prov.key, prov.members.join(", ")),
            format!(
                "{} names {} member(s) that the dump before the transform has no collective \
                 for: {}; {}",
                entry.name,
                missing.len(),
                missing.join(", "),
                if complete {
                    "the rule is applied to the members found"
                } else {
                    "its identity cannot be derived from its members"
                }
            ),
        ));
    }
    if !complete {
        if let Some(payloads) = &prov.member_payloads {
            // Inductor's bucketing recorded its members' `custom` dicts: the bucketing rule
            // over their payloads, without the members themselves.
            let combined = transform::combine_payloads(payloads, member_count, entry.transport);
            let member_text = transform::describe_payloads(payloads, member_count);
            let nodes = vec![entry.name.clone()];
            settle(
                graph,
                entry,
                &declared,
                combined,
                TransformKind::Bucketing,
                &prov,
                &member_text,
                nodes,
                diags,
            );
            return;
        }
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
    settle(
        graph,
        entry,
        &declared,
        combined,
        kind,
        &prov,
        &member_text,
        nodes,
        diags,
    );
}

/// A declaration a node makes of itself: role, source, producer, evidence.
type Declaration<'a> = Option<(&'a Role, Source, &'a Arc<str>, &'a Evidence)>;

/// Gives a transformed node the identity its rule combined from the members, with the
/// diagnostics: a dropped role, a copied payload that disagrees, a heuristic that disagrees.
#[allow(clippy::too_many_arguments)]
fn settle(
    graph: &Graph,
    entry: &mut CollectiveIdentity,
    declared: &Declaration,
    combined: Combined,
    kind: TransformKind,
    prov: &super::Provenance,
    member_text: &str,
    nodes: Vec<String>,
    diags: &mut Vec<(NodeId, Diagnostic)>,
) {
    if combined.role.is_none() && combined.dropped.is_none() && declared.is_none() {
        // No member had a role and the node declares none: the rule has nothing to carry, and
        // the node's own structural verdict decides (precedence, later), as Inductor would
        // judge the new node.
        return;
    }
    let producer = transform::producer_name(kind, prov);
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
    if let Some((role, source, producer_decl, ev)) = declared {
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
    entry.producer = combined.role.as_ref().map(|_| Arc::from(producer.as_str()));
    entry.evidence = Some(Evidence {
        rule,
        detail: Detail::text(format!(
            "{} of {member_text} (meta[{:?}])",
            kind.noun(),
            if prov.member_payloads.is_some() && prov.key == "from_node" {
                "bucketing_custom_sources"
            } else {
                prov.key.as_str()
            }
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

#[cfg(test)]
mod tests {
    use super::{classify, classify_split_at};
    use crate::graph::Graph;
    use std::path::{Path, PathBuf};

    fn graph(path: &Path) -> Option<Graph> {
        let bytes = std::fs::read(path).expect("read");
        crate::input::read_graph(bytes.as_slice(), None).ok()
    }

    /// The dump at `path` with a plain all-gather and its wait put before its nodes, so that
    /// its own collectives are not the first entries.
    fn after_a_gather(path: &Path) -> Option<Graph> {
        let mut dump: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("read")).ok()?;
        let nodes = dump.get_mut("nodes")?.as_array_mut()?;
        let first: Vec<serde_json::Value> = serde_json::from_str(
            r#"[{"name": "zz_in", "op": "placeholder", "target": "zz_in", "args": []},
                {"name": "zz_ag", "op": "call_function",
                 "target": "_c10d_functional.all_gather_into_tensor.default",
                 "args": [{"node": "zz_in"}, 2, "zz_group"]},
                {"name": "zz_wait", "op": "call_function",
                 "target": "_c10d_functional.wait_tensor.default", "args": [{"node": "zz_ag"}]}]"#,
        )
        .expect("nodes");
        nodes.splice(0..0, first);
        let bytes = serde_json::to_vec(&dump).expect("json");
        crate::input::read_graph(bytes.as_slice(), None).ok()
    }

    /// Split anywhere, the pass over the nodes on two threads classifies as one pass does:
    /// the same entries, memory events, diagnostics (in order) and coverage. Every identity
    /// fixture is split before each of its nodes (so a forward gather and its re-gather, an
    /// all-gather that names a group and the all-reduce that uses it, a transform and its
    /// members, fall on either side); every conformance dump and a synthetic one at sixteen
    /// places.
    #[test]
    fn split_passes_classify_as_one_pass() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let fixtures = root.join("tests/fixtures/identity");
        let mut small: Vec<PathBuf> = Vec::new();
        for dir in [fixtures.clone(), fixtures.join("cases")] {
            for entry in std::fs::read_dir(&dir).expect("fixture dir") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "json") {
                    small.push(path);
                }
            }
        }
        small.sort();
        let mut splits = 0;
        let graphs = small
            .iter()
            .flat_map(|path| [graph(path), after_a_gather(path)].map(|g| (path, g)));
        for (path, graph) in graphs {
            let Some(graph) = graph else { continue };
            let whole = classify(&graph);
            for at in 0..=graph.len() + 1 {
                assert_eq!(
                    classify_split_at(&graph, at),
                    whole,
                    "{} split at {at}",
                    path.display()
                );
                splits += 1;
            }
        }
        let cases = commlens_testkit::shared_path().join("conformance/cases");
        let mut large: Vec<Graph> = std::fs::read_dir(&cases)
            .expect("conformance cases")
            .filter_map(|case| graph(&case.expect("entry").path().join("dump.json")))
            .collect();
        let synthetic = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(5000));
        large.push(Graph::new(
            crate::read_dump(synthetic.as_bytes()).expect("synthetic"),
        ));
        for graph in &large {
            let whole = classify(graph);
            for k in 0..16 {
                let at = graph.len() * k / 15;
                assert_eq!(classify_split_at(graph, at), whole, "split at {at}");
                splits += 1;
            }
        }
        assert!(small.len() > 40 && large.len() > 50, "fixtures missing");
        assert!(splits > 2500, "{splits} splits");
    }

    /// Equal texts are one value, and a graph of many distinct ones still gets each right.
    #[test]
    fn shared_texts_are_shared_and_bounded() {
        use std::sync::Arc;
        let mut texts = super::SharedTexts::default();
        let zero = texts.share("0");
        assert!(Arc::ptr_eq(&zero, &texts.share("0")));
        assert!(!Arc::ptr_eq(&zero, &texts.share("1")));
        for i in 0..super::SharedTexts::KEPT * 3 {
            assert_eq!(*texts.share(&i.to_string()), *i.to_string());
        }
        assert_eq!(texts.0.len(), super::SharedTexts::KEPT);
        assert!(Arc::ptr_eq(&zero, &texts.share("0")));

        // In a classification: every collective of one op and group holds the same text.
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(5000));
        let graph = Graph::new(crate::read_dump(text.as_bytes()).expect("synthetic"));
        let classification = classify(&graph);
        let mut distinct: Vec<&Arc<str>> = Vec::new();
        for c in &classification.collectives {
            let texts = [Some(&c.op), c.group.as_ref(), c.producer.as_ref()];
            for text in texts.into_iter().flatten() {
                match distinct.iter().find(|d| ***d == *text) {
                    Some(d) => assert!(Arc::ptr_eq(d, text), "{text} held twice"),
                    None => distinct.push(text),
                }
            }
        }
        assert!(classification.collectives.len() > 100 && distinct.len() < 10);
    }

    #[test]
    fn classifying_beside_other_work_hands_back_both_results() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec::with_nodes(5000));
        let graph = Graph::new(crate::read_dump(text.as_bytes()).expect("synthetic"));
        let whole = classify(&graph);
        let this_thread = std::thread::current().id();
        let (beside, then) = super::classify_beside(
            &graph,
            || (graph.len(), std::thread::current().id() != this_thread),
            |classification| classification,
        );
        // Natively the other work runs on the second thread.
        assert_eq!(beside, (graph.len(), cfg!(not(target_arch = "wasm32"))));
        assert_eq!(then, whole);
        assert!(!whole.collectives.is_empty());
    }
}
