//! `commlens plan DUMP [--args ARGS.json] [--format json|text] [-o OUT]`: print the plan report
//! (the reference's JSON, or the same plan in plain words).

use crate::{read_file, write_output, CliError};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON).
    #[arg(value_name = "DUMP")]
    dump: String,
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
    let report = match args.format {
        Format::Json => commlens::plan_report_json(&dump_bytes, args_bytes.as_deref()),
        Format::Text => commlens::plan_report_text(&dump_bytes, args_bytes.as_deref()),
    }
    .map_err(|e| CliError::Failed(e.to_string()))?;
    write_output(args.out.as_deref(), &report)?;
    Ok(ExitCode::SUCCESS)
}
