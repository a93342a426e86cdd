//! `commlens roles DUMP [--graph K] [--json]`: the semantic identity of every collective, where it came
//! from, the diagnostics and the coverage (`semantic-identity.md`).

use crate::{keep_until_exit, print_notes, read_file, write_output, CliError, GraphChoice};
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
    let bytes = read_file(&args.dump)?;
    let graph = commlens::input::read_graph(bytes, args.choice.graph)
        .map_err(|e| CliError::Failed(format!("{}: {e}", args.dump)))?;
    print_notes(&args.dump, &graph.dump.warnings);
    let report = RolesReport::new(graph);
    let text = if args.json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    keep_until_exit((report, text));
    Ok(ExitCode::SUCCESS)
}
