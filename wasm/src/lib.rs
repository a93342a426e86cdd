//! `commlens-wasm`: the core's plan entry point exported to JavaScript through wasm-bindgen.
//!
//! Thin on purpose (like ruff's wasm crate): no logic lives here. `cargo xtask test` builds it
//! for `wasm32-unknown-unknown`, binds it for Node (`target/wasm-node/`), and
//! `tests/wasm/conformance.mjs` checks that it prints byte for byte what the native
//! `commlens plan` prints, on every case of the shared conformance corpus.

use wasm_bindgen::prelude::*;

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
    commlens::read_and_plan_with(dump, args_json.map(str::as_bytes), mode)
        .map(|planned| planned.to_json())
        .map_err(|failure| failure.to_string())
}
