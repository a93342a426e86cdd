//! `commlens roles DUMP [--json]`: the semantic identity of every collective, where it came
//! from, the diagnostics and the coverage (`semantic-identity.md`).

use crate::{read_file, write_output, CliError};
use commlens::identity::json::RolesReport;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON).
    #[arg(value_name = "DUMP")]
    dump: String,
    /// Write the stable JSON form (`"format": "commlens.roles"`) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let bytes = read_file(&args.dump)?;
    let report = RolesReport::from_dump(&bytes)
        .map_err(|e| CliError::Failed(format!("{}: {e}", args.dump)))?;
    let text = if args.json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
