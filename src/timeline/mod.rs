//! Bucket timeline: a pure-data scene built from a plan (plus the graph's classified
//! collectives), and its SVG rendering.
//!
//! The same code serves the browser app and `commlens render`, so a picture pasted into a
//! review doc from the CLI and the one on screen agree element for element.
//!
//! * [`Collectives`] is every collective of a graph as the table shows it (lane, role,
//!   source, group, bytes), each value the core's own answer; classified once per graph.
//! * [`TimelineInput`] is what the timeline needs from a plan: buckets with their windows and
//!   members, and the planner's decisions, at graph positions, in the core's types.
//! * [`build_scene`] lays it out for a [`Viewport`] (zoom/pan) and a pixel width: lanes by
//!   phase and transport ([`Lane`]), bucket bars over the planner's window (latest input →
//!   earliest consumer) packed so they never overlap, member launch ticks under them, split
//!   marks between the buckets they separate, skipped collectives on their own lane, labels
//!   that never overlap. Past a few hundred buckets in view, lanes show columns whose height
//!   is the bytes of the largest bucket launched there.
//! * [`render_svg`] draws the scene with plotters' SVG backend; every bucket bar is wrapped in
//!   a `<g data-bucket="ID">`, every split mark in `<g data-split="REASON">`, every skipped
//!   collective in `<g data-skip="REASON">`, so tests and the app can find and count them.
//! * [`chrome_trace`] exports the same plan as Chrome-trace JSON (Perfetto opens it).

pub mod collectives;
pub mod export;
pub mod input;
pub mod lane;
pub mod palette;
pub mod scene;
pub mod svg;
pub mod text;
pub mod trace;

pub use collectives::{CollectiveRow, Collectives};
pub use export::ExportSettings;
pub use input::{BucketIn, CollectiveIn, DecisionIn, TimelineInput, UnplannedIn};
pub use lane::Lane;
pub use palette::{role_colour, Rgb};
pub use scene::{
    build_scene, build_scene_with, ExposedIn, LaneKey, Marked, SceneOptions, TimelineScene,
    Viewport,
};
pub use svg::{render_svg, render_svg_with, xml_escape, SvgMeta};
pub use trace::{chrome_trace, chrome_trace_with};

/// The timeline input of a plan, titled.
pub fn plan_timeline(
    graph: &crate::graph::Graph,
    plan: &crate::planner::BucketPlan,
    collectives: &Collectives,
    title: &str,
) -> TimelineInput {
    let mut input = TimelineInput::from_plan(graph, plan, collectives);
    input.title = title.to_string();
    input
}

/// Default chart width in pixels (the CLI's, and the app's before it measures its window).
pub const DEFAULT_WIDTH: u32 = 1400;
