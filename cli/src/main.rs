//! `commlens`: the command-line shell over the core crate. Each subcommand lives in its own
//! module and only reads files, calls the library, and writes what the library returns.

mod audit;
mod plan;
mod render;
mod roles;
mod validate;

use std::process::ExitCode;

const USAGE: &str = "usage:
  commlens plan DUMP [--args ARGS.json] [--format json|text] [-o OUT]
  commlens validate MANIFEST.json
  commlens validate --group G --rank R=REPORT.json [--rank R=REPORT.json ...]
  commlens roles DUMP [--json]
  commlens audit BEFORE AFTER [--json]
  commlens render DUMP [--args ARGS.json] -o timeline.svg";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match command.as_str() {
        "plan" => plan::run(rest),
        "validate" => validate::run(rest),
        "roles" => roles::run(rest),
        "audit" => audit::run(rest),
        "render" => render::run(rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(CliError::Usage(format!("unknown command {other:?}"))),
    };
    match result {
        Ok(code) => code,
        Err(CliError::Usage(message)) => {
            eprintln!("commlens: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(message)) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// What a subcommand reports when it cannot do its work.
pub enum CliError {
    /// The command line itself is wrong: exit 2 with usage.
    Usage(String),
    /// The input or the work failed: exit 1 with this message verbatim on stderr.
    Failed(String),
}

/// Reads a file, naming it in the error.
pub fn read_file(path: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Failed(format!("cannot read {path}: {e}")))
}

/// Writes `text` to `out` or to stdout.
pub fn write_output(out: Option<&str>, text: &str) -> Result<(), CliError> {
    match out {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| CliError::Failed(format!("cannot write {path}: {e}"))),
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .map_err(|e| CliError::Failed(format!("cannot write stdout: {e}")))
        }
    }
}
