//! Audit a transform (`?src=AFTER&before=BEFORE`): each collective of the graph before is kept,
//! combined, dropped by a rule or lost, with its role before and after, the diagnostics, and
//! coverage before and after. The audit is the core's ([`commlens::identity::audit`], what
//! `commlens audit` prints, and its JSON is downloadable byte for byte); this file lays it out.

use super::{read_input, FilePick, Input, ViewsAction, ViewsState, ViewsUrl};
use crate::browser;
use crate::components::role_badge;
use crate::model::Shared;
use commlens::graph::Graph;
use commlens::identity::json::AuditReport;
use commlens::identity::{AuditStatus, CollectiveIdentity, Counts, Coverage};
use yew::prelude::*;

/// The statuses in the order the view lists them.
pub const STATUSES: [AuditStatus; 5] = [
    AuditStatus::Kept,
    AuditStatus::Combined,
    AuditStatus::Dropped,
    AuditStatus::Lost,
    AuditStatus::ContextChanged,
];

/// An audit as the view shows it.
pub struct AuditView {
    pub before_label: String,
    pub after_label: String,
    pub report: AuditReport,
}

impl AuditView {
    /// Reads both graphs (dumps or trace logs, through the core's `input`) and audits.
    pub fn new(
        before: (&str, &[u8]),
        after: (&str, &[u8]),
        graph: Option<usize>,
    ) -> Result<AuditView, String> {
        let read = |(label, bytes): (&str, &[u8])| {
            commlens::input::read_graph(bytes, super::choice(bytes, graph))
                .map_err(|e| super::input_error(label, e))
        };
        let before_graph: Graph = read(before)?;
        let after_graph: Graph = read(after)?;
        let audit = commlens::identity::audit(&before_graph, &after_graph);
        Ok(AuditView {
            before_label: before.0.to_string(),
            after_label: after.0.to_string(),
            report: AuditReport {
                before: before_graph,
                after: after_graph,
                audit,
            },
        })
    }

    /// How many collectives have each status, in [`STATUSES`] order.
    pub fn status_counts(&self) -> Vec<(AuditStatus, usize)> {
        STATUSES
            .iter()
            .map(|&s| {
                (
                    s,
                    self.report
                        .audit
                        .entries
                        .iter()
                        .filter(|e| e.status == s)
                        .count(),
                )
            })
            .collect()
    }
}

fn run(
    dispatch: UseReducerDispatcher<ViewsState>,
    before: Input,
    after: Input,
    limit_mb: Option<u64>,
    graph: Option<usize>,
    linkable: bool,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let started = browser::now_ms();
        dispatch.dispatch(ViewsAction::Busy("reading the graph before…".into()));
        let before = match read_input(&before, limit_mb).await {
            Ok(b) => b,
            Err(e) => return dispatch.dispatch(ViewsAction::Failed(e)),
        };
        dispatch.dispatch(ViewsAction::Busy("reading the graph after…".into()));
        let after = match read_input(&after, limit_mb).await {
            Ok(a) => a,
            Err(e) => return dispatch.dispatch(ViewsAction::Failed(e)),
        };
        dispatch.dispatch(ViewsAction::Busy("auditing…".into()));
        browser::yield_now().await;
        match AuditView::new((&before.0, &before.2), (&after.0, &after.2), graph) {
            Ok(a) => dispatch.dispatch(ViewsAction::Audited(Shared::new(a), linkable, started)),
            Err(e) => dispatch.dispatch(ViewsAction::Failed(e)),
        }
    });
}

/// Starts the audit a link asks for.
pub fn start_from_link(dispatch: UseReducerDispatcher<ViewsState>, url: &ViewsUrl) {
    if let (Some(_), None) = (&url.before, &url.main.source) {
        dispatch.dispatch(ViewsAction::Failed(
            "the link names the graph before (before=) but not the graph after: add src=URL".into(),
        ));
        return;
    }
    if let (Some(before), Some(after)) = (url.before.clone(), url.main.source.clone()) {
        run(
            dispatch,
            Input::Source(before),
            Input::Source(after),
            url.main.limit_mb,
            url.graph,
            true,
        );
    }
}

/// The audit view.
pub fn page(state: &ViewsState, dispatch: &UseReducerDispatcher<ViewsState>) -> Html {
    match &state.audit {
        Some(a) => html! { <AuditPanels audit={a.clone()} /> },
        None => html! { <AuditPicker dispatch={dispatch.clone()} /> },
    }
}

fn role_of(c: Option<&CollectiveIdentity>) -> Html {
    match c {
        Some(c) => role_badge(c.role.as_ref().map(|r| r.as_str()), c.source),
        None => html! { <span class="muted">{"—"}</span> },
    }
}

#[derive(Properties, PartialEq)]
struct AuditPanelsProps {
    audit: Shared<AuditView>,
}

#[function_component(AuditPanels)]
fn audit_panels(props: &AuditPanelsProps) -> Html {
    let filter = use_state(|| None::<AuditStatus>);
    let view = &props.audit;
    let r = &view.report;
    let a = &r.audit;
    let download = {
        let view = view.clone();
        Callback::from(move |_: MouseEvent| {
            if let Err(e) =
                browser::download("audit.json", "application/json", &view.report.to_json())
            {
                web_sys::console::error_1(&e.into());
            }
        })
    };
    let facet = |status: AuditStatus, n: usize| {
        let active = *filter == Some(status);
        let onclick = {
            let filter = filter.clone();
            Callback::from(move |_: MouseEvent| {
                filter.set(if active { None } else { Some(status) })
            })
        };
        html! {
            <li><button class={classes!("facet", status.as_str())} data-status={status.as_str()} aria-pressed={active.to_string()} {onclick}>
                <span class="facet-label">{ status.as_str() }</span><span class="count">{ n }</span>
            </button></li>
        }
    };
    let entries = a
        .entries
        .iter()
        .filter(|e| filter.is_none_or(|f| e.status == f));
    html! {
        <>
            <section class="audit-summary" id="audit-summary" aria-label="Audit summary">
                <h2>{ format!("{} → {}", view.before_label, view.after_label) }</h2>
                <p>{ format!("{} collectives before, {} after; {} new after.",
                    a.entries.len(), a.after.collectives.len(), a.new.len()) }</p>
                <ul class="facets statuses">{ for view.status_counts().into_iter().map(|(s, n)| facet(s, n)) }</ul>
                <p><button id="export-audit" onclick={download}>{"Download the audit (commlens audit --json)"}</button></p>
            </section>
            <section class="audit-entries" aria-label="Collectives before and after">
                <h2>{"Collectives"}</h2>
                <table class="audit-table" id="audit-table">
                    <thead><tr><th>{"status"}</th><th>{"before"}</th><th>{"role before"}</th><th>{"after"}</th><th>{"role after"}</th><th>{"rule"}</th><th>{"matched by"}</th></tr></thead>
                    <tbody>
                        { for entries.map(|e| {
                            let into: Vec<String> = e.into.iter().map(|&id| r.after.node(id).name.clone()).collect();
                            html! {
                                <tr class={classes!("audit-entry", e.status.as_str())} data-status={e.status.as_str()}>
                                    <td><span class={classes!("audit-status", e.status.as_str())}>{ e.status.as_str() }</span></td>
                                    <td><code>{ r.before.node(e.node).name.clone() }</code></td>
                                    <td>{ role_of(a.before.get(e.node)) }</td>
                                    <td>if into.is_empty() { <span class="muted">{"—"}</span> } else { <code>{ into.join(", ") }</code> }</td>
                                    <td>{ role_of(e.into.first().and_then(|&id| a.after.get(id))) }</td>
                                    <td>{ e.rule.unwrap_or("") }</td>
                                    <td>{ e.matched_by.clone().unwrap_or_default() }</td>
                                </tr>
                            }
                        }) }
                        if filter.is_none() {
                            { for a.new.iter().map(|&id| html! {
                                <tr class="audit-entry new" data-status="new">
                                    <td><span class="audit-status new">{"new"}</span></td>
                                    <td><span class="muted">{"—"}</span></td><td></td>
                                    <td><code>{ r.after.node(id).name.clone() }</code></td>
                                    <td>{ role_of(a.after.get(id)) }</td><td></td><td></td>
                                </tr>
                            }) }
                        }
                    </tbody>
                </table>
            </section>
            <section class="audit-diagnostics" id="audit-diagnostics" aria-label="Diagnostics">
                <h2>{ format!("Diagnostics ({})", a.diagnostics.len()) }</h2>
                if a.diagnostics.is_empty() { <p class="muted">{"none"}</p> } else {
                    <ul class="plain diagnostics">{ for a.diagnostics.iter().map(|d| html! {
                        <li data-code={d.code.as_str()}><strong>{ d.code.as_str() }</strong>{": "}{ d.message.clone() }
                            <br /><span class="muted">{ format!("evidence: {}", d.evidence) }</span></li>
                    }) }</ul>
                }
            </section>
            <section class="audit-coverage" id="audit-coverage" aria-label="Coverage before and after">
                <h2>{"Coverage before → after"}</h2>
                { coverage_table(&a.before.coverage, &a.after.coverage) }
            </section>
        </>
    }
}

fn counts_text(c: Option<&Counts>) -> String {
    match c {
        Some(c) => format!(
            "{} explicit · {} inferred · {} unclassified",
            c.explicit, c.inferred, c.unclassified
        ),
        None => "—".into(),
    }
}

/// Coverage side by side: overall, per role, per process group.
fn coverage_table(before: &Coverage, after: &Coverage) -> Html {
    let mut rows: Vec<(String, Option<&Counts>, Option<&Counts>)> =
        vec![("all".into(), Some(&before.all), Some(&after.all))];
    for (prefix, b, a) in [
        ("role", &before.by_role, &after.by_role),
        ("group", &before.by_group, &after.by_group),
    ] {
        for key in b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))) {
            rows.push((format!("{prefix} {key}"), b.get(key), a.get(key)));
        }
    }
    html! {
        <table class="coverage-table">
            <thead><tr><th></th><th>{"before"}</th><th>{"after"}</th></tr></thead>
            <tbody>{ for rows.iter().map(|(name, b, a)| html! {
                <tr class={classes!((b != a).then_some("changed"))}><th scope="row">{ name.clone() }</th>
                    <td>{ counts_text(*b) }</td><td>{ counts_text(*a) }</td></tr>
            }) }</tbody>
        </table>
    }
}

#[derive(Properties, PartialEq)]
struct AuditPickerProps {
    dispatch: UseReducerDispatcher<ViewsState>,
}

#[function_component(AuditPicker)]
fn audit_picker(props: &AuditPickerProps) -> Html {
    let before = use_state(|| None::<web_sys::File>);
    let after = use_state(|| None::<web_sys::File>);
    let pick = |slot: UseStateHandle<Option<web_sys::File>>| {
        Callback::from(move |files: Vec<web_sys::File>| slot.set(files.into_iter().next()))
    };
    let go = {
        let (before, after) = (before.clone(), after.clone());
        let dispatch = props.dispatch.clone();
        Callback::from(move |_: MouseEvent| {
            if let (Some(b), Some(a)) = ((*before).clone(), (*after).clone()) {
                run(
                    dispatch.clone(),
                    Input::File(b),
                    Input::File(a),
                    None,
                    None,
                    false,
                );
            }
        })
    };
    html! {
        <section class="picker" aria-label="Open a graph before and after a transform">
            <h2>{"Audit a transform"}</h2>
            <p>{"Open the graph before a compiler pass and the graph after it (dumps or trace logs): each collective's identity is followed through the pass. A link: "}<code>{"?src=AFTER&before=BEFORE"}</code>{"."}</p>
            <FilePick id="audit-before-file" label="Before" on_files={pick(before.clone())} />
            <FilePick id="audit-after-file" label="After" on_files={pick(after.clone())} />
            <button id="audit-go" onclick={go} disabled={before.is_none() || after.is_none()}>{"Audit"}</button>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_holds_the_cores_audit_and_counts_every_entry() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/identity/cases");
        let before = std::fs::read(dir.join("audit_lost.before.json")).unwrap();
        let after = std::fs::read(dir.join("audit_lost.after.json")).unwrap();
        let view = AuditView::new(("b.json", &before), ("a.json", &after), None).unwrap();
        let direct = AuditReport::from_dumps(&before, &after).unwrap();
        assert_eq!(view.report.to_json(), direct.to_json());
        let total: usize = view.status_counts().iter().map(|(_, n)| n).sum();
        assert_eq!(total, view.report.audit.entries.len());
        assert!(view
            .status_counts()
            .iter()
            .any(|(s, n)| *s == AuditStatus::Lost && *n > 0));
        let e = AuditView::new(("b.json", b"{"), ("a.json", &after), None)
            .err()
            .unwrap();
        assert!(e.starts_with("b.json: "), "{e}");
    }
}
