//! `commlens-wasm`: the core's plan, plan-diff and audit entry points exported to JavaScript
//! through wasm-bindgen.
//!
//! Thin on purpose (like ruff's wasm crate): no logic lives here. `cargo xtask test` builds it
//! for `wasm32-unknown-unknown`, binds it for Node (`target/wasm-node/`), and
//! `tests/wasm/conformance.mjs` checks that it prints byte for byte what the native
//! `commlens plan` prints, on every case of the shared conformance corpus.

use wasm_bindgen::prelude::*;

/// Memory grown in large steps (see `commlens::wasm_heap`).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: commlens::wasm_heap::Heap = commlens::wasm_heap::Heap::new();

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

/// Runs when the module is instantiated: a panic prints its message through `console.error`
/// (a wasm panic otherwise surfaces only as `RuntimeError: unreachable`).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        console_error(&format!("commlens-wasm panicked: {info}"))
    }));
}

/// Plans `dump` (graph dump v1 JSON, optionally gzip-compressed) with the planner arguments
/// `args_json` (the conformance `args.json` format; `None` for the defaults).
///
/// Returns exactly what `commlens plan DUMP --args ARGS` prints on stdout; on failure throws
/// an `Error` whose message is exactly what the CLI prints on stderr.
#[wasm_bindgen]
pub fn plan_report(dump: &[u8], args_json: Option<String>) -> Result<String, JsValue> {
    plan_report_native(dump, args_json.as_deref()).map_err(|message| JsError::new(&message).into())
}

/// The same call without JavaScript types, so it can be unit-tested natively.
pub fn plan_report_native(dump: &[u8], args_json: Option<&str>) -> Result<String, String> {
    commlens::plan_report_json(dump, args_json.map(str::as_bytes))
        .map_err(|failure| failure.to_string())
}

/// `commlens diff BEFORE AFTER [--args-before A] [--args-after B] [--json]` as a function: each
/// side a dump (planned with its arguments) or a plan report. Returns exactly what the CLI
/// prints on stdout; on failure throws an `Error` whose message is the library's (the CLI
/// prefixes the file name).
#[wasm_bindgen]
pub fn plan_diff(
    before: &[u8],
    args_before: Option<String>,
    after: &[u8],
    args_after: Option<String>,
    json: bool,
) -> Result<String, JsValue> {
    plan_diff_native(
        before,
        args_before.as_deref(),
        after,
        args_after.as_deref(),
        json,
    )
    .map_err(|message| JsError::new(&message).into())
}

/// [`plan_diff`] without JavaScript types.
pub fn plan_diff_native(
    before: &[u8],
    args_before: Option<&str>,
    after: &[u8],
    args_after: Option<&str>,
    json: bool,
) -> Result<String, String> {
    use commlens::diff::{read_side, PlanDiff};
    let side = |bytes: &[u8], args: Option<&str>, which: &str| {
        read_side(bytes, args.map(str::as_bytes)).map_err(|e| format!("{which}: {e}"))
    };
    let diff = PlanDiff::new(
        side(before, args_before, "before")?,
        side(after, args_after, "after")?,
    );
    Ok(if json { diff.to_json() } else { diff.to_text() })
}

/// One dump planned with two argument sets, held as the app holds plans, so JavaScript can
/// time the diff of two plans alone (`tests/wasm/diff.mjs`), in its two steps: the plans'
/// sides ([`PlanPair::take_sides`]), then the comparison ([`PlanPair::diff_sides`]).
#[wasm_bindgen]
pub struct PlanPair {
    graph: commlens::Graph,
    before: commlens::BucketPlan,
    after: commlens::BucketPlan,
    sides: Option<(commlens::diff::PlanSide, commlens::diff::PlanSide)>,
}

#[wasm_bindgen]
impl PlanPair {
    #[wasm_bindgen(constructor)]
    pub fn new(
        dump: &[u8],
        args_before: Option<String>,
        args_after: Option<String>,
    ) -> Result<PlanPair, JsValue> {
        let error = |e: commlens::PlanFailure| JsValue::from(JsError::new(&e.to_string()));
        let (graph, before) =
            commlens::read_and_plan(dump, None, args_before.as_deref().map(str::as_bytes))
                .map_err(error)?;
        let args = match args_after.as_deref() {
            Some(text) => Some(
                commlens::parse_args_json(text.as_bytes())
                    .map_err(|m| JsValue::from(JsError::new(&m)))?,
            ),
            None => None,
        };
        let after = commlens::planner::plan(&graph, &commlens::resolve_args(&graph, args.as_ref()))
            .map_err(|e| JsValue::from(JsError::new(&e.to_string())))?;
        Ok(PlanPair {
            graph,
            before,
            after,
            sides: None,
        })
    }

    /// Step 1: each plan's side (`PlanSide::from_plan`), kept for [`PlanPair::diff_sides`];
    /// returns the number of bucket members of both.
    pub fn take_sides(&mut self) -> usize {
        use commlens::diff::PlanSide;
        let before = PlanSide::from_plan(&self.before, &self.graph);
        let after = PlanSide::from_plan(&self.after, &self.graph);
        let members = before.members.len() + after.members.len();
        self.sides = Some((before, after));
        members
    }

    /// Step 2: `PlanDiff::new` on the sides of step 1 (taken again if already used); returns
    /// the counts `regrouped only_before only_after same removed added`.
    pub fn diff_sides(&mut self) -> String {
        if self.sides.is_none() {
            self.take_sides();
        }
        let Some((before, after)) = self.sides.take() else {
            return String::new();
        };
        let diff = commlens::diff::PlanDiff::new(before, after);
        let c = diff.counts();
        format!(
            "{} {} {} {} {} {}",
            c.regrouped,
            c.only_before,
            c.only_after,
            c.same,
            diff.removed.len(),
            diff.added.len()
        )
    }

    /// The diff's JSON form (what `commlens diff --json` prints).
    pub fn diff_json(&self) -> String {
        use commlens::diff::{PlanDiff, PlanSide};
        PlanDiff::new(
            PlanSide::from_plan(&self.before, &self.graph),
            PlanSide::from_plan(&self.after, &self.graph),
        )
        .to_json()
    }
}

/// A synthetic Llama-like dump of about `nodes` nodes (`commlens::synth`), for the scale
/// figures of `tests/wasm/diff.mjs`.
#[wasm_bindgen]
pub fn synthetic_dump(nodes: usize) -> String {
    commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(nodes))
}

/// Plans `dump` with its FSDP tags taken as `tags` says: `"dump"` (as written, the reference's
/// behaviour: the same as [`plan_report`]) or `"roles"` (derived from semantic roles, for graphs
/// without tags; the report then has `"tags": "roles"` and `"derived_tags"`).
///
/// Returns exactly what `commlens plan DUMP --args ARGS --tags TAGS` prints on stdout.
#[wasm_bindgen]
pub fn plan_report_with_tags(
    dump: &[u8],
    args_json: Option<String>,
    tags: &str,
) -> Result<String, JsValue> {
    plan_report_with_tags_native(dump, args_json.as_deref(), tags)
        .map_err(|message| JsError::new(&message).into())
}

/// [`plan_report_with_tags`] without JavaScript types.
pub fn plan_report_with_tags_native(
    dump: &[u8],
    args_json: Option<&str>,
    tags: &str,
) -> Result<String, String> {
    let mode = commlens::TagMode::parse(tags)
        .ok_or_else(|| format!("tags is \"dump\" or \"roles\", not {tags:?}"))?;
    commlens::read_and_plan_with(dump, None, args_json.map(str::as_bytes), mode)
        .map(|planned| planned.to_json())
        .map_err(|failure| failure.to_string())
}

/// `commlens audit BEFORE AFTER [--json]` as a function: what a transform did to each
/// collective's identity. Each side a dump or a trace log (`graph` picks a log's graph).
/// Returns exactly what the CLI prints on stdout; on failure throws an `Error` naming the side.
#[wasm_bindgen]
pub fn audit_report(
    before: &[u8],
    after: &[u8],
    graph: Option<usize>,
    json: bool,
) -> Result<String, JsValue> {
    audit_report_native(before, after, graph, json).map_err(|message| JsError::new(&message).into())
}

/// [`audit_report`] without JavaScript types.
pub fn audit_report_native(
    before: &[u8],
    after: &[u8],
    graph: Option<usize>,
    json: bool,
) -> Result<String, String> {
    let read = |bytes: &[u8], which: &str| {
        commlens::input::read_graph(bytes, graph).map_err(|e| format!("{which}: {e}"))
    };
    let before = read(before, "before")?;
    let after = read(after, "after")?;
    let audit = commlens::identity::audit(&before, &after);
    let report = commlens::identity::json::AuditReport {
        before,
        after,
        audit,
    };
    Ok(if json {
        report.to_json()
    } else {
        report.to_text()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binding prints what the core's audit report prints (the CLI's output).
    #[test]
    fn audit_report_is_the_cores() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/identity/cases");
        let before = std::fs::read(dir.join("bucketing_mixed_role.before.json")).unwrap();
        let after = std::fs::read(dir.join("bucketing_mixed_role.after.json")).unwrap();
        let direct = commlens::identity::json::AuditReport::from_dumps(&before, &after).unwrap();
        assert_eq!(
            audit_report_native(&before, &after, None, true).unwrap(),
            direct.to_json()
        );
        assert_eq!(
            audit_report_native(&before, &after, None, false).unwrap(),
            direct.to_text()
        );
        let e = audit_report_native(b"{", &after, None, true).unwrap_err();
        assert!(e.starts_with("before: "), "{e}");
    }
}
