//! Compare two plans: two dumps or plan reports (`?src=A&base=B`), or one dump under two
//! settings (`?src=A&bcap=…`). The diff is the core's ([`commlens::diff::PlanDiff`], what
//! `commlens diff` prints); this file lays it out: a summary of its counts, the two timelines
//! one above the other sharing one view (changed buckets and decisions outlined, the rest
//! dimmed), and a table of the changed collectives that brings both charts to the one clicked.
//!
//! `base` is the plan before (drawn on top), `src` the plan after. The base is planned with
//! the `b`-prefixed settings when the link has any, else with the same settings as `src`.

use super::{load_graph_digested, read_input, Input, ViewsAction, ViewsState, ViewsUrl};
use crate::browser;
use crate::components::chart::{Chart, Pick};
use crate::model::{self, Loaded, Planned, Settings, Shared};
use crate::url_state::SourceRef;
use commlens::diff::{
    is_plan_document, read_side, Change, CollectiveKey, PlanDiff, PlanSide, SortedBuckets,
};
use commlens::planner::Action;
use commlens::timeline::{Marked, Viewport};
use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// A side that is a graph: it has a timeline, and settings it was planned with.
#[derive(Clone)]
pub struct GraphSide {
    pub loaded: Shared<Loaded>,
    pub planned: Shared<Planned>,
    pub settings: Settings,
}

/// One side as read: its label, its graph when it is one, and what the diff compares.
#[derive(Clone)]
pub struct SideInput {
    pub label: String,
    pub graph: Option<GraphSide>,
    pub side: PlanSide,
}

/// Where a changed collective is on one side.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The bucket's id as the plan writes it (`bucket_3`).
    pub bucket: String,
    /// Index into the side's timeline buckets (graph sides only).
    pub timeline_bucket: Option<usize>,
    /// The graph positions the bucket covers (graph sides only).
    pub range: Option<(f64, f64)>,
    /// The bucket's other members, as `kind param[state_idx]`, sorted: the first
    /// [`NAMED_IN_TITLE`] of them.
    pub with: Vec<String>,
    /// How many other members the bucket has.
    pub others: usize,
}

/// How many of a bucket's other members a place's tooltip names.
const NAMED_IN_TITLE: usize = 20;

/// One changed collective of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeRow {
    /// `kind:param_name:state_idx` (with `#n` for the n-th repeat of an identity): the
    /// link's `row=`.
    pub id: String,
    pub key: CollectiveKey,
    pub change: Change,
    pub before: Option<Place>,
    pub after: Option<Place>,
}

/// A comparison as the view shows it.
pub struct Comparison {
    pub before: SideInput,
    pub after: SideInput,
    pub diff: PlanDiff,
    pub rows: Vec<ChangeRow>,
    /// What each side's chart marks: the buckets with a changed member, and the decisions
    /// removed (before) or added (after) that the chart draws (splits and skips).
    pub marked_before: Rc<Marked>,
    pub marked_after: Rc<Marked>,
    pub diff_ms: f64,
    /// How loading it went, stage by stage, for the paint timing (`#perf`).
    pub stages: String,
}

fn key_text(key: &CollectiveKey) -> String {
    format!(
        "{} {}[{}]",
        key.kind.as_str(),
        key.param_name,
        key.state_idx
    )
}

fn place(input: &SideInput, sorted: &SortedBuckets, member: Option<usize>) -> Option<Place> {
    let m = member?;
    let bucket = input.side.bucket_of(m)?;
    let company = sorted.company(m, NAMED_IN_TITLE);
    let label = input.side.buckets.get(bucket)?.id.as_ref().map(|l| {
        let text = l.to_string();
        commlens::timeline::input::short_bucket_id(&text).to_string()
    });
    let timeline = input.graph.as_ref().map(|g| &g.planned.timeline);
    let timeline_bucket = timeline
        .filter(|t| bucket < t.buckets.len())
        .map(|_| bucket);
    Some(Place {
        bucket: label.unwrap_or_else(|| format!("bucket #{bucket}")),
        timeline_bucket,
        range: timeline
            .and_then(|t| t.buckets.get(bucket))
            .map(model::bucket_range),
        with: company.named.into_iter().map(key_text).collect(),
        others: company.count,
    })
}

impl Comparison {
    /// Compares `before` with `after` (the core's diff) and arranges it for the view.
    pub fn new(before: SideInput, after: SideInput, now: impl Fn() -> f64) -> Comparison {
        let t0 = now();
        let diff = PlanDiff::new(before.side.clone(), after.side.clone());
        let diff_ms = now() - t0;
        let mut seen: HashMap<String, usize> = HashMap::new();
        let (sorted_before, sorted_after) = (
            SortedBuckets::new(&before.side),
            SortedBuckets::new(&after.side),
        );
        let rows = diff
            .collectives
            .iter()
            .filter(|c| c.change != Change::Same)
            .filter_map(|c| {
                let key = diff.key(c)?.clone();
                let base = format!("{}:{}:{}", key.kind.as_str(), key.param_name, key.state_idx);
                let n = seen.entry(base.clone()).or_default();
                *n += 1;
                let id = if *n > 1 { format!("{base}#{n}") } else { base };
                Some(ChangeRow {
                    id,
                    key,
                    change: c.change,
                    before: place(&before, &sorted_before, c.before),
                    after: place(&after, &sorted_after, c.after),
                })
            })
            .collect();
        let decisions = |side: &PlanSide, which: &[usize]| -> Vec<(Action, String)> {
            which
                .iter()
                .filter_map(|&i| side.decisions.get(i))
                .map(|d| (d.action, d.node.clone()))
                .collect()
        };
        let removed = decisions(&diff.before, &diff.removed);
        let added = decisions(&diff.after, &diff.added);
        let marked = |input: &SideInput, buckets: Vec<bool>, changed: &[(Action, String)]| {
            let Some(g) = &input.graph else {
                return Rc::new(Marked::default());
            };
            // Singletons are drawn as their bucket's bar, not as a mark of their own.
            let nodes: std::collections::HashSet<(Action, &str)> = changed
                .iter()
                .filter(|(a, _)| *a != Action::Singleton)
                .map(|(a, n)| (*a, n.as_str()))
                .collect();
            let decisions = g
                .planned
                .timeline
                .decisions
                .iter()
                .map(|d| nodes.contains(&(d.action, &*d.name)))
                .collect();
            Rc::new(Marked { buckets, decisions })
        };
        let marked_before = marked(&before, diff.changed_buckets(false), &removed);
        let marked_after = marked(&after, diff.changed_buckets(true), &added);
        Comparison {
            before,
            after,
            diff,
            rows,
            marked_before,
            marked_after,
            diff_ms,
            stages: format!("diff {diff_ms:.1} ms"),
        }
    }

    /// The comparison with one side re-planned with `settings` (a graph side; a report is
    /// already planned).
    pub fn replan(
        &self,
        after: bool,
        settings: &Settings,
        now: impl Fn() -> f64 + Copy,
    ) -> Result<Comparison, String> {
        let side = if after { &self.after } else { &self.before };
        let graph = side
            .graph
            .as_ref()
            .ok_or_else(|| format!("{} is a plan report: it is already planned", side.label))?;
        let t0 = now();
        let new = plan_side(graph.loaded.0.clone(), settings, now)?;
        let plan_ms = now() - t0;
        let mut c = if after {
            Comparison::new(self.before.clone(), new, now)
        } else {
            Comparison::new(new, self.after.clone(), now)
        };
        c.stages = format!("plan {plan_ms:.1} ms · {}", c.stages);
        Ok(c)
    }

    pub fn row_by_id(&self, id: &str) -> Option<&ChangeRow> {
        self.rows.iter().find(|r| r.id == id)
    }

    /// The view that shows row `id` on both charts: both its buckets, centred, at least four
    /// times as wide as they are (or the whole graph, when that is smaller).
    pub fn reveal(&self, id: &str) -> Option<Viewport> {
        let row = self.row_by_id(id)?;
        let ranges: Vec<(f64, f64)> = [&row.before, &row.after]
            .into_iter()
            .flatten()
            .filter_map(|p| p.range)
            .collect();
        let from = ranges.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let to = ranges.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
        if !from.is_finite() || !to.is_finite() {
            return None;
        }
        let n = self.node_count().max(1);
        let width = ((to - from) * 4.0).max(32.0);
        let mid = (from + to) / 2.0;
        Some(
            Viewport {
                x0: mid - width / 2.0,
                x1: mid + width / 2.0,
            }
            .clamped(n),
        )
    }

    /// The larger graph's node count (the shared view's extent).
    pub fn node_count(&self) -> u32 {
        [&self.before, &self.after]
            .into_iter()
            .filter_map(|s| s.graph.as_ref())
            .map(|g| g.planned.timeline.node_count)
            .max()
            .unwrap_or(0)
    }

    /// The rows of the collectives of bucket `bucket` of one side's timeline.
    pub fn rows_in_bucket(&self, after: bool, bucket: usize) -> impl Iterator<Item = &ChangeRow> {
        self.rows.iter().filter(move |r| {
            let p = if after { &r.after } else { &r.before };
            p.as_ref().and_then(|p| p.timeline_bucket) == Some(bucket)
        })
    }
}

/// Reads one side: a plan document as a report, anything else as a graph planned with
/// `settings`.
pub async fn read_one<'a>(
    label: &str,
    source: Option<SourceRef>,
    bytes: impl Into<Cow<'a, [u8]>>,
    settings: &Settings,
    graph: Option<usize>,
    now: impl Fn() -> f64,
) -> Result<SideInput, String> {
    let bytes = bytes.into();
    if is_plan_document(&bytes) {
        let side = read_side(&bytes, None).map_err(|e| format!("{label}: {e}"))?;
        return Ok(SideInput {
            label: label.to_string(),
            graph: None,
            side,
        });
    }
    let loaded = Rc::new(load_graph_digested(label, source, bytes, graph).await?);
    plan_side(loaded, settings, now)
}

/// A graph side planned with `settings`.
pub fn plan_side(
    loaded: Rc<Loaded>,
    settings: &Settings,
    now: impl Fn() -> f64,
) -> Result<SideInput, String> {
    let planned = model::plan(&loaded, settings, now);
    let label = loaded.label.clone();
    let side = match (&planned.plan, &planned.error) {
        (Some(plan), _) => PlanSide::from_plan(plan, &loaded.graph),
        (None, e) => {
            return Err(format!(
                "{label}: the planner cannot plan it with these settings: {}",
                e.as_deref().unwrap_or("no plan")
            ))
        }
    };
    Ok(SideInput {
        label,
        graph: Some(GraphSide {
            loaded: Shared(loaded),
            planned: Shared::new(planned),
            settings: settings.clone(),
        }),
        side,
    })
}

/// What a compare link or pick asks for.
struct Request {
    before: Option<Input>,
    after: Input,
    before_settings: Settings,
    after_settings: Settings,
    limit_mb: Option<u64>,
    graph: Option<usize>,
    linkable: bool,
}

/// Starts reading an input now, to be awaited later: a link's in a worker of its own, so
/// that the base downloads while this thread reads and plans the other side.
fn read_in_background(input: Input, limit_mb: Option<u64>) -> js_sys::Promise {
    // Resolves with `[label, bytes]`, or with why it could not as a string; it never rejects,
    // because it may fail before anything awaits it, and the page would count a rejection
    // nobody handled yet as an uncaught error.
    wasm_bindgen_futures::future_to_promise(async move {
        Ok(match read_pair(&input, limit_mb).await {
            Ok(pair) => pair,
            Err(e) => wasm_bindgen::JsValue::from_str(&e),
        })
    })
}

/// `[label, bytes]` of an input: a link's fetched in a worker of its own.
async fn read_pair(input: &Input, limit_mb: Option<u64>) -> Result<wasm_bindgen::JsValue, String> {
    let (label, bytes) = match input {
        Input::Source(source) => {
            let (url, label) = super::source_url(source)?;
            // A worker resolves relative URLs against its own (blob:) address.
            let url = browser::absolute(&url);
            let promise = browser::fetch_off_thread(&url, crate::limits::bytes(limit_mb));
            let bytes = wasm_bindgen_futures::JsFuture::from(promise)
                .await
                .map_err(|e| e.as_string().unwrap_or_else(|| browser::js_err(e)))?;
            // Already a `Uint8Array` (a view of the worker's buffer): `new Uint8Array(view)`
            // would copy all of it.
            (label, bytes.unchecked_into::<js_sys::Uint8Array>())
        }
        Input::File(_) => {
            let (label, _, bytes) = read_input(input, limit_mb).await?;
            (label, js_sys::Uint8Array::from(&bytes[..]))
        }
    };
    let pair = js_sys::Array::new();
    pair.push(&label.into());
    pair.push(&bytes);
    Ok(pair.into())
}

/// The label and bytes [`read_in_background`] read, or why it could not.
async fn finish_reading(promise: js_sys::Promise) -> Result<(String, Vec<u8>), String> {
    let value = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| e.as_string().unwrap_or_else(|| browser::js_err(e)))?;
    if let Some(why) = value.as_string() {
        return Err(why);
    }
    let pair = js_sys::Array::from(&value);
    let label = pair.get(0).as_string().unwrap_or_default();
    // The one copy, into the wasm memory.
    let bytes = pair.get(1).unchecked_into::<js_sys::Uint8Array>().to_vec();
    Ok((label, bytes))
}

fn run(dispatch: UseReducerDispatcher<ViewsState>, req: Request) {
    wasm_bindgen_futures::spawn_local(async move {
        let now = browser::now_ms;
        let started = now();
        let mut stages = Stages::new(started);
        let failed = |e: String| dispatch.dispatch(ViewsAction::Failed(e));
        // Both downloads start now; the base is read once the plan after is on its way.
        let before_source = match &req.before {
            Some(Input::Source(s)) => Some(s.clone()),
            _ => None,
        };
        let before = req
            .before
            .clone()
            .map(|input| read_in_background(input, req.limit_mb));
        dispatch.dispatch(ViewsAction::Busy("reading the plan after…".into()));
        let after = match read_input(&req.after, req.limit_mb).await {
            Ok(a) => a,
            Err(e) => return failed(e),
        };
        stages.mark("fetch after");
        dispatch.dispatch(ViewsAction::Busy("planning the plan after…".into()));
        browser::yield_now().await;
        // The bytes are handed over: the reader keeps a dump's text rather than a copy.
        let after_side = match read_one(
            &after.0,
            after.1,
            after.2,
            &req.after_settings,
            req.graph,
            now,
        )
        .await
        {
            Ok(side) => side,
            Err(e) => return failed(e),
        };
        stages.mark("read and plan after");
        let before_side = match before {
            Some(promise) => {
                dispatch.dispatch(ViewsAction::Busy("reading the plan before…".into()));
                let (label, bytes) = match finish_reading(promise).await {
                    Ok(b) => b,
                    Err(e) => return failed(e),
                };
                stages.mark("fetch before (rest)");
                browser::yield_now().await;
                stages.mark("yield");
                read_one(
                    &label,
                    before_source,
                    bytes,
                    &req.before_settings,
                    req.graph,
                    now,
                )
                .await
            }
            // One dump under two settings: read once, planned twice.
            None => match &after_side.graph {
                Some(g) => plan_side(g.loaded.0.clone(), &req.before_settings, now),
                None => Err(format!(
                    "{} is a plan report: it has one plan only; compare it with another (base=)",
                    after_side.label
                )),
            },
        };
        stages.mark("read and plan before");
        match before_side {
            Ok(before_side) => {
                let mut c = Comparison::new(before_side, after_side, now);
                stages.mark("compare");
                c.stages = format!("{} ({})", stages.text, c.stages);
                dispatch.dispatch(ViewsAction::Compared(Shared::new(c), req.linkable, started))
            }
            Err(e) => failed(e),
        }
    });
}

/// The stages of a load and how long each took, in words.
struct Stages {
    last: f64,
    text: String,
}

impl Stages {
    fn new(started: f64) -> Stages {
        Stages {
            last: started,
            text: String::new(),
        }
    }

    fn mark(&mut self, what: &str) {
        let now = browser::now_ms();
        if !self.text.is_empty() {
            self.text.push_str(" · ");
        }
        self.text
            .push_str(&format!("{what} {:.0} ms", now - self.last));
        self.last = now;
    }
}

/// Starts the comparison a link asks for.
pub fn start_from_link(dispatch: UseReducerDispatcher<ViewsState>, url: &ViewsUrl) {
    let Some(after) = url.main.source.clone() else {
        if url.base.is_some() || url.base_settings.is_some() {
            dispatch.dispatch(ViewsAction::Failed(
                "the link names the plan before (base= or b… settings) but not the plan after: add src=URL (or example=KEY)".into(),
            ));
        }
        return;
    };
    let after_settings = url.main.settings.clone();
    run(
        dispatch,
        Request {
            before: url.base.clone().map(Input::Source),
            before_settings: url
                .base_settings
                .clone()
                .unwrap_or_else(|| after_settings.clone()),
            after: Input::Source(after),
            after_settings,
            limit_mb: url.main.limit_mb,
            graph: url.graph,
            linkable: true,
        },
    );
}

fn short_place(p: &Option<Place>) -> Html {
    match p {
        None => html! { <span class="muted">{"not bucketed"}</span> },
        Some(p) => html! {
            <span title={place_title(p)}>
                <code>{ p.bucket.clone() }</code>
                { format!(" with {} other{}", p.others, if p.others == 1 { "" } else { "s" }) }
            </span>
        },
    }
}

/// A place's tooltip: the other members it names, a line each, and how many more there are.
fn place_title(p: &Place) -> String {
    let mut title = p.with.join("\n");
    if p.others > p.with.len() {
        title.push_str(&format!("\nand {} more", p.others - p.with.len()));
    }
    title
}

fn change_label(c: Change) -> &'static str {
    match c {
        Change::Same => "same",
        Change::Regrouped => "regrouped",
        Change::OnlyBefore => "only before",
        Change::OnlyAfter => "only after",
    }
}

/// CSS that dims each chart's unchanged buckets and outlines the changed ones and the
/// decisions added (after) or removed (before): the chart marks them (`data-marked`), so the
/// rules are the same few whatever the number of changes (a rule per bucket made the browser
/// match thousands of selectors against every mark: 0.2 s of style at 100k nodes).
fn highlight_css(scope: &str) -> String {
    format!(
        "#{scope} [data-bucket] {{ opacity: .35; }}\n\
         #{scope} [data-bucket][data-marked] {{ opacity: 1; }}\n\
         #{scope} [data-bucket][data-marked] rect {{ stroke: #a21caf; stroke-width: 3px; }}\n\
         #{scope} [data-skip][data-marked], #{scope} [data-split][data-marked] \
         {{ outline: 3px solid #a21caf; outline-offset: 1px; }}\n"
    )
}

/// The chart's width before it is measured: the page's paddings from the window's width.
fn width_hint() -> u32 {
    let w = web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .unwrap_or(0.0);
    (w - 54.0).max(0.0) as u32
}

/// The compare view.
pub fn page(state: &ViewsState, dispatch: &UseReducerDispatcher<ViewsState>) -> Html {
    let Some(c) = &state.compare else {
        return html! { <ComparePicker dispatch={dispatch.clone()} settings={state.url.main.settings.clone()} /> };
    };
    let on_view = {
        let d = dispatch.clone();
        Callback::from(move |(viewport, commit): (Option<Viewport>, bool)| {
            d.dispatch(ViewsAction::View { viewport, commit })
        })
    };
    let on_row = {
        let d = dispatch.clone();
        Callback::from(move |id: String| d.dispatch(ViewsAction::Row(Some(id))))
    };
    let selected = state.url.row.as_deref().and_then(|id| c.row_by_id(id));
    let chart = |after: bool| -> Html {
        let input = if after { &c.after } else { &c.before };
        let scope = if after { "chart-after" } else { "chart-before" };
        let which = if after { "After" } else { "Before" };
        let Some(g) = &input.graph else {
            return html! {
                <section class="timeline no-chart" id={scope}>
                    <h2>{ format!("{which}: {}", input.label) }</h2>
                    <p class="muted">{"A plan report: it has no graph positions to draw (open its dump to see its timeline)."}</p>
                </section>
            };
        };
        let place = selected.and_then(|r| {
            if after {
                r.after.as_ref()
            } else {
                r.before.as_ref()
            }
        });
        let focus = place.and_then(|p| p.timeline_bucket);
        let sel = focus
            .and_then(|b| g.planned.timeline.buckets.get(b))
            .map(|b| b.id.clone());
        let css = highlight_css(scope);
        let marked = if after {
            c.marked_after.clone()
        } else {
            c.marked_before.clone()
        };
        let on_pick = {
            let d = dispatch.clone();
            let c = c.clone();
            Callback::from(move |pick: Pick| {
                if let Pick::Bucket(b) = pick {
                    let first = c.rows_in_bucket(after, b).next().map(|r| r.id.clone());
                    match first {
                        Some(id) => d.dispatch(ViewsAction::Row(Some(id))),
                        None => d.dispatch(ViewsAction::Row(None)),
                    }
                }
            })
        };
        html! {
            <div id={scope} class="compare-chart">
                <style>{ css }</style>
                <Chart timeline={g.planned.timeline.clone()} viewport={state.viewport} focus={focus} selected={sel} marked={Some(marked)}
                    filter={None::<crate::url_state::Filter>} on_view={on_view.clone()} on_pick={on_pick} width_hint={width_hint()}
                    title={AttrValue::from(format!("{which}: {}", input.label))} />
            </div>
        }
    };
    let settings_panel = |after: bool| -> Html {
        let input = if after { &c.after } else { &c.before };
        let Some(g) = &input.graph else {
            return html! {};
        };
        let d = dispatch.clone();
        let on_settings = Callback::from(move |settings: Settings| {
            d.dispatch(ViewsAction::Settings { after, settings })
        });
        html! {
            <SideSettings after={after} loaded={g.loaded.clone()} settings={g.settings.clone()} {on_settings} />
        }
    };
    html! {
        <>
            <Summary comparison={c.clone()} />
            if c.before.graph.is_some() || c.after.graph.is_some() {
                <section class="compare-settings" aria-label="Planner settings of each side">
                    <h2>{"Settings"}</h2>
                    <div class="sides">{ settings_panel(false) }{ settings_panel(true) }</div>
                </section>
            }
            { chart(false) }
            { chart(true) }
            <ChangesTable comparison={c.clone()} selected={state.url.row.clone().map(AttrValue::from)} on_row={on_row} />
        </>
    }
}

#[derive(Properties, PartialEq)]
struct SideSettingsProps {
    after: bool,
    loaded: Shared<Loaded>,
    settings: Settings,
    on_settings: Callback<Settings>,
}

/// One side's planner settings: the policy's numbers and the module plans, applied when a
/// field is left (or Enter); what cannot be used is said at its field and not applied.
#[function_component(SideSettings)]
fn side_settings(props: &SideSettingsProps) -> Html {
    let error = use_state(|| None::<String>);
    let which = if props.after { "after" } else { "before" };
    let s = &props.settings;
    let number = |key: &'static str, label: &'static str, value: Option<u64>, minimum: u64| {
        let cb = props.on_settings.clone();
        let settings = props.settings.clone();
        let error = error.clone();
        let onchange = Callback::from(move |e: Event| {
            let text = e
                .target_unchecked_into::<web_sys::HtmlInputElement>()
                .value();
            match model::parse_count(&text, minimum) {
                Ok(v) => {
                    error.set(None);
                    let mut next = settings.clone();
                    match key {
                        "cap" => next.cap_bytes = v,
                        "mid" => next.max_input_distance = v,
                        _ => next.max_consumer_distance = v,
                    }
                    if next != settings {
                        cb.emit(next);
                    }
                }
                Err(e) => error.set(Some(format!("{label}: {e}"))),
            }
        });
        let id = format!("{which}-{key}");
        html! {
            <label for={id.clone()}>{ label }
                <input id={id} type="text" inputmode="numeric" placeholder="the dump's"
                    value={value.map(|v| v.to_string()).unwrap_or_default()} {onchange} /></label>
        }
    };
    let on_plans = {
        let cb = props.on_settings.clone();
        let settings = props.settings.clone();
        let loaded = props.loaded.clone();
        let error = error.clone();
        move |key: String, text: String| {
            let Some(plans) = crate::model::PlansMode::from_key(&key, text) else {
                return;
            };
            if let Some(problem) = model::plans_problem(&loaded.graph, &plans) {
                error.set(Some(format!("module plans: {problem}")));
                return;
            }
            error.set(None);
            let next = Settings {
                plans,
                ..settings.clone()
            };
            if next != settings {
                cb.emit(next);
            }
        }
    };
    let plans_text = s.plans.text().to_string();
    let onchange_mode = {
        let on_plans = on_plans.clone();
        let text = plans_text.clone();
        Callback::from(move |e: Event| {
            let key = e
                .target_unchecked_into::<web_sys::HtmlSelectElement>()
                .value();
            on_plans(key, text.clone())
        })
    };
    let onchange_text = {
        let key = s.plans.key().to_string();
        Callback::from(move |e: Event| {
            let text = e
                .target_unchecked_into::<web_sys::HtmlTextAreaElement>()
                .value();
            on_plans(key.clone(), text)
        })
    };
    html! {
        <div class={classes!("side-settings", which)}>
            <h3>{ if props.after { "After" } else { "Before" } }</h3>
            { number("cap", "cap_bytes", s.cap_bytes, 1) }
            { number("mid", "max_input_distance", s.max_input_distance, 0) }
            { number("mcd", "max_consumer_distance", s.max_consumer_distance, 0) }
            <label for={format!("{which}-plans")}>{"module plans"}
                <select id={format!("{which}-plans")} onchange={onchange_mode}>
                    { for crate::model::PlansMode::KEYS.iter().map(|(k, label)| html! {
                        <option value={*k} selected={*k == s.plans.key()}>{ *label }</option>
                    }) }
                </select></label>
            if s.plans.names_modules() {
                <textarea id={format!("{which}-ptext")} rows="3" aria-label={format!("{which}: module plans")}
                    value={plans_text} onchange={onchange_text} />
            }
            if let Some(e) = &*error { <p class="field-error" role="alert">{ format!("Not applied: {e}") }</p> }
        </div>
    }
}

#[derive(Properties, PartialEq)]
struct SummaryProps {
    comparison: Shared<Comparison>,
}

/// The diff's counts: buckets, collectives by change, decisions, reasons before → after.
#[function_component(Summary)]
fn summary(props: &SummaryProps) -> Html {
    let c = &props.comparison;
    let d = &c.diff;
    let counts = d.counts();
    let mut reasons: Vec<(String, usize, usize)> = Vec::new();
    for (side, after) in [(&d.before, false), (&d.after, true)] {
        for (action, list) in &side.reason_counts {
            for (reason, n) in list {
                let name = format!("{}: {}", action.as_str(), reason.as_str());
                let slot = match reasons.iter().position(|r| r.0 == name) {
                    Some(i) => i,
                    None => {
                        reasons.push((name, 0, 0));
                        reasons.len() - 1
                    }
                };
                if after {
                    reasons[slot].2 = *n;
                } else {
                    reasons[slot].1 = *n;
                }
            }
        }
    }
    reasons.sort();
    let download = {
        let c = c.clone();
        Callback::from(move |_: MouseEvent| {
            let stem = |s: &str| {
                s.trim_end_matches(".gz")
                    .trim_end_matches(".json")
                    .to_string()
            };
            let name = format!(
                "{}-vs-{}.plan-diff.json",
                stem(&c.before.label),
                stem(&c.after.label)
            );
            if let Err(e) = browser::download(&name, "application/json", &c.diff.to_json()) {
                web_sys::console::error_1(&e.into());
            }
        })
    };
    let decision_list = |side: &PlanSide, which: &[usize]| -> Html {
        html! {
            <ul class="plain decisions">{ for which.iter().filter_map(|&i| side.decisions.get(i)).take(50).map(|x| html! {
                <li><code>{ x.node.clone() }</code>{ format!(" {} ({})", x.action.as_str(), x.reason.as_str()) }
                    if let Some(p) = &x.previous_node { { " after " }<code>{ p.clone() }</code> }</li>
            }) }
                if which.len() > 50 {
                    <li class="muted">{ format!("and {} more: the diff's plain words and its JSON list them all", which.len() - 50) }</li>
                }
            </ul>
        }
    };
    html! {
        <section class="compare-summary" id="compare-summary" aria-label="Comparison summary">
            <h2>{ format!("{} → {}", c.before.label, c.after.label) }</h2>
            <p class="muted">{ if d.same_graph() { "the same graph (equal signatures)".to_string() } else {
                format!("different graphs: signatures {} and {}", d.before.signature, d.after.signature) } }</p>
            <dl class="counts">
                <div><dt>{"buckets"}</dt><dd id="cmp-buckets">{ format!("{} → {}", d.before.buckets.len(), d.after.buckets.len()) }</dd></div>
                <div><dt>{"regrouped"}</dt><dd id="cmp-regrouped">{ counts.regrouped }</dd></div>
                <div><dt>{"only before"}</dt><dd id="cmp-only-before">{ counts.only_before }</dd></div>
                <div><dt>{"only after"}</dt><dd id="cmp-only-after">{ counts.only_after }</dd></div>
                <div><dt>{"unchanged"}</dt><dd id="cmp-same">{ counts.same }</dd></div>
                <div><dt>{"decisions removed"}</dt><dd id="cmp-removed">{ d.removed.len() }</dd></div>
                <div><dt>{"decisions added"}</dt><dd id="cmp-added">{ d.added.len() }</dd></div>
            </dl>
            if !reasons.is_empty() {
                <table class="reasons-delta"><caption>{"Decisions by reason, before → after"}</caption>
                    <tbody>{ for reasons.iter().map(|(name, b, a)| html! {
                        <tr class={classes!((b != a).then_some("changed"))}><th scope="row">{ name.clone() }</th><td>{ *b }</td><td>{"→"}</td><td>{ *a }</td></tr>
                    }) }</tbody>
                </table>
            }
            if !d.removed.is_empty() {
                <details><summary>{ format!("{} decision(s) removed", d.removed.len()) }</summary>{ decision_list(&d.before, &d.removed) }</details>
            }
            if !d.added.is_empty() {
                <details><summary>{ format!("{} decision(s) added", d.added.len()) }</summary>{ decision_list(&d.after, &d.added) }</details>
            }
            <PlainWords comparison={c.clone()} />
            <p><button id="export-diff" onclick={download}>{"Download the diff (commlens diff --json)"}</button>
               <span class="muted diff-ms">{ format!(" diff computed in {:.1} ms", c.diff_ms) }</span></p>
        </section>
    }
}

/// The diff as `commlens diff` prints it, written out only once opened: at 100k nodes it is
/// thousands of lines, and laying them out cost the first paint 0.2 s while nobody read them.
#[function_component(PlainWords)]
fn plain_words(props: &SummaryProps) -> Html {
    let open = use_state(|| false);
    let ontoggle = {
        let open = open.clone();
        Callback::from(move |e: Event| {
            let el: Option<web_sys::HtmlDetailsElement> = e.target_dyn_into();
            open.set(el.is_some_and(|d| d.open()));
        })
    };
    html! {
        <details class="diff-text" {ontoggle}><summary>{"In plain words (what commlens diff prints)"}</summary>
            if *open { <pre>{ props.comparison.diff.to_text() }</pre> }
        </details>
    }
}

#[derive(Properties, PartialEq)]
struct ChangesTableProps {
    comparison: Shared<Comparison>,
    selected: Option<AttrValue>,
    on_row: Callback<String>,
}

const PAGE: usize = 100;

/// The changed collectives, 100 per page; a click brings both charts to the row's buckets.
#[function_component(ChangesTable)]
fn changes_table(props: &ChangesTableProps) -> Html {
    let page = use_state(|| 0usize);
    let rows = &props.comparison.rows;
    // The selected row's page.
    let selected_index = props
        .selected
        .as_ref()
        .and_then(|s| rows.iter().position(|r| r.id == s.as_str()));
    {
        let page = page.clone();
        use_effect_with(selected_index, move |i| {
            if let Some(i) = i {
                if *page != i / PAGE {
                    page.set(i / PAGE);
                }
            }
        });
    }
    let pages = rows.len().div_ceil(PAGE).max(1);
    let current = (*page).min(pages - 1);
    let nav = |delta: isize| {
        let page = page.clone();
        Callback::from(move |_: MouseEvent| {
            let next = (current as isize + delta).clamp(0, pages as isize - 1) as usize;
            page.set(next);
        })
    };
    html! {
        <section class="changes" id="changes" aria-label="Changed collectives">
            <h2>{ format!("Changed collectives ({})", rows.len()) }</h2>
            if rows.is_empty() {
                <p class="muted" id="no-changes">{"Every collective is bucketed with the same others on both sides."}</p>
            } else {
                <table class="changes-table">
                    <thead><tr><th>{"change"}</th><th>{"kind"}</th><th>{"parameter"}</th><th>{"state"}</th><th>{"before"}</th><th>{"after"}</th></tr></thead>
                    <tbody>{ for rows.iter().skip(current * PAGE).take(PAGE).map(|r| {
                        let active = props.selected.as_deref() == Some(r.id.as_str());
                        let onclick = {
                            let cb = props.on_row.clone();
                            let id = r.id.clone();
                            Callback::from(move |_: MouseEvent| cb.emit(id.clone()))
                        };
                        html! {
                            <tr class={classes!("change", r.change.as_str(), active.then_some("selected"))} data-row={r.id.clone()}>
                                <td><button class="row-pick" aria-pressed={active.to_string()} {onclick}>{ change_label(r.change) }</button></td>
                                <td>{ r.key.kind.as_str() }</td>
                                <td><code>{ r.key.param_name.to_string() }</code></td>
                                <td>{ r.key.state_idx.to_string() }</td>
                                <td>{ short_place(&r.before) }</td>
                                <td>{ short_place(&r.after) }</td>
                            </tr>
                        }
                    }) }</tbody>
                </table>
                if pages > 1 {
                    <p class="pager"><button onclick={nav(-1)} disabled={current == 0}>{"◀ previous"}</button>
                        { format!(" page {} of {} ", current + 1, pages) }
                        <button onclick={nav(1)} disabled={current + 1 >= pages}>{"next ▶"}</button></p>
                }
            }
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct ComparePickerProps {
    dispatch: UseReducerDispatcher<ViewsState>,
    settings: Settings,
}

/// Two file pickers: the plan before and the plan after (dumps, trace logs or reports).
#[function_component(ComparePicker)]
fn compare_picker(props: &ComparePickerProps) -> Html {
    let before = use_state(|| None::<web_sys::File>);
    let after = use_state(|| None::<web_sys::File>);
    let pick = |slot: UseStateHandle<Option<web_sys::File>>| {
        Callback::from(move |files: Vec<web_sys::File>| slot.set(files.into_iter().next()))
    };
    let go = {
        let (before, after) = (before.clone(), after.clone());
        let dispatch = props.dispatch.clone();
        let settings = props.settings.clone();
        Callback::from(move |_: MouseEvent| {
            if let (Some(b), Some(a)) = ((*before).clone(), (*after).clone()) {
                run(
                    dispatch.clone(),
                    Request {
                        before: Some(Input::File(b)),
                        after: Input::File(a),
                        before_settings: settings.clone(),
                        after_settings: settings.clone(),
                        limit_mb: None,
                        graph: None,
                        linkable: false,
                    },
                );
            }
        })
    };
    html! {
        <section class="picker" aria-label="Open two plans">
            <h2>{"Compare two plans"}</h2>
            <p>{"Open the plan before and the plan after: graph dumps or trace logs (planned here) or plan reports (commlens plan, or the Python planner's BucketPlan.to_dict()). "}
               {"A link compares files on a server: "}<code>{"?src=AFTER&base=BEFORE"}</code>{", or one dump under two settings: "}<code>{"?src=DUMP&cap=…&bcap=…"}</code>{"."}</p>
            <super::FilePick id="before-file" label="Before" on_files={pick(before.clone())} />
            <super::FilePick id="after-file" label="After" on_files={pick(after.clone())} />
            <button id="compare-go" onclick={go} disabled={before.is_none() || after.is_none()}>{"Compare"}</button>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn shared() -> PathBuf {
        std::env::var_os("COMMLENS_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
    }

    fn read(path: &std::path::Path) -> Vec<u8> {
        std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A side read natively: there is no browser to await, so the read is ready at once.
    fn read_now(label: &str, bytes: &[u8], settings: &Settings) -> Result<SideInput, String> {
        let mut read = std::pin::pin!(read_one(label, None, bytes, settings, None, || 0.0));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::future::Future::poll(read.as_mut(), &mut cx) {
            std::task::Poll::Ready(side) => side,
            std::task::Poll::Pending => panic!("{label}: a native read waited"),
        }
    }

    /// The view's rows are exactly the core diff's changed collectives, and each graph side's
    /// places are where the timeline draws them.
    #[test]
    fn rows_are_the_diffs_changes_at_their_timeline_places() {
        let cases = shared().join("conformance/cases");
        let dump = read(&cases.join("llama2_capacity/dump.json"));
        let loaded = Rc::new(crate::views::load_graph("dump.json", None, &dump, None).unwrap());
        let after = plan_side(loaded.clone(), &Settings::default(), || 0.0).unwrap();
        let tight = Settings {
            cap_bytes: Some(1),
            ..Settings::default()
        };
        let before = plan_side(loaded, &tight, || 0.0).unwrap();
        let c = Comparison::new(before, after, || 0.0);
        let counts = c.diff.counts();
        assert_eq!(
            c.rows.len(),
            counts.regrouped + counts.only_before + counts.only_after
        );
        assert!(!c.rows.is_empty(), "a 1-byte cap changes the plan");
        for r in &c.rows {
            for (place, input) in [(&r.before, &c.before), (&r.after, &c.after)] {
                let Some(p) = place else { continue };
                let t = &input.graph.as_ref().unwrap().planned.timeline;
                let b = &t.buckets[p.timeline_bucket.unwrap()];
                assert!(
                    b.members
                        .iter()
                        .any(|m| m.param_name.as_deref() == Some(&*r.key.param_name)),
                    "{}: {} does not hold it",
                    r.id,
                    b.id
                );
            }
            let vp = c.reveal(&r.id).unwrap();
            for p in [&r.before, &r.after].into_iter().flatten() {
                let (from, to) = p.range.unwrap();
                assert!(
                    vp.x0 <= from && to <= vp.x1,
                    "{}: {vp:?} misses {from}..{to}",
                    r.id
                );
            }
        }
        // Re-planning a side is planning it so from the start.
        let again = c.replan(false, &Settings::default(), || 0.0).unwrap();
        assert_eq!(again.before.side, again.after.side);
        assert!(again.rows.is_empty());
        // A report is a side without a graph.
        let report = read(&cases.join("llama2_capacity/plan.json"));
        let as_report = read_now("plan.json", &report, &Settings::default()).unwrap();
        assert!(as_report.graph.is_none());
        assert_eq!(as_report.side, read_side(&report, None).unwrap());
    }

    #[test]
    fn bad_sides_are_named() {
        let e = read_now("x.json", b"{\"nodes\": 3}", &Settings::default())
            .err()
            .unwrap();
        assert!(e.starts_with("x.json: "), "{e}");
        let e = read_now("r.json", b"{\"buckets\": 7}", &Settings::default())
            .err()
            .unwrap();
        assert!(e.starts_with("r.json: invalid plan report"), "{e}");
    }
}
