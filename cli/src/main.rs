//! `commlens`: the command-line shell over the core crate. Each subcommand lives in its own
//! module and only reads files, calls the library, and writes what the library returns.
//! Arguments are parsed by clap; a usage error exits 2 with clap's message, a failed command
//! exits 1 with its message verbatim on stderr.

mod allocator;
mod audit;
mod cost;
mod diff;
mod graphs;
mod oom;
mod plan;
mod render;
mod roles;
mod validate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// See why every collective in a distributed-training graph exists, and how the FSDP bucket
/// planner groups them.
#[derive(Parser)]
#[command(name = "commlens", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The input-size limit in MiB, for each input file and for what gzip data decompresses
    /// to: a larger input is refused with a message instead of filling memory.
    #[arg(long, global = true, value_name = "MB", default_value_t = commlens::input::DEFAULT_MAX_INPUT_MB,
          value_parser = clap::value_parser!(u64).range(1..=(1 << 24)))]
    max_input_mb: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Print the reference planner's report (JSON), or the same plan in plain words.
    Plan(plan::Args),
    /// Check that rank reports agree for one process group (validate_group_plans).
    Validate(validate::Args),
    /// What changed between two bucket plans (dumps or plan reports).
    Diff(diff::Args),
    /// The semantic role of every collective, where it came from, diagnostics and coverage.
    Roles(roles::Args),
    /// What a transform did to each collective's identity: kept, combined, dropped or lost.
    Audit(audit::Args),
    /// Draw the bucket timeline as SVG (and optionally a Chrome trace).
    Render(render::Args),
    /// List the post-grad graphs of a TORCH_TRACE log (or save one as a graph dump).
    Graphs(graphs::Args),
    /// What the graph and its plan cost in time on given hardware (torch's estimators).
    Cost(cost::Args),
}

fn main() -> ExitCode {
    allocator::tune();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with exit 0; usage errors to stderr with exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    commlens::input::set_limits(commlens::input::Limits::from_mb(cli.max_input_mb));
    let result = match cli.command {
        Command::Plan(args) => plan::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Roles(args) => roles::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Render(args) => render::run(args),
        Command::Graphs(args) => graphs::run(args),
        Command::Cost(args) => cost::run(args),
    };
    match result {
        Ok(code) => code,
        // Messages quote the input: bounded in size, with control characters escaped.
        Err(CliError::Usage(message)) => {
            eprintln!(
                "error: {}\n\nFor more information, try '--help'.",
                commlens::text::bounded_message(&message)
            );
            ExitCode::from(2)
        }
        Err(CliError::Failed(message)) => {
            eprintln!("{}", commlens::text::bounded_message(&message));
            ExitCode::FAILURE
        }
    }
}

/// What a subcommand reports when it cannot do its work.
pub enum CliError {
    /// The command line is wrong in a way clap cannot see (e.g. options that exclude each
    /// other across forms): exit 2.
    Usage(String),
    /// The input or the work failed: exit 1 with this message verbatim on stderr.
    Failed(String),
}

/// `--graph K`: which post-grad graph of a trace log to read.
#[derive(clap::Args)]
pub struct GraphChoice {
    /// For a TORCH_TRACE log: the post-grad graph to read, 0-based in log order (`commlens
    /// graphs LOG` lists them; needed when the log holds more than one).
    #[arg(long, value_name = "K")]
    pub graph: Option<usize>,
}

/// Writes what the reader could not say (a trace log's missing group ranks, cut
/// annotations; a dump's dangling metadata references) on stderr.
pub fn print_notes(path: &str, notes: &[String]) {
    // Notes quote the input (node names): bounded, control characters escaped, and at most
    // `SHOWN` of them (a dump can hold a million dangling references).
    const SHOWN: usize = 20;
    for note in notes.iter().take(SHOWN) {
        eprintln!(
            "{}",
            commlens::text::bounded_message(&format!("note: {path}: {note}"))
        );
    }
    if notes.len() > SHOWN {
        eprintln!(
            "note: {}: and {} more notes like these",
            commlens::text::bounded_message(path),
            notes.len() - SHOWN
        );
    }
}

/// Leaves `value` to the operating system: a command calls it on its graph, plan and
/// outputs once they are written, right before the process ends. Freeing a large graph's
/// millions of allocations one by one costs a noticeable part of the whole run and frees
/// nothing anyone would use.
pub fn keep_until_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Reads a file up to the input-size limit (`--max-input-mb`), naming it in the error.
pub fn read_file(path: &str) -> Result<Vec<u8>, CliError> {
    let failed = |e: std::io::Error| CliError::Failed(format!("cannot read {path}: {e}"));
    let file = std::fs::File::open(path).map_err(failed)?;
    // A regular file's length is checked before reading; a device or a pipe is read up to
    // the limit.
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    commlens::input::read_limited(file, size).map_err(failed)
}

/// The input at `path` for the readers: a regular file holding a plain dump is read as it is
/// parsed, never held whole (`commlens::input::Input::file`); anything else is read here.
pub fn read_input(path: &str) -> Result<commlens::input::Input<'static>, CliError> {
    let failed = |e: std::io::Error| CliError::Failed(format!("cannot read {path}: {e}"));
    let file = std::fs::File::open(path).map_err(failed)?;
    commlens::input::Input::file(file).map_err(failed)
}

/// Writes what `write` produces to the file `out`, or to stdout, a piece at a time.
///
/// A file that is already there is written over from its start and then cut to what was
/// written (also when writing fails, so no old tail is left), not emptied first: emptying
/// the 66 MB report a previous `plan` run left at 500k nodes freed its pages there and then,
/// while the other core waited (docs/performance.md, twentieth session). Only a regular file
/// is cut; a device or a pipe is written as it is.
pub fn write_output_with(
    out: Option<&str>,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), CliError> {
    match out {
        Some(path) => {
            use std::io::Write;
            let failed = |e: std::io::Error| CliError::Failed(format!("cannot write {path}: {e}"));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(failed)?;
            let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
            let written = write(&mut w).and_then(|()| w.flush());
            let cut = cut_to_written(w.get_ref());
            written.and(cut).map_err(failed)
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            write(&mut stdout).map_err(|e| CliError::Failed(format!("cannot write stdout: {e}")))
        }
    }
}

/// Cuts a regular `file` off where writing it has reached.
fn cut_to_written(mut file: &std::fs::File) -> std::io::Result<()> {
    use std::io::Seek;
    if !file.metadata()?.is_file() {
        return Ok(());
    }
    let end = file.stream_position()?;
    file.set_len(end)
}

/// Writes `text` to `out` or to stdout ([`write_output_with`]).
pub fn write_output(out: Option<&str>, text: &str) -> Result<(), CliError> {
    write_output_with(out, |w| w.write_all(text.as_bytes()))
}
