//! What the timeline needs from a plan, at graph positions, in the core's own vocabulary
//! (`planner::Action` and `Reason`, `identity::Source`, [`Lane`]).

use super::collectives::Collectives;
use super::lane::Lane;
use crate::graph::Graph;
use crate::hashing::FastMap;
use crate::identity::Source;
use crate::ops::Api;
use crate::planner::{Action, BucketPlan, Reason};
use std::rc::Rc;

/// One collective launch of a bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveIn {
    /// Graph position of the launch (start) node.
    pub node: u32,
    pub name: Rc<str>,
    pub lane: Lane,
    pub role: Option<Rc<str>>,
    pub source: Option<Source>,
    pub param_name: Option<Rc<str>>,
    pub group: Option<Rc<str>>,
    pub size_bytes: u64,
}

/// One bucket the planner formed.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketIn {
    pub id: Rc<str>,
    /// Graph position of the latest member input (the window's start).
    pub latest_input: u32,
    /// Graph position of the earliest real consumer (the window's end).
    pub earliest_consumer: u32,
    pub members: Vec<CollectiveIn>,
    pub size_bytes: u64,
    pub fusable: bool,
    pub lane: Lane,
}

impl BucketIn {
    /// The planner's window, ordered: `(start, end)` graph positions, both inclusive.
    pub fn window(&self) -> (u32, u32) {
        let s = self.latest_input.min(self.earliest_consumer);
        let e = self.latest_input.max(self.earliest_consumer);
        (s, e)
    }

    /// The id without the graph-signature prefix (`bucket_3`).
    pub fn short_id(&self) -> &str {
        short_bucket_id(&self.id)
    }

    /// The members' common role; `None` when they differ or have none.
    pub fn role(&self) -> Option<&Rc<str>> {
        let first = self.members.first()?.role.as_ref()?;
        self.members
            .iter()
            .all(|m| m.role.as_deref() == Some(&**first))
            .then_some(first)
    }

    /// Its index in the plan (`bucket_12` → 12): bucket ids number buckets in plan order.
    pub fn number(&self) -> Option<u32> {
        bucket_number(&self.id)
    }
}

/// `sig:bucket_3` → `bucket_3`.
pub fn short_bucket_id(id: &str) -> &str {
    id.rsplit(':').next().unwrap_or(id)
}

/// `sig:bucket_3` → 3.
pub fn bucket_number(id: &str) -> Option<u32> {
    short_bucket_id(id).strip_prefix("bucket_")?.parse().ok()
}

/// One planner decision.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionIn {
    /// Graph position of the decided collective.
    pub node: u32,
    pub name: Rc<str>,
    /// For a split: the collective it was split from (the closed bucket's last member).
    pub previous: Option<u32>,
    /// For a split by what lies between the members: the node that stopped the bucket.
    pub cause: Option<u32>,
    pub cause_name: Option<Rc<str>>,
    pub action: Action,
    pub reason: Reason,
    pub lane: Lane,
}

/// A collective the plan does not bucket and did not decide on: untagged (a stock graph's
/// functional collectives, FSDP2's and DDP's c10d ops, all-reduces), drawn on a lane of its own
/// from its launch to where it completes.
#[derive(Clone, Debug, PartialEq)]
pub struct UnplannedIn {
    /// Graph position of the launch.
    pub node: u32,
    pub name: Rc<str>,
    /// Where it completes (its wait, or the user of its c10d `Work`), when the graph says.
    pub completion: Option<u32>,
    pub lane: Lane,
    pub api: Api,
    pub role: Option<Rc<str>>,
    pub source: Option<Source>,
    pub group: Option<Rc<str>>,
}

impl UnplannedIn {
    /// The graph range it spans: launch to completion.
    pub fn span(&self) -> (u32, u32) {
        let end = self.completion.unwrap_or(self.node);
        (self.node.min(end), self.node.max(end))
    }
}

/// Everything the timeline draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineInput {
    pub title: String,
    /// Number of graph nodes (the x axis runs 0..node_count).
    pub node_count: u32,
    pub buckets: Vec<BucketIn>,
    pub decisions: Vec<DecisionIn>,
    /// Per graph position, the bucket holding it (`u32::MAX`: none); see [`Self::bucket_of`].
    pub bucket_index: Vec<u32>,
    /// Per bucket: the singleton decision's reason, when it is one.
    pub singletons: Vec<Option<Reason>>,
    /// Collectives in no bucket and without a decision, in graph order.
    pub unplanned: Vec<UnplannedIn>,
}

impl TimelineInput {
    /// Builds the input from a graph, the planner's plan and the graph's classified
    /// collectives (roles, lanes, names).
    pub fn from_plan(graph: &Graph, plan: &BucketPlan, collectives: &Collectives) -> TimelineInput {
        // Re-planning rebuilds this at every control change: share every repeated string
        // (parameters, groups; names and roles come shared from `collectives`).
        let mut shared: FastMap<&str, Rc<str>> = FastMap::default();
        fn share<'p>(map: &mut FastMap<&'p str, Rc<str>>, s: &'p str) -> Rc<str> {
            map.entry(s).or_insert_with(|| Rc::from(s)).clone()
        }
        let name_of = |id: usize| -> Rc<str> {
            match collectives.get(id) {
                Some(row) => row.name.clone(),
                None => Rc::from(graph.node(id).name.as_str()),
            }
        };
        let mut buckets = Vec::with_capacity(plan.buckets.len());
        let mut id = String::new();
        let mut bucket_index = vec![u32::MAX; graph.len()];
        for b in &plan.buckets {
            let mut members = Vec::with_capacity(b.members.len());
            for c in b.members.iter() {
                let row = collectives.get(c.launch);
                if let Some(slot) = bucket_index.get_mut(c.launch) {
                    *slot = buckets.len() as u32;
                }
                members.push(CollectiveIn {
                    node: c.launch as u32,
                    name: name_of(c.launch),
                    lane: Lane::of_kind(c.key.kind),
                    role: row.and_then(|r| r.role.clone()),
                    source: row.and_then(|r| r.source),
                    // The row's own strings when they read the same (nearly always): no
                    // lookup, no allocation.
                    param_name: Some(match row.and_then(|r| r.param.as_ref()) {
                        Some(param) if **param == *c.param_name => param.clone(),
                        _ => share(&mut shared, &c.param_name),
                    }),
                    group: Some(match row.and_then(|r| r.group.as_ref()) {
                        Some(group) if **group == *c.key.group => group.clone(),
                        _ => share(&mut shared, &c.key.group),
                    }),
                    size_bytes: u64::try_from(c.size_bytes()).unwrap_or(u64::MAX),
                });
            }
            let lane = members
                .first()
                .map(|m| m.lane)
                .unwrap_or_else(|| Lane::of_kind(crate::planner::CollectiveKind::AllGather));
            buckets.push(BucketIn {
                id: {
                    id.clear();
                    b.bucket_id.push_to(&mut id);
                    Rc::from(id.as_str())
                },
                latest_input: b.latest_input() as u32,
                earliest_consumer: b.earliest_consumer() as u32,
                members,
                size_bytes: u64::try_from(b.size_bytes()).unwrap_or(u64::MAX),
                fusable: b.fusable(),
                lane,
            });
        }
        let decisions = plan
            .decisions
            .iter()
            .map(|d| {
                let lane = match d.action {
                    Action::Skip => collectives.get(d.node).map(|r| r.lane),
                    _ => bucket_index
                        .get(d.node)
                        .filter(|&&b| b != u32::MAX)
                        .map(|&b| buckets[b as usize].lane),
                }
                .or_else(|| collectives.get(d.node).map(|r| r.lane))
                .unwrap_or_else(|| Lane::of_kind(crate::planner::CollectiveKind::AllGather));
                DecisionIn {
                    node: d.node as u32,
                    name: name_of(d.node),
                    previous: d.previous_node.map(|p| p as u32),
                    cause: d.cause.map(|c| c as u32),
                    cause_name: d.cause.map(name_of),
                    action: d.action,
                    reason: d.reason,
                    lane,
                }
            })
            .collect::<Vec<DecisionIn>>();
        let mut singletons = vec![None; buckets.len()];
        for d in decisions.iter().filter(|d| d.action == Action::Singleton) {
            if let Some(&b) = bucket_index.get(d.node as usize) {
                if let Some(slot) = singletons.get_mut(b as usize) {
                    *slot = Some(d.reason);
                }
            }
        }
        let mut decided = vec![false; graph.len()];
        for d in &decisions {
            if let Some(slot) = decided.get_mut(d.node as usize) {
                *slot = true;
            }
        }
        let unplanned = collectives
            .rows
            .iter()
            .filter(|r| {
                bucket_index.get(r.node as usize) == Some(&u32::MAX)
                    && !decided.get(r.node as usize).copied().unwrap_or(false)
            })
            .map(|r| UnplannedIn {
                node: r.node,
                name: r.name.clone(),
                completion: r.completion,
                lane: r.lane,
                api: r.api,
                role: r.role.clone(),
                source: r.source,
                group: r.group.clone(),
            })
            .collect();
        TimelineInput {
            title: String::new(),
            node_count: graph.len() as u32,
            buckets,
            decisions,
            bucket_index,
            singletons,
            unplanned,
        }
    }

    /// The bucket holding a collective.
    pub fn bucket_of(&self, node: u32) -> Option<usize> {
        match self.bucket_index.get(node as usize) {
            Some(&b) if b != u32::MAX => Some(b as usize),
            _ => None,
        }
    }
}
