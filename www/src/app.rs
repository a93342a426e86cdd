//! The app: one reducer ([`State`]), the panels it feeds, loading, the address bar, exports
//! and the paint timing the browser tests read (`.perf`).

use crate::browser;
use crate::components::chart::{Chart, Pick};
use crate::components::controls::{Controls, Export};
use crate::components::cost::Cost;
use crate::components::detail::Detail;
use crate::components::embed::Embed;
use crate::components::graphs::GraphPicker;
use crate::components::loader::{example_path, Loader, Open, Welcome};
use crate::components::overview::Overview;
use crate::components::status::Status;
use crate::components::table::Table;
use crate::components::tags::Tags;
use crate::digest;
use crate::limits;
use crate::model::{self, Loaded, Shared};
use crate::state::{Action, Selection, State, Timing};
use crate::url_state::{SourceRef, UrlState};
use commlens::timeline::{
    build_scene_with, chrome_trace_with, render_svg_with, ExportSettings, SceneOptions, Viewport,
};
use commlens::TagMode;
use std::rc::Rc;
use yew::prelude::*;

/// Reads a dump or a trace log from where `what` says (a log on graph `graph`, or its
/// default), then dispatches it (or why it could not be read).
fn open(
    dispatch: UseReducerDispatcher<State>,
    what: Open,
    limit_mb: Option<u64>,
    graph: Option<usize>,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let limit = limits::bytes(limit_mb);
        // For a file, the signature worker asked with the file's own buffer.
        let (label, source, bytes, started, beside) = match what {
            Open::Source(src) => {
                let started = browser::now_ms();
                let (url, source) = match &src {
                    SourceRef::Url(u) => {
                        let abs = browser::absolute(u);
                        (abs.clone(), SourceRef::Url(abs))
                    }
                    SourceRef::Example(k) => match example_path(k) {
                        Ok(p) => (p.to_string(), src.clone()),
                        Err(e) => {
                            dispatch.dispatch(Action::LoadFailed(e));
                            return;
                        }
                    },
                };
                let label = url
                    .split(['?', '#'])
                    .next()
                    .unwrap_or(&url)
                    .rsplit('/')
                    .next()
                    .unwrap_or(&url)
                    .to_string();
                dispatch.dispatch(Action::Busy(format!("fetching {url}…")));
                let last = std::cell::Cell::new(0.0);
                let progress_dispatch = dispatch.clone();
                let progress = move |got: usize, total: Option<usize>| {
                    // At most ten progress lines a second.
                    let now = browser::now_ms();
                    if now - last.get() < 100.0 {
                        return;
                    }
                    last.set(now);
                    let text = match total {
                        Some(t) if t > 0 => format!(
                            "downloading {:.1} of {:.1} MB ({:.0}%)",
                            got as f64 / 1e6,
                            t as f64 / 1e6,
                            100.0 * got as f64 / t as f64
                        ),
                        _ => format!("downloading {:.1} MB", got as f64 / 1e6),
                    };
                    progress_dispatch.dispatch(Action::Busy(text));
                };
                match browser::fetch_bytes(&url, limit, progress).await {
                    Ok(b) => (label, Some(source), b, started, None),
                    Err(e) => {
                        dispatch.dispatch(Action::LoadFailed(e));
                        return;
                    }
                }
            }
            Open::File(file, started) => {
                dispatch.dispatch(Action::Busy(format!(
                    "reading {} ({:.1} MB)…",
                    file.name(),
                    file.size() / 1e6
                )));
                match browser::read_file_keeping(&file, limit).await {
                    Ok((b, buffer)) => {
                        let beside = digest::SignatureWorker::request_buffer(&b, buffer);
                        (file.name(), None, b, started, Some(beside))
                    }
                    Err(e) => {
                        dispatch.dispatch(Action::LoadFailed(e));
                        return;
                    }
                }
            }
        };
        dispatch.dispatch(Action::Busy(format!(
            "reading the graph ({:.1} MB{})…",
            bytes.len() as f64 / 1e6,
            if bytes.starts_with(&[0x1f, 0x8b]) {
                ", gzip"
            } else {
                ""
            }
        )));
        browser::yield_now().await;
        let t0 = browser::now_ms();
        // The CLI's limits: what gzip data may decompress to is the same input-size limit.
        commlens::input::set_limits(limits::core(limit_mb));
        // A dump, or a trace log's chosen graph: the graph and the planner's per-graph checks
        // are built while reading.
        let size = bytes.len();
        let beside = match beside {
            Some(asked) => asked,
            None => digest::SignatureWorker::request(&bytes),
        };
        match digest::read_digesting(beside, || model::read_input(bytes, graph)) {
            Err(e) => dispatch.dispatch(Action::LoadFailed(commlens::text::bounded_message(
                &format!("{label}: {e}"),
            ))),
            Ok((read, pending)) => {
                let t1 = browser::now_ms();
                let mut loaded = Loaded::new(label, source, read.log, read.planner, size);
                let digested = digest::settle_signature(&mut loaded, pending).await;
                finish_load(&dispatch, loaded, read.notice, started, (t0, t1), &digested);
            }
        }
    });
}

/// Shows graph `choice` of the trace log on screen (read again from the log's text, kept in
/// memory: a dropped file cannot be read twice).
fn choose_graph(dispatch: UseReducerDispatcher<State>, loaded: Rc<Loaded>, choice: usize) {
    let Some((log, _)) = loaded.log.clone() else {
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let started = browser::now_ms();
        dispatch.dispatch(Action::Busy(format!("reading graph {choice} of the log…")));
        browser::yield_now().await;
        let t0 = browser::now_ms();
        match digest::read_digesting(None, || model::read_log_graph(&log, choice)) {
            Err(e) => dispatch.dispatch(Action::LoadFailed(format!(
                "{}, graph {choice}: {e}",
                loaded.label
            ))),
            Ok((planner, pending)) => {
                let t1 = browser::now_ms();
                let mut next = Loaded::new(
                    loaded.label.clone(),
                    loaded.source.clone(),
                    Some((log, choice)),
                    planner,
                    loaded.bytes,
                );
                let digested = digest::settle_signature(&mut next, pending).await;
                finish_load(&dispatch, next, None, started, (t0, t1), &digested);
            }
        }
    });
}

/// Hands a graph that was read to the reducer, with the stages' times.
fn finish_load(
    dispatch: &UseReducerDispatcher<State>,
    loaded: Loaded,
    notice: Option<String>,
    started: f64,
    (t0, t1): (f64, f64),
    digested: &digest::Digested,
) {
    let t2 = browser::now_ms();
    dispatch.dispatch(Action::Loaded {
        loaded: Rc::new(loaded),
        notice,
        started,
        stages: format!(
            "file {:.0} ms · read+prepare {:.0} ms{} · roles {:.0} ms",
            t0 - started,
            t1 - t0,
            digested.describe(),
            t2 - t1
        ),
    });
}

/// What an export records: the dump, the planner arguments, the view, the link.
fn export_settings(state: &State, loaded: &Loaded) -> ExportSettings {
    ExportSettings {
        tool: "commlens app".into(),
        dump: match &loaded.source {
            Some(SourceRef::Url(u)) => u.clone(),
            Some(SourceRef::Example(k)) => example_path(k).unwrap_or(k).to_string(),
            None => loaded.label.clone(),
        },
        args: state.settings.args_json(&loaded.graph),
        tags: (state.settings.tags != TagMode::Dump)
            .then(|| state.settings.tags.as_str().to_string()),
        graph: loaded.graph_choice(),
        viewport: None,
        width: None,
        view_url: Some(browser::url_with(
            &state.url_state().without_embed().to_query(),
        )),
        hardware: state.hardware.as_ref().map(|hw| {
            commlens::cost::report::hardware_json(&commlens::cost::Hardware::with_network(
                hw.clone(),
            ))
        }),
    }
}

fn export(state: &State, kind: Export) {
    let (Some(loaded), Some(planned)) = (&state.loaded, &state.planned) else {
        return;
    };
    let stem = loaded
        .label
        .trim_end_matches(".gz")
        .trim_end_matches(".json")
        .to_string();
    let settings = export_settings(state, loaded);
    let result = match kind {
        Export::Svg => {
            let n = loaded.graph.len() as u32;
            let vp = state.viewport.unwrap_or_else(|| Viewport::full(n));
            // What the chart shows: the time estimates' marks and axis too.
            let cost = state.cost.as_ref();
            let scene = build_scene_with(
                &planned.timeline,
                &SceneOptions {
                    viewport: vp,
                    width: commlens::timeline::DEFAULT_WIDTH,
                    focus: None,
                    exposed: cost.map_or_else(|| Rc::from(Vec::new()), |c| c.exposed.clone()),
                    bucket_times: cost.map_or_else(|| Rc::from(Vec::new()), |c| c.buckets.clone()),
                    time: cost.filter(|_| state.time_axis).map(|c| c.time.clone()),
                    marked: None,
                },
            );
            let settings = ExportSettings {
                viewport: Some(scene.viewport),
                width: Some(scene.frame.width),
                ..settings
            };
            browser::download(
                &format!("{stem}.timeline.svg"),
                "image/svg+xml",
                &render_svg_with(&scene, Some(&settings.svg_meta())),
            )
        }
        Export::Report => browser::download(
            &format!("{stem}.plan.json"),
            "application/json",
            &planned.report_json(&loaded.graph),
        ),
        Export::Settings => {
            let mut json = settings.to_json();
            json["report"] = serde_json::json!(format!("{stem}.plan.json"));
            browser::download(
                &format!("{stem}.plan.settings.json"),
                "application/json",
                &serde_json::to_string_pretty(&json).unwrap_or_default(),
            )
        }
        Export::Trace => browser::download(
            &format!("{stem}.trace.json"),
            "application/json",
            &chrome_trace_with(&planned.timeline, Some(&settings.to_json())),
        ),
    };
    if let Err(e) = result {
        web_sys::console::error_1(&e.into());
    }
}

/// The chart's width as index.html's CSS lays it out (the embed's and the main grid's
/// paddings, the left column), from the window's width alone: the first view is then drawn
/// once, without waiting for a layout to measure the chart's box (which corrects this guess
/// if the CSS changes, or a scrollbar takes room).
fn chart_width_hint(embed: bool) -> u32 {
    let w = web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .unwrap_or(0.0);
    let chrome = if embed {
        12.0 // .embed padding 4+4, its section's padding 2+2
    } else if w > 1000.0 {
        356.0 // .main padding 14+14, left column 290, gap 12, section padding 12+12, border 1+1
    } else {
        54.0 // one column: .main padding 14+14, section padding 12+12, border 1+1
    };
    (w - chrome).max(0.0) as u32
}

/// Writes the paint time of a timed change where the tests and the curious read it.
fn write_perf(perf: &NodeRef, t: &Timing) {
    let ms = browser::now_ms() - t.started;
    if let Some(el) = perf.cast::<web_sys::Element>() {
        let _ = el.set_attribute(&format!("data-{}-ms", t.what), &format!("{ms:.1}"));
        let _ = el.set_attribute("data-seq", &t.seq.to_string());
        el.set_text_content(Some(&format!(
            "{} → painted in {ms:.0} ms · {}",
            t.what, t.stages
        )));
    }
    web_sys::console::log_1(
        &format!(
            "commlens: {} → painted in {ms:.1} ms ({})",
            t.what, t.stages
        )
        .into(),
    );
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(State::default);
    let dispatch = state.dispatcher();
    let perf = use_node_ref();
    let dragging = use_state(|| false);

    // The link, once.
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let (url, problems) = UrlState::parse(&browser::query_string());
            let source = url.source.clone();
            let limit = url.limit_mb;
            let graph = url.graph;
            dispatch.dispatch(Action::Init(Box::new(url), problems));
            if let Some(s) = source {
                open(dispatch, Open::Source(s), limit, graph);
            }
        });
    }
    // The address bar follows the view (once a dump is on screen).
    let query = state.loaded.as_ref().map(|_| state.url_state().to_query());
    use_effect_with(query.clone(), |q| {
        if let Some(q) = q {
            browser::replace_query(q);
        }
    });
    // Paint timing.
    {
        let perf = perf.clone();
        use_effect_with(state.timing.clone(), move |t| {
            if let Some(t) = t.clone() {
                browser::next_frame(move || write_perf(&perf, &t));
            }
        });
    }

    let on_open = use_callback(
        (dispatch.clone(), state.limit_mb),
        |what: Open, (d, limit)| open(d.clone(), what, *limit, None),
    );

    let on_view = use_callback(
        dispatch.clone(),
        |(viewport, commit): (Option<Viewport>, bool), d| {
            d.dispatch(Action::View { viewport, commit })
        },
    );
    let loaded = state.loaded.clone().map(Shared);
    let planned = state.planned.clone().map(Shared);
    let on_graph = use_callback(
        (dispatch.clone(), loaded.clone()),
        |choice: usize, (d, loaded)| {
            if let Some(loaded) = loaded {
                if loaded.graph_choice() != Some(choice) {
                    choose_graph(d.clone(), loaded.0.clone(), choice);
                }
            }
        },
    );
    let on_pick = use_callback(
        (dispatch.clone(), loaded.clone(), planned.clone()),
        |pick: Pick, (d, loaded, planned)| {
            let (Some(loaded), Some(planned)) = (loaded, planned) else {
                return;
            };
            let selection = match pick {
                Pick::Bucket(i) => Selection::of_bucket(&planned.timeline, i),
                Pick::Node(name) => match loaded.graph.find(&name) {
                    Some(id) => Selection::Node(id as u32),
                    None => return,
                },
            };
            d.dispatch(Action::Select {
                selection,
                reveal: false,
            });
        },
    );
    let on_select = use_callback(dispatch.clone(), |selection: Selection, d| {
        d.dispatch(Action::Select {
            selection,
            reveal: true,
        })
    });
    let on_row = use_callback(dispatch.clone(), |node: u32, d| {
        d.dispatch(Action::Select {
            selection: Selection::Node(node),
            reveal: true,
        })
    });
    let on_search = use_callback(dispatch.clone(), |q: String, d| {
        d.dispatch(Action::Search(q))
    });
    let on_filter = use_callback(dispatch.clone(), |f, d| d.dispatch(Action::Filter(f)));
    let on_settings = use_callback(dispatch.clone(), |s, d| d.dispatch(Action::Settings(s)));
    let on_tags = use_callback(
        (dispatch.clone(), state.settings.clone()),
        |tags: TagMode, (d, settings)| {
            d.dispatch(Action::Settings(model::Settings {
                tags,
                ..settings.clone()
            }))
        },
    );
    let on_limit = use_callback(dispatch.clone(), |l, d| d.dispatch(Action::Limit(l)));
    let on_hardware = use_callback(dispatch.clone(), |hw, d| d.dispatch(Action::Hardware(hw)));
    let on_time_axis = use_callback(dispatch.clone(), |on, d| d.dispatch(Action::TimeAxis(on)));
    let on_dismiss_error = use_callback(dispatch.clone(), |(), d| d.dispatch(Action::DismissError));
    let on_dismiss_notice =
        use_callback(dispatch.clone(), |(), d| d.dispatch(Action::DismissNotice));
    let on_export = {
        let state = state.clone();
        Callback::from(move |kind: Export| export(&state, kind))
    };

    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |_: DragEvent| dragging.set(false))
    };
    let ondrop = {
        let dragging = dragging.clone();
        let on_open = on_open.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            let started = browser::now_ms();
            if let Some(file) = e
                .data_transfer()
                .and_then(|d| d.files())
                .and_then(|l| l.get(0))
            {
                on_open.emit(Open::File(file, started));
            }
        })
    };

    let status = html! {
        <Status busy={state.busy.clone().map(AttrValue::from)} error={state.error.clone().map(AttrValue::from)}
            notice={state.notice.clone().map(AttrValue::from)} showing={state.loaded.is_some()}
            on_dismiss_error={on_dismiss_error} on_dismiss_notice={on_dismiss_notice} />
    };
    let url_state = state.url_state();
    let share_url = AttrValue::from(browser::url_with(&url_state.without_embed().to_query()));
    let timeline_panels = match (&loaded, &planned) {
        (Some(loaded), Some(planned)) => {
            let timeline = planned.timeline.clone();
            let exposed = state.cost.as_ref().map(|c| c.exposed.clone());
            let bucket_times = state.cost.as_ref().map(|c| c.buckets.clone());
            let time = state
                .cost
                .as_ref()
                .filter(|_| state.time_axis)
                .map(|c| c.time.clone());
            let focus = state.selection.bucket(&timeline);
            let selected = focus.map(|b| timeline.buckets[b].id.clone());
            let chart = html! {
                <Chart timeline={timeline.clone()} exposed={exposed.clone()} bucket_times={bucket_times.clone()} time={time.clone()} viewport={state.viewport} focus={focus} selected={selected}
                    filter={state.filter.clone()} on_view={on_view.clone()} on_pick={on_pick.clone()} embed={state.embed}
                    dom_id={AttrValue::Static("chart")} width_hint={chart_width_hint(state.embed)}
                    title={AttrValue::from(format!("Bucket timeline of {}", loaded.label))} />
            };
            let detail = (state.selection != Selection::None).then(|| html! {
                <Detail loaded={loaded.clone()} planned={planned.clone()} selection={state.selection}
                    compact={state.embed} open_url={state.embed.then(|| share_url.clone())} on_select={on_select.clone()}
                    cost={state.cost.clone().map(Shared)} />
            });
            Some((chart, detail))
        }
        _ => None,
    };
    let perf_line =
        html! { <div ref={perf.clone()} class="perf" id="perf" aria-hidden="true"></div> };

    if state.embed {
        let title = state
            .loaded
            .as_ref()
            .map(|l| format!("{} · commlens", l.label))
            .unwrap_or_else(|| "commlens".into());
        return html! {
            <Embed title={AttrValue::from(title)} open_url={share_url.clone()}>
                { status }
                if let Some((chart, detail)) = timeline_panels {
                    { chart }
                    if let Some(d) = detail { { d } }
                }
                { perf_line }
            </Embed>
        };
    }
    html! {
        <div class={classes!("app", dragging.then_some("dragging"))} {ondragover} {ondragleave} {ondrop}>
            <a class="skip-link" href="#main">{"Skip to the timeline"}</a>
            <header>
                <h1>{"commlens"}</h1>
                <span class="sub">{"FSDP collective buckets, in your browser"}</span>
                <Loader on_open={on_open.clone()} />
            </header>
            { status }
            if let (Some(loaded), Some(planned), Some((chart, detail))) = (&loaded, &planned, timeline_panels) {
                <main class="main" id="main" tabindex="-1">
                    <div class="left">
                        if let Some((log, choice)) = &loaded.log {
                            <GraphPicker log={log.clone()} choice={*choice} warnings={loaded.graph.dump.warnings.clone()} on_choose={on_graph} />
                        }
                        <Tags mode={state.settings.tags} note={planned.tags_note.clone().map(AttrValue::from)} on_mode={on_tags} />
                        <Controls loaded={loaded.clone()} settings={state.settings.clone()} share_url={share_url.clone()}
                            on_settings={on_settings} on_export={on_export} />
                        <Cost hardware={state.hardware.clone()} time_axis={state.time_axis} on_time_axis={on_time_axis} cost={state.cost.clone().map(Shared)} on_hardware={on_hardware} />
                        <Overview counts={planned.overview.clone()} filter={state.filter.clone()}
                            plan_error={planned.error.clone().map(AttrValue::from)} on_filter={on_filter} />
                    </div>
                    <div class="right">
                        { chart }
                        if let Some(d) = detail { { d } }
                        <Table collectives={loaded.collectives.clone()} columns={planned.columns.clone()} timeline={planned.timeline.clone()}
                            filter={state.filter.clone()} search={AttrValue::from(state.search.clone())}
                            selected={match state.selection { Selection::Node(n) => Some(n), _ => None }}
                            on_select={on_row} on_search={on_search} />
                    </div>
                </main>
            } else {
                <main class="empty" id="main">
                    <Welcome limit_mb={state.limit_mb.unwrap_or(limits::DEFAULT_LIMIT_MB)} on_limit={on_limit} />
                </main>
            }
            { perf_line }
        </div>
    }
}
