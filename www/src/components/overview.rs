//! The overview: counts per role, source, process group, planner decision and identity
//! diagnostic. Each count is the number of table rows its filter keeps; clicking it filters
//! the table and dims the chart.

use crate::model::{Overview as Counts, Shared};
use crate::url_state::Filter;
use commlens::timeline::role_colour;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct OverviewProps {
    pub counts: Shared<Counts>,
    pub filter: Option<Filter>,
    /// Why the planner could not plan with these arguments.
    pub plan_error: Option<AttrValue>,
    pub on_filter: Callback<Option<Filter>>,
}

#[function_component(Overview)]
pub fn overview(props: &OverviewProps) -> Html {
    let o = &props.counts;
    let item = |label: String, count: usize, f: Filter, swatch: Option<String>| {
        let active = props.filter.as_ref() == Some(&f);
        let onclick = {
            let cb = props.on_filter.clone();
            Callback::from(move |_: MouseEvent| {
                cb.emit(if active { None } else { Some(f.clone()) })
            })
        };
        html! {
            <li class={classes!(active.then_some("active"))}>
                <button class="facet" aria-pressed={active.to_string()} {onclick}>
                    if let Some(c) = swatch { <span class="swatch" style={format!("background:{c}")} aria-hidden="true"></span> }
                    <span class="facet-label">{ label }</span><span class="count">{ count }</span>
                </button>
            </li>
        }
    };
    let clear = {
        let cb = props.on_filter.clone();
        Callback::from(move |_: MouseEvent| cb.emit(None))
    };
    html! {
        <section class="overview" id="overview" aria-label="Overview">
            <h2>{"Overview"}</h2>
            if let Some(e) = &props.plan_error {
                <div class="error plan-error" role="alert">{ e.clone() }</div>
            }
            <p class="summary"><strong id="bucket-count" class="bucket-count">{ o.buckets }</strong>{" buckets · "}{ o.collectives }{" collectives"}</p>
            if let Some(f) = &props.filter {
                <p class="filter">{ format!("filter: {}", f.label()) }
                    <button onclick={clear}>{"clear"}</button></p>
            }
            <h3>{"Roles"}</h3>
            <ul class="facets roles">{ for o.roles.iter().map(|(r, n)| {
                let c = role_colour((!crate::model::is_unclassified(r)).then_some(r.as_str())).hex();
                item(r.clone(), *n, Filter::Role(r.clone()), Some(c))
            }) }</ul>
            <h3>{"Source"}</h3>
            <ul class="facets sources">{ for o.sources.iter().map(|(s, n)| item(s.clone(), *n, Filter::Source(s.clone()), None)) }</ul>
            <h3>{"Process groups"}</h3>
            <ul class="facets groups">{ for o.groups.iter().map(|(g, n)| item(g.clone(), *n, Filter::Group(g.clone()), None)) }</ul>
            <h3>{"Planner decisions"}</h3>
            if o.decisions.is_empty() { <p class="muted">{"none"}</p> } else {
                <ul class="facets reasons" id="reasons">{ for o.decisions.iter().map(|((a, r), n)| item(format!("{}: {}", a.as_str(), r.as_str()), *n, Filter::Decision(*a, *r), None)) }</ul>
            }
            <h3>{"Unmatched module paths"}</h3>
            if o.unmatched.is_empty() { <p class="muted">{"none"}</p> } else {
                <ul class="plain">{ for o.unmatched.iter().map(|u| html! { <li><code>{ u.clone() }</code></li> }) }</ul>
            }
            <h3>{"Identity diagnostics"}</h3>
            if o.diagnostics.is_empty() && o.other_diagnostics == 0 { <p class="muted">{"none reported"}</p> } else {
                <ul class="facets diagnostics" id="diagnostics">{ for o.diagnostics.iter().map(|(c, n)| item(c.as_str().to_string(), *n, Filter::Diagnostic(*c), None)) }</ul>
                if o.other_diagnostics > 0 {
                    <p class="muted">{ format!("{} more about nodes that are not collectives (see `commlens roles`)", o.other_diagnostics) }</p>
                }
            }
        </section>
    }
}
