//! The reader warmed up while the page is idle.
//!
//! V8 first runs wasm on code from its baseline compiler and optimises a function once it has
//! run for a while, in background threads; a call that is already running keeps the code it
//! started with. Reading a dump is one long call, so a session's first read ran its loops on
//! baseline code: in headless Chromium a 100k-node dump read, classified and planned in about
//! 0.55 s on first sight and 0.35 s the second time (docs/performance.md). So at start-up the
//! page reads, classifies and plans a small synthetic dump the way it reads the user's (its
//! signature digested by the browser's worker where a load's will be, whose first digest also
//! starts WebCrypto up), and draws the plan's timeline as the chart does, which gets the hot
//! code optimised while a link's dump downloads or the user picks a file.

use commlens::synth::{synthetic_dump, SynthSpec};
use commlens::timeline::{build_scene, render_svg, Viewport, DEFAULT_WIDTH};

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
    wasm_bindgen_futures::spawn_local(async {
        let _ = warm_up(browser::now_ms).await;
    });
}

/// What a load runs: the read with its checks (the signature digested where a load's is),
/// preparing for planning, classifying, then a plan, its timeline and the chart's drawing of
/// it. Returns how many buckets the plan has and how long the drawing is (the outcome is not
/// kept).
async fn warm_up(now: impl Fn() -> f64) -> Result<(usize, usize), String> {
    let text = synthetic_dump(SynthSpec::with_nodes(NODES));
    let loaded = views::load_graph_digested("warm-up", None, text.into_bytes(), None).await?;
    let planned = model::plan(&loaded, &model::Settings::default(), now);
    let buckets = match (&planned.plan, planned.error) {
        (Some(plan), _) => plan.buckets.len(),
        (None, e) => return Err(e.unwrap_or_default()),
    };
    let scene = build_scene(
        &planned.timeline,
        Viewport::full(planned.timeline.node_count),
        DEFAULT_WIDTH,
    );
    Ok((buckets, render_svg(&scene).len()))
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

    /// The warm-up goes through the whole of a load: a dump that stopped reading, planning or
    /// drawing would warm nothing up, silently. (Natively there is no browser to digest the
    /// signature, so the warm-up is ready at once.)
    #[test]
    fn the_warm_up_reads_plans_and_draws_a_real_graph() {
        let mut warm_up = std::pin::pin!(super::warm_up(|| 0.0));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(outcome) = std::future::Future::poll(warm_up.as_mut(), &mut cx)
        else {
            panic!("a native warm-up waited");
        };
        let (buckets, svg) = outcome.expect("the warm-up dump reads, plans and draws");
        assert!(buckets > 10, "{buckets} buckets");
        assert!(svg > 10_000, "a drawing of {svg} bytes");
    }
}
