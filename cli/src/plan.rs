//! `commlens plan DUMP [--graph K] [--args ARGS.json] [--format json|text] [-o OUT]`: print
//! the plan report (the reference's JSON, or the same plan in plain words).

use crate::{print_notes, read_file, write_output, CliError, GraphChoice};
use commlens::planner::report::{plan_to_json, plan_to_text};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON), or a TORCH_TRACE log.
    #[arg(value_name = "DUMP")]
    dump: String,
    #[command(flatten)]
    choice: GraphChoice,
    /// Planner arguments in the conformance `args.json` format (keys it lacks fall back to the
    /// dump's `planner` object, then to the reference's defaults).
    #[arg(long = "args", value_name = "ARGS.json")]
    args: Option<String>,
    /// `json`: the reference's report byte for byte; `text`: the same plan in plain words.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// Write the report here instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    out: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Json,
    Text,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let dump_bytes = read_file(&args.dump)?;
    let args_bytes = args.args.as_deref().map(read_file).transpose()?;
    let (graph, plan) =
        commlens::read_and_plan(&dump_bytes, args.choice.graph, args_bytes.as_deref())
            .map_err(|e| CliError::Failed(e.to_string()))?;
    print_notes(&args.dump, &graph.dump.warnings);
    let report = match args.format {
        Format::Json => plan_to_json(&plan, &graph),
        Format::Text => plan_to_text(&plan, &graph),
    };
    write_output(args.out.as_deref(), &report)?;
    Ok(ExitCode::SUCCESS)
}
