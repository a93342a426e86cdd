//! Physical buckets (`_physical_buckets`): candidates grouped by compatibility key, then cut
//! where a split reason appears.
//!
//! The reference rescans every node between a bucket's first member and each new candidate.
//! Here each node's stopping power is classified once per graph ([`Barriers`]) and a bucket
//! only scans the nodes it has not yet passed, jumping from one possible stop to the next, so
//! planning grows near-linearly with graph size.

use super::candidates::TaggedCollective;
use super::{
    Action, Bucket, BucketPolicy, Candidate, CompatibilityKey, Decision, Reason, FREE_TAGS,
};
use crate::dump::Op;
use crate::graph::{is_free_tensor_storage, Graph, NodeId};
use indexmap::IndexMap;
use std::collections::HashSet;

/// Per-node facts the split checks need, computed once per graph.
pub(crate) struct Barriers {
    /// `comm_type` is a reshard free.
    free_tagged: Vec<bool>,
    /// For a reshard free that is exactly `_free_tensor_storage(wait)` (no kwargs), the wait
    /// it frees: the only kind of free a gather bucket may own.
    freed_wait: std::collections::HashMap<NodeId, NodeId>,
    /// The node is an effect (`is_barrier`) or a collective start.
    effect: Vec<bool>,
    collective: Vec<bool>,
    /// Next node at or after `i` that could stop a bucket of the given phase
    /// (`[forward, backward]`); `len` when there is none.
    next_stop: [Vec<usize>; 2],
    /// `bool(meta.autograd_backward)` for nodes that take part in the phase check.
    phase: Vec<Option<bool>>,
}

/// Collects each node's stopping power in graph order (one visit per node, while the node is
/// in cache for the planner's other per-graph work), then links the next possible stops.
pub(crate) struct BarrierBuilder {
    free_tagged: Vec<bool>,
    freed_wait: std::collections::HashMap<NodeId, NodeId>,
    effect: Vec<bool>,
    collective: Vec<bool>,
    phase: Vec<Option<bool>>,
    effect_or_collective: Vec<bool>,
}

impl BarrierBuilder {
    pub(crate) fn with_capacity(n: usize) -> BarrierBuilder {
        BarrierBuilder {
            free_tagged: Vec::with_capacity(n),
            freed_wait: std::collections::HashMap::new(),
            effect: Vec::with_capacity(n),
            collective: Vec::with_capacity(n),
            phase: Vec::with_capacity(n),
            effect_or_collective: Vec::with_capacity(n),
        }
    }

    /// Records node `id`; nodes must be visited in graph order.
    pub(crate) fn visit(&mut self, graph: &Graph, id: NodeId, node: &crate::dump::Node) {
        let facts = graph.facts(id);
        let free = facts.comm_type
            && node
                .meta_str("comm_type")
                .is_some_and(|t| FREE_TAGS.contains(&t));
        self.free_tagged.push(free);
        if free && is_free_tensor_storage(node) && node.kwargs.is_empty() && node.args.len() == 1 {
            if let Some(wait) = crate::dump::node_index(&node.args[0]) {
                self.freed_wait.insert(id, wait);
            }
        }
        self.effect.push(facts.barrier);
        self.collective.push(facts.collective);
        self.phase.push(
            (!matches!(node.op, Op::Placeholder | Op::GetAttr | Op::Output))
                .then_some(facts.backward),
        );
        self.effect_or_collective
            .push(free || facts.barrier || facts.collective);
    }

    pub(crate) fn finish(self) -> Barriers {
        let n = self.free_tagged.len();
        let mut next_stop = [vec![n; n + 1], vec![n; n + 1]];
        for i in (0..n).rev() {
            for (slot, backward) in [false, true].into_iter().enumerate() {
                let other_phase = self.phase[i].is_some_and(|p| p != backward);
                next_stop[slot][i] = if self.effect_or_collective[i] || other_phase {
                    i
                } else {
                    next_stop[slot][i + 1]
                };
            }
        }
        Barriers {
            free_tagged: self.free_tagged,
            freed_wait: self.freed_wait,
            effect: self.effect,
            collective: self.collective,
            next_stop,
            phase: self.phase,
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
    fn new(first: Candidate, preparation: &[NodeId]) -> OpenBucket {
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
        bucket.start(first, preparation);
        bucket
    }

    /// Empties the bucket (keeping its allocations) and opens it with `first`.
    fn start(&mut self, first: Candidate, preparation: &[NodeId]) {
        self.members.clear();
        self.param_names.clear();
        self.state_indices.clear();
        self.size_bytes = 0;
        self.launches.clear();
        self.waits.clear();
        self.preparations.clear();
        self.scanned_to = first.launch + 1;
        self.push(first, preparation);
    }

    fn push(&mut self, candidate: Candidate, preparation: &[NodeId]) {
        self.param_names.insert(candidate.param_name.clone());
        self.state_indices.insert(candidate.state_idx);
        self.size_bytes = self.size_bytes.saturating_add(candidate.size_bytes());
        self.launches.insert(candidate.launch);
        self.waits.insert(candidate.wait);
        self.preparations.extend(preparation.iter().copied());
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
            if let Some(reason) = self.stop_reason(barriers, candidate, preparation, i) {
                return Some(reason);
            }
            i = barriers.next_stop[slot][i + 1];
        }
        None
    }

    /// The reference's per-node test, in its order.
    fn stop_reason(
        &self,
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
            if !self.owns_free(barriers, candidate, i) {
                return Some(Reason::EffectOrStorageRelease);
            }
        } else if barriers.effect[i] {
            return Some(Reason::EffectOrStorageRelease);
        }
        if barriers.collective[i] && !self.launches.contains(&i) && i != candidate.launch {
            return Some(Reason::InterveningCollective);
        }
        if barriers.phase[i].is_some_and(|p| p != candidate.backward) {
            return Some(Reason::PhaseBoundary);
        }
        None
    }

    /// `_owned_free`: the node frees exactly one member's waited result.
    fn owns_free(&self, barriers: &Barriers, candidate: &Candidate, i: NodeId) -> bool {
        !candidate.kind.is_reduce_scatter()
            && barriers
                .freed_wait
                .get(&i)
                .is_some_and(|w| self.waits.contains(w) || *w == candidate.wait)
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

/// `_physical_buckets`: group by compatibility key, then cut where a split reason appears.
pub(crate) fn physical_buckets(
    graph: &Graph,
    barriers: &Barriers,
    tagged: &[TaggedCollective],
    candidates: Vec<(Candidate, usize)>,
    policy: &BucketPolicy,
    decisions: &mut Vec<Decision>,
) -> Vec<Bucket> {
    let mut compatible: IndexMap<CompatibilityKey, Vec<(Candidate, usize)>> = IndexMap::new();
    for (candidate, index) in candidates {
        compatible
            .entry(candidate.key())
            .or_default()
            .push((candidate, index));
    }
    let preparation = |index: usize| -> &[NodeId] {
        tagged[index]
            .late
            .as_ref()
            .map_or(&[][..], |facts| &facts.preparation)
    };
    let mut buckets = Vec::new();
    let mut open: Option<OpenBucket> = None;
    for group in compatible.into_values() {
        let mut filling = false;
        for (candidate, index) in group {
            let oversized = policy
                .cap_bytes
                .is_some_and(|cap| candidate.size_bytes() > cap);
            let launch = candidate.launch;
            match open.as_mut() {
                None => open = Some(OpenBucket::new(candidate, preparation(index))),
                Some(bucket) if !filling => bucket.start(candidate, preparation(index)),
                Some(bucket) => {
                    let preparation = preparation(index);
                    let reason = bucket
                        .membership_reason(&candidate, policy)
                        .or_else(|| bucket.window_reason(&candidate, policy))
                        .or_else(|| {
                            bucket.intervening_reason(graph, barriers, &candidate, preparation)
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
                            bucket.start(candidate, preparation);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::Planner;

    /// `incompatible_key` cannot be reached through `plan` (candidates are grouped by key
    /// first), so the membership check is exercised directly.
    #[test]
    fn membership_rejects_an_incompatible_key_first() {
        let text = crate::synth::synthetic_dump(crate::synth::SynthSpec {
            layers: 1,
            degree: 2,
            hidden: 8,
        });
        let graph = Graph::new(crate::read_dump(text.as_bytes()).unwrap());
        let plan = Planner::new(&graph)
            .plan(&crate::resolve_args(&graph, None))
            .unwrap();
        let forward = plan.buckets[0].members[0].clone();
        let mut other = forward.clone();
        other.dtype = "torch.bfloat16";
        other.param_name = "other".into();
        other.state_idx = 999;
        let open = OpenBucket::new(forward.clone(), &[]);
        let policy = BucketPolicy::default();
        assert_eq!(
            open.membership_reason(&other, &policy),
            Some(Reason::IncompatibleKey)
        );
        let mut repeated = forward.clone();
        repeated.launch += 1;
        assert_eq!(
            open.membership_reason(&repeated, &policy),
            Some(Reason::RepeatedParameterInstance)
        );
    }
}
