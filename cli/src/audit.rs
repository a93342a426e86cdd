//! `commlens audit BEFORE AFTER [--json]`: what a transform did to each collective's
//! identity (kept, combined, dropped by a rule, lost), with coverage before and after.

use crate::{read_file, write_output, CliError};
use commlens::identity::json::{AuditInputError, AuditReport};
use std::process::ExitCode;

pub fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let mut paths: Vec<String> = Vec::new();
    let mut as_json = false;
    for arg in args {
        match arg.as_str() {
            "--json" => as_json = true,
            flag if flag.starts_with('-') => {
                return Err(CliError::Usage(format!("audit: unknown option {flag:?}")))
            }
            path if paths.len() < 2 => paths.push(path.to_string()),
            extra => {
                return Err(CliError::Usage(format!(
                    "audit: unexpected argument {extra:?}"
                )))
            }
        }
    }
    let [before, after] = paths.as_slice() else {
        return Err(CliError::Usage(
            "audit: needs BEFORE and AFTER dumps".into(),
        ));
    };
    let before_bytes = read_file(before)?;
    let after_bytes = read_file(after)?;
    let report = AuditReport::from_dumps(&before_bytes, &after_bytes).map_err(|e| {
        CliError::Failed(match e {
            AuditInputError::Before(e) => format!("{before}: {e}"),
            AuditInputError::After(e) => format!("{after}: {e}"),
        })
    })?;
    let text = if as_json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
