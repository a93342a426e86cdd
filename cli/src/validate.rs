//! `commlens validate MANIFEST.json` or `commlens validate --group G --rank R=REPORT.json ...`:
//! check that rank reports (from this tool or the Python planner) agree, like
//! `validate_group_plans`.

use crate::{read_file, CliError};
use commlens::planner::report::validate_group_plans;
use commlens::PyValue;
use std::path::Path;
use std::process::ExitCode;

pub fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let mut manifest = None;
    let mut group = None;
    let mut ranks: Vec<(PyValue, String)> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--group" => group = Some(crate::plan::value(&mut rest, "--group")?),
            "--rank" => {
                let spec = crate::plan::value(&mut rest, "--rank")?;
                let (rank, path) = spec.split_once('=').ok_or_else(|| {
                    CliError::Usage(format!("--rank takes RANK=REPORT.json, got {spec:?}"))
                })?;
                let rank: i128 = rank.parse().map_err(|_| {
                    CliError::Usage(format!("--rank: {rank:?} is not an integer rank"))
                })?;
                ranks.push((PyValue::Int(rank), path.to_string()));
            }
            flag if flag.starts_with('-') => {
                return Err(CliError::Usage(format!(
                    "validate: unknown option {flag:?}"
                )))
            }
            path if manifest.is_none() => manifest = Some(path.to_string()),
            extra => {
                return Err(CliError::Usage(format!(
                    "validate: unexpected argument {extra:?}"
                )))
            }
        }
    }
    let (group, listed) = match (manifest, group) {
        (Some(path), None) if ranks.is_empty() => read_manifest(&path)?,
        (None, Some(group)) => (group, ranks),
        _ => {
            return Err(CliError::Usage(
                "validate: give MANIFEST.json, or --group G with --rank R=REPORT.json".into(),
            ))
        }
    };
    let mut reports = Vec::with_capacity(listed.len());
    for (rank, path) in listed {
        let bytes = read_file(&path)?;
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
