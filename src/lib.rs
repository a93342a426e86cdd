//! commlens core: read `torch.fx` graph dumps, plan FSDP collective buckets exactly as the
//! reference planner does, and explain them. Pure functions from bytes and structs to structs;
//! errors are values that name the node and the field. Nothing here knows about files,
//! terminals or browsers: the CLI, the wasm crate and the web app are thin shells over it.
//! See ARCHITECTURE.md for the code map and the invariants each boundary keeps.

pub mod dump;
pub mod dump_writer;
pub mod graph;
pub mod identity;
pub mod input;
pub mod key;
pub mod planner;
pub mod pyjson;
pub mod signature;
pub mod synth;
pub mod timeline;
pub mod tracelog;
pub mod value;

pub use dump::{read_dump, Dump, DumpError};
pub use graph::{Graph, NodeId};
pub use input::InputError;
pub use planner::{plan, ArgError, BucketPlan, PlannerArgs};
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
/// post-grad graph is planned too ([`plan_graph_report_json`] chooses among several).
pub fn plan_report_json(dump: &[u8], args_json: Option<&[u8]>) -> Result<String, PlanFailure> {
    plan_graph_report_json(dump, None, args_json)
}

/// `commlens plan --format text`: the same plan in plain words.
pub fn plan_report_text(dump: &[u8], args_json: Option<&[u8]>) -> Result<String, PlanFailure> {
    plan_graph_report_text(dump, None, args_json)
}

/// [`plan_report_json`] for a dump or the chosen graph of a trace log ([`input::read`]).
pub fn plan_graph_report_json(
    input: &[u8],
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<String, PlanFailure> {
    let (graph, plan) = read_and_plan(input, graph, args_json)?;
    Ok(planner::report::plan_to_json(&plan, &graph))
}

/// [`plan_report_text`] for a dump or the chosen graph of a trace log.
pub fn plan_graph_report_text(
    input: &[u8],
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<String, PlanFailure> {
    let (graph, plan) = read_and_plan(input, graph, args_json)?;
    Ok(planner::report::plan_to_text(&plan, &graph))
}

/// Reads a dump (or a trace log's chosen graph) and plans it with `args.json` (or the dump's
/// own arguments).
pub fn read_and_plan(
    input: &[u8],
    graph: Option<usize>,
    args_json: Option<&[u8]>,
) -> Result<(Graph, BucketPlan), PlanFailure> {
    let args = match args_json {
        Some(bytes) => Some(parse_args_json(bytes).map_err(PlanFailure::ArgsFile)?),
        None => None,
    };
    let planner: planner::Planner<Graph> =
        input::read_prepared(input, graph).map_err(|e| match e {
            InputError::Dump(e) => PlanFailure::Dump(e),
            other => PlanFailure::Input(other),
        })?;
    let planner_args = resolve_args(planner.graph(), args.as_ref());
    let plan = planner.plan(&planner_args).map_err(PlanFailure::Args)?;
    Ok((planner.into_graph(), plan))
}
