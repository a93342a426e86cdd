//! The app's data: a loaded graph, the planner settings, and what one planning run produced.
//! Everything here calls the core crate; no planning or classification logic lives in www.

use commlens::graph::Graph;
use commlens::timeline::{Action, RoleSource, TimelineInput};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// A dump that was read.
pub struct Loaded {
    pub label: String,
    /// The URL it came from, when it can be reproduced by a link.
    pub url: Option<String>,
    pub graph: Rc<Graph>,
    /// The graph prepared for planning (signature, candidates' local checks), kept for
    /// re-planning.
    pub planner: Rc<commlens::planner::Planner<Rc<Graph>>>,
    pub roles: Rc<commlens::timeline::Roles>,
    /// Table rows and overview counts without the plan's columns.
    pub rows: Rc<Vec<Row>>,
    pub overview: Overview,
    pub bytes: usize,
}

/// How module plans are chosen in the controls.
#[derive(Clone, Debug, PartialEq)]
pub enum PlansMode {
    /// Whatever the dump's `planner` object says.
    Dump,
    /// `module_bucket_plans = None`: immediate parents.
    Parents,
    /// `block_module_types = [...]` (comma-separated class names).
    Blocks(String),
    /// Explicit groups: one group per line, FQNs separated by commas.
    Explicit(String),
    /// `module_bucket_plans = []`: nothing is bucketed.
    Nothing,
}

impl PlansMode {
    pub fn key(&self) -> &'static str {
        match self {
            PlansMode::Dump => "dump",
            PlansMode::Parents => "parents",
            PlansMode::Blocks(_) => "blocks",
            PlansMode::Explicit(_) => "explicit",
            PlansMode::Nothing => "none",
        }
    }
    pub fn text(&self) -> &str {
        match self {
            PlansMode::Blocks(t) | PlansMode::Explicit(t) => t,
            _ => "",
        }
    }
    pub fn from_key(key: &str, text: String) -> PlansMode {
        match key {
            "parents" => PlansMode::Parents,
            "blocks" => PlansMode::Blocks(text),
            "explicit" => PlansMode::Explicit(text),
            "none" => PlansMode::Nothing,
            _ => PlansMode::Dump,
        }
    }
}

/// The planner controls. `None` keeps the dump's own value.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub cap_bytes: Option<u64>,
    pub max_input_distance: Option<u64>,
    pub max_consumer_distance: Option<u64>,
    pub plans: PlansMode,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cap_bytes: None,
            max_input_distance: None,
            max_consumer_distance: None,
            plans: PlansMode::Dump,
        }
    }
}

impl Settings {
    /// The `args.json` object these settings override the dump's `planner` object with.
    pub fn args_json(&self, graph: &Graph) -> Map<String, Value> {
        let mut args = Map::new();
        let dump_planner = graph.dump.planner.as_ref().and_then(Value::as_object);
        let mut policy = dump_planner
            .and_then(|p| p.get("policy"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut touched = false;
        for (k, v) in [
            ("cap_bytes", self.cap_bytes),
            ("max_input_distance", self.max_input_distance),
            ("max_consumer_distance", self.max_consumer_distance),
        ] {
            if let Some(v) = v {
                policy.insert(k.into(), json!(v));
                touched = true;
            }
        }
        if touched {
            args.insert("policy".into(), Value::Object(policy));
        }
        match &self.plans {
            PlansMode::Dump => {}
            PlansMode::Parents => {
                args.insert("module_bucket_plans".into(), Value::Null);
                args.insert("block_module_types".into(), Value::Null);
            }
            PlansMode::Nothing => {
                args.insert("module_bucket_plans".into(), json!([]));
                args.insert("block_module_types".into(), Value::Null);
            }
            PlansMode::Blocks(text) => {
                let types: Vec<&str> = text
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect();
                args.insert("block_module_types".into(), json!(types));
                args.insert("module_bucket_plans".into(), json!([]));
            }
            PlansMode::Explicit(text) => {
                let groups: Vec<Vec<&str>> = text
                    .lines()
                    .map(|l| {
                        l.split(',')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .collect::<Vec<_>>()
                    })
                    .filter(|g| !g.is_empty())
                    .collect();
                args.insert("module_bucket_plans".into(), json!(groups));
                args.insert("block_module_types".into(), Value::Null);
            }
        }
        args
    }
}

/// One collective in the table. Strings are shared (`Rc<str>`): the rows are made once per
/// graph and only their plan columns change on a re-plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub node: u32,
    pub name: Rc<str>,
    pub op: Rc<str>,
    pub kind: Rc<str>,
    pub backward: bool,
    pub role: Option<Rc<str>>,
    pub source: RoleSource,
    pub group: Rc<str>,
    pub param: Rc<str>,
    pub bytes: u64,
    pub bucket: Option<Rc<str>>,
    pub decision: Option<(Action, Rc<str>)>,
    /// Identity diagnostic codes that name this collective.
    pub diagnostics: Rc<[String]>,
}

/// Counts for the overview.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overview {
    /// (role or "unclassified", source) → count.
    pub roles: BTreeMap<(String, String), usize>,
    pub groups: BTreeMap<String, usize>,
    /// (action, reason) → count.
    pub reasons: BTreeMap<(String, String), usize>,
    pub unmatched: Vec<String>,
    /// Identity diagnostic code → count.
    pub diagnostics: BTreeMap<String, usize>,
    pub buckets: usize,
}

/// One planning run.
pub struct Planned {
    pub timeline: Rc<TimelineInput>,
    /// The plan itself (its JSON report is made on demand: it is large at scale).
    pub plan: Option<Rc<commlens::BucketPlan>>,
    pub rows: Rc<Vec<Row>>,
    pub overview: Overview,
    /// Why the planner could not run (argument errors), shown instead of buckets.
    pub error: Option<String>,
    /// The core planner's own time, and everything after it (timeline input, rows, counts).
    pub plan_ms: f64,
    pub prepare_ms: f64,
    pub detail: String,
}

impl Planned {
    /// The plan report JSON (`commlens plan`'s output).
    pub fn report_json(&self, graph: &Graph) -> String {
        match &self.plan {
            Some(p) => commlens::planner::report::plan_to_json(p, graph),
            None => String::new(),
        }
    }
}

fn spec_bytes(graph: &Graph, id: usize) -> u64 {
    let node = graph.node(id);
    let Some(spec) = node.meta("fsdp_bucket_spec").and_then(|s| s.as_dict()) else {
        return 0;
    };
    let numel = |k: &str| -> u64 {
        spec.get(k)
            .and_then(|v| v.as_list())
            .map(|l| {
                l.iter()
                    .map(|d| d.static_int().unwrap_or(0).max(0) as u64)
                    .product()
            })
            .unwrap_or(0)
    };
    let elem = match spec.get("dtype").and_then(|d| d.as_str()).unwrap_or("") {
        "torch.float64" | "torch.int64" => 8,
        "torch.float16" | "torch.bfloat16" => 2,
        "torch.int8" | "torch.uint8" | "torch.bool" => 1,
        _ => 4,
    };
    numel("input_shape").max(numel("output_shape")) * elem
}

/// The table rows without plan columns: every collective start in graph order.
pub fn base_rows(graph: &Graph, roles: &commlens::timeline::Roles) -> Vec<Row> {
    let mut diags_of: HashMap<&str, Vec<String>> = HashMap::new();
    for (code, nodes, _) in &roles.diagnostics {
        for n in nodes {
            diags_of.entry(n.as_str()).or_default().push(code.clone());
        }
    }
    let empty: Rc<[String]> = Rc::from(Vec::new());
    let mut interned: HashMap<String, Rc<str>> = HashMap::new();
    let mut intern = |s: &str| -> Rc<str> {
        if let Some(r) = interned.get(s) {
            return r.clone();
        }
        let r: Rc<str> = Rc::from(s);
        interned.insert(s.to_string(), r.clone());
        r
    };
    let mut out = Vec::new();
    for id in 0..graph.len() {
        if !graph.is_collective(id) {
            continue;
        }
        let node = graph.node(id);
        let op = commlens::graph::collective_op(node).unwrap_or("");
        let (role, source) = roles.get(graph, id);
        let group = node
            .meta_str("comm_group")
            .or_else(|| node.args.last().and_then(|a| a.as_str()))
            .unwrap_or_default();
        let kind = node.meta_str("comm_type").unwrap_or(op);
        out.push(Row {
            node: id as u32,
            name: Rc::from(node.name.as_str()),
            backward: node.meta_flag("autograd_backward")
                || kind.contains("backward")
                || kind.contains("reduce_scatter"),
            op: intern(op),
            kind: intern(kind),
            role: role.map(|r| intern(&r)),
            source,
            group: intern(group),
            param: Rc::from(node.meta_str("param_name").unwrap_or("")),
            bytes: spec_bytes(graph, id),
            bucket: None,
            decision: None,
            diagnostics: diags_of
                .get(node.name.as_str())
                .map(|d| Rc::from(d.clone()))
                .unwrap_or_else(|| empty.clone()),
        });
    }
    out
}

/// The rows with the plan's bucket and decision columns.
pub fn rows(base: &[Row], timeline: &TimelineInput) -> Vec<Row> {
    let mut bucket_of: HashMap<u32, Rc<str>> = HashMap::new();
    for b in &timeline.buckets {
        let id: Rc<str> = Rc::from(b.id.as_str());
        for m in &b.members {
            bucket_of.insert(m.node, id.clone());
        }
    }
    let mut reasons: HashMap<&str, Rc<str>> = HashMap::new();
    let mut decision_of: HashMap<u32, (Action, Rc<str>)> = HashMap::new();
    for d in &timeline.decisions {
        let r = reasons
            .entry(d.reason.as_str())
            .or_insert_with(|| Rc::from(d.reason.as_str()))
            .clone();
        decision_of.entry(d.node).or_insert((d.action, r));
    }
    base.iter()
        .map(|r| {
            let mut r = r.clone();
            r.bucket = bucket_of.get(&r.node).cloned();
            r.decision = decision_of.get(&r.node).cloned();
            r
        })
        .collect()
}

/// Counts that do not depend on the plan (roles, sources, groups).
pub fn base_overview(rows: &[Row], roles: &commlens::timeline::Roles) -> Overview {
    let mut o = Overview::default();
    for r in rows {
        let role = r.role.as_deref().unwrap_or("unclassified").to_string();
        *o.roles
            .entry((role, r.source.as_str().to_string()))
            .or_default() += 1;
        if !r.group.is_empty() {
            *o.groups.entry(r.group.to_string()).or_default() += 1;
        }
    }
    for (code, _, _) in &roles.diagnostics {
        *o.diagnostics.entry(code.clone()).or_default() += 1;
    }
    o
}

/// The base counts plus the plan's.
pub fn overview(base: &Overview, timeline: &TimelineInput, unmatched: Vec<String>) -> Overview {
    let mut o = base.clone();
    o.unmatched = unmatched;
    o.buckets = timeline.buckets.len();
    for d in &timeline.decisions {
        *o.reasons
            .entry((d.action.as_str().to_string(), d.reason.clone()))
            .or_default() += 1;
    }
    o
}

/// Runs the planner on `loaded` with `settings` and prepares everything the views show.
pub fn plan(loaded: &Loaded, settings: &Settings, now: impl Fn() -> f64) -> Planned {
    let t0 = now();
    let graph = &loaded.graph;
    let args = settings.args_json(graph);
    let planner_args = commlens::resolve_args(graph, Some(&args));
    // The graph was prepared for planning once, at load: a re-plan only redoes the
    // argument-dependent work.
    let result = loaded.planner.plan(&planner_args);
    let t1 = now();
    let (timeline, plan, unmatched, error) = match result {
        Ok(p) => {
            let t = commlens::timeline::plan_timeline(graph, &p, &loaded.roles, &loaded.label);
            let unmatched = p.summary.unmatched_module_paths.clone();
            (t, Some(Rc::new(p)), unmatched, None)
        }
        Err(e) => {
            let t = TimelineInput {
                title: loaded.label.clone(),
                node_count: graph.len() as u32,
                ..Default::default()
            };
            (t, None, Vec::new(), Some(e.to_string()))
        }
    };
    let t2 = now();
    let rows = rows(&loaded.rows, &timeline);
    let t3 = now();
    let overview = overview(&loaded.overview, &timeline, unmatched);
    let detail = format!(
        "timeline input {:.0} ms, rows {:.0} ms, counts {:.0} ms",
        t2 - t1,
        t3 - t2,
        now() - t3
    );
    Planned {
        timeline: Rc::new(timeline),
        plan,
        rows: Rc::new(rows),
        overview,
        error,
        plan_ms: t1 - t0,
        prepare_ms: now() - t1,
        detail,
    }
}
