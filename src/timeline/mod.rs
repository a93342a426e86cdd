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

/// Each collective's role and its source, from the core's classifier
/// (`commlens::identity`), computed once per graph; one place, so the app and
/// `commlens render` colour alike.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    /// Indexed by graph position; `None` for nodes the classifier did not report.
    by_node: Vec<Option<(Option<std::rc::Rc<str>>, RoleSource)>>,
    /// Names of the classified nodes, shared so that each re-plan's timeline input does not
    /// copy them again.
    names: Vec<Option<std::rc::Rc<str>>>,
    /// Diagnostics as (code, node names, message).
    pub diagnostics: Vec<(String, Vec<String>, String)>,
}

impl Roles {
    /// Runs the classifier over `graph`.
    pub fn classify(graph: &crate::graph::Graph) -> Roles {
        let c = crate::identity::classify(graph);
        let mut by_node = vec![None; graph.len()];
        let mut names = vec![None; graph.len()];
        let mut shared: Vec<std::rc::Rc<str>> = Vec::new();
        for ci in &c.collectives {
            let source = match (ci.role.as_ref(), ci.source) {
                (None, _) => RoleSource::Unclassified,
                (Some(_), Some(crate::identity::Source::Inferred)) => RoleSource::Inferred,
                (Some(_), _) => RoleSource::Explicit,
            };
            let role = ci.role.as_ref().map(|r| {
                let r = r.as_str();
                match shared.iter().find(|s| &***s == r) {
                    Some(s) => s.clone(),
                    None => {
                        shared.push(std::rc::Rc::from(r));
                        shared[shared.len() - 1].clone()
                    }
                }
            });
            if let Some(slot) = by_node.get_mut(ci.node) {
                *slot = Some((role, source));
                names[ci.node] = Some(std::rc::Rc::from(graph.node(ci.node).name.as_str()));
            }
        }
        let diagnostics = c
            .diagnostics
            .iter()
            .map(|d| {
                (
                    d.code.as_str().to_string(),
                    d.nodes.clone(),
                    d.message.clone(),
                )
            })
            .collect();
        Roles {
            by_node,
            names,
            diagnostics,
        }
    }

    /// A node's name, shared when the classifier saw the node.
    pub fn name(&self, graph: &crate::graph::Graph, id: usize) -> std::rc::Rc<str> {
        match self.names.get(id) {
            Some(Some(name)) => name.clone(),
            _ => std::rc::Rc::from(graph.node(id).name.as_str()),
        }
    }

    /// A node's role: the classifier's, else (a node it did not see) the legacy tag's.
    pub fn get(
        &self,
        graph: &crate::graph::Graph,
        id: usize,
    ) -> (Option<std::rc::Rc<str>>, RoleSource) {
        match self.by_node.get(id) {
            Some(Some(r)) => r.clone(),
            _ => legacy_role(graph, id),
        }
    }
}

/// The timeline input of a plan, coloured by `roles`.
pub fn plan_timeline(
    graph: &crate::graph::Graph,
    plan: &crate::planner::BucketPlan,
    roles: &Roles,
    title: &str,
) -> TimelineInput {
    let mut input = TimelineInput::from_plan(graph, plan, roles);
    input.title = title.to_string();
    input
}

/// Default chart width in pixels (the CLI's, and the app's before it measures its window).
pub const DEFAULT_WIDTH: u32 = 1400;
