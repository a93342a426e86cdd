//! commlens in the browser: load a graph dump, see its collectives and the planner's buckets,
//! re-plan live, share and embed. All planning and drawing is the core crate's.

mod app;
mod browser;
mod model;

fn main() {
    yew::Renderer::<app::App>::new().render();
}
