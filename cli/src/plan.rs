//! `commlens plan DUMP [--graph K] [--args ARGS.json] [--tags dump|roles] [--format json|text]
//! [-o OUT]`: print the plan report (the reference's JSON, or the same plan in plain words).

use crate::{
    keep_until_exit, print_notes, read_file, read_input, write_output, write_output_with, CliError,
    GraphChoice,
};
use commlens::TagMode;
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
    /// Where the FSDP tags come from: `dump` (the tags the FSDP pass wrote; the reference's
    /// behaviour) or `roles` (derived from semantic roles, for graphs without tags).
    #[arg(long, value_name = "dump|roles", default_value = "dump", value_parser = tag_mode)]
    tags: TagMode,
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

/// `--tags` values, in the core's vocabulary.
pub fn tag_mode(text: &str) -> Result<TagMode, String> {
    TagMode::parse(text).ok_or_else(|| format!("is dump or roles, not {text:?}"))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let dump = read_input(&args.dump)?;
    let args_bytes = args.args.as_deref().map(read_file).transpose()?;
    let planned =
        commlens::read_and_plan_with(dump, args.choice.graph, args_bytes.as_deref(), args.tags)
            .map_err(|e| CliError::Failed(e.to_string()))?;
    print_notes(&args.dump, &planned.graph.dump.warnings);
    match args.format {
        Format::Json => {
            // The JSON stays the reference's report; the note goes beside it.
            if let Some(note) = &planned.note {
                eprintln!("{note}");
            }
            write_output_with(args.out.as_deref(), |w| planned.write_json(w))?;
        }
        Format::Text => write_output(args.out.as_deref(), &planned.to_text())?,
    }
    keep_until_exit(planned);
    Ok(ExitCode::SUCCESS)
}
