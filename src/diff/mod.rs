//! Plan diffs: what changed between two bucket plans — two settings, two versions of a graph,
//! before and after a compiler pass.
//!
//! Each side is a [`PlanSide`]: what a plan says about bucketing, taken from a plan in memory
//! ([`PlanSide::from_plan`], what the app holds) or from a plan report
//! ([`PlanSide::from_report_json`], `BucketPlan.to_dict()` from this tool or the Python
//! planner); [`read_side`] takes either a dump (planned) or a report, by content. A collective
//! is identified by `(kind, param_name, state_idx)`, the fields bucket members carry, so diffs
//! work across graph versions; collectives sharing an identity (a repeated parameter) are
//! matched in plan order. Decisions are compared whole, as a multiset.
//!
//! [`PlanDiff::new`] is linear in the plans' sizes (plus sorting the identities): a diff of two
//! plans of 100k-node graphs takes about a millisecond natively (`docs/diff.md`). The JSON and
//! text forms are in `render.rs`.

mod read;
mod render;

pub use read::{
    is_plan_document, read_dump_side, read_side, read_side_with, starts_as_dump, SideError,
};
pub use render::{DIFF_FORMAT, DIFF_VERSION};

use crate::hashing::FastMap;
use crate::planner::{Action, BucketId, CollectiveKind, Reason};
use std::fmt;
use std::sync::Arc;

/// A collective across plans: `(kind, param_name, state_idx)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CollectiveKey {
    pub kind: CollectiveKind,
    pub param_name: Arc<str>,
    pub state_idx: i128,
}

/// One bucket of a side: its id and its members, a range of [`PlanSide::members`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideBucket {
    /// `None` when a report's bucket has no string id.
    pub id: Option<BucketLabel>,
    pub start: usize,
    pub end: usize,
}

/// A bucket's id: a plan's (written out only when shown: a plan of a large graph has
/// hundreds of thousands of buckets), or a report's text.
#[derive(Clone, Debug)]
pub enum BucketLabel {
    Plan(BucketId),
    Text(String),
}

impl fmt::Display for BucketLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BucketLabel::Plan(id) => id.fmt(f),
            BucketLabel::Text(text) => f.write_str(text),
        }
    }
}

/// Labels are equal when they read the same, wherever they came from.
impl PartialEq for BucketLabel {
    fn eq(&self, other: &BucketLabel) -> bool {
        match (self, other) {
            (BucketLabel::Plan(a), BucketLabel::Plan(b)) => a == b,
            (BucketLabel::Text(a), BucketLabel::Text(b)) => a == b,
            _ => self.to_string() == other.to_string(),
        }
    }
}

impl Eq for BucketLabel {}

/// One planner decision, as the report writes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecisionRecord {
    pub node: String,
    pub previous_node: Option<String>,
    pub action: Action,
    pub reason: Reason,
}

/// What a plan says about bucketing, for comparing: buckets (in plan order) with their
/// members' identities, decisions, reason counts and the graph signature.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSide {
    pub signature: String,
    /// `summary.reason_counts`, actions and reasons sorted by name (as reports write them).
    pub reason_counts: Vec<(Action, Vec<(Reason, usize)>)>,
    pub buckets: Vec<SideBucket>,
    /// Every bucket's members, bucket after bucket.
    pub members: Vec<CollectiveKey>,
    pub decisions: Vec<DecisionRecord>,
    /// The bucket of each member.
    bucket_of: Vec<u32>,
}

impl PlanSide {
    /// A side without buckets yet ([`PlanSide::push_bucket`] adds them in plan order).
    pub fn new(
        signature: String,
        mut reason_counts: Vec<(Action, Vec<(Reason, usize)>)>,
        decisions: Vec<DecisionRecord>,
    ) -> PlanSide {
        reason_counts.sort_by_key(|(action, _)| action.as_str());
        for (_, counts) in &mut reason_counts {
            counts.sort_by_key(|(reason, _)| reason.as_str());
        }
        PlanSide {
            signature,
            reason_counts,
            buckets: Vec::new(),
            members: Vec::new(),
            decisions,
            bucket_of: Vec::new(),
        }
    }

    /// Adds the next bucket of the plan with its members in order.
    pub fn push_bucket(
        &mut self,
        id: Option<BucketLabel>,
        members: impl IntoIterator<Item = CollectiveKey>,
    ) {
        let index = self.buckets.len() as u32;
        let start = self.members.len();
        self.members.extend(members);
        let end = self.members.len();
        self.bucket_of.resize(end, index);
        self.buckets.push(SideBucket { id, start, end });
    }

    /// The bucket holding member `member`.
    pub fn bucket_of(&self, member: usize) -> Option<usize> {
        self.bucket_of.get(member).map(|&b| b as usize)
    }

    /// The members of bucket `bucket`.
    pub fn bucket_members(&self, bucket: usize) -> &[CollectiveKey] {
        self.buckets
            .get(bucket)
            .and_then(|b| self.members.get(b.start..b.end))
            .unwrap_or_default()
    }
}

/// A collective's company: the other members of its bucket (sorted), the first of them, and
/// how many there are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Company<'a> {
    /// At most the number asked for.
    pub named: Vec<&'a CollectiveKey>,
    pub count: usize,
}

/// A side's buckets with their members sorted, each sorted when first asked for: what every
/// collective's company is read from. Listing each member's company whole was quadratic in a
/// bucket's size (a bucket of 25k members: 80 s and 22 GB), so a company is its first few
/// and a count, and a bucket is sorted once, not once per member.
pub struct SortedBuckets<'a> {
    side: &'a PlanSide,
    sorted: Vec<std::cell::OnceCell<Vec<&'a CollectiveKey>>>,
}

impl<'a> SortedBuckets<'a> {
    pub fn new(side: &'a PlanSide) -> SortedBuckets<'a> {
        SortedBuckets {
            side,
            sorted: (0..side.buckets.len())
                .map(|_| Default::default())
                .collect(),
        }
    }

    /// The side whose buckets these are.
    pub fn side(&self) -> &'a PlanSide {
        self.side
    }

    /// The members of bucket `bucket`, sorted.
    pub fn bucket(&self, bucket: usize) -> &[&'a CollectiveKey] {
        let Some(cell) = self.sorted.get(bucket) else {
            return &[];
        };
        cell.get_or_init(|| {
            let mut keys: Vec<&CollectiveKey> = self.side.bucket_members(bucket).iter().collect();
            keys.sort_unstable();
            keys
        })
    }

    /// The other members of `member`'s bucket, the first `limit` of them named.
    pub fn company(&self, member: usize, limit: usize) -> Company<'a> {
        let (Some(bucket), Some(key)) =
            (self.side.bucket_of(member), self.side.members.get(member))
        else {
            return Company {
                named: Vec::new(),
                count: 0,
            };
        };
        difference_head(self.bucket(bucket), &[key], limit)
    }
}

/// `from` less `minus` (multisets, both sorted): the first `limit` keys left, and how many are
/// left in all. Its time grows with `limit` and the keys the two share (found by binary
/// search), not with the longer list: a collective's company is its bucket less itself.
pub fn difference_head<'a>(
    from: &[&'a CollectiveKey],
    minus: &[&CollectiveKey],
    limit: usize,
) -> Company<'a> {
    let mut named = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < from.len() && named.len() < limit {
        let key = from[i];
        j += minus[j..].partition_point(|m| *m < key);
        if minus.get(j).is_some_and(|m| *m == key) {
            j += 1;
        } else {
            named.push(key);
        }
        i += 1;
    }
    Company {
        named,
        count: from.len() - shared(from, minus),
    }
}

/// How many keys two sorted multisets share: each distinct key of the shorter counted in the
/// longer by binary search.
fn shared(a: &[&CollectiveKey], b: &[&CollectiveKey]) -> usize {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut count = 0;
    let mut i = 0;
    while i < short.len() {
        let key = short[i];
        let run = short[i..].partition_point(|k| *k == key);
        let start = long.partition_point(|k| *k < key);
        let in_long = long[start..].partition_point(|k| *k == key);
        count += run.min(in_long);
        i += run;
    }
    count
}

/// How a collective's bucketing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// In a bucket on both sides, with the same other members.
    Same,
    /// In a bucket on both sides, with different other members.
    Regrouped,
    /// In a bucket only before (skipped after, or not in the graph after).
    OnlyBefore,
    /// In a bucket only after.
    OnlyAfter,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Same => "same",
            Change::Regrouped => "regrouped",
            Change::OnlyBefore => "only_before",
            Change::OnlyAfter => "only_after",
        }
    }
}

/// One collective of either plan's buckets: where it is on each side (an index into that
/// side's `members`) and how that changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveChange {
    pub before: Option<usize>,
    pub after: Option<usize>,
    pub change: Change,
}

/// The difference between two plans.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDiff {
    pub before: PlanSide,
    pub after: PlanSide,
    /// Every collective of either plan's buckets once, sorted by `(kind, param_name,
    /// state_idx)` (collectives sharing one identity in plan order).
    pub collectives: Vec<CollectiveChange>,
    /// Indices into `before.decisions` of the decisions `after` does not have, in order.
    pub removed: Vec<usize>,
    /// Indices into `after.decisions` of the decisions `before` does not have, in order.
    pub added: Vec<usize>,
}

/// Counts of a diff, for summaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    pub same: usize,
    pub regrouped: usize,
    pub only_before: usize,
    pub only_after: usize,
}

impl PlanDiff {
    /// Compares two plans.
    pub fn new(before: PlanSide, after: PlanSide) -> PlanDiff {
        let collectives = match_collectives(&before, &after);
        let (removed, added) = decision_changes(&before.decisions, &after.decisions);
        PlanDiff {
            before,
            after,
            collectives,
            removed,
            added,
        }
    }

    /// Whether both plans are of the same graph (equal signatures).
    pub fn same_graph(&self) -> bool {
        self.before.signature == self.after.signature
    }

    /// The identity of a collective entry.
    pub fn key(&self, change: &CollectiveChange) -> Option<&CollectiveKey> {
        match (change.before, change.after) {
            (Some(b), _) => self.before.members.get(b),
            (None, Some(a)) => self.after.members.get(a),
            (None, None) => None,
        }
    }

    pub fn counts(&self) -> ChangeCounts {
        let mut counts = ChangeCounts::default();
        for c in &self.collectives {
            match c.change {
                Change::Same => counts.same += 1,
                Change::Regrouped => counts.regrouped += 1,
                Change::OnlyBefore => counts.only_before += 1,
                Change::OnlyAfter => counts.only_after += 1,
            }
        }
        counts
    }

    /// Per bucket of the `before` (or `after`) plan: whether any of its members changed, for
    /// highlighting changed buckets.
    pub fn changed_buckets(&self, after: bool) -> Vec<bool> {
        let side = if after { &self.after } else { &self.before };
        let mut changed = vec![false; side.buckets.len()];
        for c in &self.collectives {
            let member = if after { c.after } else { c.before };
            if let (Some(m), true) = (member, c.change != Change::Same) {
                if let Some(slot) = side.bucket_of(m).and_then(|b| changed.get_mut(b)) {
                    *slot = true;
                }
            }
        }
        changed
    }
}

/// Pairs the collectives of both sides by identity (the n-th occurrence of an identity
/// before with its n-th after) and says how each one's bucket changed.
fn match_collectives(before: &PlanSide, after: &PlanSide) -> Vec<CollectiveChange> {
    // Identities get ids in sorted order, so walking ids walks the output order and bucket
    // contents compare as sorted id lists. Names are hashed once per member and compared only
    // among distinct names (a parameter has a gather, a backward gather and a reduce-scatter):
    // string comparisons are what sorting costs, in wasm most of all.
    let members = before.members.len() + after.members.len();
    let mut names: FastMap<&str, u32> =
        FastMap::with_capacity_and_hasher(members / 2, Default::default());
    let mut distinct: Vec<&str> = Vec::new();
    let [before_names, after_names] = [before, after].map(|side| {
        side.members
            .iter()
            .map(|key| {
                *names.entry(&key.param_name).or_insert_with(|| {
                    distinct.push(&key.param_name);
                    (distinct.len() - 1) as u32
                })
            })
            .collect::<Vec<u32>>()
    });
    let mut by_name: Vec<u32> = (0..distinct.len() as u32).collect();
    by_name.sort_unstable_by(|&a, &b| distinct[a as usize].cmp(distinct[b as usize]));
    let mut name_rank = vec![0u32; distinct.len()];
    for (position, &id) in by_name.iter().enumerate() {
        name_rank[id as usize] = position as u32;
    }
    // A key in the order of `CollectiveKey`'s `Ord`: kind, name, state index.
    let sortable = |side: &PlanSide, names: &[u32]| -> Vec<(CollectiveKind, u32, i128)> {
        side.members
            .iter()
            .zip(names)
            .map(|(key, &name)| (key.kind, name_rank[name as usize], key.state_idx))
            .collect()
    };
    let before_keys = sortable(before, &before_names);
    let after_keys = sortable(after, &after_names);
    let mut unique: Vec<(CollectiveKind, u32, i128)> =
        before_keys.iter().chain(&after_keys).copied().collect();
    unique.sort_unstable();
    unique.dedup();
    let id_of: FastMap<(CollectiveKind, u32, i128), u32> = unique
        .iter()
        .enumerate()
        .map(|(i, &key)| (key, i as u32))
        .collect();
    let ids = |keys: &[(CollectiveKind, u32, i128)]| -> Vec<u32> {
        keys.iter()
            .map(|key| id_of.get(key).copied().unwrap_or(0))
            .collect()
    };
    let before_ids = ids(&before_keys);
    let after_ids = ids(&after_keys);
    let before_buckets = BucketContents::new(before, &before_ids);
    let after_buckets = BucketContents::new(after, &after_ids);
    // Members in identity order, occurrences in plan order (a stable sort).
    let order = |ids: &[u32]| -> Vec<u32> {
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        order.sort_by_key(|&m| ids[m as usize]);
        order
    };
    let before_order = order(&before_ids);
    let after_order = order(&after_ids);
    let mut same_contents: FastMap<(u32, u32), bool> =
        FastMap::with_capacity_and_hasher(before.buckets.len(), Default::default());
    let mut out = Vec::with_capacity(before_order.len().max(after_order.len()));
    let (mut i, mut j) = (0, 0);
    while i < before_order.len() || j < after_order.len() {
        let id_before = before_order.get(i).map(|&m| before_ids[m as usize]);
        let id_after = after_order.get(j).map(|&m| after_ids[m as usize]);
        let id = match (id_before, id_after) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        let run = |order: &[u32], ids: &[u32], from: usize| {
            order
                .get(from..)
                .unwrap_or_default()
                .iter()
                .take_while(|&&m| ids[m as usize] == id)
                .count()
        };
        let before_run = run(&before_order, &before_ids, i);
        let after_run = run(&after_order, &after_ids, j);
        for k in 0..before_run.max(after_run) {
            let b = (k < before_run).then(|| before_order[i + k] as usize);
            let a = (k < after_run).then(|| after_order[j + k] as usize);
            let change = match (b, a) {
                (Some(b), Some(a)) => {
                    // (A member outside every bucket compares as an empty bucket.)
                    let bucket = |side: &PlanSide, m: usize| {
                        side.bucket_of.get(m).copied().unwrap_or(u32::MAX)
                    };
                    let pair = (bucket(before, b), bucket(after, a));
                    let same = *same_contents
                        .entry(pair)
                        .or_insert_with(|| before_buckets.get(pair.0) == after_buckets.get(pair.1));
                    if same {
                        Change::Same
                    } else {
                        Change::Regrouped
                    }
                }
                (Some(_), None) => Change::OnlyBefore,
                _ => Change::OnlyAfter,
            };
            out.push(CollectiveChange {
                before: b,
                after: a,
                change,
            });
        }
        i += before_run;
        j += after_run;
    }
    out
}

/// Each bucket's members as a sorted list of identity ids: two buckets hold the same
/// collectives when their lists are equal.
struct BucketContents {
    ids: Vec<u32>,
    ranges: Vec<(usize, usize)>,
}

impl BucketContents {
    fn new(side: &PlanSide, member_ids: &[u32]) -> BucketContents {
        let mut ids = member_ids.to_vec();
        let mut ranges = Vec::with_capacity(side.buckets.len());
        for bucket in &side.buckets {
            let range = bucket.start.min(ids.len())..bucket.end.min(ids.len());
            if let Some(slice) = ids.get_mut(range.clone()) {
                slice.sort_unstable();
            }
            ranges.push((range.start, range.end));
        }
        BucketContents { ids, ranges }
    }

    fn get(&self, bucket: u32) -> &[u32] {
        self.ranges
            .get(bucket as usize)
            .and_then(|&(s, e)| self.ids.get(s..e))
            .unwrap_or_default()
    }
}

/// The multiset differences of two decision lists: indices of `before`'s decisions that
/// `after` lacks, and of `after`'s that `before` lacks, each in order. Each decision is hashed
/// once (its node names are strings, and hashing them is most of the work, in wasm above all).
fn decision_changes(
    before: &[DecisionRecord],
    after: &[DecisionRecord],
) -> (Vec<usize>, Vec<usize>) {
    let mut classes: FastMap<&DecisionRecord, u32> =
        FastMap::with_capacity_and_hasher(before.len().max(after.len()), Default::default());
    let [before_ids, after_ids] = [before, after].map(|decisions| {
        decisions
            .iter()
            .map(|d| {
                let next = classes.len() as u32;
                *classes.entry(d).or_insert(next)
            })
            .collect::<Vec<u32>>()
    });
    let count = |ids: &[u32]| -> Vec<u32> {
        let mut counts = vec![0u32; classes.len()];
        for &id in ids {
            if let Some(n) = counts.get_mut(id as usize) {
                *n += 1;
            }
        }
        counts
    };
    let missing_from = |ids: &[u32], mut available: Vec<u32>| -> Vec<usize> {
        ids.iter()
            .enumerate()
            .filter(|(_, &id)| match available.get_mut(id as usize) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .map(|(i, _)| i)
            .collect()
    };
    (
        missing_from(&before_ids, count(&after_ids)),
        missing_from(&after_ids, count(&before_ids)),
    )
}

#[cfg(test)]
mod tests {
    use super::{difference_head, CollectiveKey, PlanSide, SortedBuckets};
    use crate::planner::CollectiveKind;

    fn key(param: u64, state_idx: u64) -> CollectiveKey {
        CollectiveKey {
            kind: CollectiveKind::AllGather,
            param_name: format!("l{param}.weight").into(),
            state_idx: state_idx as i128,
        }
    }

    /// `from` less `minus` as multisets, the plain way.
    fn difference(from: &[&CollectiveKey], minus: &[&CollectiveKey]) -> Vec<CollectiveKey> {
        let mut left: Vec<&CollectiveKey> = minus.to_vec();
        let mut out = Vec::new();
        for k in from {
            match left.iter().position(|m| m == k) {
                Some(i) => {
                    left.remove(i);
                }
                None => out.push((*k).clone()),
            }
        }
        out
    }

    /// The first keys of a difference and its size, against the plain multiset difference,
    /// on random sorted lists with repeated keys.
    #[test]
    fn difference_heads_are_the_plain_differences_first_keys() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        for _ in 0..500 {
            let mut list = |n: u64| {
                let mut keys: Vec<CollectiveKey> = (0..next() % n)
                    .map(|_| key(next() % 6, next() % 3))
                    .collect();
                keys.sort();
                keys
            };
            let (a, b) = (list(30), list(30));
            let (a, b): (Vec<&CollectiveKey>, Vec<&CollectiveKey>) =
                (a.iter().collect(), b.iter().collect());
            for limit in [0, 1, 3, 8, 100] {
                let expected = difference(&a, &b);
                let got = difference_head(&a, &b, limit);
                assert_eq!(got.count, expected.len());
                let named: Vec<CollectiveKey> = got.named.into_iter().cloned().collect();
                assert_eq!(named, expected[..limit.min(expected.len())]);
            }
        }
    }

    /// A collective's company is its bucket less itself, sorted: once when its key is
    /// repeated in the bucket.
    #[test]
    fn a_company_is_the_bucket_less_the_collective() {
        let mut side = PlanSide::new(String::new(), Vec::new(), Vec::new());
        side.push_bucket(None, [key(3, 0), key(1, 0), key(2, 0), key(1, 0)]);
        side.push_bucket(None, [key(9, 9)]);
        let sorted = SortedBuckets::new(&side);
        let company = sorted.company(1, 8);
        assert_eq!(company.count, 3);
        let named: Vec<&CollectiveKey> = company.named;
        assert_eq!(named, [&key(1, 0), &key(2, 0), &key(3, 0)]);
        assert_eq!(sorted.company(0, 1).named, [&key(1, 0)]);
        assert_eq!(sorted.company(0, 1).count, 3);
        assert_eq!(sorted.company(4, 8).count, 0);
        assert_eq!(sorted.company(5, 8).count, 0);
    }
}
