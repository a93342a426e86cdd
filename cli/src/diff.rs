//! `commlens diff BEFORE AFTER [--args-before ARGS.json] [--args-after ARGS.json]
//! [--tags dump|roles] [--graph K] [--json]`:
//! what changed between two bucket plans. Each side is a dump or a TORCH_TRACE log (planned
//! with its arguments) or a plan report; the library tells them apart by content.

use crate::{read_file, write_output, CliError};
use commlens::diff::{read_dump_side, read_side_with, starts_as_dump, PlanDiff, PlanSide};
use commlens::TagMode;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plan before: a graph dump (JSON or gzip) or a plan report (`BucketPlan.to_dict()`).
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The plan after: a graph dump or a plan report (it may be the same dump as BEFORE, with
    /// other arguments).
    #[arg(value_name = "AFTER")]
    after: String,
    /// Planner arguments for BEFORE when it is a dump (the `plan --args` format).
    #[arg(long, value_name = "ARGS.json")]
    args_before: Option<String>,
    /// Planner arguments for AFTER when it is a dump.
    #[arg(long, value_name = "ARGS.json")]
    args_after: Option<String>,
    /// Where a dump's FSDP tags come from: `dump` (as written) or `roles` (derived from
    /// semantic roles, for graphs without tags), as in `plan --tags`.
    #[arg(long, value_name = "dump|roles", default_value = "dump", value_parser = crate::plan::tag_mode)]
    tags: TagMode,
    /// For trace logs: the post-grad graph to plan on both sides (0-based, in log order).
    #[arg(long, value_name = "K")]
    graph: Option<usize>,
    /// For a BEFORE trace log: its graph, when it differs from --graph.
    #[arg(long, value_name = "K")]
    before_graph: Option<usize>,
    /// For an AFTER trace log: its graph, when it differs from --graph.
    #[arg(long, value_name = "K")]
    after_graph: Option<usize>,
    /// Write the stable JSON form (`"format": "commlens.plan-diff"`) instead of text.
    #[arg(long)]
    json: bool,
}

/// One side of the diff; errors name the file. A dump in a regular file is read as it streams, as `commlens plan`
/// reads one (its start tells a dump from a plan report); a report, and anything that is not
/// a regular file, is read whole.
fn side(
    path: &str,
    graph: Option<usize>,
    args: Option<&str>,
    tags: TagMode,
) -> Result<PlanSide, CliError> {
    use std::io::{Read, Seek};
    let failed = |e: std::io::Error| CliError::Failed(format!("cannot read {path}: {e}"));
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let streamed = file.metadata().map_err(failed)?.is_file() && {
        let mut prefix = Vec::new();
        (&file)
            .take(1 << 20)
            .read_to_end(&mut prefix)
            .map_err(failed)?;
        file.rewind().map_err(failed)?;
        starts_as_dump(&prefix)
    };
    let args_bytes = args.map(read_file).transpose()?;
    let side = if streamed {
        let input = commlens::input::Input::file(file).map_err(failed)?;
        read_dump_side(input, graph, args_bytes.as_deref(), tags)
    } else {
        read_side_with(&read_file(path)?, graph, args_bytes.as_deref(), tags)
    };
    side.map_err(|e| CliError::Failed(format!("{path}: {e}")))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let before = side(
        &args.before,
        args.before_graph.or(args.graph),
        args.args_before.as_deref(),
        args.tags,
    )?;
    let after = side(
        &args.after,
        args.after_graph.or(args.graph),
        args.args_after.as_deref(),
        args.tags,
    )?;
    let diff = PlanDiff::new(before, after);
    let text = if args.json {
        diff.to_json()
    } else {
        diff.to_text()
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
