//! commlens core: read `torch.fx` graph dumps, plan FSDP collective buckets exactly as the
//! reference planner does, and explain them. Pure functions from bytes and structs to structs;
//! errors are values that name the node and the field. Nothing here knows about files,
//! terminals or browsers: the CLI, the wasm crate and the web app are thin shells over it.
//! See ARCHITECTURE.md for the code map and the invariants each boundary keeps.

pub mod cost;
pub mod diff;
mod dotted;
pub mod dump;
pub mod dump_writer;
pub mod graph;
pub mod hashing;
pub mod identity;
pub mod input;
pub mod key;
pub mod meta;
pub mod ops;
pub mod parallel;
pub mod planner;
mod pretty_json;
pub mod pyjson;
pub mod signature;
pub mod synth;
pub mod tags;
pub mod text;
pub mod timeline;
pub mod tracelog;
pub mod value;
#[cfg(target_arch = "wasm32")]
pub mod wasm_heap;
mod words;

pub use dump::{read_dump, Dump, DumpError};
pub use graph::{Graph, NodeId};
pub use input::InputError;
pub use planner::{plan, ArgError, BucketPlan, PlannerArgs};
pub use tags::TagMode;
pub use value::PyValue;

use std::fmt;

/// Why `commlens plan` could not produce a report. `Display` is the message the CLI prints on
/// stderr (for argument errors, the reference's `ValueError` message verbatim).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanFailure {
    /// The dump could not be read.
    Dump(DumpError),
    /// A trace log (or the choice of its graph) could not be read.
    Input(InputError),
    /// `args.json` is not a JSON object.
    ArgsFile(String),
    /// The planner rejected its arguments.
    Args(ArgError),
}

impl fmt::Display for PlanFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanFailure::Dump(e) => e.fmt(f),
            PlanFailure::Input(e) => e.fmt(f),
            PlanFailure::ArgsFile(message) => f.write_str(message),
            PlanFailure::Args(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PlanFailure {}

/// A dump's error stays a dump error (its messages are the reader's, snapshot-tested).
impl From<InputError> for PlanFailure {
    fn from(e: InputError) -> PlanFailure {
        match e {
            InputError::Dump(e) => PlanFailure::Dump(e),
            other => PlanFailure::Input(other),
        }
    }
}

/// Reads planner arguments in the conformance corpus's `args.json` format.
pub fn parse_args_json(bytes: &[u8]) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "invalid planner arguments: expected a JSON object, found {}",
            value::kind_of(&other)
        )),
        Err(e) => Err(format!(
            "invalid planner arguments: not valid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        )),
    }
}

/// The planner arguments for a graph: `args` keys first, then the dump's `planner` object,
/// then the dump's `group_ranks`, then the reference's defaults.
pub fn resolve_args(
    graph: &Graph,
    args: Option<&serde_json::Map<String, serde_json::Value>>,
) -> PlannerArgs {
    PlannerArgs::resolve(
        args,
        graph.dump.planner.as_ref(),
        graph.dump.group_ranks.as_ref(),
    )
}

/// `commlens plan` as a function: dump bytes and optional `args.json` bytes in, the report
/// text (`json.dumps(report, indent=1, sort_keys=True)` + newline) out. The CLI and the wasm
/// build both call exactly this, so their outputs agree byte for byte. A trace log with one
/// post-grad graph is planned too ([`read_and_plan`] chooses among several).
pub fn plan_report_json(dump: &[u8], args_json: Option<&[u8]>) -> Result<String, PlanFailure> {
    let (graph, plan, written) = read_and_plan_writing_wire(dump, None, args_json)?;
    Ok(planner::report::plan_to_json_with(
        &plan,
        &graph,
        written.as_ref(),
    ))
}

/// `commlens plan --format text`: the same plan in plain words.
pub fn plan_report_text(dump: &[u8], args_json: Option<&[u8]>) -> Result<String, PlanFailure> {
    let (graph, plan) = read_and_plan(dump, None, args_json)?;
    Ok(planner::report::plan_to_text(&plan, &graph))
}

/// A plan, and what its tags rest on.
pub struct Planned {
    pub graph: Graph,
    pub plan: BucketPlan,
    /// With [`TagMode::Roles`]: the tags derived from semantic roles.
    pub derived: Option<tags::DerivedTags>,
    /// With [`TagMode::Dump`], when the dump carries no FSDP tags but its collectives have
    /// FSDP roles: why the plan is empty, and what to do.
    pub note: Option<String>,
    /// The wire records, written beside the plan for the report's group digests (natively).
    wire_records: Option<planner::report::WireRecordTexts>,
}

impl Planned {
    /// A plan on the dump's own tags, with the note for a dump that has none.
    fn with_dump_tags(
        graph: Graph,
        plan: BucketPlan,
        wire_records: Option<planner::report::WireRecordTexts>,
    ) -> Planned {
        let note = (plan.summary.tagged_collectives == 0)
            .then(|| untagged_note(&graph))
            .flatten();
        Planned {
            graph,
            plan,
            derived: None,
            note,
            wire_records,
        }
    }

    /// The plan report as JSON: the reference's `BucketPlan.to_dict()` byte for byte with
    /// [`TagMode::Dump`]; with tags derived from roles, also `"tags": "roles"` and the
    /// `"derived_tags"` (node, comm_type, comm_group, param_name and where it came from,
    /// state_idx, role, source, phase).
    pub fn to_json(&self) -> String {
        plan_json_with(&self.plan, &self.graph, self.derived.as_ref())
    }

    /// [`Planned::to_json`] written to `w`, without holding the whole report when the tags
    /// are the dump's own.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        match &self.derived {
            None => planner::report::write_plan_json_with(
                &self.plan,
                &self.graph,
                self.wire_records.as_ref(),
                w,
            ),
            Some(_) => w.write_all(self.to_json().as_bytes()),
        }
    }

    /// The plan in plain words, opening with what its tags rest on (or why it is empty).
    /// The text form, safe for a terminal (`text::terminal_safe`).
    pub fn to_text(&self) -> String {
        crate::text::into_terminal_safe(self.text_unescaped())
    }

    fn text_unescaped(&self) -> String {
        let mut text = String::new();
        if let Some(derived) = &self.derived {
            text.push_str(&derived.describe());
            text.push_str("\n\n");
        }
        text.push_str(&planner::report::plan_to_text(&self.plan, &self.graph));
        if let Some(note) = &self.note {
            text.push('\n');
            text.push_str(note);
            text.push('\n');
        }
        text
    }
}

/// The plan report of `plan` over `graph`: the reference's `BucketPlan.to_dict()` byte for
/// byte, or, with tags derived from roles, also `"tags": "roles"` and the `"derived_tags"`
/// (what `commlens plan --tags roles` writes; the app's export calls this too).
pub fn plan_json_with(
    plan: &BucketPlan,
    graph: &Graph,
    derived: Option<&tags::DerivedTags>,
) -> String {
    let Some(derived) = derived else {
        return planner::report::plan_to_json(plan, graph);
    };
    let mut value = planner::report::plan_to_value(plan, graph);
    if let PyValue::Dict(map) = &mut value {
        let map = std::sync::Arc::make_mut(map);
        map.insert(value::Key::new("tags"), PyValue::Str("roles".into()));
        map.insert(value::Key::new("derived_tags"), derived.to_value(graph));
    }
    let mut text = pyjson::dumps_indented(&value);
    text.push('\n');
    text
}

/// Reads a dump (or a trace log's chosen graph) and plans it with `args.json` (or the dump's
/// own arguments), its FSDP tags taken as `mode` says.
pub fn read_and_plan_with<'a>(
    input: impl Into<input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
    mode: TagMode,
) -> Result<Planned, PlanFailure> {
    match mode {
        TagMode::Dump => {
            let (graph, plan, wire_records) = read_and_plan_writing_wire(input, graph, args_json)?;
            Ok(Planned::with_dump_tags(graph, plan, wire_records))
        }
        TagMode::Roles => {
            let args = match args_json {
                Some(bytes) => Some(parse_args_json(bytes).map_err(PlanFailure::ArgsFile)?),
                None => None,
            };
            let graph = input::read_graph(input, graph).map_err(PlanFailure::from)?;
            let (graph, derived) = derive_tags(&graph);
            let planner_args = resolve_args(&graph, args.as_ref());
            let plan = planner::plan(&graph, &planner_args).map_err(PlanFailure::Args)?;
            Ok(Planned {
                graph,
                plan,
                derived: Some(derived),
                note: None,
                wire_records: None,
            })
        }
    }
}

/// The graph with the FSDP pass's tags derived from its semantic roles (`--tags roles`).
pub fn derive_tags(graph: &Graph) -> (Graph, tags::DerivedTags) {
    let classification = identity::classify(graph);
    let (dump, derived) = tags::derive(graph, &classification);
    (Graph::new(dump), derived)
}

/// Why a graph without FSDP tags planned to nothing, when its collectives have FSDP roles
/// (`None` when none has one): the note `commlens plan` prints, which the app shows beside its
/// tags switch.
pub fn untagged_note(graph: &Graph) -> Option<String> {
    let classification = identity::classify(graph);
    let fsdp: Vec<&identity::CollectiveIdentity> = classification
        .collectives
        .iter()
        .filter(|c| c.role.as_ref().is_some_and(identity::Role::is_fsdp))
        .collect();
    if fsdp.is_empty() {
        return None;
    }
    let explicit = fsdp
        .iter()
        .filter(|c| c.source == Some(identity::Source::Explicit))
        .count();
    Some(format!(
        "note: no collective carries the FSDP pass's tags (meta[\"comm_type\"]), so the \
         reference planner found nothing to bucket; {} collective(s) have FSDP roles ({} \
         explicit, {} inferred): plan with --tags roles to derive the tags from those roles",
        fsdp.len(),
        explicit,
        fsdp.len() - explicit
    ))
}

/// Reads a dump (or a trace log's chosen graph) prepared for planning, without its nodes'
/// reprs, and the planner's arguments: `args.json`'s, or else the dump's own.
fn read_prepared_with_args<'a>(
    input: impl Into<input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<(planner::Planner<Graph>, PlannerArgs), PlanFailure> {
    let args = match args_json {
        Some(bytes) => Some(parse_args_json(bytes).map_err(PlanFailure::ArgsFile)?),
        None => None,
    };
    // Nothing a plan's reader does with the graph hashes it again.
    let planner: planner::Planner<Graph> =
        input::read_prepared_without_repr(input, graph).map_err(PlanFailure::from)?;
    let planner_args = resolve_args(planner.graph(), args.as_ref());
    Ok((planner, planner_args))
}

/// Reads a dump (or a trace log's chosen graph) and plans it with `args.json` (or the dump's
/// own arguments). A dump's nodes keep no `repr` (`input::read_prepared_without_repr`): the
/// graph returned is for reports, not to be hashed or written again.
pub fn read_and_plan<'a>(
    input: impl Into<input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<(Graph, BucketPlan), PlanFailure> {
    let (planner, planner_args) = read_prepared_with_args(input, graph, args_json)?;
    let plan = planner.plan(&planner_args).map_err(PlanFailure::Args)?;
    Ok((planner.into_graph(), plan))
}

/// [`read_and_plan`] for a report: natively, the wire records its group digests hash are
/// written on a second thread while the plan is made (`report::WireRecordTexts`).
fn read_and_plan_writing_wire<'a>(
    input: impl Into<input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<(Graph, BucketPlan, Option<planner::report::WireRecordTexts>), PlanFailure> {
    #[cfg(target_arch = "wasm32")]
    {
        // One thread: written ahead, the records would only be held longer.
        let (graph, plan) = read_and_plan(input, graph, args_json)?;
        Ok((graph, plan, None))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let (planner, planner_args) = read_prepared_with_args(input, graph, args_json)?;
        // Written until the plan is made: waiting for the rest kept the report from starting.
        let planned = std::sync::atomic::AtomicBool::new(false);
        let (written, plan) = parallel::join(
            "commlens-wire",
            || {
                let nodes = planner.wire_record_nodes();
                planner::report::WireRecordTexts::new_until(planner.graph(), &nodes, &planned)
            },
            || {
                let plan = planner.plan(&planner_args);
                planned.store(true, std::sync::atomic::Ordering::Relaxed);
                plan
            },
        );
        let plan = plan.map_err(PlanFailure::Args)?;
        Ok((planner.into_graph(), plan, Some(written)))
    }
}

/// `commlens cost` as a function: the dump planned exactly as `commlens plan` plans it
/// ([`read_and_plan_with`], tags as `mode` says), then costed on `hardware`, the graph as it
/// is and as planned ([`Costed::report`]).
pub fn cost_report<'a>(
    input: impl Into<input::Input<'a>>,
    graph: Option<usize>,
    args_json: Option<&[u8]>,
    mode: TagMode,
    hardware: cost::Hardware,
) -> Result<Costed, PlanFailure> {
    let (planned, work) = match mode {
        TagMode::Dump => {
            let (planner, planner_args) = read_prepared_with_args(input, graph, args_json)?;
            // What each node computes and moves is gathered on the second core while the
            // plan is made (one after the other, they were a third of the run at 500k nodes).
            let (work, plan) = parallel::join(
                "commlens-cost",
                || cost::GraphWork::new(planner.graph()),
                || planner.plan(&planner_args),
            );
            let plan = plan.map_err(PlanFailure::Args)?;
            (
                Planned::with_dump_tags(planner.into_graph(), plan, None),
                work,
            )
        }
        TagMode::Roles => {
            let planned = read_and_plan_with(input, graph, args_json, mode)?;
            let work = cost::GraphWork::new(&planned.graph);
            (planned, work)
        }
    };
    let model = cost::CostModel::with_work(work, hardware, &planned.plan.group_ranks);
    Ok(Costed {
        tags: planned.derived.as_ref().map(|d| d.describe()),
        note: planned.note,
        graph: planned.graph,
        plan: planned.plan,
        model,
    })
}

/// A graph, its plan and its cost model: what [`cost_report`] read and computed, from which
/// [`Costed::report`] makes the report (whose rows name the graph's nodes).
pub struct Costed {
    pub graph: Graph,
    pub plan: BucketPlan,
    pub model: cost::CostModel,
    /// With [`TagMode::Roles`]: the derived tags, described.
    pub tags: Option<String>,
    /// Why an untagged graph planned to nothing, when it did.
    pub note: Option<String>,
}

impl Costed {
    /// `commlens cost`'s report: the graph as it is and as planned, on the model's hardware.
    pub fn report(&self) -> cost::CostReport<'_> {
        let mut report = cost::CostReport::new(&self.graph, &self.plan, &self.model);
        report.tags = self.tags.clone();
        report.note = self.note.clone();
        report
    }
}
