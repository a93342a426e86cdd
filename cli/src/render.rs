//! `commlens render DUMP [--args ARGS.json] -o timeline.svg [--width PX] [--from N --to N]
//! [--trace TRACE.json]`: the bucket timeline the web app draws, as a standalone SVG (and
//! optionally the Chrome-trace JSON), for review docs and CI.

use crate::plan::value;
use crate::{read_file, write_output, CliError};
use commlens::timeline::{self, build_scene, render_svg, Viewport};
use std::process::ExitCode;

pub fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let mut dump = None;
    let mut args_path = None;
    let mut out = None;
    let mut trace = None;
    let mut width = timeline::DEFAULT_WIDTH;
    let (mut from, mut to) = (None, None);
    let mut rest = args.iter();
    let number = |v: String, flag: &str| -> Result<f64, CliError> {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "render: {flag} needs a non-negative number, got {v:?}"
                ))
            })
    };
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--args" => args_path = Some(value(&mut rest, "--args")?),
            "-o" | "--out" => out = Some(value(&mut rest, "-o")?),
            "--trace" => trace = Some(value(&mut rest, "--trace")?),
            "--width" => {
                width =
                    number(value(&mut rest, "--width")?, "--width")?.clamp(320.0, 20000.0) as u32
            }
            "--from" => from = Some(number(value(&mut rest, "--from")?, "--from")?),
            "--to" => to = Some(number(value(&mut rest, "--to")?, "--to")?),
            flag if flag.starts_with('-') => {
                return Err(CliError::Usage(format!("render: unknown option {flag:?}")))
            }
            path if dump.is_none() => dump = Some(path.to_string()),
            extra => {
                return Err(CliError::Usage(format!(
                    "render: unexpected argument {extra:?}"
                )))
            }
        }
    }
    let dump = dump.ok_or_else(|| CliError::Usage("render: missing DUMP".into()))?;
    let bytes = read_file(&dump)?;
    let args = match args_path.as_deref() {
        Some(p) => Some(commlens::parse_args_json(&read_file(p)?).map_err(CliError::Failed)?),
        None => None,
    };
    let graph = commlens::Graph::new(
        commlens::read_dump(&bytes).map_err(|e| CliError::Failed(format!("{dump}: {e}")))?,
    );
    let planner_args = commlens::resolve_args(&graph, args.as_ref());
    let plan =
        commlens::plan(&graph, &planner_args).map_err(|e| CliError::Failed(e.to_string()))?;
    let title = std::path::Path::new(&dump)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let roles = timeline::Roles::classify(&graph);
    let input = timeline::plan_timeline(&graph, &plan, &roles, &title);
    let full = Viewport::full(input.node_count);
    let viewport = Viewport {
        x0: from.unwrap_or(full.x0),
        x1: to.unwrap_or(full.x1),
    };
    let svg = render_svg(&build_scene(&input, viewport, width));
    write_output(out.as_deref(), &svg)?;
    if let Some(path) = trace {
        write_output(Some(&path), &timeline::chrome_trace(&input))?;
    }
    Ok(ExitCode::SUCCESS)
}
