//! `commlens roles DUMP [--graph K] [--json]`: the semantic identity of every collective, where it came
//! from, the diagnostics and the coverage (`semantic-identity.md`).

use crate::{keep_until_exit, print_notes, read_input, write_output_with, CliError, GraphChoice};
use commlens::identity::json::RolesReport;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON), or a TORCH_TRACE log.
    #[arg(value_name = "DUMP")]
    dump: String,
    #[command(flatten)]
    choice: GraphChoice,
    /// Write the stable JSON form (`"format": "commlens.roles"`) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = read_input(&args.dump)?;
    let graph = commlens::input::read_graph_without_repr(input, args.choice.graph)
        .map_err(|e| CliError::Failed(format!("{}: {e}", args.dump)))?;
    print_notes(&args.dump, &graph.dump.warnings);
    if args.json {
        // Written as it is made: the classification's part while the plan is made.
        let mut report = None;
        write_output_with(None, |w| {
            report = Some(RolesReport::new_writing_json(graph, w)?);
            Ok(())
        })?;
        keep_until_exit(report);
    } else {
        // Written as it is made, as the JSON is.
        let mut report = None;
        write_output_with(None, |w| {
            report = Some(RolesReport::new_writing_text(graph, w)?);
            Ok(())
        })?;
        keep_until_exit(report);
    }
    Ok(ExitCode::SUCCESS)
}
