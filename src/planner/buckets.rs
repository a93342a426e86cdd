//! Physical buckets (`_physical_buckets`): candidates grouped by compatibility key, then cut
//! where a split reason appears.
//!
//! The reference rescans every node between a bucket's first member and each new candidate.
//! Here each node's stopping power is classified once per graph ([`Barriers`]) and a bucket
//! only scans the nodes it has not yet passed, jumping from one possible stop to the next, so
//! planning grows near-linearly with graph size.

use super::candidates::{Admitted, Collectives, Groups, ReduceOp, ScopeEntry};
use super::{
    Action, Bucket, BucketId, BucketMembers, BucketPolicy, Candidate, CompatibilityKey, Decision,
    FastMap, FastSet, Reason,
};
use crate::dump::Op;
use crate::graph::{CommTag, Graph, NodeFacts, NodeId};
use std::sync::Arc;

/// What the split checks need beyond each node's [`NodeFacts`], computed once per graph.
pub(crate) struct Barriers {
    /// Per node: for a reshard free that is exactly `_free_tensor_storage(wait)` (no kwargs),
    /// the wait it frees (the only kind of free a gather bucket may own); else `NodeId::MAX`.
    /// A dense array, read in graph order as buckets scan, rather than a hash map probed at
    /// random.
    freed_wait: Vec<NodeId>,
    /// Next node at or after `i` that could stop a bucket of the given phase
    /// (`[forward, backward]`); `len` when there is none. `u32` halves what a scan pulls
    /// through the cache; a graph too large for it (empty lists) is scanned node by node.
    next_stop: [Vec<u32>; 2],
}

impl Barriers {
    /// One backward pass over the nodes' facts, with the reshard frees a bucket may own.
    pub(crate) fn new(graph: &Graph, frees: &[(NodeId, NodeId)]) -> Barriers {
        let facts = graph.all_facts();
        let n = facts.len();
        let mut freed_wait = vec![NodeId::MAX; n];
        for &(free, wait) in frees {
            if let Some(slot) = freed_wait.get_mut(free) {
                *slot = wait;
            }
        }
        let Ok(end) = u32::try_from(n) else {
            return Barriers {
                freed_wait,
                next_stop: [Vec::new(), Vec::new()],
            };
        };
        let mut next_stop = [vec![end; n + 1], vec![end; n + 1]];
        for (i, f) in facts.iter().enumerate().rev() {
            let stops_both = f.tag == CommTag::ReshardFree || f.barrier || f.collective;
            for (slot, backward) in [false, true].into_iter().enumerate() {
                let other_phase = phase(f).is_some_and(|p| p != backward);
                next_stop[slot][i] = if stops_both || other_phase {
                    i as u32
                } else {
                    next_stop[slot][i + 1]
                };
            }
        }
        Barriers {
            freed_wait,
            next_stop,
        }
    }

    /// The first node at or after `i` that could stop a bucket of this phase (`i` itself
    /// when the graph is too large to index).
    fn next_stop(&self, backward: bool, i: NodeId) -> NodeId {
        match self.next_stop[backward as usize].get(i) {
            Some(&stop) => stop as NodeId,
            None => i,
        }
    }
}

/// `bool(meta.autograd_backward)` for nodes that take part in the phase check.
fn phase(facts: &NodeFacts) -> Option<bool> {
    (!matches!(facts.op, Op::Placeholder | Op::GetAttr | Op::Output)).then_some(facts.backward)
}

/// What the split checks read of a candidate. The bucket loop works over these small copies;
/// whole candidates move once, into their final bucket.
#[derive(Clone, Copy, Debug)]
struct Member<'a> {
    /// Position in the plan's candidates.
    index: usize,
    /// Compatibility-key id: equal ids, equal keys.
    key: usize,
    /// Parameter id: equal ids, equal `param_name`s.
    param: usize,
    state_idx: i128,
    size_bytes: u128,
    launch: NodeId,
    wait: NodeId,
    ready: NodeId,
    first_use: NodeId,
    backward: bool,
    reduce_scatter: bool,
    /// The reduce-scatter's layout-preparation nodes.
    preparation: &'a [NodeId],
}

/// A set that most buckets keep tiny (most are singletons): a short list searched in place,
/// hashed only once it grows past a few entries.
struct SmallSet<T> {
    few: Vec<T>,
    many: FastSet<T>,
}

impl<T: Copy + Eq + std::hash::Hash> SmallSet<T> {
    /// Entries kept in the list before they move to the hash set.
    const FEW: usize = 16;

    fn new() -> SmallSet<T> {
        SmallSet {
            few: Vec::new(),
            many: FastSet::default(),
        }
    }

    fn clear(&mut self) {
        self.few.clear();
        if !self.many.is_empty() {
            self.many.clear();
        }
    }

    fn insert(&mut self, value: T) {
        if !self.many.is_empty() {
            self.many.insert(value);
        } else if self.few.len() < Self::FEW {
            if !self.few.contains(&value) {
                self.few.push(value);
            }
        } else {
            self.many.extend(self.few.drain(..));
            self.many.insert(value);
        }
    }

    fn contains(&self, value: &T) -> bool {
        if self.many.is_empty() {
            self.few.contains(value)
        } else {
            self.many.contains(value)
        }
    }
}

impl<T: Copy + Eq + std::hash::Hash> Extend<T> for SmallSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        values.into_iter().for_each(|value| self.insert(value));
    }
}

/// The bucket being filled, with what its split checks need kept up to date.
struct OpenBucket<'a> {
    members: Vec<Member<'a>>,
    params: SmallSet<usize>,
    state_indices: SmallSet<i128>,
    size_bytes: u128,
    /// `(min, max)` of the members' `ready` and `first_use`.
    ready: (NodeId, NodeId),
    first_use: (NodeId, NodeId),
    launches: SmallSet<NodeId>,
    waits: SmallSet<NodeId>,
    preparations: SmallSet<NodeId>,
    /// Nodes before this position have been checked against the bucket.
    scanned_to: NodeId,
}

impl<'a> OpenBucket<'a> {
    fn new() -> OpenBucket<'a> {
        OpenBucket {
            members: Vec::new(),
            params: SmallSet::new(),
            state_indices: SmallSet::new(),
            size_bytes: 0,
            ready: (NodeId::MAX, 0),
            first_use: (NodeId::MAX, 0),
            launches: SmallSet::new(),
            waits: SmallSet::new(),
            preparations: SmallSet::new(),
            scanned_to: 0,
        }
    }

    /// Empties the bucket (keeping its allocations) and opens it with `first`.
    fn start(&mut self, first: Member<'a>) {
        self.members.clear();
        self.params.clear();
        self.state_indices.clear();
        self.size_bytes = 0;
        self.ready = (NodeId::MAX, 0);
        self.first_use = (NodeId::MAX, 0);
        self.launches.clear();
        self.waits.clear();
        self.preparations.clear();
        self.scanned_to = first.launch + 1;
        self.push(first);
    }

    fn push(&mut self, member: Member<'a>) {
        self.params.insert(member.param);
        self.state_indices.insert(member.state_idx);
        self.size_bytes = self.size_bytes.saturating_add(member.size_bytes);
        self.ready = widen(self.ready, member.ready);
        self.first_use = widen(self.first_use, member.first_use);
        self.launches.insert(member.launch);
        self.waits.insert(member.wait);
        self.preparations.extend(member.preparation.iter().copied());
        self.scanned_to = self.scanned_to.max(member.launch);
        self.members.push(member);
    }

    /// `_membership_reason`.
    fn membership_reason(&self, candidate: &Member, policy: &BucketPolicy) -> Option<Reason> {
        let last = self.members.last()?;
        if last.key != candidate.key {
            return Some(Reason::IncompatibleKey);
        }
        if self.params.contains(&candidate.param)
            || self.state_indices.contains(&candidate.state_idx)
        {
            return Some(Reason::RepeatedParameterInstance);
        }
        if let Some(cap) = policy.cap_bytes {
            if self.size_bytes.saturating_add(candidate.size_bytes) > cap {
                return Some(Reason::Capacity);
            }
        }
        None
    }

    /// `_window_reason`, over the spans kept as members joined.
    fn window_reason(&self, candidate: &Member, policy: &BucketPolicy) -> Option<Reason> {
        let (ready_lo, ready_hi) = widen(self.ready, candidate.ready);
        let (use_lo, use_hi) = widen(self.first_use, candidate.first_use);
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

    /// `_intervening_reason` over the nodes this bucket has not yet passed, with the node that
    /// stopped it. Nodes already passed cannot stop it now: every exemption only grows as
    /// members join, and the phase and kind are part of the compatibility key. So the first
    /// stop found here is the first the reference's scan from the first member finds.
    fn intervening_reason(
        &self,
        graph: &Graph,
        barriers: &Barriers,
        candidate: &Member,
    ) -> Option<(Reason, Option<NodeId>)> {
        let mut i = barriers.next_stop(candidate.backward, self.scanned_to);
        while i < candidate.launch {
            if let Some(reason) = self.stop_reason(graph, barriers, candidate, i) {
                return Some((reason, Some(i)));
            }
            i = barriers.next_stop(candidate.backward, i + 1);
        }
        None
    }

    /// The reference's per-node test, in its order.
    fn stop_reason(
        &self,
        graph: &Graph,
        barriers: &Barriers,
        candidate: &Member,
        i: NodeId,
    ) -> Option<Reason> {
        if self.preparations.contains(&i) || candidate.preparation.contains(&i) {
            // Only these default, private RS layout nodes are known pure here.
            return None;
        }
        let facts = graph.facts(i);
        if facts.tag == CommTag::ReshardFree {
            // Copy-out preserves each member's storage and free point: only that exact
            // materialization may be crossed.
            if !self.owns_free(barriers, candidate, i) {
                return Some(Reason::EffectOrStorageRelease);
            }
        } else if facts.barrier {
            return Some(Reason::EffectOrStorageRelease);
        }
        if facts.collective && !self.launches.contains(&i) && i != candidate.launch {
            return Some(Reason::InterveningCollective);
        }
        if phase(&facts).is_some_and(|p| p != candidate.backward) {
            return Some(Reason::PhaseBoundary);
        }
        None
    }

    /// `_owned_free`: the node frees exactly one member's waited result.
    fn owns_free(&self, barriers: &Barriers, candidate: &Member, i: NodeId) -> bool {
        !candidate.reduce_scatter
            && barriers.freed_wait.get(i).is_some_and(|&w| {
                w != NodeId::MAX && (self.waits.contains(&w) || w == candidate.wait)
            })
    }

    /// `_finalize_bucket`: members in `(state_idx, param_name)` order, built into candidates
    /// at the end of `done` (the bucket keeps its allocation for the next one).
    fn finish(
        &mut self,
        param_names: &[Arc<str>],
        done: &mut FinishedBuckets,
        candidate: impl Fn(&Member) -> Candidate,
    ) {
        let name = |m: &Member| param_names.get(m.param).map_or("", |n| &**n);
        self.members.sort_by(|a, b| {
            a.state_idx
                .cmp(&b.state_idx)
                .then_with(|| name(a).cmp(name(b)))
        });
        let start = done.candidates.len();
        let first_launch = self.members.iter().map(|m| m.launch).min().unwrap_or(0);
        done.candidates.extend(self.members.iter().map(candidate));
        done.ranges
            .push((first_launch, start, done.candidates.len()));
        self.members.clear();
    }
}

/// Finished buckets, built while the loop has their members in cache: every candidate in
/// one array, in the order buckets finish, and `(first launch, start, end)` per bucket.
struct FinishedBuckets {
    candidates: Vec<Candidate>,
    ranges: Vec<(NodeId, usize, usize)>,
}

/// `(min, max)` widened to include `value`.
fn widen((lo, hi): (NodeId, NodeId), value: NodeId) -> (NodeId, NodeId) {
    (lo.min(value), hi.max(value))
}

/// A compatibility key ([`super::CompatibilityKey`]) by ids, equal exactly when the keys
/// are: scopes by their first FQN, process groups by name (which fixes the ranks), devices by
/// their id among the graph's distinct device strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct KeyParts {
    kind: super::CollectiveKind,
    backward: bool,
    dtype: u8,
    reduce_op: Option<ReduceOp>,
    scope: u32,
    group: u32,
    device: u32,
}

/// Each scope's id by its first FQN: scopes with the same first FQN share one.
fn first_fqn_ids(scopes: &[ScopeEntry]) -> Vec<u32> {
    let mut ids: FastMap<&str, u32> = FastMap::default();
    scopes
        .iter()
        .map(|scope| {
            let next = ids.len() as u32;
            *ids.entry(&scope.first).or_insert(next)
        })
        .collect()
}

/// The plan's admitted collectives with what they refer to.
pub(crate) struct Admissions<'a> {
    pub admitted: &'a [Admitted],
    pub collectives: &'a Collectives,
    pub scopes: &'a [ScopeEntry],
    pub groups: &'a Groups,
}

/// `_physical_buckets`: group by compatibility key, then cut where a split reason appears.
pub(crate) fn physical_buckets(
    graph: &Graph,
    barriers: &Barriers,
    plan: Admissions,
    policy: &BucketPolicy,
    id_prefix: &Arc<str>,
    decisions: &mut Vec<Decision>,
) -> Vec<Bucket> {
    let Admissions {
        admitted,
        collectives,
        scopes,
        groups,
    } = plan;
    let param_names = &collectives.param_names[..];
    // Keys get ids in first-seen order: the reference's dict of groups.
    let mut key_ids: FastMap<KeyParts, usize> = FastMap::default();
    // Each key once, shared by its candidates.
    let mut keys: Vec<Arc<CompatibilityKey>> = Vec::new();
    let mut last_key: Option<(KeyParts, usize)> = None;
    let scope_ids = first_fqn_ids(scopes);
    let mut members: Vec<Member> = Vec::with_capacity(admitted.len());
    members.extend(admitted.iter().enumerate().map(|(index, a)| {
        let collective = &collectives.tagged[a.tagged as usize];
        let facts = &collectives.facts[a.facts as usize];
        let parts = KeyParts {
            kind: collective.kind,
            backward: facts.backward,
            scope: scope_ids[a.scope as usize],
            group: a.group,
            dtype: facts.dtype,
            device: facts.device,
            reduce_op: facts.reduce_op,
        };
        // Neighbours in graph order mostly share a key (a layer's gathers, its reductions).
        let key = match last_key {
            Some((last, key)) if last == parts => key,
            _ => {
                let key = *key_ids.entry(parts).or_insert_with(|| {
                    keys.push(Arc::new(a.key(collectives, scopes, groups)));
                    keys.len() - 1
                });
                last_key = Some((parts, key));
                key
            }
        };
        Member {
            index,
            key,
            param: collective.param.map_or(usize::MAX, |p| p as usize),
            state_idx: facts.state_idx,
            size_bytes: facts.size_bytes,
            launch: collective.node,
            wait: facts.wait,
            ready: facts.source,
            first_use: facts.first_use,
            backward: facts.backward,
            reduce_scatter: collective.kind.is_reduce_scatter(),
            preparation: collectives.preparation(facts),
        }
    }));
    // Stable grouping by key id (a counting sort): each group keeps graph order.
    let mut group_start = vec![0usize; key_ids.len() + 1];
    for m in &members {
        group_start[m.key + 1] += 1;
    }
    for k in 0..key_ids.len() {
        group_start[k + 1] += group_start[k];
    }
    let mut cursor = group_start.clone();
    let mut order = vec![0usize; members.len()];
    for (position, m) in members.iter().enumerate() {
        order[cursor[m.key]] = position;
        cursor[m.key] += 1;
    }
    let mut done = FinishedBuckets {
        candidates: Vec::with_capacity(members.len()),
        ranges: Vec::new(),
    };
    // Each candidate is built once, in its final bucket.
    let candidate = |m: &Member| admitted[m.index].candidate(collectives, scopes, &keys[m.key]);
    let mut open = OpenBucket::new();
    for range in group_start.windows(2) {
        let mut filling = false;
        for &position in &order[range[0]..range[1]] {
            let member = members[position];
            let oversized = policy.cap_bytes.is_some_and(|cap| member.size_bytes > cap);
            if !filling {
                open.start(member);
            } else {
                let reason = open
                    .membership_reason(&member, policy)
                    .or_else(|| open.window_reason(&member, policy))
                    .map(|reason| (reason, None))
                    .or_else(|| open.intervening_reason(graph, barriers, &member));
                match reason {
                    Some((reason, cause)) => {
                        let previous = open.members.last().map(|m| m.launch);
                        open.finish(param_names, &mut done, candidate);
                        decisions.push(Decision {
                            node: member.launch,
                            previous_node: previous,
                            action: Action::Split,
                            reason,
                            cause,
                        });
                        open.start(member);
                    }
                    None => open.push(member),
                }
            }
            filling = true;
            if oversized {
                decisions.push(Decision {
                    node: member.launch,
                    previous_node: None,
                    action: Action::Singleton,
                    reason: Reason::Oversized,
                    cause: None,
                });
            }
        }
        if filling {
            open.finish(param_names, &mut done, candidate);
        }
    }
    // Model declaration order never silently reorders the collective stream.
    done.ranges.sort_by_key(|(first, _, _)| *first);
    let ranges = done.ranges.iter().map(|&(_, start, end)| (start, end));
    BucketMembers::split(done.candidates, ranges)
        .enumerate()
        .map(|(index, members)| Bucket {
            bucket_id: BucketId::with_prefix(id_prefix, index),
            members,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(key: usize, param: usize, state_idx: i128, launch: NodeId) -> Member<'static> {
        Member {
            index: 0,
            key,
            param,
            state_idx,
            size_bytes: 64,
            launch,
            wait: launch + 1,
            ready: 0,
            first_use: launch + 2,
            backward: false,
            reduce_scatter: false,
            preparation: &[],
        }
    }

    /// `incompatible_key` cannot be reached through `plan` (candidates are grouped by key
    /// first), so the membership check is exercised directly, in the reference's order.
    /// Lists and hash sets answer alike on either side of the switch, and after clearing.
    #[test]
    fn small_sets_answer_alike_before_and_after_growing() {
        let mut set = SmallSet::new();
        for round in 0..2 {
            for n in [
                1usize,
                SmallSet::<usize>::FEW,
                SmallSet::<usize>::FEW + 1,
                100,
            ] {
                set.clear();
                set.extend((0..n).map(|i| i * 3 + round));
                set.extend((0..n).map(|i| i * 3 + round));
                for i in 0..n * 3 {
                    assert_eq!(set.contains(&(i + round)), i % 3 == 0, "n={n} i={i}");
                }
            }
        }
    }

    #[test]
    fn membership_checks_key_then_parameter_then_capacity() {
        let mut open = OpenBucket::new();
        open.start(member(0, 0, 0, 10));
        let policy = BucketPolicy::default();
        assert_eq!(
            open.membership_reason(&member(1, 0, 0, 20), &policy),
            Some(Reason::IncompatibleKey)
        );
        assert_eq!(
            open.membership_reason(&member(0, 0, 1, 20), &policy),
            Some(Reason::RepeatedParameterInstance)
        );
        assert_eq!(
            open.membership_reason(&member(0, 1, 0, 20), &policy),
            Some(Reason::RepeatedParameterInstance)
        );
        assert_eq!(open.membership_reason(&member(0, 1, 1, 20), &policy), None);
        let capped = BucketPolicy {
            cap_bytes: Some(100),
            ..BucketPolicy::default()
        };
        assert_eq!(
            open.membership_reason(&member(0, 1, 1, 20), &capped),
            Some(Reason::Capacity)
        );
    }
}
