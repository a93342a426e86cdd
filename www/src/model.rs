//! The app's data: a loaded graph, the planner settings, one planning run, and the table's
//! query. Everything is computed by the core crate (reading, classifying, planning, the rows'
//! lanes, groups and bytes); this module only arranges it for the panels. Pure: no browser,
//! tested natively.

use crate::url_state::{Filter, SourceRef};
use commlens::cost::{CostModel, Hardware, Network, StepSummary};
use commlens::graph::Graph;
use commlens::identity::Code;
use commlens::input::Format;
use commlens::planner::{Action, BucketPlan, Planner, Reason};
use commlens::tags::DerivedTags;
use commlens::timeline::collectives::{source_label, UNCLASSIFIED};
use commlens::timeline::{Collectives, ExposedIn, TimelineInput};
use commlens::tracelog::GraphSummary;
use commlens::value::PyValue;
use commlens::TagMode;
use indexmap::IndexMap;
use serde_json::{json, Map, Value};
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// Shared data compared by identity: props holding it are equal when they hold the same
/// allocation, so a panel re-renders when its data is replaced, never because a parent did,
/// and never by comparing a hundred thousand rows.
#[derive(Debug)]
pub struct Shared<T>(pub Rc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(Rc::new(value))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
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
    pub const KEYS: [(&'static str, &'static str); 5] = [
        ("dump", "as recorded in the dump"),
        ("parents", "per parent module (None)"),
        ("blocks", "per block type"),
        ("explicit", "explicit groups"),
        ("none", "none ([])"),
    ];

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
    pub fn from_key(key: &str, text: String) -> Option<PlansMode> {
        Some(match key {
            "dump" => PlansMode::Dump,
            "parents" => PlansMode::Parents,
            "blocks" => PlansMode::Blocks(text),
            "explicit" => PlansMode::Explicit(text),
            "none" => PlansMode::Nothing,
            _ => return None,
        })
    }
    /// Whether the mode names things of one graph (module FQNs, class names).
    pub fn names_modules(&self) -> bool {
        matches!(self, PlansMode::Blocks(_) | PlansMode::Explicit(_))
    }
    fn block_types(text: &str) -> Vec<&str> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }
    fn groups(text: &str) -> Vec<Vec<&str>> {
        text.lines()
            .map(|l| {
                l.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .collect()
    }
}

/// The planner controls. `None` keeps the dump's own value.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub cap_bytes: Option<u64>,
    pub max_input_distance: Option<u64>,
    pub max_consumer_distance: Option<u64>,
    pub plans: PlansMode,
    /// Where the planner's FSDP tags come from: the dump's, or derived from semantic roles
    /// (`commlens plan --tags roles`).
    pub tags: TagMode,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cap_bytes: None,
            max_input_distance: None,
            max_consumer_distance: None,
            plans: PlansMode::Dump,
            tags: TagMode::Dump,
        }
    }
}

impl Settings {
    /// The `args.json` object (the conformance corpus's format, `commlens plan --args`) these
    /// settings override the dump's `planner` object with.
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
                args.insert(
                    "block_module_types".into(),
                    json!(PlansMode::block_types(text)),
                );
                args.insert("module_bucket_plans".into(), json!([]));
            }
            PlansMode::Explicit(text) => {
                args.insert("module_bucket_plans".into(), json!(PlansMode::groups(text)));
                args.insert("block_module_types".into(), Value::Null);
            }
        }
        args
    }
}

/// A count typed into a control or a link: empty is "not set"; a whole number, written as
/// digits (`4096`, `4_096`, `4,096`), in scientific notation (`1e6`) or with a byte unit
/// (`64KiB`, `2 MB`). Anything else is explained.
pub fn parse_count(text: &str, minimum: u64) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let lower = t.to_ascii_lowercase();
    let units: [(&str, u64); 8] = [
        ("kib", 1 << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("kb", 1_000),
        ("mb", 1_000_000),
        ("gb", 1_000_000_000),
        ("k", 1_000),
        ("b", 1),
    ];
    let (number, unit) = units
        .iter()
        .find_map(|(suffix, factor)| {
            lower
                .strip_suffix(suffix)
                .filter(|n| n.trim().parse::<f64>().is_ok() || n.trim().contains(['_', ',']))
                .map(|n| (n.trim().to_string(), *factor))
        })
        .unwrap_or((lower.clone(), 1));
    let digits: String = number.chars().filter(|c| *c != '_' && *c != ',').collect();
    let value: f64 = match digits.parse::<f64>() {
        Ok(v) if v.is_finite() => v,
        _ => {
            return Err(format!(
                "“{t}” is not a number (write a whole number like 4096, 1e6 or 64MiB)"
            ))
        }
    };
    if value < 0.0 {
        return Err(format!("“{t}” is negative; it must be {minimum} or more"));
    }
    let value = value * unit as f64;
    if value.fract() != 0.0 {
        return Err(format!("“{t}” is not a whole number"));
    }
    if value > 9.0e15 {
        return Err(format!("“{t}” is too large"));
    }
    let value = value as u64;
    if value < minimum {
        return Err(format!(
            "{value} is too small; it must be {minimum} or more"
        ));
    }
    Ok(Some(value))
}

/// Why the module plans text cannot be used for this graph (the core's checks: the names
/// exist, groups do not overlap), or `None`.
pub fn plans_problem(graph: &Graph, plans: &PlansMode) -> Option<String> {
    let list = |items: Vec<PyValue>| PyValue::List(items);
    let text = |s: &str| PyValue::Str(s.to_string());
    let (types, groups) = match plans {
        PlansMode::Blocks(t) => {
            let types = PlansMode::block_types(t);
            if types.is_empty() {
                return Some(
                    "name at least one block type (a class name, like TransformerBlock)".into(),
                );
            }
            (
                list(types.into_iter().map(text).collect()),
                list(Vec::new()),
            )
        }
        PlansMode::Explicit(t) => {
            let groups = PlansMode::groups(t);
            if groups.is_empty() {
                return Some(
                    "write at least one group: module FQNs, comma-separated, one group per line"
                        .into(),
                );
            }
            (
                list(Vec::new()),
                list(
                    groups
                        .into_iter()
                        .map(|g| list(g.into_iter().map(text).collect()))
                        .collect(),
                ),
            )
        }
        _ => return None,
    };
    commlens::planner::args::build_module_bucket_plans(&graph.dump.modules, &types, &groups)
        .err()
        .map(|e| e.message)
}

/// A trace log's post-grad graphs (`commlens graphs`), and the log's text, kept so that
/// another graph can be chosen without reading the file again.
pub struct LogGraphs {
    /// The log, decompressed.
    pub text: Rc<[u8]>,
    pub graphs: Vec<GraphSummary>,
}

impl LogGraphs {
    /// The graph a log opens on when no graph is chosen: the first that reads and holds
    /// collectives, else the first that reads, else the first.
    pub fn default_choice(&self) -> usize {
        let readable = |g: &&GraphSummary| g.content.is_ok();
        self.graphs
            .iter()
            .filter(readable)
            .find(|g| g.content.as_ref().is_ok_and(|c| c.collectives > 0))
            .or_else(|| self.graphs.iter().find(readable))
            .map_or(0, |g| g.index)
    }
}

/// What [`read_input`] read: the chosen graph prepared for planning, and for a trace log its
/// graphs and which one was chosen.
pub struct ReadInput {
    pub planner: Planner<Rc<Graph>>,
    pub log: Option<(Shared<LogGraphs>, usize)>,
    /// A chosen graph that could not be used (out of range), and what was used instead.
    pub notice: Option<String>,
}

/// Reads a dump or a trace log (plain or gzip, told apart by content: `commlens::input`, the
/// door every shell reads through). A log opens on graph `choice`, or on
/// [`LogGraphs::default_choice`]. Errors are the core's messages.
/// Owned bytes are handed to the reader, which reads a plain dump's text in place.
pub fn read_input<'a>(
    bytes: impl Into<std::borrow::Cow<'a, [u8]>>,
    choice: Option<usize>,
) -> Result<ReadInput, String> {
    // A dump's bytes come back as given (gzip is read as it decompresses); a log's decompressed.
    let (format, plain) = commlens::input::detect(bytes).map_err(|e| e.to_string())?;
    match format {
        Format::Dump => Ok(ReadInput {
            // Handed over: plain text is read in place, not copied.
            planner: commlens::input::read_prepared(plain, None).map_err(|e| e.to_string())?,
            log: None,
            notice: choice
                .filter(|k| *k != 0)
                .map(|k| format!("graph={k}: the input is a graph dump, which holds one graph")),
        }),
        Format::TraceLog => {
            // A log without post-grad graphs fails here, saying what it holds.
            let graphs = commlens::input::graphs(&*plain).map_err(|e| e.to_string())?;
            let log = LogGraphs {
                text: Rc::from(plain.into_owned()),
                graphs,
            };
            let mut notice = None;
            let chosen = match choice {
                Some(k) if k < log.graphs.len() => k,
                Some(k) => {
                    let fallback = log.default_choice();
                    notice = Some(format!(
                        "graph={k}: the trace log holds {} post-grad graph(s) (0 to {}); showing graph {fallback}",
                        log.graphs.len(),
                        log.graphs.len().saturating_sub(1)
                    ));
                    fallback
                }
                None => log.default_choice(),
            };
            let log = Shared::new(log);
            let planner = read_log_graph(&log, chosen)?;
            Ok(ReadInput {
                planner,
                log: Some((log, chosen)),
                notice,
            })
        }
    }
}

/// Graph `choice` of a log already read, prepared for planning.
pub fn read_log_graph(log: &LogGraphs, choice: usize) -> Result<Planner<Rc<Graph>>, String> {
    commlens::input::read_prepared(&*log.text, Some(choice)).map_err(|e| e.to_string())
}

/// A dump that was read, classified and prepared for planning.
pub struct Loaded {
    pub label: String,
    /// Where it came from, when a link can reproduce it.
    pub source: Option<SourceRef>,
    /// For a trace log: its graphs, and the one shown.
    pub log: Option<(Shared<LogGraphs>, usize)>,
    pub graph: Rc<Graph>,
    /// The graph prepared for planning once; every re-plan reuses it.
    pub planner: Rc<Planner<Rc<Graph>>>,
    pub collectives: Shared<Collectives>,
    /// Overview counts that do not depend on the plan.
    pub base: Rc<Overview>,
    pub bytes: usize,
    /// The graph with tags derived from roles, prepared for planning: made the first time
    /// the tags switch asks for it.
    roles: OnceCell<Rc<RolesPlanner>>,
    /// Why the dump's own tags plan to nothing (`commlens::untagged_note`), once asked.
    untagged: OnceCell<Option<String>>,
    /// The last cost model (per graph, hardware and group ranks) and its step of the graph
    /// as it is: a re-plan only simulates the plan.
    cost_cache: RefCell<Option<CostCache>>,
}

struct CostCache {
    roles: bool,
    hardware: Network,
    group_ranks: IndexMap<String, Vec<i128>>,
    model: Rc<CostModel>,
    unbucketed: StepSummary,
}

/// `--tags roles`: the graph with the FSDP pass's tags derived from semantic roles, prepared
/// for planning, and what was derived.
pub struct RolesPlanner {
    pub planner: Planner<Rc<Graph>>,
    pub derived: DerivedTags,
}

impl Loaded {
    /// A graph prepared for planning, classified once (every re-plan reuses both).
    pub fn new(
        label: String,
        source: Option<SourceRef>,
        log: Option<(Shared<LogGraphs>, usize)>,
        planner: Planner<Rc<Graph>>,
        bytes: usize,
    ) -> Loaded {
        let graph = planner.graph_holder().clone();
        let collectives = Collectives::classify(&graph);
        let base = base_overview(&collectives);
        Loaded {
            label,
            source,
            log,
            graph,
            planner: Rc::new(planner),
            collectives: Shared::new(collectives),
            base: Rc::new(base),
            bytes,
            roles: OnceCell::new(),
            untagged: OnceCell::new(),
            cost_cache: RefCell::new(None),
        }
    }

    /// The planner, while nothing else holds it (right after [`Loaded::new`]): for
    /// `digest::settle_signature`.
    pub fn planner_mut(&mut self) -> Option<&mut Planner<Rc<Graph>>> {
        Rc::get_mut(&mut self.planner)
    }

    /// The graph with tags derived from roles, prepared for planning (derived once).
    pub fn roles(&self) -> Rc<RolesPlanner> {
        self.roles
            .get_or_init(|| {
                let (graph, derived) = commlens::derive_tags(&self.graph);
                Rc::new(RolesPlanner {
                    planner: Planner::new(Rc::new(graph)),
                    derived,
                })
            })
            .clone()
    }

    /// Why the dump's own tags planned to nothing, when its collectives have FSDP roles.
    pub fn untagged_note(&self) -> Option<String> {
        self.untagged
            .get_or_init(|| commlens::untagged_note(&self.graph))
            .clone()
    }

    /// The trace log's graph on screen (`None` for a dump).
    pub fn graph_choice(&self) -> Option<usize> {
        self.log.as_ref().map(|(_, k)| *k)
    }
}

/// What one plan says of one collective (aligned with `Collectives::rows`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanColumns {
    /// Index into the timeline's buckets.
    pub bucket: Option<u32>,
    /// Every decision on it, in the plan's order (a split and a singleton can both apply).
    pub decisions: Vec<(Action, Reason)>,
}

/// Counts for the overview: each is the number of table rows its filter keeps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overview {
    pub roles: Vec<(String, usize)>,
    pub sources: Vec<(String, usize)>,
    pub groups: Vec<(String, usize)>,
    pub decisions: Vec<((Action, Reason), usize)>,
    pub diagnostics: Vec<(Code, usize)>,
    /// Diagnostics that name no collective of the table.
    pub other_diagnostics: usize,
    pub unmatched: Vec<String>,
    pub buckets: usize,
    pub collectives: usize,
}

/// The group label of a row.
pub fn group_label(group: Option<&str>) -> &str {
    group.unwrap_or(commlens::identity::UNKNOWN_GROUP)
}

/// Whether a row passes `filter`: the same facets the overview counts.
pub fn matches(
    filter: &Filter,
    row: &commlens::timeline::CollectiveRow,
    cols: &PlanColumns,
) -> bool {
    match filter {
        Filter::Role(r) => row.role_label() == r,
        Filter::Source(s) => row.source_label() == s,
        Filter::Group(g) => group_label(row.group.as_deref()) == g,
        Filter::Decision(a, r) => cols.decisions.contains(&(*a, *r)),
        Filter::Diagnostic(c) => row.diagnostics.contains(c),
    }
}

fn owned(counts: Vec<(&str, usize)>) -> Vec<(String, usize)> {
    counts
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect()
}

fn sorted_counts<K: Ord + Clone>(map: HashMap<K, usize>) -> Vec<(K, usize)> {
    let mut v: Vec<(K, usize)> = map.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The counts that do not depend on the plan.
pub fn base_overview(collectives: &Collectives) -> Overview {
    // Counted by the rows' own strings, made owned once per label (not once per row).
    let mut roles: HashMap<&str, usize> = HashMap::new();
    let mut sources: HashMap<&str, usize> = HashMap::new();
    let mut groups: HashMap<&str, usize> = HashMap::new();
    let mut diagnostics: HashMap<Code, usize> = HashMap::new();
    for r in &collectives.rows {
        *roles.entry(r.role_label()).or_default() += 1;
        *sources.entry(source_label(r.source)).or_default() += 1;
        *groups.entry(group_label(r.group.as_deref())).or_default() += 1;
        for c in r.diagnostics.iter() {
            *diagnostics.entry(*c).or_default() += 1;
        }
    }
    // A set, not a search of the rows per node: a dump can have a diagnostic per collective.
    let row_names: std::collections::HashSet<&str> =
        collectives.rows.iter().map(|r| &*r.name).collect();
    let other_diagnostics = collectives
        .diagnostics
        .iter()
        .filter(|d| !d.nodes.iter().any(|n| row_names.contains(n.as_str())))
        .count();
    Overview {
        roles: owned(sorted_counts(roles)),
        sources: owned(sorted_counts(sources)),
        groups: owned(sorted_counts(groups)),
        diagnostics: sorted_counts(diagnostics),
        other_diagnostics,
        collectives: collectives.rows.len(),
        ..Overview::default()
    }
}

/// One planning run.
pub struct Planned {
    pub timeline: Shared<TimelineInput>,
    /// The plan itself (its JSON report is made on demand: it is large at scale).
    pub plan: Option<Rc<BucketPlan>>,
    pub columns: Shared<Vec<PlanColumns>>,
    pub overview: Shared<Overview>,
    /// Why the planner could not run (argument errors), shown instead of buckets.
    pub error: Option<String>,
    /// With tags derived from roles: what was derived (the graph it planned is the loaded
    /// graph with those tags).
    pub roles: Option<Rc<RolesPlanner>>,
    /// What the plan's tags rest on, in words: the derived tags' description, or why the
    /// dump's own tags planned to nothing.
    pub tags_note: Option<String>,
    /// The core planner's own time, and everything after it.
    pub plan_ms: f64,
    pub views_ms: f64,
    pub detail: String,
}

impl Planned {
    /// The plan report JSON (`commlens plan`'s output, byte for byte).
    pub fn report_json(&self, graph: &Graph) -> String {
        match (&self.plan, &self.roles) {
            (Some(p), Some(roles)) => {
                commlens::plan_json_with(p, roles.planner.graph(), Some(&roles.derived))
            }
            (Some(p), None) => commlens::planner::report::plan_to_json(p, graph),
            (None, _) => String::new(),
        }
    }
}

/// Runs the planner on `loaded` with `settings` and prepares everything the panels show.
pub fn plan(loaded: &Loaded, settings: &Settings, now: impl Fn() -> f64) -> Planned {
    let t0 = now();
    let graph = &loaded.graph;
    let roles = (settings.tags == TagMode::Roles).then(|| loaded.roles());
    // The graph planned: the loaded one, or the same nodes with tags derived from roles.
    let planner = roles.as_ref().map_or(&*loaded.planner, |r| &r.planner);
    let args = settings.args_json(planner.graph());
    let planner_args = commlens::resolve_args(planner.graph(), Some(&args));
    // The graph was prepared for planning once, at load: a re-plan only redoes the
    // argument-dependent work.
    let result = planner.plan(&planner_args);
    let t1 = now();
    let tags_note = match (&roles, &result) {
        (Some(r), _) => Some(r.derived.describe()),
        (None, Ok(p)) if p.summary.tagged_collectives == 0 => loaded.untagged_note(),
        _ => None,
    };
    let (timeline, plan, error) = match result {
        Ok(p) => {
            let t =
                commlens::timeline::plan_timeline(graph, &p, &loaded.collectives, &loaded.label);
            (t, Some(Rc::new(p)), None)
        }
        Err(e) => {
            let t = TimelineInput {
                title: loaded.label.clone(),
                node_count: graph.len() as u32,
                ..Default::default()
            };
            (t, None, Some(e.to_string()))
        }
    };
    let t2 = now();
    let rows = &loaded.collectives.rows;
    let mut columns = vec![PlanColumns::default(); rows.len()];
    for (b, bucket) in timeline.buckets.iter().enumerate() {
        for m in &bucket.members {
            if let Some(i) = loaded.collectives.position(m.node) {
                columns[i].bucket = Some(b as u32);
            }
        }
    }
    let mut decisions: HashMap<(Action, Reason), usize> = HashMap::new();
    for d in &timeline.decisions {
        if let Some(i) = loaded.collectives.position(d.node) {
            let entry = (d.action, d.reason);
            if !columns[i].decisions.contains(&entry) {
                columns[i].decisions.push(entry);
                *decisions.entry(entry).or_default() += 1;
            }
        }
    }
    let t3 = now();
    let mut overview = (*loaded.base).clone();
    overview.decisions = sorted_counts(decisions);
    overview.unmatched = plan
        .as_ref()
        .map(|p| p.summary.unmatched_module_paths.clone())
        .unwrap_or_default();
    overview.buckets = timeline.buckets.len();
    let detail = format!(
        "timeline input {:.0} ms, rows {:.0} ms, counts {:.0} ms",
        t2 - t1,
        t3 - t2,
        now() - t3
    );
    Planned {
        timeline: Shared::new(timeline),
        plan,
        columns: Shared::new(columns),
        overview: Shared::new(overview),
        error,
        roles,
        tags_note,
        plan_ms: t1 - t0,
        views_ms: now() - t1,
        detail,
    }
}

/// A bandwidth typed into a control or a link: empty is "the preset's"; else a positive
/// number of GB/s.
pub fn parse_bandwidth(text: &str) -> Result<Option<f64>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
        _ => Err(format!("“{t}” is not a positive number of GB/s")),
    }
}

/// A bucket's estimate: its bucketed collective's microseconds and NCCL algorithm (none when
/// the model cannot cost it).
pub type BucketTime = (f64, Option<&'static str>);

/// The time estimates of one plan on one piece of hardware: the step as the graph is and as
/// planned (`commlens cost`'s summary), each bucket's bucketed collective, and where compute
/// waits.
pub struct CostView {
    pub unbucketed: StepSummary,
    pub planned: StepSummary,
    /// Per timeline bucket: its bucketed collective's microseconds and algorithm.
    pub buckets: Rc<[BucketTime]>,
    /// Where compute waits in the planned step, for the chart.
    pub exposed: Rc<[ExposedIn]>,
    /// The planned step's time at each graph position (node starts, then the step's end):
    /// the chart's time axis.
    pub time: Rc<[f64]>,
}

/// Costs the planned graph and its plan on `hw` (what `commlens cost` reports, computed by the
/// core's `CostModel`).
pub fn cost(loaded: &Loaded, planned: &Planned, hw: &Network) -> Option<CostView> {
    let plan = planned.plan.as_ref()?;
    let graph = planned
        .roles
        .as_ref()
        .map_or(&*loaded.graph, |r| r.planner.graph());
    let roles = planned.roles.is_some();
    let cached = loaded.cost_cache.borrow().as_ref().and_then(|c| {
        (c.roles == roles && c.hardware == *hw && c.group_ranks == plan.group_ranks)
            .then(|| (c.model.clone(), c.unbucketed))
    });
    let (model, unbucketed) = match cached {
        Some(hit) => hit,
        None => {
            let model = Rc::new(CostModel::new(
                graph,
                Hardware::with_network(hw.clone()),
                &plan.group_ranks,
            ));
            let unbucketed = model.unbucketed().summary;
            *loaded.cost_cache.borrow_mut() = Some(CostCache {
                roles,
                hardware: hw.clone(),
                group_ranks: plan.group_ranks.clone(),
                model: model.clone(),
                unbucketed,
            });
            (model, unbucketed)
        }
    };
    let step = model.planned(plan);
    // What each launch is: a bucket (bucket launches come first), else a collective left as
    // it is; named only for the launches compute waits on.
    #[derive(Clone, Copy)]
    enum Launch {
        Bucket(usize),
        Comm(usize),
        Unknown,
    }
    let mut launches = vec![Launch::Unknown; step.step.launches.len()];
    for (b, &l) in step.bucket_launch.iter().enumerate() {
        if let Some(slot) = launches.get_mut(l) {
            *slot = Launch::Bucket(b);
        }
    }
    for (c, l) in step.comm_launch.iter().enumerate() {
        if let Some(slot) = l.and_then(|l| launches.get_mut(l)) {
            *slot = Launch::Comm(c);
        }
    }
    let waits_for = |launch: usize| -> String {
        match launches.get(launch).copied().unwrap_or(Launch::Unknown) {
            Launch::Bucket(b) => planned
                .timeline
                .buckets
                .get(b)
                .map(|b| b.short_id().to_string())
                .unwrap_or_default(),
            Launch::Comm(c) => model
                .work
                .comms
                .get(c)
                .map(|w| graph.node(w.node).name.clone())
                .unwrap_or_default(),
            Launch::Unknown => String::new(),
        }
    };
    let exposed: Vec<ExposedIn> = step
        .step
        .stalls
        .iter()
        .filter(|s| s.to_us > s.from_us)
        .map(|s| ExposedIn {
            before: u32::try_from(s.before).unwrap_or(u32::MAX),
            name: if s.before < graph.len() {
                Rc::from(graph.node(s.before).name.as_str())
            } else {
                Rc::from("the end of the step")
            },
            us: s.to_us - s.from_us,
            waits_for: waits_for(s.launch),
        })
        .collect();
    let mut time = step.step.node_start_us.clone();
    time.push(step.step.summary.step_us);
    Some(CostView {
        time: Rc::from(time),
        unbucketed,
        planned: step.step.summary,
        buckets: step
            .buckets
            .iter()
            .map(|b| (b.time.us, b.time.algo.map(|a| a.as_str())))
            .collect(),
        exposed: Rc::from(exposed),
    })
}

/// A table column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    Pos,
    Name,
    Role,
    Kind,
    Group,
    Param,
    Bytes,
    Bucket,
    Decision,
}

/// The table's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    pub col: Col,
    pub desc: bool,
}

impl Default for Sort {
    fn default() -> Self {
        Sort {
            col: Col::Pos,
            desc: false,
        }
    }
}

/// What a search asks for.
enum Search {
    All,
    /// A bucket by id: `bucket_7` finds bucket 7 only (not `bucket_70`).
    Bucket(u32),
    Text(String),
}

impl Search {
    fn parse(q: &str) -> Search {
        let q = q.trim().to_lowercase();
        if q.is_empty() {
            return Search::All;
        }
        match commlens::timeline::input::bucket_number(&q) {
            Some(n) => Search::Bucket(n),
            None => Search::Text(q),
        }
    }
}

/// The rows (indices into `collectives.rows`) that pass `filter` and `search`, in `sort`
/// order (ties by graph position).
pub fn query(
    collectives: &Collectives,
    columns: &[PlanColumns],
    timeline: &TimelineInput,
    filter: Option<&Filter>,
    search: &str,
    sort: Sort,
) -> Vec<u32> {
    let search = Search::parse(search);
    let empty = PlanColumns::default();
    let cols = |i: usize| columns.get(i).unwrap_or(&empty);
    let bucket_number = |c: &PlanColumns| {
        c.bucket
            .and_then(|b| timeline.buckets.get(b as usize))
            .and_then(|b| b.number())
    };
    let mut out: Vec<u32> = collectives
        .rows
        .iter()
        .enumerate()
        .filter(|(i, r)| filter.is_none_or(|f| matches(f, r, cols(*i))))
        .filter(|(i, r)| match &search {
            Search::All => true,
            Search::Bucket(n) => bucket_number(cols(*i)) == Some(*n),
            Search::Text(q) => {
                let c = cols(*i);
                r.name.to_lowercase().contains(q)
                    || r.param
                        .as_deref()
                        .is_some_and(|p| p.to_lowercase().contains(q))
                    || r.tag.as_deref().is_some_and(|t| t.contains(q))
                    || r.lane.label().contains(q)
                    || r.role_label().contains(q)
                    || group_label(r.group.as_deref()).to_lowercase().contains(q)
                    || c.decisions
                        .iter()
                        .any(|(a, why)| why.as_str().contains(q) || a.as_str().contains(q))
            }
        })
        .map(|(i, _)| i as u32)
        .collect();
    let rows = &collectives.rows;
    out.sort_by(|&a, &b| {
        let (ra, rb) = (&rows[a as usize], &rows[b as usize]);
        let (ca, cb) = (cols(a as usize), cols(b as usize));
        let o = match sort.col {
            Col::Pos => ra.node.cmp(&rb.node),
            Col::Name => ra.name.cmp(&rb.name),
            Col::Role => {
                (ra.role_label(), ra.source_label()).cmp(&(rb.role_label(), rb.source_label()))
            }
            Col::Kind => ra.lane.cmp(&rb.lane),
            Col::Group => ra.group.cmp(&rb.group),
            Col::Param => ra.param.cmp(&rb.param),
            Col::Bytes => ra.bytes.cmp(&rb.bytes),
            // By bucket number (bucket_9 before bucket_10); rows in no bucket last.
            Col::Bucket => {
                let key = |c: &PlanColumns| (c.bucket.is_none(), c.bucket);
                key(ca).cmp(&key(cb))
            }
            Col::Decision => ca.decisions.first().cmp(&cb.decisions.first()),
        };
        let o = if sort.desc { o.reverse() } else { o };
        o.then(ra.node.cmp(&rb.node))
    });
    out
}

/// The graph range that shows a bucket whole: its window and its members' launches.
pub fn bucket_range(b: &commlens::timeline::BucketIn) -> (f64, f64) {
    let (s, e) = b.window();
    let lo = b.members.iter().map(|m| m.node).min().unwrap_or(s).min(s);
    let hi = b.members.iter().map(|m| m.node).max().unwrap_or(e).max(e);
    (lo as f64, hi as f64 + 1.0)
}

/// Whether `role` is the label of collectives without one.
pub fn is_unclassified(role: &str) -> bool {
    role == UNCLASSIFIED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_or_say_why_not() {
        assert_eq!(parse_count("", 1), Ok(None));
        assert_eq!(parse_count(" 4096 ", 1), Ok(Some(4096)));
        assert_eq!(parse_count("1e3", 1), Ok(Some(1000)));
        assert_eq!(parse_count("4_096", 1), Ok(Some(4096)));
        assert_eq!(parse_count("4,096", 1), Ok(Some(4096)));
        assert_eq!(parse_count("64KiB", 1), Ok(Some(65536)));
        assert_eq!(parse_count("2 MB", 1), Ok(Some(2_000_000)));
        assert_eq!(parse_count("0", 0), Ok(Some(0)));
        for (text, minimum, needle) in [
            ("-5", 0, "negative"),
            ("0", 1, "too small"),
            ("1.5", 0, "whole"),
            ("abc", 0, "not a number"),
            ("1e30", 0, "too large"),
            ("inf", 0, "not a number"),
        ] {
            let e = parse_count(text, minimum).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    fn graph(dump: &str) -> Graph {
        Graph::new(commlens::read_dump(dump.as_bytes()).expect("dump"))
    }

    #[test]
    fn module_plans_are_checked_by_the_core() {
        let g = graph(
            r#"{"format": "commlens.graph", "version": 1,
                "modules": [{"fqn": "", "type": "M"}, {"fqn": "a", "type": "x.Block"}, {"fqn": "a.b", "type": "L"}],
                "nodes": [{"name": "x", "op": "placeholder", "target": "x"}]}"#,
        );
        assert_eq!(plans_problem(&g, &PlansMode::Explicit("a".into())), None);
        let dup = plans_problem(&g, &PlansMode::Explicit("a\na".into())).unwrap();
        assert!(dup.contains("Overlapping"), "{dup}");
        let missing = plans_problem(&g, &PlansMode::Explicit("zzz".into())).unwrap();
        assert!(missing.contains("does not exist"), "{missing}");
        assert!(plans_problem(&g, &PlansMode::Explicit(" \n ".into())).is_some());
        assert_eq!(plans_problem(&g, &PlansMode::Blocks("Block".into())), None);
        assert!(plans_problem(&g, &PlansMode::Blocks("".into())).is_some());
        assert_eq!(plans_problem(&g, &PlansMode::Parents), None);
    }

    fn example() -> (Loaded, Planned) {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/llama_fsdp.json.gz"
        ))
        .unwrap();
        let read = read_input(&bytes, None).unwrap();
        assert!(read.log.is_none());
        let loaded = Loaded::new("llama".into(), None, None, read.planner, bytes.len());
        let settings = Settings {
            cap_bytes: Some(6000),
            ..Settings::default()
        };
        let planned = plan(&loaded, &settings, || 0.0);
        (loaded, planned)
    }

    /// Diagnostics that name no collective of the table are counted apart, by name: one that
    /// names a collective (with any other node) is not.
    #[test]
    fn diagnostics_about_other_nodes_are_counted_apart() {
        let (loaded, _) = example();
        let mut collectives = (*loaded.collectives).clone();
        let before = base_overview(&collectives).other_diagnostics;
        let named = |nodes: &[&str]| commlens::timeline::collectives::DiagnosticRow {
            code: Code::MalformedPayload,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            message: String::new(),
        };
        let last = collectives.rows.last().map(|r| r.name.to_string()).unwrap();
        collectives.diagnostics.push(named(&["not_a_collective"]));
        collectives
            .diagnostics
            .push(named(&["not_a_collective", &last]));
        collectives.diagnostics.push(named(&[]));
        assert_eq!(base_overview(&collectives).other_diagnostics, before + 2);
    }

    /// Every overview count is the number of rows its filter keeps (a collective can carry a
    /// split and a singleton decision: both count, both filter).
    #[test]
    fn overview_counts_are_the_rows_their_filters_keep() {
        let (loaded, planned) = example();
        let o = &planned.overview;
        let mut facets: Vec<(Filter, usize)> = Vec::new();
        facets.extend(o.roles.iter().map(|(r, n)| (Filter::Role(r.clone()), *n)));
        facets.extend(
            o.sources
                .iter()
                .map(|(s, n)| (Filter::Source(s.clone()), *n)),
        );
        facets.extend(o.groups.iter().map(|(g, n)| (Filter::Group(g.clone()), *n)));
        facets.extend(
            o.decisions
                .iter()
                .map(|((a, r), n)| (Filter::Decision(*a, *r), *n)),
        );
        facets.extend(
            o.diagnostics
                .iter()
                .map(|(c, n)| (Filter::Diagnostic(*c), *n)),
        );
        assert!(facets.len() > 4);
        let both = planned
            .columns
            .iter()
            .filter(|c| c.decisions.len() > 1)
            .count();
        assert!(
            both > 0,
            "the example has collectives with a split and a singleton decision"
        );
        for (f, n) in facets {
            let rows = query(
                &loaded.collectives,
                &planned.columns,
                &planned.timeline,
                Some(&f),
                "",
                Sort::default(),
            );
            assert_eq!(rows.len(), n, "{f:?}");
        }
    }

    #[test]
    fn a_bucket_search_finds_that_bucket_only_and_sorting_by_bucket_is_numeric() {
        let (loaded, planned) = example();
        let t = &planned.timeline;
        let q =
            |s: &str, sort: Sort| query(&loaded.collectives, &planned.columns, t, None, s, sort);
        let rows = q("bucket_1", Sort::default());
        assert!(!rows.is_empty());
        for i in &rows {
            let b = planned.columns[*i as usize].bucket.unwrap();
            assert_eq!(t.buckets[b as usize].short_id(), "bucket_1");
        }
        assert!(t.buckets.len() > 11, "bucket_1 and bucket_1x both exist");
        let sorted = q(
            "",
            Sort {
                col: Col::Bucket,
                desc: false,
            },
        );
        let numbers: Vec<u32> = sorted
            .iter()
            .filter_map(|i| planned.columns[*i as usize].bucket)
            .map(|b| t.buckets[b as usize].number().unwrap())
            .collect();
        assert!(numbers.windows(2).all(|w| w[0] <= w[1]), "{numbers:?}");
        assert!(q("no such thing", Sort::default()).is_empty());
    }

    #[test]
    fn rows_take_group_phase_and_bytes_from_the_core() {
        let (loaded, planned) = example();
        for (row, cols) in loaded.collectives.rows.iter().zip(planned.columns.iter()) {
            let Some(b) = cols.bucket else { continue };
            let member = planned.timeline.buckets[b as usize]
                .members
                .iter()
                .find(|m| m.node == row.node)
                .unwrap();
            assert_eq!(row.bytes, Some(member.size_bytes), "{}", row.name);
            assert_eq!(
                row.group.as_deref(),
                member.group.as_deref(),
                "{}",
                row.name
            );
            assert_eq!(row.lane, member.lane, "{}", row.name);
        }
    }
}
