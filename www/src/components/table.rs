//! The collectives table: every collective start with its role, lane, group, parameter,
//! bytes, bucket and decisions; sort, search, pages. It re-renders only when its rows, the
//! filter, the search or the selection change (its props compare shared data by identity),
//! and it filters and sorts only when the rows, filter, search or order change.
//!
//! The page's rows are written as HTML text into the body (a [`NodeRef`]), with one click and
//! one key listener on the body for all of them: built by yew, a page of 100 rows was about
//! 40 ms of a 100k-node load's 500 ms in the browser (docs/performance.md). A change of the
//! selection alone marks the rows in place, so the focused row keeps its focus.

use crate::model::{self, Col, PlanColumns, Shared, Sort};
use crate::url_state::Filter;
use commlens::timeline::{CollectiveRow, Collectives, TimelineInput};
use gloo_events::EventListener;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement};
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
    let mut body = String::new();
    if total == 0 {
        body.push_str("<tr class=\"no-match\"><td colspan=\"9\">");
        super::push_html_escaped(&mut body, &no_match(&props.search, props.filter.as_ref()));
        body.push_str("</td></tr>");
    }
    for &i in rows.iter().skip(current * PAGE).take(PAGE) {
        let cols = props.columns.get(i as usize);
        push_row(&mut body, &coll.rows[i as usize], cols, &props.timeline);
    }
    let tbody = use_node_ref();
    // The body's text, as last written: a render that changes only the selection keeps it.
    let written = use_mut_ref(String::new);
    {
        let tbody = tbody.clone();
        use_effect_with((body, props.selected), move |(body, selected)| {
            if let Some(el) = tbody.cast::<Element>() {
                if *written.borrow() != *body {
                    el.set_inner_html(body);
                    *written.borrow_mut() = body.clone();
                }
                mark_selected(&el, *selected);
            }
        });
    }
    {
        let tbody = tbody.clone();
        use_effect_with(props.on_select.clone(), move |on_select| {
            let listeners = tbody
                .cast::<Element>()
                .map(|el| listen_rows(&el, on_select));
            move || drop(listeners)
        });
    }
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
                <tbody ref={tbody}></tbody>
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

/// One row of the body: its node's position in `data-node`, for the body's listeners.
fn push_row(
    out: &mut String,
    r: &CollectiveRow,
    cols: Option<&PlanColumns>,
    timeline: &TimelineInput,
) {
    use std::fmt::Write;
    let esc = super::push_html_escaped;
    let _ = write!(
        out,
        "<tr data-node=\"{0}\" tabindex=\"0\" aria-selected=\"false\"><td class=\"num\">{0}</td><td class=\"name\"><code>",
        r.node
    );
    esc(out, &r.name);
    out.push_str("</code></td><td>");
    super::push_role_badge(out, r.role.as_deref(), r.source);
    let _ = write!(
        out,
        "</td><td>{} · {}</td><td>",
        r.lane.transport_label(),
        r.lane.phase().as_str()
    );
    esc(out, model::group_label(r.group.as_deref()));
    out.push_str("</td><td class=\"param\"><code>");
    esc(out, r.param.as_deref().unwrap_or(""));
    out.push_str("</code></td><td class=\"num\">");
    if let Some(bytes) = r.bytes {
        out.push_str(&commlens::timeline::scene::human_bytes(bytes));
    }
    out.push_str("</td><td>");
    let bucket = cols
        .and_then(|c| c.bucket)
        .and_then(|b| timeline.buckets.get(b as usize));
    if let Some(b) = bucket {
        esc(out, b.short_id());
    }
    out.push_str("</td><td class=\"decision\">");
    for (k, (action, why)) in cols.map_or(&[][..], |c| &c.decisions).iter().enumerate() {
        if k > 0 {
            out.push_str("; ");
        }
        let _ = write!(out, "{}: {}", action.as_str(), why.as_str());
    }
    out.push_str("</td></tr>");
}

/// Marks the row of node `selected` (and no other) as selected.
fn mark_selected(tbody: &Element, selected: Option<u32>) {
    let set = |row: &Element, on: bool| {
        let _ = row.set_attribute("aria-selected", if on { "true" } else { "false" });
        // A row's only class.
        let _ = if on {
            row.set_attribute("class", "selected")
        } else {
            row.remove_attribute("class")
        };
    };
    if let Ok(rows) = tbody.query_selector_all("tr.selected") {
        for k in 0..rows.length() {
            if let Some(row) = rows.item(k).and_then(|n| n.dyn_into::<Element>().ok()) {
                set(&row, false);
            }
        }
    }
    if let Some(node) = selected {
        if let Ok(Some(row)) = tbody.query_selector(&format!("tr[data-node=\"{node}\"]")) {
            set(&row, true);
        }
    }
}

/// A click on a row, or Enter or Space on a focused one, selects its node.
fn listen_rows(tbody: &Element, on_select: &Callback<u32>) -> [EventListener; 2] {
    fn row_node(target: Option<web_sys::EventTarget>) -> Option<u32> {
        let row = target?
            .dyn_into::<Element>()
            .ok()?
            .closest("tr[data-node]")
            .ok()??;
        row.get_attribute("data-node")?.parse().ok()
    }
    let click = {
        let cb = on_select.clone();
        EventListener::new(tbody, "click", move |e| {
            if let Some(node) = row_node(e.target()) {
                cb.emit(node);
            }
        })
    };
    let keydown = {
        let cb = on_select.clone();
        EventListener::new_with_options(
            tbody,
            "keydown",
            gloo_events::EventListenerOptions::enable_prevent_default(),
            move |e| {
                let Some(key) = e.dyn_ref::<KeyboardEvent>().map(KeyboardEvent::key) else {
                    return;
                };
                if key != "Enter" && key != " " {
                    return;
                }
                if let Some(node) = row_node(e.target()) {
                    e.prevent_default();
                    cb.emit(node);
                }
            },
        )
    };
    [click, keydown]
}
