//! The graph picker of a trace log: the log's post-grad graphs as `commlens graphs` lists
//! them (compile id, forward/backward, nodes, collectives), the one on screen, and what the
//! log could not say about it (the reader's warnings). The choice is kept in the link
//! (`graph=K`).

use crate::model::{LogGraphs, Shared};
use commlens::tracelog::GraphSummary;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct GraphPickerProps {
    pub log: Shared<LogGraphs>,
    /// The graph on screen.
    pub choice: usize,
    /// What the reader could not say about that graph.
    pub warnings: Vec<String>,
    pub on_choose: Callback<usize>,
}

/// One graph in words: `0 · compile 0/0 · forward · 57 nodes · 4 collectives`.
pub fn describe(g: &GraphSummary) -> String {
    let rank = g.rank.map(|r| format!(" · rank {r}")).unwrap_or_default();
    match &g.content {
        Ok(c) => format!(
            "{} · compile {}{rank} · {} · {} nodes · {} collectives",
            g.index,
            g.compile_id,
            c.kind.as_str(),
            c.nodes,
            c.collectives
        ),
        Err(_) => format!("{} · compile {}{rank} · unreadable", g.index, g.compile_id),
    }
}

fn option(g: &GraphSummary, choice: usize) -> Html {
    let (kind, nodes, collectives) = match &g.content {
        Ok(c) => (
            c.kind.as_str().to_string(),
            c.nodes.to_string(),
            c.collectives.to_string(),
        ),
        Err(_) => (String::new(), String::new(), String::new()),
    };
    html! {
        <option value={g.index.to_string()} selected={g.index == choice} disabled={g.content.is_err()}
            title={g.content.as_ref().err().cloned()} data-compile={g.compile_id.clone()}
            data-kind={kind} data-nodes={nodes} data-collectives={collectives}>
            { describe(g) }
        </option>
    }
}

#[function_component(GraphPicker)]
pub fn graph_picker(props: &GraphPickerProps) -> Html {
    let graphs = &props.log.graphs;
    let onchange = {
        let cb = props.on_choose.clone();
        Callback::from(move |e: Event| {
            let select: HtmlSelectElement = e.target_unchecked_into();
            if let Ok(k) = select.value().parse() {
                cb.emit(k);
            }
        })
    };
    let unreadable: Vec<&GraphSummary> = graphs.iter().filter(|g| g.content.is_err()).collect();
    html! {
        <section class="graphs" id="graphs" aria-label="Trace log graphs">
            <h2>{"Trace log"}</h2>
            <label for="graph">{ format!("Post-grad graph ({} in this log)", graphs.len()) }</label>
            <select id="graph" {onchange}>
                { for graphs.iter().map(|g| option(g, props.choice)) }
            </select>
            if !unreadable.is_empty() {
                <ul class="plain graph-errors">{ for unreadable.iter().map(|g| html! {
                    <li class="muted">{ format!("graph {}: ", g.index) }{ g.content.as_ref().err().cloned().unwrap_or_default() }</li>
                }) }</ul>
            }
            if !props.warnings.is_empty() {
                <details class="log-warnings">
                    <summary>{ format!("What the log does not say ({})", props.warnings.len()) }</summary>
                    <ul class="plain">{ for props.warnings.iter().map(|w| html! { <li>{ w.clone() }</li> }) }</ul>
                </details>
            }
        </section>
    }
}
