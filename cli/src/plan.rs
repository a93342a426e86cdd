//! `commlens plan DUMP [--args ARGS.json] [--format json|text] [-o OUT]`: print the plan report
//! (the reference's JSON, or the same plan in plain words).

use crate::{read_file, write_output, CliError};
use std::process::ExitCode;

pub fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let mut dump = None;
    let mut args_path = None;
    let mut out = None;
    let mut format: Option<String> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--args" => args_path = Some(value(&mut rest, "--args")?),
            "-o" | "--out" => out = Some(value(&mut rest, "-o")?),
            "--format" => format = Some(value(&mut rest, "--format")?),
            flag if flag.starts_with('-') => {
                return Err(CliError::Usage(format!("plan: unknown option {flag:?}")))
            }
            path if dump.is_none() => dump = Some(path.to_string()),
            extra => {
                return Err(CliError::Usage(format!(
                    "plan: unexpected argument {extra:?}"
                )))
            }
        }
    }
    let dump = dump.ok_or_else(|| CliError::Usage("plan: missing DUMP".into()))?;
    let dump_bytes = read_file(&dump)?;
    let args_bytes = args_path.as_deref().map(read_file).transpose()?;
    let report = match format.as_deref() {
        None | Some("json") => commlens::plan_report_json(&dump_bytes, args_bytes.as_deref()),
        Some("text") => commlens::plan_report_text(&dump_bytes, args_bytes.as_deref()),
        Some(other) => {
            return Err(CliError::Usage(format!(
                "plan: --format is json or text, not {other:?}"
            )))
        }
    }
    .map_err(|e| CliError::Failed(e.to_string()))?;
    write_output(out.as_deref(), &report)?;
    Ok(ExitCode::SUCCESS)
}

/// The value after a flag.
pub fn value<'a>(
    rest: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> Result<String, CliError> {
    rest.next()
        .cloned()
        .ok_or_else(|| CliError::Usage(format!("{flag} needs a value")))
}
