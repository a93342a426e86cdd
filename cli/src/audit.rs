//! `commlens audit BEFORE AFTER [--json]`: what a transform did to each collective's
//! identity (kept, combined, dropped by a rule, lost), with coverage before and after.

use crate::{read_file, write_output, CliError};
use commlens::identity::json::{AuditInputError, AuditReport};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The dump before the transform.
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The dump after the transform.
    #[arg(value_name = "AFTER")]
    after: String,
    /// Write the stable JSON form (`"format": "commlens.audit"`) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let before_bytes = read_file(&args.before)?;
    let after_bytes = read_file(&args.after)?;
    let report = AuditReport::from_dumps(&before_bytes, &after_bytes).map_err(|e| {
        CliError::Failed(match e {
            AuditInputError::Before(e) => format!("{}: {e}", args.before),
            AuditInputError::After(e) => format!("{}: {e}", args.after),
        })
    })?;
    let text = if args.json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
