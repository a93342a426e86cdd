//! `commlens audit BEFORE AFTER [--graph K] [--json]`: what a transform did to each
//! collective's identity (kept, combined, dropped by a rule, lost), with coverage before and
//! after.

use crate::{keep_until_exit, print_notes, read_input, write_output, CliError};
use commlens::identity::json::AuditReport;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The dump (or TORCH_TRACE log) before the transform.
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The dump (or TORCH_TRACE log) after the transform.
    #[arg(value_name = "AFTER")]
    after: String,
    /// For trace logs: the post-grad graph to read from both (0-based, in log order).
    #[arg(long, value_name = "K")]
    graph: Option<usize>,
    /// For a BEFORE trace log: its graph, when it differs from --graph.
    #[arg(long, value_name = "K")]
    before_graph: Option<usize>,
    /// For an AFTER trace log: its graph, when it differs from --graph.
    #[arg(long, value_name = "K")]
    after_graph: Option<usize>,
    /// Write the stable JSON form (`"format": "commlens.audit"`) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let before_input = read_input(&args.before)?;
    let after_input = read_input(&args.after)?;
    let read = |path: &str, input: commlens::input::Input, graph: Option<usize>| {
        let graph = commlens::input::read_graph_without_repr(input, graph)
            .map_err(|e| CliError::Failed(format!("{path}: {e}")))?;
        print_notes(path, &graph.dump.warnings);
        Ok::<_, CliError>(graph)
    };
    let before = read(&args.before, before_input, args.before_graph.or(args.graph))?;
    let after = read(&args.after, after_input, args.after_graph.or(args.graph))?;
    let audit = commlens::identity::audit(&before, &after);
    let report = AuditReport {
        before,
        after,
        audit,
    };
    let text = if args.json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    keep_until_exit(report);
    Ok(ExitCode::SUCCESS)
}
