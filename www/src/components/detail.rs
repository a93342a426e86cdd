//! The detail of the selection: a bucket (members, window, rule, the splits around it and
//! what caused them) or a node (op, arguments, inputs, users, metadata, and in plain words why
//! the planner skipped, split or bucketed it). `compact` (the embed) shows the why only.

use crate::model::{CostView, Loaded, Planned, Shared};
use crate::state::Selection;
use commlens::planner::{Action, Reason};
use commlens::timeline::scene::{bucket_title, human_bytes};
use commlens::timeline::DecisionIn;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct DetailProps {
    pub loaded: Shared<Loaded>,
    pub planned: Shared<Planned>,
    pub selection: Selection,
    #[prop_or_default]
    pub compact: bool,
    /// A link to the full app at this view (the embed's).
    #[prop_or_default]
    pub open_url: Option<AttrValue>,
    pub on_select: Callback<Selection>,
    /// The time estimates, when shown: a bucket's estimated time and the compute that waits
    /// for it.
    #[prop_or_default]
    pub cost: Option<Shared<CostView>>,
}

/// A decision in plain words.
pub fn explain(action: Action, reason: Reason) -> String {
    let head = match action {
        Action::Skip => "Skipped",
        Action::Split => "Started a new bucket",
        Action::Singleton => "Kept as a singleton",
    };
    format!("{head} ({}): {}.", reason.as_str(), reason.explain())
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[function_component(Detail)]
pub fn detail(props: &DetailProps) -> Html {
    let loaded = &props.loaded;
    let timeline = &props.planned.timeline;
    let node_button = |id: usize| {
        let name = loaded.graph.node(id).name.clone();
        let cb = props.on_select.clone();
        let onclick = Callback::from(move |_: MouseEvent| cb.emit(Selection::Node(id as u32)));
        html! { <button class="link" {onclick}>{ name }</button> }
    };
    let bucket_button = |b: usize| {
        let label = timeline.buckets[b].short_id().to_string();
        let cb = props.on_select.clone();
        let sel = Selection::of_bucket(timeline, b);
        let onclick = Callback::from(move |_: MouseEvent| cb.emit(sel));
        html! { <button class="link" {onclick}>{ label }</button> }
    };
    // A split in words, naming what stopped the bucket.
    let split_words = |d: &DecisionIn| -> Html {
        let before = d.previous.and_then(|p| timeline.bucket_of(p));
        html! {
            <li>
                { format!("Split ({}): ", d.reason.as_str()) }
                { node_button(d.node as usize) }
                { " is not bucketed with " }
                if let Some(p) = d.previous { { node_button(p as usize) } }
                if let Some(b) = before { {" ("}{ bucket_button(b) }{")"} }
                { format!(": {}.", d.reason.explain()) }
                if let (Some(cause), Some(name)) = (d.cause, &d.cause_name) {
                    <span class="cause">{" Caused by "}{ node_button(cause as usize) }{ format!(" (#{cause}{}), between the members.", if **name != loaded.graph.node(cause as usize).name { format!(", {name}") } else { String::new() }) }</span>
                }
            </li>
        }
    };
    let close = {
        let cb = props.on_select.clone();
        Callback::from(move |_: MouseEvent| cb.emit(Selection::None))
    };
    let footer = html! {
        <p class="detail-actions">
            if let Some(url) = &props.open_url {
                <a class="open-full" href={url.clone()} target="_blank" rel="noopener">{"Open in commlens ↗"}</a>
            }
            <button class="close" onclick={close}>{"Close"}</button>
        </p>
    };
    let bucket = props
        .selection
        .bucket(timeline)
        .filter(|_| matches!(props.selection, Selection::Bucket { .. }));
    if let Some(bi) = bucket {
        let b = &timeline.buckets[bi];
        let singleton = timeline.singletons.get(bi).copied().flatten();
        let role = b.role().map(|r| r.to_string());
        let first = b.members.iter().map(|m| m.node).min().unwrap_or(0);
        let splits_before: Vec<&DecisionIn> = timeline
            .decisions
            .iter()
            .filter(|d| {
                d.action == Action::Split
                    && timeline.bucket_of(d.node) == Some(bi)
                    && d.node == first
            })
            .collect();
        let splits_after: Vec<&DecisionIn> = timeline
            .decisions
            .iter()
            .filter(|d| {
                d.action == Action::Split
                    && d.previous.and_then(|p| timeline.bucket_of(p)) == Some(bi)
            })
            .collect();
        return html! {
            <section class="detail" id="detail" aria-label="Detail" aria-live="polite">
                <h2>{ format!("Bucket {}", b.short_id()) }</h2>
                <p>{ super::role_badge(role.as_deref(), b.members.first().and_then(|m| m.source)) }
                   { format!(" {} · {} member(s) · {}", b.lane.label(), b.members.len(), human_bytes(b.size_bytes)) }</p>
                if let Some((us, algo)) = props.cost.as_ref().and_then(|c| c.buckets.get(bi).copied()) {
                    <p class="estimate" id="bucket-estimate">{ format!(
                        "Estimated {} ({}); compute waits {} for it in the planned step (model estimates).",
                        commlens::cost::report::us(us),
                        algo.unwrap_or("the model cannot time it"),
                        commlens::cost::report::us(props.cost.as_ref().map_or(0.0, |c| c.exposed.iter().filter(|e| e.waits_for == b.short_id()).map(|e| e.us).sum())),
                    ) }</p>
                }
                <ul class="plain why">
                    if let Some(r) = singleton { <li>{ explain(Action::Singleton, r) }</li> }
                    { for splits_before.iter().map(|d| split_words(d)) }
                    { for splits_after.iter().map(|d| split_words(d)) }
                </ul>
                if !props.compact {
                    <pre class="wrap">{ bucket_title(b, singleton, role.as_deref()) }</pre>
                }
                <h3>{"Members"}</h3>
                <ul class="plain">{ for b.members.iter().map(|m| html! {
                    <li>{ node_button(m.node as usize) }{ format!(" #{} · {} · {}", m.node, m.param_name.as_deref().unwrap_or(""), human_bytes(m.size_bytes)) }</li>
                }) }</ul>
                { footer }
            </section>
        };
    }
    let id = match props.selection {
        Selection::Node(n) | Selection::Bucket { anchor: n } => n as usize,
        Selection::None => return html! {},
    };
    if id >= loaded.graph.len() {
        return html! {
            <section class="detail" id="detail" aria-label="Detail"><p>{ format!("Node #{id} is not in this graph ({} nodes).", loaded.graph.len()) }</p>{ footer }</section>
        };
    }
    let node = loaded.graph.node(id);
    let decisions: Vec<&DecisionIn> = timeline
        .decisions
        .iter()
        .filter(|d| d.node as usize == id)
        .collect();
    let in_bucket = timeline.bucket_of(id as u32);
    let row = loaded.collectives.get(id);
    let caused: Vec<&DecisionIn> = timeline
        .decisions
        .iter()
        .filter(|d| d.cause == Some(id as u32))
        .collect();
    html! {
        <section class="detail" id="detail" aria-label="Detail" aria-live="polite">
            <h2>{ format!("Node #{id}: ") }<code>{ node.name.clone() }</code></h2>
            <p><span class="muted">{"op "}</span><code>{ node.op.as_str() }</code>
               <span class="muted">{" target "}</span><code>{ node.target.to_string() }</code></p>
            if let Some(r) = row {
                <p>{ super::role_badge(r.role.as_deref(), r.source) }
                   { format!(" {} · group {} · {}", r.lane.label(), crate::model::group_label(r.group.as_deref()), r.bytes.map(human_bytes).unwrap_or_else(|| "bytes unknown".into())) }</p>
                <dl class="comm" id="comm-facts">
                    <dt>{"transport"}</dt><dd>{ r.lane.transport_label() }</dd>
                    <dt>{"api"}</dt><dd>{ r.api.as_str() }{ format!(" ({})", r.op) }</dd>
                    <dt>{"group"}</dt><dd>{ crate::model::group_label(r.group.as_deref()).to_string() }</dd>
                    <dt>{"completes at"}</dt><dd>{ match r.completion { Some(c) => node_button(c as usize), None => html! { {"(no completion node in the graph)"} } } }</dd>
                    <dt>{"phase"}</dt><dd>{ r.lane.phase().as_str() }</dd>
                    <dt>{"role"}</dt><dd>{ r.role_label().to_string() }{ r.source.map(|s| format!(" ({})", s.as_str())).unwrap_or_default() }</dd>
                </dl>
            }
            <h3>{"Why"}</h3>
            <ul class="plain why">
                { for decisions.iter().map(|d| if d.action == Action::Split { split_words(d) } else { html! { <li>{ explain(d.action, d.reason) }</li> } }) }
                if let Some(b) = in_bucket {
                    <li>{"Bucketed in "}{ bucket_button(b) }
                        { format!(" with {} member(s): it shares the bucket's group, kind, dtype, device, phase and scope, and fits its window (#{} → #{}).",
                            timeline.buckets[b].members.len(), timeline.buckets[b].latest_input, timeline.buckets[b].earliest_consumer) }</li>
                } else if decisions.is_empty() {
                    <li>{ if row.is_some() { "The planner does not consider this collective (not tagged by the FSDP pass): the timeline shows it on the “not planned” lane, from launch to completion." } else { "Not a collective." } }</li>
                }
                { for caused.iter().map(|d| html! {
                    <li>{"It stopped a bucket: "}{ node_button(d.node as usize) }{ format!(" could not join the bucket before it ({}).", d.reason.as_str()) }</li>
                }) }
            </ul>
            if !props.compact {
                { full_node(loaded, id, &node_button) }
            }
            { footer }
        </section>
    }
}

/// Arguments, inputs, users, metadata and diagnostics of a node.
fn full_node(loaded: &Loaded, id: usize, node_button: &dyn Fn(usize) -> Html) -> Html {
    let node = loaded.graph.node(id);
    let diagnostics: Vec<_> = loaded
        .collectives
        .diagnostics
        .iter()
        .filter(|d| d.nodes.contains(&node.name))
        .collect();
    html! {
        <>
            if !diagnostics.is_empty() {
                <h3>{"Identity diagnostics"}</h3>
                <ul class="plain">{ for diagnostics.iter().map(|d| html! {
                    <li><code>{ d.code.as_str() }</code>{" "}{ d.message.clone() }</li>
                }) }</ul>
            }
            <h3>{"Arguments"}</h3>
            <ol class="args">{ for node.args.iter().map(|a| html! { <li><code>{ clip(&a.py_repr(), 400) }</code></li> }) }</ol>
            if !node.kwargs.is_empty() {
                <ul class="plain">{ for node.kwargs.iter().map(|(k, v)| html! { <li><code>{ format!("{k}={}", clip(&v.py_repr(), 400)) }</code></li> }) }</ul>
            }
            <h3>{"Inputs"}</h3>
            <p class="nodes">{ for loaded.graph.inputs(id).iter().map(|&i| node_button(i)) }</p>
            <h3>{"Users"}</h3>
            <p class="nodes">{ for loaded.graph.users(id).iter().take(50).map(|&i| node_button(i)) }</p>
            <h3>{"Metadata"}</h3>
            <table class="meta">{ for node.meta.iter().map(|(k, v)| html! {
                <tr><th>{ k.to_string() }</th><td><code>{ clip(&v.py_repr(), 600) }</code></td></tr>
            }) }</table>
        </>
    }
}
