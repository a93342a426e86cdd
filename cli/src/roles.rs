//! `commlens roles` (not written yet).
use std::process::ExitCode;

pub fn run(_args: &[String]) -> Result<ExitCode, crate::CliError> {
    Err(crate::CliError::Failed(
        "commlens roles: not available yet".into(),
    ))
}
