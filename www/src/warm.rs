//! The reader warmed up while the page is idle.
//!
//! V8 first runs wasm on code from its baseline compiler and optimises a function once it has
//! run for a while, in background threads; a call that is already running keeps the code it
//! started with. Reading a dump is one long call, so a session's first read ran its loops on
//! baseline code: in headless Chromium a 100k-node dump read, classified and planned in about
//! 0.55 s on first sight and 0.35 s the second time (docs/performance.md). So at start-up the
//! page reads, classifies and plans a small synthetic dump the way it reads the user's, which
//! gets the hot code optimised while a link's dump downloads or the user picks a file.

use commlens::synth::{synthetic_dump, SynthSpec};

use crate::{browser, model, views};

/// Nodes of the warm-up dump: enough for the engine to optimise the reader's per-node code,
/// few enough to take a few tens of milliseconds on baseline code.
const NODES: usize = 3_000;

/// Warms up once the page has rendered and started what it was asked to load, unless the
/// page opens with something small that it reads at once.
pub fn soon() {
    let (url, _) = crate::url_state::UrlState::parse(&browser::query_string());
    if !wanted(&url) {
        return;
    }
    // A zero-delay timeout runs after the first render and the effects it started (a link's
    // fetch is then under way).
    browser::set_timeout(0, run);
}

/// Whether a warm-up can help the page `url` opens: not for an embed (a chart in a review
/// doc, whose frame's timers the browser holds back while it is out of view, so the warm-up
/// would run when the reader scrolls to it) nor for a built-in example (small, and read as
/// soon as it arrives, so the warm-up would only delay it).
fn wanted(url: &crate::url_state::UrlState) -> bool {
    !url.embed && !matches!(url.source, Some(crate::url_state::SourceRef::Example(_)))
}

fn run() {
    let _ = warm_up(browser::now_ms);
}

/// What a load runs: the read with its checks, preparing for planning, classifying, then a
/// plan and its timeline. Returns how many buckets the plan has (the outcome is not kept).
fn warm_up(now: impl Fn() -> f64) -> Result<usize, String> {
    let text = synthetic_dump(SynthSpec::with_nodes(NODES));
    let loaded = views::load_graph("warm-up", None, text.into_bytes(), None)?;
    let planned = model::plan(&loaded, &model::Settings::default(), now);
    match (planned.plan, planned.error) {
        (Some(plan), _) => Ok(plan.buckets.len()),
        (None, e) => Err(e.unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn embeds_and_examples_are_not_warmed_up_for() {
        let wanted = |query: &str| super::wanted(&crate::url_state::UrlState::parse(query).0);
        for query in [
            "",
            "?src=https://host/dump.json.gz",
            "?view=compare&src=a.json&base=b.json",
        ] {
            assert!(wanted(query), "{query}");
        }
        for query in [
            "?example=llama",
            "?src=a.json&embed=timeline",
            "?example=mlp&embed=timeline",
        ] {
            assert!(!wanted(query), "{query}");
        }
    }

    /// The warm-up goes through the whole of a load: a dump that stopped reading or planning
    /// would warm nothing up, silently.
    #[test]
    fn the_warm_up_reads_and_plans_a_real_graph() {
        let buckets = super::warm_up(|| 0.0).expect("the warm-up dump reads and plans");
        assert!(buckets > 10, "{buckets} buckets");
    }
}
