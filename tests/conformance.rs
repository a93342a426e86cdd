//! Runs every case of the shared conformance corpus through the library: each
//! `cases/<case>/` (dump + args → the reference's exact report or ValueError message) and each
//! `validate/<case>/` (rank reports → `validate_group_plans`'s verdict). Reports must equal the
//! reference's as JSON values and byte for byte, by the library's one-pass read-and-prepare
//! route and by the two-pass one. Prints `N passed, M failed`.

mod common;

use commlens::planner::report::validate_group_plans;
use commlens::{plan_report_json, PlanFailure, PyValue};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let shared = common::shared_dir();
    let conformance = shared.join("conformance");
    let mut passed = 0;
    let mut failures: Vec<String> = Vec::new();
    let mut run = |name: String, outcome: Result<(), String>| match outcome {
        Ok(()) => passed += 1,
        Err(why) => failures.push(format!("{name}: {why}")),
    };
    let cases = common::case_dirs(&conformance.join("cases"));
    for case in &cases {
        run(format!("cases/{}", file_name(case)), plan_case(case));
    }
    let validate_cases = common::case_dirs(&conformance.join("validate"));
    for case in &validate_cases {
        run(format!("validate/{}", file_name(case)), validate_case(case));
    }
    for failure in &failures {
        println!("FAILED {failure}");
    }
    let total = cases.len() + validate_cases.len();
    println!(
        "conformance: {} plan cases, {} validate cases from {}",
        cases.len(),
        validate_cases.len(),
        conformance.display()
    );
    println!("{passed} passed, {} failed", failures.len());
    if total == 0 || cases.is_empty() || validate_cases.is_empty() {
        println!(
            "no conformance cases found: is shared/ at {}?",
            shared.display()
        );
        return ExitCode::FAILURE;
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn plan_case(case: &Path) -> Result<(), String> {
    let dump = common::read(&case.join("dump.json"));
    let args = common::read(&case.join("args.json"));
    let expected_text = common::read(&case.join("plan.json"));
    let expected: serde_json::Value =
        serde_json::from_slice(&expected_text).map_err(|e| format!("plan.json: {e}"))?;
    match (plan_report_json(&dump, Some(&args)), expected.get("error")) {
        (Ok(report), None) => {
            let actual: serde_json::Value =
                serde_json::from_str(&report).map_err(|e| format!("report is not JSON: {e}"))?;
            if actual != expected {
                return Err(first_difference(&expected, &actual, "$".into())
                    .unwrap_or_else(|| "reports differ".into()));
            }
            if report.as_bytes() != expected_text.as_slice() {
                return Err("equal as JSON but not byte for byte".into());
            }
            if two_pass_report(&dump, &args)? != report {
                return Err("reading for planning and planning a read graph disagree".into());
            }
            Ok(())
        }
        (Err(PlanFailure::Args(error)), Some(kind)) => {
            let message = expected.get("message").and_then(|m| m.as_str());
            if Some(error.kind) != kind.as_str() || Some(error.message.as_str()) != message {
                return Err(format!(
                    "expected {kind} {message:?}, got {} {:?}",
                    error.kind, error.message
                ));
            }
            Ok(())
        }
        (Ok(_), Some(kind)) => Err(format!("expected {kind}, got a report")),
        (Err(e), _) => Err(format!("unexpected failure: {e}")),
    }
}

/// The report by the unfused route: read the dump, build the graph, then prepare the planner
/// over it (the library reads and prepares in one pass).
fn two_pass_report(dump: &[u8], args: &[u8]) -> Result<String, String> {
    let graph = commlens::Graph::new(commlens::read_dump(dump).map_err(|e| e.to_string())?);
    let args = commlens::parse_args_json(args)?;
    let planner = commlens::planner::Planner::new(&graph);
    let plan = planner
        .plan(&commlens::resolve_args(&graph, Some(&args)))
        .map_err(|e| e.message)?;
    Ok(commlens::planner::report::plan_to_json(&plan, &graph))
}

fn validate_case(case: &Path) -> Result<(), String> {
    let manifest = common::json(&case.join("validate.json"));
    let expected = common::json(&case.join("expected.json"));
    let group = manifest["group"].as_str().ok_or("manifest group")?;
    let mut reports = Vec::new();
    for entry in manifest["plans"].as_array().ok_or("manifest plans")? {
        let rank = PyValue::from_plain_json(&entry[0]);
        let path = case.join(entry[1].as_str().ok_or("manifest path")?);
        reports.push((rank, PyValue::from_plain_json(&common::json(&path))));
    }
    let outcome = validate_group_plans(&reports, group);
    match (outcome, expected["ok"].as_bool()) {
        (Ok(()), Some(true)) => Ok(()),
        (Err(e), Some(false)) if Some(e.message.as_str()) == expected["message"].as_str() => Ok(()),
        (outcome, _) => Err(format!("expected {expected}, got {outcome:?}")),
    }
}

/// The path and values of the first difference between two JSON values.
fn first_difference(
    expected: &serde_json::Value,
    actual: &serde_json::Value,
    path: String,
) -> Option<String> {
    use serde_json::Value as J;
    match (expected, actual) {
        (J::Object(a), J::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(other) => {
                        if let Some(d) = first_difference(value, other, format!("{path}.{key}")) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{path}.{key}: missing")),
                }
            }
            b.keys()
                .find(|k| !a.contains_key(*k))
                .map(|k| format!("{path}.{k}: unexpected key"))
        }
        (J::Array(a), J::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if let Some(d) = first_difference(x, y, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (a.len() != b.len()).then(|| format!("{path}: {} items, expected {}", b.len(), a.len()))
        }
        _ if expected != actual => Some(format!("{path}: expected {expected}, got {actual}")),
        _ => None,
    }
}
