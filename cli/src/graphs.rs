//! `commlens graphs LOG [--json]`: the post-grad graphs of a TORCH_TRACE log (compile id,
//! forward/backward, nodes, collectives), the numbers `--graph K` takes; with `--graph K
//! --export OUT.json`, that graph saved as a graph dump.

use crate::{print_notes, read_input, write_output, CliError};
use commlens::tracelog::{graphs_json, graphs_text};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A TORCH_TRACE log (plain or gzip); a graph dump lists as one graph.
    #[arg(value_name = "LOG")]
    log: String,
    /// Write the list as JSON (`"format": "commlens.graphs"`).
    #[arg(long, conflicts_with = "export")]
    json: bool,
    /// The graph to export (0-based, in log order).
    #[arg(long, value_name = "K", requires = "export")]
    graph: Option<usize>,
    /// Write graph K as a graph dump (graph-dump-v1) to this file.
    #[arg(long, value_name = "OUT.json", requires = "graph")]
    export: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = read_input(&args.log)?;
    let failed = |e: commlens::InputError| CliError::Failed(format!("{}: {e}", args.log));
    if let Some(out) = &args.export {
        let dump = commlens::input::read(input, args.graph).map_err(failed)?;
        print_notes(&args.log, &dump.warnings);
        write_output(Some(out), &commlens::dump_writer::write_dump(&dump))?;
        return Ok(ExitCode::SUCCESS);
    }
    let graphs = commlens::input::graphs(input).map_err(failed)?;
    let text = if args.json {
        graphs_json(&graphs)
    } else {
        graphs_text(&graphs)
    };
    write_output(None, &text)?;
    Ok(ExitCode::SUCCESS)
}
