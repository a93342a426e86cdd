//! `commlens render DUMP [--graph K] [--args ARGS.json] [--tags dump|roles] [-o timeline.svg] [--width PX] [--from N --to N]
//! [--trace TRACE.json]`: the bucket timeline the web app draws, as a standalone SVG (and
//! optionally the Chrome-trace JSON), for review docs and CI.

use crate::{
    keep_until_exit, print_notes, read_file, read_input, write_output, CliError, GraphChoice,
};
use commlens::timeline::{self, build_scene, render_svg_with, Viewport};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON), or a TORCH_TRACE log.
    #[arg(value_name = "DUMP")]
    dump: String,
    #[command(flatten)]
    choice: GraphChoice,
    /// Planner arguments in the conformance `args.json` format.
    #[arg(long = "args", value_name = "ARGS.json")]
    args: Option<String>,
    /// Where the FSDP tags come from: `dump` (as written) or `roles` (derived from semantic
    /// roles, for graphs without tags).
    #[arg(long, value_name = "dump|roles", default_value = "dump", value_parser = crate::plan::tag_mode)]
    tags: commlens::TagMode,
    /// Write the SVG here instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "OUT.svg")]
    out: Option<String>,
    /// Width of the drawing in pixels.
    #[arg(long, value_name = "PX", default_value_t = timeline::DEFAULT_WIDTH, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(320..=20000))]
    width: u32,
    /// First graph position shown (default: the first node).
    #[arg(long, value_name = "N", value_parser = non_negative, allow_negative_numbers = true)]
    from: Option<f64>,
    /// Last graph position shown (default: the last node); must be greater than --from.
    #[arg(long, value_name = "N", value_parser = non_negative, allow_negative_numbers = true)]
    to: Option<f64>,
    /// Also write the timeline as a Chrome trace (open it in Perfetto).
    #[arg(long, value_name = "TRACE.json")]
    trace: Option<String>,
}

fn non_negative(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("needs a non-negative number, got {text:?}"))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = read_input(&args.dump)?;
    let planner_args = match args.args.as_deref() {
        Some(p) => Some(commlens::parse_args_json(&read_file(p)?).map_err(CliError::Failed)?),
        None => None,
    };
    // Tags derived from roles make a graph that is hashed again, from its nodes' reprs.
    let graph = match args.tags {
        commlens::TagMode::Dump => {
            commlens::input::read_graph_without_repr(input, args.choice.graph)
        }
        commlens::TagMode::Roles => commlens::input::read_graph(input, args.choice.graph),
    }
    .map_err(|e| CliError::Failed(format!("{}: {e}", args.dump)))?;
    print_notes(&args.dump, &graph.dump.warnings);
    let graph = match args.tags {
        commlens::TagMode::Dump => graph,
        commlens::TagMode::Roles => commlens::derive_tags(&graph).0,
    };
    // Classified on both cores, the second going on to plan as soon as its third of the
    // nodes is done, while this one finishes classifying and makes the timeline's rows
    // (freeing the classification as they go). The whole classification is never held beside
    // the whole plan: classifying on one thread beside the plan raised the peak at 500k nodes
    // by 0.1× the JSON's size.
    let resolved = commlens::resolve_args(&graph, planner_args.as_ref());
    let (plan, collectives) = commlens::identity::classify_beside(
        &graph,
        || commlens::plan(&graph, &resolved),
        |classification| timeline::Collectives::from_classification(&graph, classification),
    );
    let plan = plan.map_err(|e| CliError::Failed(e.to_string()))?;
    let title = std::path::Path::new(&args.dump)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let input = timeline::plan_timeline(&graph, &plan, &collectives, &title);
    let full = Viewport::full(input.node_count);
    let viewport = Viewport {
        x0: args.from.unwrap_or(full.x0),
        x1: args.to.unwrap_or(full.x1),
    };
    if viewport.x0 >= full.x1 {
        return Err(CliError::Usage(format!(
            "--from {} is past the end of the graph (positions 0 to {})",
            viewport.x0, full.x1
        )));
    }
    if viewport.x1 <= viewport.x0 {
        return Err(CliError::Usage(format!(
            "--from {} must be less than --to {} (the graph has positions 0 to {})",
            viewport.x0, viewport.x1, full.x1
        )));
    }
    let scene = build_scene(&input, viewport, args.width);
    let settings = timeline::ExportSettings {
        tool: "commlens render".into(),
        dump: title.clone(),
        args: planner_args.clone().unwrap_or_default(),
        tags: match args.tags {
            commlens::TagMode::Dump => None,
            commlens::TagMode::Roles => Some("roles".into()),
        },
        graph: args.choice.graph,
        viewport: Some(scene.viewport),
        width: Some(scene.frame.width),
        view_url: None,
        hardware: None,
    };
    let svg = render_svg_with(&scene, Some(&settings.svg_meta()));
    write_output(args.out.as_deref(), &svg)?;
    if let Some(path) = args.trace {
        let recorded = timeline::ExportSettings {
            viewport: None,
            width: None,
            ..settings
        }
        .to_json();
        write_output(
            Some(&path),
            &timeline::chrome_trace_with(&input, Some(&recorded)),
        )?;
    }
    keep_until_exit((graph, plan, collectives, input, scene, svg));
    Ok(ExitCode::SUCCESS)
}
