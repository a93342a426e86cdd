//! `commlens validate MANIFEST.json` or `commlens validate --group G --rank R=REPORT.json ...`:
//! check that rank reports (from this tool or the Python planner) agree, like
//! `validate_group_plans`. A rank's file may also be its graph dump or TORCH_TRACE log, which
//! is planned (with `--args`, and `--graph K` for logs) to give its report.

use crate::{print_notes, read_file, CliError};
use commlens::planner::report::{plan_to_value, validate_group_plans};
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
    let (group, listed) = match (args.manifest, args.group) {
        (Some(path), _) => read_manifest(&path)?,
        // clap requires one of the two forms.
        (None, group) => (
            group.unwrap_or_default(),
            args.rank
                .into_iter()
                .map(|(rank, path)| (PyValue::Int(rank), path))
                .collect(),
        ),
    };
    let args_bytes = args.args.as_deref().map(read_file).transpose()?;
    let mut reports = Vec::with_capacity(listed.len());
    for (rank, path) in listed {
        let bytes = read_file(&path)?;
        if commlens::input::holds_graph(&bytes) {
            let (graph, plan) = commlens::read_and_plan(&bytes, args.graph, args_bytes.as_deref())
                .map_err(|e| CliError::Failed(format!("{path}: {e}")))?;
            print_notes(&path, &graph.dump.warnings);
            reports.push((rank, plan_to_value(&plan, &graph)));
            continue;
        }
        let report: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| CliError::Failed(format!("{path}: not valid JSON: {e}")))?;
        reports.push((rank, PyValue::from_plain_json(&report)));
    }
    validate_group_plans(&reports, &group).map_err(|e| CliError::Failed(e.to_string()))?;
    println!("ok: {} rank reports agree for group {group}", reports.len());
    Ok(ExitCode::SUCCESS)
}

/// `{"group": G, "plans": [[rank, path], ...]}`, paths relative to the manifest.
fn read_manifest(path: &str) -> Result<(String, Vec<(PyValue, String)>), CliError> {
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
    let mut listed = Vec::with_capacity(plans.len());
    for entry in plans {
        let pair = entry.as_array().filter(|p| p.len() == 2);
        let (rank, report) = match pair.map(|p| (&p[0], p[1].as_str())) {
            Some((rank, Some(report))) => (PyValue::from_plain_json(rank), report),
            _ => return Err(bad("each \"plans\" entry is [rank, \"path\"]")),
        };
        listed.push((rank, base.join(report).to_string_lossy().into_owned()));
    }
    Ok((group, listed))
}
