//! `commlens validate MANIFEST.json` or `commlens validate --group G --rank R=REPORT.json ...`:
//! check that rank reports (from this tool or the Python planner) agree, like
//! `validate_group_plans`. Reports are read one at a time, when the library compares them. A
//! rank's file may also be its graph dump or TORCH_TRACE log, which is planned (with `--args`,
//! and `--graph K` for logs) to give its report.

use crate::{print_notes, read_file, write_output, CliError};
use commlens::planner::report::plan_to_value;
use commlens::planner::validate::{
    agreement_json, agreement_text, validate_reports, Failure, RankReport, ReportRef,
};
use commlens::PyValue;
use std::path::Path;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("form").required(true).args(["manifest", "group"]))]
pub struct Args {
    /// `{"group": G, "plans": [[rank, "report.json"], ...]}`, paths relative to the manifest.
    #[arg(value_name = "MANIFEST.json", conflicts_with_all = ["group", "rank"])]
    manifest: Option<String>,
    /// The process group whose plans must agree.
    #[arg(long, value_name = "G")]
    group: Option<String>,
    /// A rank and its plan report (repeat for every rank; the first is the reference).
    #[arg(long, value_name = "R=REPORT.json", value_parser = rank_spec, requires = "group")]
    rank: Vec<(i128, String)>,
    /// Print the verdict as JSON on stdout: `ok`, and on failure the reference's `error` and
    /// `message` verbatim, with the rank, file, field and first difference as data.
    #[arg(long)]
    json: bool,
    /// For ranks given as TORCH_TRACE logs: the post-grad graph to plan (0-based, in log order).
    #[arg(long, value_name = "K")]
    graph: Option<usize>,
    /// Planner arguments for ranks given as dumps or logs (the conformance `args.json` format).
    #[arg(long = "args", value_name = "ARGS.json")]
    args: Option<String>,
}

fn rank_spec(spec: &str) -> Result<(i128, String), String> {
    let (rank, path) = spec
        .split_once('=')
        .ok_or_else(|| format!("takes RANK=REPORT.json, got {spec:?}"))?;
    let rank: i128 = rank
        .parse()
        .map_err(|_| format!("{rank:?} is not an integer rank"))?;
    Ok((rank, path.to_string()))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (group, entries) = match (args.manifest, args.group) {
        (Some(path), _) => read_manifest(&path)?,
        // clap requires one of the two forms.
        (None, group) => (
            group.unwrap_or_default(),
            args.rank
                .into_iter()
                .map(|(rank, path)| ReportRef {
                    rank: PyValue::int(rank),
                    file: Some(path),
                })
                .collect(),
        ),
    };
    let args_bytes = args.args.as_deref().map(read_file).transpose()?;
    let load = |i: usize| -> Result<RankReport, CliError> {
        let path = entries
            .get(i)
            .and_then(|e| e.file.as_deref())
            .unwrap_or_default();
        let bytes = read_file(path)?;
        if commlens::input::holds_graph(&bytes) {
            let (graph, plan) = commlens::read_and_plan(&bytes, args.graph, args_bytes.as_deref())
                .map_err(|e| CliError::Failed(format!("{path}: {e}")))?;
            print_notes(path, &graph.dump.warnings);
            return Ok(RankReport::from_value(
                &plan_to_value(&plan, &graph),
                &group,
            ));
        }
        RankReport::from_json(&bytes, &group)
            .map_err(|e| CliError::Failed(format!("{path}: not valid JSON: {e}")))
    };
    match validate_reports(&group, &entries, load) {
        Ok(()) => {
            let text = if args.json {
                agreement_json(&group, &entries)
            } else {
                agreement_text(&group, &entries)
            };
            write_output(None, &text)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(Failure::Load(e)) => Err(e),
        Err(Failure::Invalid(e)) if args.json => {
            write_output(None, &e.to_json())?;
            Ok(ExitCode::FAILURE)
        }
        Err(Failure::Invalid(e)) => Err(CliError::Failed(e.explain())),
    }
}

/// `{"group": G, "plans": [[rank, path], ...]}`, paths relative to the manifest.
fn read_manifest(path: &str) -> Result<(String, Vec<ReportRef>), CliError> {
    let bytes = read_file(path)?;
    let bad = |why: &str| CliError::Failed(format!("{path}: {why}"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(&format!("not valid JSON: {e}")))?;
    let group = manifest
        .get("group")
        .and_then(|g| g.as_str())
        .ok_or_else(|| bad("\"group\" must be a process-group name"))?
        .to_string();
    let plans = manifest
        .get("plans")
        .and_then(|p| p.as_array())
        .ok_or_else(|| bad("\"plans\" must be a list of [rank, path] pairs"))?;
    let base = Path::new(path).parent().unwrap_or(Path::new("."));
    let mut entries = Vec::with_capacity(plans.len());
    for (i, entry) in plans.iter().enumerate() {
        let pair = entry.as_array().filter(|p| p.len() == 2);
        let (rank, report) = match pair.map(|p| (&p[0], p[1].as_str())) {
            Some((rank, Some(report))) => (PyValue::from_plain_json(rank), report),
            _ => {
                return Err(bad(&format!(
                    "\"plans\"[{i}] must be [rank, \"path\"], found {}",
                    short_json(entry)
                )))
            }
        };
        entries.push(ReportRef {
            rank,
            file: Some(base.join(report).to_string_lossy().into_owned()),
        });
    }
    Ok((group, entries))
}

fn short_json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}
