//! The collectives table: every collective start with its role, lane, group, parameter,
//! bytes, bucket and decisions; sort, search, pages. It re-renders only when its rows, the
//! filter, the search or the selection change (its props compare shared data by identity),
//! and it filters and sorts only when the rows, filter, search or order change.

use crate::model::{self, Col, PlanColumns, Shared, Sort};
use crate::url_state::Filter;
use commlens::timeline::{CollectiveRow, Collectives, TimelineInput};
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Rows per page.
pub const PAGE: usize = 100;

#[derive(Properties, PartialEq)]
pub struct TableProps {
    pub collectives: Shared<Collectives>,
    pub columns: Shared<Vec<PlanColumns>>,
    pub timeline: Shared<TimelineInput>,
    pub filter: Option<Filter>,
    pub search: AttrValue,
    /// The selected node, highlighted (and its page shown).
    pub selected: Option<u32>,
    pub on_select: Callback<u32>,
    pub on_search: Callback<String>,
}

#[function_component(Table)]
pub fn table(props: &TableProps) -> Html {
    let renders = use_mut_ref(|| 0u64);
    *renders.borrow_mut() += 1;
    let sort = use_state(Sort::default);
    // The page, with the filter, search and order it belongs to: a new one starts at page 1
    // without a second render.
    let page = use_state(|| {
        (
            0usize,
            None::<Filter>,
            AttrValue::default(),
            Sort::default(),
        )
    });
    let rows = use_memo(
        (
            props.collectives.clone(),
            props.columns.clone(),
            props.timeline.clone(),
            props.filter.clone(),
            props.search.clone(),
            *sort,
        ),
        |(collectives, columns, timeline, filter, search, sort)| {
            model::query(
                collectives,
                columns,
                timeline,
                filter.as_ref(),
                search,
                *sort,
            )
        },
    );
    let key = (props.filter.clone(), props.search.clone(), *sort);
    let same_view = page.1 == key.0 && page.2 == key.1 && page.3 == key.2;
    let set_page = {
        let page = page.clone();
        let key = key.clone();
        move |n: usize| page.set((n, key.0.clone(), key.1.clone(), key.2))
    };
    // The selection's row is shown.
    {
        let set_page = set_page.clone();
        let rows = rows.clone();
        let collectives = props.collectives.clone();
        use_effect_with(props.selected, move |selected| {
            if let Some(node) = selected {
                if let Some(i) = collectives.position(*node) {
                    if let Some(at) = rows.iter().position(|r| *r as usize == i) {
                        set_page(at / PAGE);
                    }
                }
            }
        });
    }
    let total = rows.len();
    let pages = total.div_ceil(PAGE).max(1);
    let current = if same_view { page.0.min(pages - 1) } else { 0 };
    let th = |c: Col, label: &str| {
        let active = sort.col == c;
        let aria = match (active, sort.desc) {
            (false, _) => "none",
            (true, false) => "ascending",
            (true, true) => "descending",
        };
        let mark = match (active, sort.desc) {
            (false, _) => "",
            (true, false) => " ▲",
            (true, true) => " ▼",
        };
        let onclick = {
            let sort = sort.clone();
            Callback::from(move |_: MouseEvent| {
                let desc = sort.col == c && !sort.desc;
                sort.set(Sort { col: c, desc });
            })
        };
        html! { <th aria-sort={aria}><button class="sort" aria-label={format!("Sort by {}", if label == "#" { "graph position" } else { label })} {onclick}>{ format!("{label}{mark}") }</button></th> }
    };
    let on_search = {
        let cb = props.on_search.clone();
        Callback::from(move |e: InputEvent| {
            cb.emit(e.target_unchecked_into::<HtmlInputElement>().value())
        })
    };
    let go = |to: usize| {
        let set_page = set_page.clone();
        Callback::from(move |_: MouseEvent| set_page(to))
    };
    let coll = &props.collectives;
    let timeline = &props.timeline;
    let body: Html = rows
        .iter()
        .skip(current * PAGE)
        .take(PAGE)
        .map(|&i| {
            let r = &coll.rows[i as usize];
            let cols = props.columns.get(i as usize).cloned().unwrap_or_default();
            row(
                r,
                &cols,
                timeline,
                props.selected == Some(r.node),
                &props.on_select,
            )
        })
        .collect();
    let empty = total == 0;
    html! {
        <section class="table" aria-label="Collectives" data-renders={renders.borrow().to_string()}>
            <div class="table-tools">
                <h2>{"Collectives"}</h2>
                <input id="search" class="search" type="search" aria-label="Search collectives"
                    placeholder="search name, parameter, kind, bucket_N, reason" value={props.search.clone()} oninput={on_search} />
                <span id="row-count" class="muted row-count" aria-live="polite">{ format!("{total} of {}", coll.rows.len()) }</span>
                <button aria-label="Previous page" disabled={current == 0} onclick={go(current.saturating_sub(1))}>{"‹"}</button>
                <span class="muted page">{ format!("page {} of {pages}", current + 1) }</span>
                <button aria-label="Next page" disabled={current + 1 >= pages} onclick={go(current + 1)}>{"›"}</button>
            </div>
            <table id="collectives" class="collectives">
                <thead><tr>
                    { th(Col::Pos, "#") }{ th(Col::Name, "node") }{ th(Col::Role, "role") }{ th(Col::Kind, "kind · phase") }
                    { th(Col::Group, "group") }{ th(Col::Param, "parameter") }{ th(Col::Bytes, "bytes") }{ th(Col::Bucket, "bucket") }{ th(Col::Decision, "decisions") }
                </tr></thead>
                <tbody>
                    if empty {
                        <tr class="no-match"><td colspan="9">{ no_match(&props.search, props.filter.as_ref()) }</td></tr>
                    }
                    { body }
                </tbody>
            </table>
        </section>
    }
}

fn no_match(search: &str, filter: Option<&Filter>) -> String {
    match (search.trim().is_empty(), filter) {
        (false, Some(f)) => format!(
            "No collective matches “{}” with {}.",
            search.trim(),
            f.label()
        ),
        (false, None) => format!("No collective matches “{}”.", search.trim()),
        (true, Some(f)) => format!("No collective has {}.", f.label()),
        (true, None) => "This graph has no collectives.".into(),
    }
}

fn row(
    r: &CollectiveRow,
    cols: &PlanColumns,
    timeline: &TimelineInput,
    selected: bool,
    on_select: &Callback<u32>,
) -> Html {
    let node = r.node;
    let onclick = {
        let cb = on_select.clone();
        Callback::from(move |_: MouseEvent| cb.emit(node))
    };
    let onkeydown = {
        let cb = on_select.clone();
        Callback::from(move |e: KeyboardEvent| {
            if e.key() == "Enter" || e.key() == " " {
                e.prevent_default();
                cb.emit(node);
            }
        })
    };
    let bucket = cols
        .bucket
        .and_then(|b| timeline.buckets.get(b as usize))
        .map(|b| b.short_id().to_string())
        .unwrap_or_default();
    let decisions = cols
        .decisions
        .iter()
        .map(|(a, why)| format!("{}: {}", a.as_str(), why.as_str()))
        .collect::<Vec<_>>()
        .join("; ");
    html! {
        <tr key={node} tabindex="0" aria-selected={selected.to_string()} class={classes!(selected.then_some("selected"))} {onclick} {onkeydown}>
            <td class="num">{ node }</td>
            <td class="name"><code>{ r.name.to_string() }</code></td>
            <td>{ super::role_badge(r.role.as_deref(), r.source) }</td>
            <td>{ format!("{} · {}", r.lane.transport_label(), r.lane.phase().as_str()) }</td>
            <td>{ model::group_label(r.group.as_deref()).to_string() }</td>
            <td class="param"><code>{ r.param.as_deref().unwrap_or("").to_string() }</code></td>
            <td class="num">{ r.bytes.map(commlens::timeline::scene::human_bytes).unwrap_or_default() }</td>
            <td>{ bucket }</td>
            <td class="decision">{ decisions }</td>
        </tr>
    }
}
