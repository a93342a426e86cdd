//! What the timeline needs from a plan, at graph positions. Built from the core's
//! `BucketPlan` (see [`TimelineInput::from_report`] for a recorded plan report).

use serde_json::Value;
use std::collections::HashMap;
use std::rc::Rc;

/// Where a collective's role came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleSource {
    Explicit,
    Inferred,
    Unclassified,
}

impl RoleSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RoleSource::Explicit => "explicit",
            RoleSource::Inferred => "inferred",
            RoleSource::Unclassified => "unclassified",
        }
    }
}

/// One collective launch.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveIn {
    /// Graph position of the launch (start) node.
    pub node: u32,
    pub name: Rc<str>,
    /// Planner kind (`fsdp_all_gather`, `fsdp_all_gather_backward`, `fsdp_reduce_scatter`) or
    /// the transport for anything else.
    pub kind: Rc<str>,
    pub backward: bool,
    pub role: Option<Rc<str>>,
    pub source: RoleSource,
    pub param_name: Option<Rc<str>>,
    pub group: Option<Rc<str>>,
    pub size_bytes: u64,
}

/// One bucket the planner formed.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketIn {
    pub id: String,
    /// Graph position of the latest member input (the window's start).
    pub latest_input: u32,
    /// Graph position of the earliest real consumer (the window's end).
    pub earliest_consumer: u32,
    pub members: Vec<CollectiveIn>,
    pub size_bytes: u64,
    pub fusable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Skip,
    Split,
    Singleton,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Skip => "skip",
            Action::Split => "split",
            Action::Singleton => "singleton",
        }
    }
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "skip" => Some(Action::Skip),
            "split" => Some(Action::Split),
            "singleton" => Some(Action::Singleton),
            _ => None,
        }
    }
}

/// One planner decision.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionIn {
    /// Graph position of the decided collective.
    pub node: u32,
    pub name: String,
    /// For a split: the graph position of the collective it was split from.
    pub previous: Option<u32>,
    pub action: Action,
    pub reason: String,
    pub kind: Option<String>,
    pub backward: bool,
}

/// Everything the timeline draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineInput {
    pub title: String,
    /// Number of graph nodes (the x axis runs 0..node_count).
    pub node_count: u32,
    pub buckets: Vec<BucketIn>,
    pub decisions: Vec<DecisionIn>,
}

impl TimelineInput {
    /// Builds the input from a dump (JSON value) and a recorded plan report
    /// (`BucketPlan.to_dict()`), matching members to their launch nodes by
    /// (`comm_type`, `param_name`, `state_idx`) in graph order. Roles come from the legacy
    /// `comm_type` tags. Used for reports logged elsewhere and in tests.
    pub fn from_report(dump: &Value, report: &Value) -> TimelineInput {
        let empty = Vec::new();
        let nodes = dump
            .get("nodes")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let mut by_name: HashMap<&str, u32> = HashMap::new();
        let mut by_identity: HashMap<(String, String, i64), Vec<u32>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            let name = n.get("name").and_then(Value::as_str).unwrap_or("");
            by_name.insert(name, i as u32);
            let meta = n.get("meta");
            let ct = meta
                .and_then(|m| m.get("comm_type"))
                .and_then(Value::as_str);
            if let Some(ct) = ct {
                let pn = meta
                    .and_then(|m| m.get("param_name"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let si = meta
                    .and_then(|m| m.get("state_idx"))
                    .and_then(Value::as_i64)
                    .unwrap_or(-1);
                by_identity
                    .entry((ct.to_string(), pn, si))
                    .or_default()
                    .push(i as u32);
            }
        }
        let node_name = |i: u32| -> String {
            nodes
                .get(i as usize)
                .and_then(|n| n.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let meta_of = |i: u32| nodes.get(i as usize).and_then(|n| n.get("meta"));
        let mut used: HashMap<(String, String, i64), usize> = HashMap::new();
        let mut buckets = Vec::new();
        for b in report
            .get("buckets")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
        {
            let mut members = Vec::new();
            for m in b.get("members").and_then(Value::as_array).unwrap_or(&empty) {
                let kind = m
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let pn = m
                    .get("param_name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let si = m.get("state_idx").and_then(Value::as_i64).unwrap_or(-1);
                let key = (kind.clone(), pn.clone(), si);
                let k = used.entry(key.clone()).or_insert(0);
                let node = by_identity
                    .get(&key)
                    .and_then(|v| v.get(*k))
                    .copied()
                    .unwrap_or(0);
                *k += 1;
                let backward = m.get("backward").and_then(Value::as_bool).unwrap_or(false);
                let (role, source) = match super::palette::role_of_comm_type(&kind) {
                    Some((r, _)) => (Some(Rc::from(r)), RoleSource::Explicit),
                    None => (None, RoleSource::Unclassified),
                };
                members.push(CollectiveIn {
                    node,
                    name: node_name(node).into(),
                    kind: kind.into(),
                    backward,
                    role,
                    source,
                    param_name: Some(pn.into()),
                    group: m.get("group").and_then(Value::as_str).map(Rc::from),
                    size_bytes: member_bytes(m),
                });
            }
            buckets.push(BucketIn {
                id: b
                    .get("bucket_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                latest_input: b.get("latest_input").and_then(Value::as_u64).unwrap_or(0) as u32,
                earliest_consumer: b
                    .get("earliest_consumer")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as u32,
                members,
                size_bytes: b.get("size_bytes").and_then(Value::as_u64).unwrap_or(0),
                fusable: b.get("fusable").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        let mut decisions = Vec::new();
        for d in report
            .get("decisions")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
        {
            let name = d.get("node").and_then(Value::as_str).unwrap_or("");
            let Some(&node) = by_name.get(name) else {
                continue;
            };
            let Some(action) = d
                .get("action")
                .and_then(Value::as_str)
                .and_then(Action::parse)
            else {
                continue;
            };
            let previous = d
                .get("previous_node")
                .and_then(Value::as_str)
                .and_then(|p| by_name.get(p).copied());
            let ct = meta_of(node)
                .and_then(|m| m.get("comm_type"))
                .and_then(Value::as_str);
            let backward = ct
                .map(|c| c.contains("backward") || c.contains("reduce"))
                .unwrap_or(false);
            decisions.push(DecisionIn {
                node,
                name: name.to_string(),
                previous,
                action,
                reason: d
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: ct.map(str::to_string),
                backward,
            });
        }
        TimelineInput {
            title: String::new(),
            node_count: nodes.len() as u32,
            buckets,
            decisions,
        }
    }
}

/// Bytes a report member moves: its output numel × element size (all-gather) or input
/// (reduce-scatter) — the larger side of the collective.
fn member_bytes(m: &Value) -> u64 {
    let numel = |k: &str| -> u64 {
        m.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|d| d.as_u64().unwrap_or(0)).product())
            .unwrap_or(0)
    };
    let elem = match m.get("dtype").and_then(Value::as_str).unwrap_or("") {
        "torch.float64" | "torch.int64" => 8,
        "torch.float16" | "torch.bfloat16" | "torch.int16" => 2,
        "torch.int8" | "torch.uint8" | "torch.bool" => 1,
        _ => 4,
    };
    numel("output_shape").max(numel("input_shape")) * elem
}

impl TimelineInput {
    /// Builds the input from a graph and the planner's plan, each collective coloured by its
    /// role in `roles` (the classifier's, or [`legacy_role`] for nodes it did not see).
    pub fn from_plan(
        graph: &crate::graph::Graph,
        plan: &crate::planner::BucketPlan,
        roles: &super::Roles,
    ) -> TimelineInput {
        use crate::planner::{Action as A, CollectiveKind as K};
        // Re-planning rebuilds this at every control change: share every repeated string
        // (kinds, groups, parameters; node names come shared from `roles`).
        let kinds: [Rc<str>; 3] =
            [K::AllGather, K::AllGatherBackward, K::ReduceScatter].map(|k| Rc::from(k.as_str()));
        let kind_of = |k: K| match k {
            K::AllGather => kinds[0].clone(),
            K::AllGatherBackward => kinds[1].clone(),
            K::ReduceScatter => kinds[2].clone(),
        };
        let mut shared: HashMap<&str, Rc<str>> = HashMap::new();
        fn share<'p>(map: &mut HashMap<&'p str, Rc<str>>, s: &'p str) -> Rc<str> {
            map.entry(s).or_insert_with(|| Rc::from(s)).clone()
        }
        let mut buckets = Vec::with_capacity(plan.buckets.len());
        for b in &plan.buckets {
            let mut members = Vec::with_capacity(b.members.len());
            for c in &b.members {
                let (role, source) = roles.get(graph, c.launch);
                members.push(CollectiveIn {
                    node: c.launch as u32,
                    name: roles.name(graph, c.launch),
                    kind: kind_of(c.key.kind),
                    backward: c.key.backward,
                    role,
                    source,
                    param_name: Some(share(&mut shared, &c.param_name)),
                    group: Some(share(&mut shared, &c.key.group)),
                    size_bytes: u64::try_from(c.size_bytes()).unwrap_or(u64::MAX),
                });
            }
            buckets.push(BucketIn {
                id: b.bucket_id.to_string(),
                latest_input: b.latest_input() as u32,
                earliest_consumer: b.earliest_consumer() as u32,
                members,
                size_bytes: u64::try_from(b.size_bytes()).unwrap_or(u64::MAX),
                fusable: b.fusable(),
            });
        }
        let decisions = plan
            .decisions
            .iter()
            .map(|d| {
                let node = graph.node(d.node);
                DecisionIn {
                    node: d.node as u32,
                    name: node.name.clone(),
                    previous: d.previous_node.map(|p| p as u32),
                    action: match d.action {
                        A::Skip => Action::Skip,
                        A::Split => Action::Split,
                        A::Singleton => Action::Singleton,
                    },
                    reason: d.reason.as_str().to_string(),
                    backward: node.meta_flag("autograd_backward"),
                    kind: node.meta_str("comm_type").map(str::to_string),
                }
            })
            .collect();
        TimelineInput {
            title: String::new(),
            node_count: graph.len() as u32,
            buckets,
            decisions,
        }
    }
}

/// A collective's role without the classifier: an explicit payload
/// (`meta["custom"]["distributed.comm_semantics"]` or `meta["comm_semantics"]`), else the FSDP
/// pass's legacy `comm_type` tag (explicit), else unclassified.
pub fn legacy_role(graph: &crate::graph::Graph, id: usize) -> (Option<Rc<str>>, RoleSource) {
    let node = graph.node(id);
    let payloads = [
        node.meta("custom")
            .and_then(|c| c.as_dict())
            .and_then(|d| d.get("distributed.comm_semantics")),
        node.meta("comm_semantics"),
    ];
    for payload in payloads.into_iter().flatten() {
        if let Some(d) = payload.as_dict() {
            if let Some(role) = d.get("role").and_then(|r| r.as_str()) {
                let source = match d.get("source").and_then(|s| s.as_str()) {
                    Some("inferred") => RoleSource::Inferred,
                    _ => RoleSource::Explicit,
                };
                return (Some(Rc::from(role)), source);
            }
        }
    }
    match node
        .meta_str("comm_type")
        .and_then(super::palette::role_of_comm_type)
    {
        Some((role, _)) => (Some(Rc::from(role)), RoleSource::Explicit),
        None => (None, RoleSource::Unclassified),
    }
}
