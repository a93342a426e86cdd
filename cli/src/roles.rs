//! `commlens roles DUMP [--json]`: the semantic identity of every collective, where it came
//! from, the diagnostics and the coverage (`semantic-identity.md`).

use crate::{read_file, write_output, CliError};
use commlens::identity::json::RolesReport;
use std::process::ExitCode;

pub fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let mut dump = None;
    let mut as_json = false;
    for arg in args {
        match arg.as_str() {
            "--json" => as_json = true,
            flag if flag.starts_with('-') => {
                return Err(CliError::Usage(format!("roles: unknown option {flag:?}")))
            }
            path if dump.is_none() => dump = Some(path.to_string()),
            extra => {
                return Err(CliError::Usage(format!(
                    "roles: unexpected argument {extra:?}"
                )))
            }
        }
    }
    let dump = dump.ok_or_else(|| CliError::Usage("roles: missing DUMP".into()))?;
    let bytes = read_file(&dump)?;
    let report =
        RolesReport::from_dump(&bytes).map_err(|e| CliError::Failed(format!("{dump}: {e}")))?;
    let text = if as_json {
        report.to_json()
    } else {
        report.to_text()
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
