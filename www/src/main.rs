//! commlens in the browser: load a graph dump, see its collectives and the planner's buckets,
//! re-plan live, share and embed. All planning and drawing is the core crate's.
//!
//! - `app`: the root component; `state`: its reducer; `components/`: one file per panel.
//! - `model`: the data the panels show, computed by the core; `url_state`: the address bar.
//! - `views`: the review pages (compare two plans, audit a transform, check ranks).
//! - `browser`: web-sys helpers; `limits`: the input-size limit; `fatal`: the panic banner.
//! - `digest`: the signature digested by WebCrypto; `warm`: the reader warmed up at start-up.

mod app;
mod browser;
mod components;
mod digest;
mod fatal;
mod limits;
mod model;
mod state;
mod url_state;
mod views;
mod warm;

/// Memory grown in large steps (see `commlens::wasm_heap`): reading a large dump no longer
/// grows it thousands of times.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: commlens::wasm_heap::Heap = commlens::wasm_heap::Heap::new();

fn main() {
    // In the signature worker (`digest::SignatureWorker`) this module only serves
    // `digest::signature_records`: there is no page.
    if web_sys::window().is_none() {
        return;
    }
    fatal::install();
    // The core's hash maps are keyed by the dump's strings: seeded with the browser's entropy,
    // a dump cannot name its nodes to collide in them (wasm has no other source of it).
    if let Some(entropy) = browser::random_u64() {
        commlens::hashing::seed_from_host(entropy);
    }
    // Started now, so that they are running when the first read hands them the signature's
    // bytes, or the dump's.
    digest::WebDigest::warm();
    digest::SignatureWorker::warm();
    // The reader's code optimised before the first dump arrives.
    warm::soon();
    // The app renders into `#app`, beside the `#fatal` banner it must never clear.
    let root = browser::document().and_then(|d| d.get_element_by_id("app"));
    // A link to a review view (compare, audit, ranks) opens that page instead.
    if views::wanted() {
        match root {
            Some(root) => yew::Renderer::<views::Views>::with_root(root).render(),
            None => yew::Renderer::<views::Views>::new().render(),
        };
        return;
    }
    match root {
        Some(root) => yew::Renderer::<app::App>::with_root(root).render(),
        None => yew::Renderer::<app::App>::new().render(),
    };
}
