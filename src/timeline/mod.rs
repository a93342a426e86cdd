//! Bucket timeline: a pure-data scene built from a plan (plus roles), and its SVG rendering.
//!
//! The same code serves the browser app and `commlens render`, so a picture pasted into a
//! review doc from the CLI and the one on screen agree element for element.
//!
//! * [`TimelineInput`] is what the timeline needs from a plan: buckets with their windows and
//!   members, and the planner's decisions, all at graph positions (node indices).
//! * [`build_scene`] lays it out for a [`Viewport`] (zoom/pan) and a pixel width: lanes by
//!   phase and kind, bucket bars over the planner's window (latest input → earliest consumer),
//!   member launch ticks, split marks between the buckets they separate, skipped collectives
//!   on their own lane. Off-screen marks are culled and sub-pixel ticks merged so a 100k-node
//!   graph stays a few thousand SVG elements.
//! * [`render_svg`] draws the scene with plotters' SVG backend; every bucket bar is wrapped in
//!   a `<g data-bucket="ID">`, every split mark in `<g data-split="REASON">`, every skipped
//!   collective in `<g data-skip="REASON">`, so tests and the app can find and count them.
//! * [`chrome_trace`] exports the same plan as Chrome-trace JSON (Perfetto opens it).

pub mod input;
pub mod palette;
pub mod scene;
pub mod svg;
pub mod trace;

pub use input::{
    legacy_role, Action, BucketIn, CollectiveIn, DecisionIn, RoleSource, TimelineInput,
};
pub use palette::{role_colour, Rgb};
pub use scene::{build_scene, LaneKey, TimelineScene, Viewport};
pub use svg::{render_svg, xml_escape};
pub use trace::chrome_trace;
