//! The app component: state, messages and views.

use crate::browser;
use crate::model::{self, Loaded, Planned, PlansMode, Row, Settings};
use commlens::graph::Graph;
use commlens::timeline::{
    self, build_scene, render_svg, Action, RoleSource, TimelineScene, Viewport,
};
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};
use yew::prelude::*;

/// Built-in examples from the exporter's demo (copied into the site by `cargo xtask build`).
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    ("mlp", "examples/mlp_fsdp.json", "2-layer MLP, FSDP"),
    ("llama", "examples/llama_fsdp.json.gz", "Llama, FSDP (gzip)"),
];
const PAGE: usize = 100;
const CHART_W: u32 = 1400;

#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    None,
    Node(u32),
    Bucket(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    Role(String),
    Source(String),
    Group(String),
    Reason(String, String),
    Diagnostic(String),
}

impl Filter {
    fn label(&self) -> String {
        match self {
            Filter::Role(r) => format!("role = {r}"),
            Filter::Source(s) => format!("source = {s}"),
            Filter::Group(g) => format!("group = {g}"),
            Filter::Reason(a, r) => format!("{a} = {r}"),
            Filter::Diagnostic(c) => format!("diagnostic = {c}"),
        }
    }
    fn matches(&self, r: &Row) -> bool {
        match self {
            Filter::Role(role) => r.role.as_deref().unwrap_or("unclassified") == role,
            Filter::Source(s) => r.source.as_str() == s,
            Filter::Group(g) => &*r.group == g.as_str(),
            Filter::Reason(a, reason) => r
                .decision
                .as_ref()
                .map(|(x, y)| x.as_str() == a && &**y == reason.as_str())
                .unwrap_or(false),
            Filter::Diagnostic(c) => r.diagnostics.contains(c),
        }
    }
    fn encode(&self) -> String {
        match self {
            Filter::Role(r) => format!("role:{r}"),
            Filter::Source(s) => format!("source:{s}"),
            Filter::Group(g) => format!("group:{g}"),
            Filter::Reason(a, r) => format!("{a}:{r}"),
            Filter::Diagnostic(c) => format!("diag:{c}"),
        }
    }
    fn decode(s: &str) -> Option<Filter> {
        let (k, v) = s.split_once(':')?;
        Some(match k {
            "role" => Filter::Role(v.into()),
            "source" => Filter::Source(v.into()),
            "group" => Filter::Group(v.into()),
            "skip" | "split" | "singleton" => Filter::Reason(k.into(), v.into()),
            "diag" => Filter::Diagnostic(v.into()),
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Col {
    Pos,
    Name,
    Role,
    Kind,
    Group,
    Param,
    Bytes,
    Bucket,
    Decision,
}

pub enum Msg {
    Fetch {
        url: String,
        label: String,
        linkable: Option<String>,
    },
    Progress(String),
    Bytes {
        label: String,
        linkable: Option<String>,
        bytes: Vec<u8>,
        started: f64,
    },
    Parse,
    LoadError(String),
    Files(Vec<web_sys::File>, f64),
    DragOver(bool),
    Cap(String),
    InDist(String),
    ConsDist(String),
    PlansKey(String),
    PlansText(String),
    Select(Selection),
    ChartDown(f64),
    ChartMove(MouseEvent),
    ChartUp(MouseEvent),
    Wheel(f64, f64),
    Zoom(f64),
    Pan(f64),
    ResetZoom,
    Filter(Option<Filter>),
    Search(String),
    Sort(Col),
    Page(usize),
    CopyLink,
    Export(&'static str),
    UrlInput(String),
    Dismiss,
}

pub struct App {
    loaded: Option<Rc<Loaded>>,
    settings: Settings,
    planned: Option<Rc<Planned>>,
    viewport: Option<Viewport>,
    scene: Option<Rc<TimelineScene>>,
    svg: AttrValue,
    selection: Selection,
    filter: Option<Filter>,
    search: String,
    sort: (Col, bool),
    page: usize,
    error: Option<String>,
    busy: Option<String>,
    pending: Option<(String, Option<String>, Vec<u8>, f64)>,
    drag_over: bool,
    embed: bool,
    chart_w: u32,
    drag: Option<(f64, Viewport, bool)>,
    /// (what, started) of the change whose paint is timed next.
    timing: Option<(&'static str, f64)>,
    stages: String,
    seq: u64,
    url_input: String,
    copied: bool,
    /// Selection and zoom from the URL, applied once the first load finishes.
    initial: Option<(Selection, Option<Viewport>)>,
    wheel: Option<Closure<dyn FnMut(web_sys::WheelEvent)>>,
}

fn num(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok()
}

fn parse_f(p: &web_sys::UrlSearchParams, k: &str) -> Option<f64> {
    p.get(k).and_then(|v| v.parse::<f64>().ok())
}

impl Component for App {
    type Message = Msg;
    type Properties = ();

    fn create(ctx: &Context<Self>) -> Self {
        let q = browser::query();
        let embed = q.get("embed").is_some();
        let settings = Settings {
            cap_bytes: q.get("cap").as_deref().and_then(num),
            max_input_distance: q.get("mid").as_deref().and_then(num),
            max_consumer_distance: q.get("mcd").as_deref().and_then(num),
            plans: PlansMode::from_key(
                &q.get("plans").unwrap_or_default(),
                q.get("ptext").unwrap_or_default(),
            ),
        };
        let selection = match q.get("sel") {
            Some(s) if s.starts_with("n:") => Selection::Node(s[2..].parse().unwrap_or(0)),
            Some(s) if s.starts_with("b:") => Selection::Bucket(s[2..].to_string()),
            _ => Selection::None,
        };
        let viewport = match (parse_f(&q, "x0"), parse_f(&q, "x1")) {
            (Some(x0), Some(x1)) => Some(Viewport { x0, x1 }),
            _ => None,
        };
        let chart_w = if embed {
            browser::window()
                .inner_width()
                .ok()
                .and_then(|w| w.as_f64())
                .unwrap_or(1000.0)
                .max(480.0) as u32
                - 4
        } else {
            browser::window()
                .inner_width()
                .ok()
                .and_then(|w| w.as_f64())
                .map(|w| (w - 380.0).clamp(640.0, 2400.0) as u32)
                .unwrap_or(CHART_W)
        };
        if let Some(src) = q.get("src") {
            ctx.link().send_message(Msg::Fetch {
                label: src.rsplit('/').next().unwrap_or(&src).to_string(),
                url: src.clone(),
                linkable: Some(src),
            });
        } else if let Some(ex) = q.get("example") {
            if let Some((key, path, _)) = EXAMPLES.iter().find(|e| e.0 == ex) {
                ctx.link().send_message(Msg::Fetch {
                    url: path.to_string(),
                    label: path.rsplit('/').next().unwrap_or(path).to_string(),
                    linkable: Some(format!("example:{key}")),
                });
            }
        }
        App {
            loaded: None,
            settings,
            planned: None,
            viewport: None,
            scene: None,
            svg: AttrValue::from(""),
            selection: Selection::None,
            filter: q.get("filter").as_deref().and_then(Filter::decode),
            search: q.get("q").unwrap_or_default(),
            sort: (Col::Pos, false),
            page: 0,
            error: None,
            busy: None,
            pending: None,
            drag_over: false,
            embed,
            chart_w,
            drag: None,
            timing: None,
            stages: String::new(),
            seq: 0,
            url_input: String::new(),
            copied: false,
            initial: Some((selection, viewport)),
            wheel: None,
        }
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Fetch {
                url,
                label,
                linkable,
            } => {
                let started = browser::now_ms();
                self.busy = Some(format!("fetching {url}…"));
                self.error = None;
                let link = ctx.link().clone();
                ctx.link().send_future(async move {
                    let progress_link = link.clone();
                    let progress = move |got: usize, total: Option<usize>| {
                        let text = match total {
                            Some(t) if t > 0 => format!(
                                "downloading {label_mb:.1} of {:.1} MB ({:.0}%)",
                                t as f64 / 1e6,
                                100.0 * got as f64 / t as f64,
                                label_mb = got as f64 / 1e6
                            ),
                            _ => format!("downloading {:.1} MB", got as f64 / 1e6),
                        };
                        progress_link.send_message(Msg::Progress(text));
                    };
                    match browser::fetch_bytes(&url, progress).await {
                        Ok(bytes) => Msg::Bytes {
                            label,
                            linkable,
                            bytes,
                            started,
                        },
                        Err(e) => Msg::LoadError(e),
                    }
                });
                true
            }
            Msg::Progress(text) => {
                self.busy = Some(text);
                true
            }
            Msg::Files(files, started) => {
                self.drag_over = false;
                let Some(file) = files.into_iter().next() else {
                    return true;
                };
                self.busy = Some(format!(
                    "reading {} ({:.1} MB)…",
                    file.name(),
                    file.size() / 1e6
                ));
                self.error = None;
                ctx.link().send_future(async move {
                    match browser::read_file(&file).await {
                        Ok(bytes) => Msg::Bytes {
                            label: file.name(),
                            linkable: None,
                            bytes,
                            started,
                        },
                        Err(e) => Msg::LoadError(e),
                    }
                });
                true
            }
            Msg::Bytes {
                label,
                linkable,
                bytes,
                started,
            } => {
                self.busy = Some(format!(
                    "reading the graph ({:.1} MB{})…",
                    bytes.len() as f64 / 1e6,
                    if bytes.starts_with(&[0x1f, 0x8b]) {
                        ", gzip"
                    } else {
                        ""
                    }
                ));
                self.pending = Some((label, linkable, bytes, started));
                ctx.link().send_future(async {
                    browser::yield_now().await;
                    Msg::Parse
                });
                true
            }
            Msg::Parse => {
                let Some((label, linkable, bytes, started)) = self.pending.take() else {
                    return false;
                };
                let t0 = browser::now_ms();
                // The graph and the planner's per-graph checks are built while reading.
                let prepared = commlens::planner::read_prepared::<Rc<Graph>>(&bytes);
                let t1 = browser::now_ms();
                self.busy = None;
                match prepared {
                    Err(e) => {
                        self.error = Some(format!("{label}: {e}"));
                        self.initial = None;
                    }
                    Ok(planner) => {
                        let graph = planner.graph_holder().clone();
                        let planner = Rc::new(planner);
                        let roles = timeline::Roles::classify(&graph);
                        let rows = model::base_rows(&graph, &roles);
                        let overview = model::base_overview(&rows, &roles);
                        let t2 = browser::now_ms();
                        self.loaded = Some(Rc::new(Loaded {
                            label,
                            url: linkable,
                            roles: Rc::new(roles),
                            rows: Rc::new(rows),
                            overview,
                            graph,
                            planner,
                            bytes: bytes.len(),
                        }));
                        self.error = None;
                        self.selection = Selection::None;
                        self.viewport = None;
                        self.page = 0;
                        if let Some((sel, vp)) = self.initial.take() {
                            self.selection = sel;
                            self.viewport = vp;
                        }
                        let t3 = browser::now_ms();
                        self.replan();
                        let t4 = browser::now_ms();
                        self.timing = Some(("load", started));
                        let (plan_ms, prep_ms, detail) = self.plan_timings();
                        self.stages = format!(
                            "file {:.0} ms · read+prepare {:.0} ms · roles {:.0} ms · plan {:.0} ms · views {:.0} ms ({detail}) · draw {:.0} ms",
                            t0 - started,
                            t1 - t0,
                            t2 - t1,
                            plan_ms,
                            prep_ms,
                            t4 - t3 - plan_ms - prep_ms
                        );
                    }
                }
                self.sync_url();
                true
            }
            Msg::LoadError(e) => {
                self.busy = None;
                self.error = Some(e);
                self.initial = None;
                true
            }
            Msg::DragOver(on) => {
                let changed = self.drag_over != on;
                self.drag_over = on;
                changed
            }
            Msg::Cap(v) => self.change(|s| s.cap_bytes = num(&v)),
            Msg::InDist(v) => self.change(|s| s.max_input_distance = num(&v)),
            Msg::ConsDist(v) => self.change(|s| s.max_consumer_distance = num(&v)),
            Msg::PlansKey(k) => {
                let text = self.settings.plans.text().to_string();
                let text = if text.is_empty() && k == "blocks" {
                    self.default_block_types()
                } else {
                    text
                };
                self.change(|s| s.plans = PlansMode::from_key(&k, text))
            }
            Msg::PlansText(t) => {
                let key = self.settings.plans.key();
                self.change(|s| s.plans = PlansMode::from_key(key, t))
            }
            Msg::Select(sel) => {
                self.selection = sel;
                self.sync_url();
                true
            }
            Msg::ChartDown(x) => {
                if let Some(s) = &self.scene {
                    self.drag = Some((x, s.viewport, false));
                }
                false
            }
            Msg::ChartMove(e) => {
                let Some((x0, vp, moved)) = self.drag else {
                    return false;
                };
                if e.buttons() & 1 == 0 {
                    self.drag = None;
                    return false;
                }
                let dx = e.client_x() as f64 - x0;
                if !moved && dx.abs() < 4.0 {
                    return false;
                }
                self.drag = Some((x0, vp, true));
                let per_px = self.positions_per_client_px(vp);
                self.set_viewport(vp.pan(-dx * per_px, self.node_count()));
                true
            }
            Msg::ChartUp(e) => {
                let was_drag = matches!(self.drag, Some((_, _, true)));
                self.drag = None;
                if was_drag {
                    self.sync_url();
                    return true;
                }
                self.chart_click(e)
            }
            Msg::Wheel(client_x, dy) => {
                let Some(scene) = self.scene.clone() else {
                    return false;
                };
                let at = self.client_to_pos(client_x, &scene);
                let factor = if dy > 0.0 { 1.25 } else { 0.8 };
                self.set_viewport(scene.viewport.zoom(factor, at, self.node_count()));
                self.sync_url();
                true
            }
            Msg::Zoom(f) => {
                let Some(scene) = self.scene.clone() else {
                    return false;
                };
                let at = (scene.viewport.x0 + scene.viewport.x1) / 2.0;
                self.set_viewport(scene.viewport.zoom(f, at, self.node_count()));
                self.sync_url();
                true
            }
            Msg::Pan(frac) => {
                let Some(scene) = self.scene.clone() else {
                    return false;
                };
                let w = scene.viewport.x1 - scene.viewport.x0;
                self.set_viewport(scene.viewport.pan(w * frac, self.node_count()));
                self.sync_url();
                true
            }
            Msg::ResetZoom => {
                self.viewport = None;
                self.refresh_svg();
                self.sync_url();
                true
            }
            Msg::Filter(f) => {
                self.filter = f;
                self.page = 0;
                self.sync_url();
                true
            }
            Msg::Search(s) => {
                self.search = s;
                self.page = 0;
                self.sync_url();
                true
            }
            Msg::Sort(c) => {
                self.sort = if self.sort.0 == c {
                    (c, !self.sort.1)
                } else {
                    (c, false)
                };
                true
            }
            Msg::Page(p) => {
                self.page = p;
                true
            }
            Msg::CopyLink => {
                browser::copy_text(&self.share_url());
                self.copied = true;
                true
            }
            Msg::Export(kind) => {
                self.export(kind);
                false
            }
            Msg::UrlInput(u) => {
                self.url_input = u;
                false
            }
            Msg::Dismiss => {
                self.error = None;
                true
            }
        }
    }

    fn rendered(&mut self, ctx: &Context<Self>, _first: bool) {
        if self.wheel.is_none() {
            if let Some(el) = browser::window()
                .document()
                .and_then(|d| d.get_element_by_id("chart"))
            {
                let link = ctx.link().clone();
                let cb = Closure::<dyn FnMut(web_sys::WheelEvent)>::new(
                    move |e: web_sys::WheelEvent| {
                        e.prevent_default();
                        link.send_message(Msg::Wheel(e.client_x() as f64, e.delta_y()));
                    },
                );
                let opts = web_sys::AddEventListenerOptions::new();
                opts.set_passive(false);
                let _ = el.add_event_listener_with_callback_and_add_event_listener_options(
                    "wheel",
                    cb.as_ref().unchecked_ref(),
                    &opts,
                );
                self.wheel = Some(cb);
            }
        }
        if let Some((what, started)) = self.timing.take() {
            self.seq += 1;
            let seq = self.seq;
            let stages = self.stages.clone();
            browser::next_frame(move || {
                let ms = browser::now_ms() - started;
                if let Some(el) = browser::window()
                    .document()
                    .and_then(|d| d.get_element_by_id("perf"))
                {
                    let _ = el.set_attribute(&format!("data-{what}-ms"), &format!("{ms:.1}"));
                    let _ = el.set_attribute("data-seq", &seq.to_string());
                    el.set_text_content(Some(&format!(
                        "{what} → painted in {ms:.0} ms · {stages}"
                    )));
                }
                web_sys::console::log_1(
                    &format!("commlens: {what} → painted in {ms:.1} ms ({stages})").into(),
                );
            });
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let ondragover = link.callback(|e: DragEvent| {
            e.prevent_default();
            Msg::DragOver(true)
        });
        let ondragleave = link.callback(|_: DragEvent| Msg::DragOver(false));
        let ondrop = link.callback(|e: DragEvent| {
            e.prevent_default();
            let started = browser::now_ms();
            let files = e
                .data_transfer()
                .and_then(|d| d.files())
                .map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect())
                .unwrap_or_default();
            Msg::Files(files, started)
        });
        if self.embed {
            return html! {
                <div class="embed" {ondragover} {ondrop}>
                    { self.view_status(ctx) }
                    { self.view_chart(ctx) }
                    <div id="perf" class="perf"></div>
                </div>
            };
        }
        html! {
            <div class={classes!("app", self.drag_over.then_some("dragging"))} {ondragover} {ondragleave} {ondrop}>
                <header>
                    <h1>{"commlens"}</h1>
                    <span class="sub">{"FSDP collective buckets, in your browser"}</span>
                    { self.view_loader(ctx) }
                </header>
                { self.view_status(ctx) }
                if self.loaded.is_some() {
                    <div class="main">
                        <div class="left">
                            { self.view_controls(ctx) }
                            { self.view_overview(ctx) }
                        </div>
                        <div class="right">
                            { self.view_chart(ctx) }
                            { self.view_detail(ctx) }
                            { self.view_table(ctx) }
                        </div>
                    </div>
                } else {
                    <div class="chart-host"><div id="chart"></div></div>
                    <div class="empty">
                        <p>{"Drop a graph dump (.json or .json.gz) anywhere on this page, pick a file, or open an example."}</p>
                    </div>
                }
                <div id="perf" class="perf"></div>
            </div>
        }
    }
}

impl App {
    fn node_count(&self) -> u32 {
        self.loaded
            .as_ref()
            .map(|l| l.graph.len() as u32)
            .unwrap_or(1)
    }

    fn default_block_types(&self) -> String {
        self.loaded
            .as_ref()
            .and_then(|l| {
                l.graph
                    .dump
                    .modules
                    .iter()
                    .find(|m| m.type_name.ends_with("Block") || m.type_name.ends_with("Layer"))
                    .map(|m| {
                        m.type_name
                            .rsplit('.')
                            .next()
                            .unwrap_or(&m.type_name)
                            .to_string()
                    })
            })
            .unwrap_or_default()
    }

    /// The last plan's timings: planner ms, views ms and the views' breakdown.
    fn plan_timings(&self) -> (f64, f64, String) {
        self.planned
            .as_ref()
            .map(|p| (p.plan_ms, p.prepare_ms, p.detail.clone()))
            .unwrap_or_default()
    }

    fn change(&mut self, f: impl FnOnce(&mut Settings)) -> bool {
        let mut s = self.settings.clone();
        f(&mut s);
        if s == self.settings {
            return false;
        }
        self.settings = s;
        let started = browser::now_ms();
        self.replan();
        let t1 = browser::now_ms();
        self.timing = Some(("replan", started));
        let (plan_ms, prep_ms, detail) = self.plan_timings();
        self.stages = format!(
            "plan {plan_ms:.1} ms · views {prep_ms:.1} ms ({detail}) · draw {:.1} ms",
            t1 - started - plan_ms - prep_ms
        );
        self.sync_url();
        true
    }

    fn replan(&mut self) {
        let Some(loaded) = &self.loaded else { return };
        self.planned = Some(Rc::new(model::plan(
            loaded,
            &self.settings,
            browser::now_ms,
        )));
        self.refresh_svg();
    }

    fn set_viewport(&mut self, vp: Viewport) {
        self.viewport = Some(vp);
        self.refresh_svg();
    }

    fn refresh_svg(&mut self) {
        let Some(p) = &self.planned else { return };
        let n = p.timeline.node_count;
        let vp = self.viewport.unwrap_or_else(|| Viewport::full(n));
        let scene = build_scene(&p.timeline, vp, self.chart_w);
        self.svg = AttrValue::from(render_svg(&scene));
        self.scene = Some(Rc::new(scene));
    }

    fn svg_rect(&self) -> Option<web_sys::DomRect> {
        let doc = browser::window().document()?;
        Some(
            doc.query_selector("#chart svg")
                .ok()??
                .get_bounding_client_rect(),
        )
    }

    fn positions_per_client_px(&self, vp: Viewport) -> f64 {
        let Some(scene) = &self.scene else { return 0.0 };
        let f = scene.frame;
        let scale = self
            .svg_rect()
            .map(|r| f.width as f64 / r.width().max(1.0))
            .unwrap_or(1.0);
        scale * (vp.x1 - vp.x0) / (f.plot_x1 - f.plot_x0)
    }

    fn client_to_pos(&self, client_x: f64, scene: &TimelineScene) -> f64 {
        let f = scene.frame;
        let Some(r) = self.svg_rect() else {
            return (scene.viewport.x0 + scene.viewport.x1) / 2.0;
        };
        let px = (client_x - r.left()) * f.width as f64 / r.width().max(1.0);
        let vp = scene.viewport;
        vp.x0 + (px - f.plot_x0) / (f.plot_x1 - f.plot_x0) * (vp.x1 - vp.x0)
    }

    fn chart_click(&mut self, e: MouseEvent) -> bool {
        let Some(target) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
            return false;
        };
        let Some(loaded) = self.loaded.clone() else {
            return false;
        };
        let hit = target
            .closest("[data-bucket],[data-split],[data-skip],[data-skip-group],[data-split-group],[data-bucket-group]")
            .ok()
            .flatten();
        let Some(hit) = hit else { return false };
        if hit.has_attribute("data-bucket-group")
            || hit.has_attribute("data-split-group")
            || hit.has_attribute("data-skip-group")
        {
            let Some(scene) = self.scene.clone() else {
                return false;
            };
            let at = self.client_to_pos(e.client_x() as f64, &scene);
            self.set_viewport(scene.viewport.zoom(0.125, at, self.node_count()));
            self.sync_url();
            return true;
        }
        if let Some(id) = hit.get_attribute("data-bucket") {
            self.selection = Selection::Bucket(id);
        } else if let Some(name) = hit.get_attribute("data-node") {
            if let Some(id) = loaded.graph.find(&name) {
                self.selection = Selection::Node(id as u32);
            }
        }
        self.sync_url();
        true
    }

    fn share_url(&self) -> String {
        format!("{}?{}", browser::base_url(), self.query_string())
    }

    fn query_string(&self) -> String {
        let p = web_sys::UrlSearchParams::new().expect("params");
        if let Some(l) = &self.loaded {
            match &l.url {
                Some(u) if u.starts_with("example:") => p.append("example", &u[8..]),
                Some(u) => p.append("src", &browser::absolute(u)),
                None => {}
            }
        }
        let s = &self.settings;
        for (k, v) in [
            ("cap", s.cap_bytes),
            ("mid", s.max_input_distance),
            ("mcd", s.max_consumer_distance),
        ] {
            if let Some(v) = v {
                p.append(k, &v.to_string());
            }
        }
        if s.plans != PlansMode::Dump {
            p.append("plans", s.plans.key());
            if !s.plans.text().is_empty() {
                p.append("ptext", s.plans.text());
            }
        }
        match &self.selection {
            Selection::Node(n) => p.append("sel", &format!("n:{n}")),
            Selection::Bucket(b) => p.append("sel", &format!("b:{b}")),
            Selection::None => {}
        }
        if let Some(vp) = self.viewport {
            p.append("x0", &format!("{:.2}", vp.x0));
            p.append("x1", &format!("{:.2}", vp.x1));
        }
        if let Some(f) = &self.filter {
            p.append("filter", &f.encode());
        }
        if !self.search.is_empty() {
            p.append("q", &self.search);
        }
        if self.embed {
            p.append("embed", "timeline");
        }
        String::from(p.to_string())
    }

    fn sync_url(&mut self) {
        self.copied = false;
        if self.loaded.is_some() {
            browser::replace_query(&self.query_string());
        }
    }

    fn export(&self, kind: &str) {
        let (Some(loaded), Some(p)) = (&self.loaded, &self.planned) else {
            return;
        };
        let stem = loaded
            .label
            .trim_end_matches(".gz")
            .trim_end_matches(".json")
            .to_string();
        let r = match kind {
            "svg" => browser::download(&format!("{stem}.timeline.svg"), "image/svg+xml", &self.svg),
            "report" => browser::download(
                &format!("{stem}.plan.json"),
                "application/json",
                &p.report_json(&loaded.graph),
            ),
            _ => browser::download(
                &format!("{stem}.trace.json"),
                "application/json",
                &timeline::chrome_trace(&p.timeline),
            ),
        };
        if let Err(e) = r {
            web_sys::console::error_1(&e.into());
        }
    }

    fn view_loader(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let onchange = link.callback(|e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = input
                .files()
                .map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect())
                .unwrap_or_default();
            Msg::Files(files, browser::now_ms())
        });
        let url_input = self.url_input.clone();
        let open_url = link.callback(move |e: SubmitEvent| {
            e.prevent_default();
            let form: web_sys::HtmlFormElement = e.target_unchecked_into();
            let url = form
                .query_selector("input[name=src]")
                .ok()
                .flatten()
                .and_then(|i| i.dyn_into::<HtmlInputElement>().ok())
                .map(|i| i.value())
                .unwrap_or_else(|| url_input.clone());
            Msg::Fetch {
                label: url.rsplit('/').next().unwrap_or(&url).to_string(),
                linkable: Some(url.clone()),
                url,
            }
        });
        html! {
            <div class="loader">
                <label class="button">{"Open file…"}
                    <input type="file" id="file" accept=".json,.gz,application/json,application/gzip" {onchange} />
                </label>
                { for EXAMPLES.iter().map(|(key, path, title)| {
                    let (key, path) = (key.to_string(), path.to_string());
                    let onclick = link.callback(move |_| Msg::Fetch {
                        url: path.clone(),
                        label: path.rsplit('/').next().unwrap_or(&path).to_string(),
                        linkable: Some(format!("example:{key}")),
                    });
                    html! { <button class="example" {onclick}>{ format!("Example: {title}") }</button> }
                }) }
                <form class="urlform" onsubmit={open_url}>
                    <input name="src" type="url" placeholder="https://…/dump.json.gz"
                        oninput={link.callback(|e: InputEvent| Msg::UrlInput(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                    <button type="submit">{"Open URL"}</button>
                </form>
            </div>
        }
    }

    fn view_status(&self, ctx: &Context<Self>) -> Html {
        html! {
            <>
                if let Some(b) = &self.busy {
                    <div class="busy" id="busy"><span class="spinner"></span>{ b.clone() }</div>
                }
                if let Some(e) = &self.error {
                    <div class="error" id="error" role="alert">
                        <strong>{"Could not load: "}</strong>{ e.clone() }
                        if self.loaded.is_some() { <em>{" (still showing the previous graph)"}</em> }
                        <button class="dismiss" onclick={ctx.link().callback(|_| Msg::Dismiss)}>{"×"}</button>
                    </div>
                }
            </>
        }
    }

    fn view_controls(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let s = &self.settings;
        let loaded = self.loaded.as_ref().expect("loaded");
        let dump_policy = loaded
            .graph
            .dump
            .planner
            .as_ref()
            .and_then(|p| p.get("policy"))
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let ph = |k: &str| match dump_policy.get(k) {
            Some(v) if !v.is_null() => format!("dump: {v}"),
            _ => "no limit".to_string(),
        };
        let val = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let key = s.plans.key();
        html! {
            <section class="controls">
                <h2>{"Planner"}</h2>
                <div class="source">
                    <span class="file" title={loaded.label.clone()}>{ loaded.label.clone() }</span>
                    <span class="muted">{ format!(" · {} nodes · {}", loaded.graph.len(), timeline::scene::human_bytes(loaded.bytes as u64)) }</span>
                </div>
                <label>{"cap_bytes"}
                    <input id="cap" type="number" min="1" placeholder={ph("cap_bytes")} value={val(s.cap_bytes)}
                        oninput={link.callback(|e: InputEvent| Msg::Cap(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                </label>
                <label>{"max_input_distance"}
                    <input id="mid" type="number" min="0" placeholder={ph("max_input_distance")} value={val(s.max_input_distance)}
                        oninput={link.callback(|e: InputEvent| Msg::InDist(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                </label>
                <label>{"max_consumer_distance"}
                    <input id="mcd" type="number" min="0" placeholder={ph("max_consumer_distance")} value={val(s.max_consumer_distance)}
                        oninput={link.callback(|e: InputEvent| Msg::ConsDist(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                </label>
                <label>{"module plans"}
                    <select id="plans" onchange={link.callback(|e: Event| Msg::PlansKey(e.target_unchecked_into::<HtmlSelectElement>().value()))}>
                        { for [("dump", "as recorded in the dump"), ("parents", "per parent module (None)"), ("blocks", "per block type"), ("explicit", "explicit groups"), ("none", "none ([])")]
                            .iter().map(|(k, t)| html! { <option value={*k} selected={*k == key}>{ *t }</option> }) }
                    </select>
                </label>
                if key == "blocks" {
                    <label>{"block types (comma-separated)"}
                        <input id="ptext" type="text" value={s.plans.text().to_string()}
                            oninput={link.callback(|e: InputEvent| Msg::PlansText(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                    </label>
                }
                if key == "explicit" {
                    <label>{"groups (one per line, FQNs comma-separated)"}
                        <textarea id="ptext" rows="4" value={s.plans.text().to_string()}
                            oninput={link.callback(|e: InputEvent| Msg::PlansText(e.target_unchecked_into::<HtmlTextAreaElement>().value()))} />
                    </label>
                }
                <div class="share">
                    <button id="copy-link" onclick={link.callback(|_| Msg::CopyLink)}>{ if self.copied { "Link copied" } else { "Copy link" } }</button>
                    <input id="share-url" readonly=true value={self.share_url()} />
                    if loaded.url.is_none() {
                        <p class="muted">{"A dropped file cannot be linked: the link reproduces the settings, selection and zoom once the same file is loaded."}</p>
                    }
                </div>
                <div class="exports">
                    <button id="export-svg" onclick={link.callback(|_| Msg::Export("svg"))}>{"Timeline SVG"}</button>
                    <button id="export-report" onclick={link.callback(|_| Msg::Export("report"))}>{"Plan report JSON"}</button>
                    <button id="export-trace" onclick={link.callback(|_| Msg::Export("trace"))}>{"Chrome trace"}</button>
                </div>
            </section>
        }
    }

    fn view_overview(&self, ctx: &Context<Self>) -> Html {
        let Some(p) = &self.planned else {
            return html! {};
        };
        let link = ctx.link();
        let o = &p.overview;
        let item = |label: String, count: usize, f: Filter, swatch: Option<String>| {
            let active = self.filter.as_ref() == Some(&f);
            let cb =
                link.callback(move |_| Msg::Filter(if active { None } else { Some(f.clone()) }));
            html! {
                <li class={classes!(active.then_some("active"))}>
                    <button class="facet" onclick={cb}>
                        if let Some(c) = swatch { <span class="swatch" style={format!("background:{c}")}></span> }
                        <span class="facet-label">{ label }</span><span class="count">{ count }</span>
                    </button>
                </li>
            }
        };
        let mut by_role: std::collections::BTreeMap<String, usize> = Default::default();
        let mut by_source: std::collections::BTreeMap<String, usize> = Default::default();
        for ((role, source), n) in &o.roles {
            *by_role.entry(role.clone()).or_default() += n;
            *by_source.entry(source.clone()).or_default() += n;
        }
        html! {
            <section class="overview" id="overview">
                <h2>{"Overview"}</h2>
                if let Some(e) = &p.error {
                    <div class="error" id="plan-error">{ e.clone() }</div>
                }
                <p class="summary"><strong id="bucket-count">{ o.buckets }</strong>{" buckets · "}{ p.rows.len() }{" collectives"}</p>
                if let Some(f) = &self.filter {
                    <p class="filter">{ format!("filter: {}", f.label()) }
                        <button onclick={link.callback(|_| Msg::Filter(None))}>{"clear"}</button></p>
                }
                <h3>{"Roles"}</h3>
                <ul class="facets">{ for by_role.iter().map(|(r, n)| {
                    let c = timeline::role_colour(if r == "unclassified" { None } else { Some(r.as_str()) }).hex();
                    item(r.clone(), *n, Filter::Role(r.clone()), Some(c))
                }) }</ul>
                <h3>{"Source"}</h3>
                <ul class="facets">{ for by_source.iter().map(|(s, n)| item(s.clone(), *n, Filter::Source(s.clone()), None)) }</ul>
                <h3>{"Process groups"}</h3>
                <ul class="facets">{ for o.groups.iter().map(|(g, n)| item(g.clone(), *n, Filter::Group(g.clone()), None)) }</ul>
                <h3>{"Planner decisions"}</h3>
                <ul class="facets" id="reasons">{ for o.reasons.iter().map(|((a, r), n)| item(format!("{a}: {r}"), *n, Filter::Reason(a.clone(), r.clone()), None)) }</ul>
                if o.reasons.is_empty() { <p class="muted">{"none"}</p> }
                <h3>{"Unmatched module paths"}</h3>
                if o.unmatched.is_empty() { <p class="muted">{"none"}</p> } else {
                    <ul class="plain">{ for o.unmatched.iter().map(|u| html! { <li><code>{ u.clone() }</code></li> }) }</ul>
                }
                <h3>{"Identity diagnostics"}</h3>
                if o.diagnostics.is_empty() { <p class="muted">{"none reported"}</p> } else {
                    <ul class="facets" id="diagnostics">{ for o.diagnostics.iter().map(|(c, n)| item(c.clone(), *n, Filter::Diagnostic(c.clone()), None)) }</ul>
                }
            </section>
        }
    }

    fn view_chart(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let onmousedown = link.callback(|e: MouseEvent| {
            e.prevent_default();
            Msg::ChartDown(e.client_x() as f64)
        });
        let onmousemove = link.callback(Msg::ChartMove);
        let onmouseup = link.callback(Msg::ChartUp);
        let raw = Html::from_html_unchecked(self.svg.clone());
        let highlight = self.highlight_css();
        html! {
            <section class="timeline">
                if !self.embed {
                    <div class="chart-tools">
                        <h2>{"Bucket timeline"}</h2>
                        <button id="zoom-in" onclick={link.callback(|_| Msg::Zoom(0.5))}>{"Zoom in"}</button>
                        <button id="zoom-out" onclick={link.callback(|_| Msg::Zoom(2.0))}>{"Zoom out"}</button>
                        <button id="pan-left" onclick={link.callback(|_| Msg::Pan(-0.25))}>{"◀"}</button>
                        <button id="pan-right" onclick={link.callback(|_| Msg::Pan(0.25))}>{"▶"}</button>
                        <button id="zoom-reset" onclick={link.callback(|_| Msg::ResetZoom)}>{"Whole graph"}</button>
                        <span class="muted">{"wheel to zoom, drag to pan, click a bar or mark for details"}</span>
                    </div>
                }
                <style>{ highlight }</style>
                <div class="chart-host">
                    <div id="chart" class="chart" {onmousedown} {onmousemove} {onmouseup}>{ raw }</div>
                </div>
            </section>
        }
    }

    fn view_detail(&self, ctx: &Context<Self>) -> Html {
        let (Some(loaded), Some(p)) = (&self.loaded, &self.planned) else {
            return html! {};
        };
        let link = ctx.link();
        let node_button = |id: usize| {
            let name = loaded.graph.node(id).name.clone();
            html! { <button class="link" onclick={link.callback(move |_| Msg::Select(Selection::Node(id as u32)))}>{ name }</button> }
        };
        match &self.selection {
            Selection::None => html! {},
            Selection::Bucket(id) => {
                let Some(b) = p.timeline.buckets.iter().find(|b| &b.id == id) else {
                    return html! { <section class="detail" id="detail"><p>{ format!("bucket {id} is not in this plan") }</p></section> };
                };
                let singleton = p.timeline.decisions.iter().find(|d| {
                    d.action == Action::Singleton && b.members.iter().any(|m| m.node == d.node)
                });
                let title = timeline::scene::bucket_title(
                    b,
                    singleton.map(|d| d.reason.as_str()),
                    timeline::scene::bucket_role(b).as_deref(),
                );
                html! {
                    <section class="detail" id="detail">
                        <h2>{ format!("Bucket {}", b.id) }</h2>
                        <pre class="wrap">{ title }</pre>
                        if let Some(d) = singleton {
                            <p>{ explain(d.action, &d.reason) }</p>
                        }
                        <h3>{"Members"}</h3>
                        <ul class="plain">{ for b.members.iter().map(|m| html! {
                            <li>{ node_button(m.node as usize) }{ format!(" #{} · {} · {} · {}", m.node, m.param_name.clone().unwrap_or_default(), m.kind, timeline::scene::human_bytes(m.size_bytes)) }</li>
                        }) }</ul>
                        <button onclick={link.callback(|_| Msg::Select(Selection::None))}>{"Close"}</button>
                    </section>
                }
            }
            Selection::Node(id) => {
                let id = *id as usize;
                if id >= loaded.graph.len() {
                    return html! {};
                }
                let node = loaded.graph.node(id);
                let decisions: Vec<_> = p
                    .timeline
                    .decisions
                    .iter()
                    .filter(|d| d.node as usize == id)
                    .collect();
                let bucket = p
                    .timeline
                    .buckets
                    .iter()
                    .find(|b| b.members.iter().any(|m| m.node as usize == id));
                let row = p.rows.iter().find(|r| r.node as usize == id);
                html! {
                    <section class="detail" id="detail">
                        <h2>{ format!("Node #{id}: ") }<code>{ node.name.clone() }</code></h2>
                        <p><span class="muted">{"op "}</span><code>{ node.op.as_str() }</code>
                           <span class="muted">{" target "}</span><code>{ node.target.clone() }</code></p>
                        if let Some(r) = row {
                            <p>{ role_badge(r) }{ format!(" {} · {} · group {} · {}", r.kind, if r.backward { "backward" } else { "forward" }, r.group, timeline::scene::human_bytes(r.bytes)) }</p>
                        }
                        <h3>{"Why"}</h3>
                        <ul class="plain why">
                            { for decisions.iter().map(|d| html! { <li>{ explain(d.action, &d.reason) }</li> }) }
                            if let Some(b) = bucket {
                                <li>{"Bucketed in "}
                                    <button class="link" onclick={ let bid = b.id.clone(); link.callback(move |_| Msg::Select(Selection::Bucket(bid.clone()))) }>{ b.id.clone() }</button>
                                    { format!(" with {} member(s): it shares the bucket's group, kind, dtype, device, phase and scope, and fits its window (#{} → #{}).", b.members.len(), b.latest_input, b.earliest_consumer) }</li>
                            } else if decisions.is_empty() {
                                <li>{ if row.is_some() { "The planner does not consider this collective (not tagged by the FSDP pass)." } else { "Not a collective." } }</li>
                            }
                        </ul>
                        if !loaded.roles.diagnostics.iter().all(|(_, nodes, _)| !nodes.contains(&node.name)) {
                            <h3>{"Identity diagnostics"}</h3>
                            <ul class="plain">{ for loaded.roles.diagnostics.iter().filter(|(_, nodes, _)| nodes.contains(&node.name)).map(|(code, _, msg)| html! {
                                <li><code>{ code.clone() }</code>{" "}{ msg.clone() }</li>
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
                        <button onclick={link.callback(|_| Msg::Select(Selection::None))}>{"Close"}</button>
                    </section>
                }
            }
        }
    }

    /// CSS that marks the selection in the chart and dims what the overview filter excludes.
    fn highlight_css(&self) -> String {
        let q = |s: &str| {
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('<', "\\3c ")
        };
        let mut css = String::new();
        let bucket = match &self.selection {
            Selection::Bucket(b) => Some(b.clone()),
            Selection::Node(n) => self.planned.as_ref().and_then(|p| {
                p.timeline
                    .buckets
                    .iter()
                    .find(|b| b.members.iter().any(|m| m.node == *n))
                    .map(|b| b.id.clone())
            }),
            Selection::None => None,
        };
        if let Some(b) = bucket {
            css.push_str(&format!(
                "#chart [data-bucket=\"{}\"] rect {{ stroke: #111827; stroke-width: 3px; }}\n",
                q(&b)
            ));
        }
        match &self.filter {
            Some(Filter::Role(r)) => css.push_str(&format!(
                "#chart [data-bucket]:not([data-role=\"{}\"]) {{ opacity: .2; }}\n",
                q(r)
            )),
            Some(Filter::Reason(a, r)) if a == "split" => css.push_str(&format!(
                "#chart [data-split]:not([data-split=\"{}\"]) {{ opacity: .15; }}\n",
                q(r)
            )),
            Some(Filter::Reason(a, r)) if a == "skip" => css.push_str(&format!(
                "#chart [data-skip]:not([data-skip=\"{}\"]) {{ opacity: .15; }}\n",
                q(r)
            )),
            Some(Filter::Reason(a, _)) if a == "singleton" => {
                css.push_str("#chart [data-bucket]:not([data-singleton]) { opacity: .2; }\n")
            }
            _ => {}
        }
        css
    }

    fn view_table(&self, ctx: &Context<Self>) -> Html {
        let Some(p) = &self.planned else {
            return html! {};
        };
        let link = ctx.link();
        let q = self.search.to_lowercase();
        let mut rows: Vec<&Row> = p
            .rows
            .iter()
            .filter(|r| self.filter.as_ref().map(|f| f.matches(r)).unwrap_or(true))
            .filter(|r| {
                q.is_empty()
                    || r.name.to_lowercase().contains(&q)
                    || r.param.to_lowercase().contains(&q)
                    || r.kind.contains(&q)
                    || r.bucket.as_deref().unwrap_or("").contains(&q)
                    || r.decision
                        .as_ref()
                        .map(|d| d.1.contains(&q))
                        .unwrap_or(false)
            })
            .collect();
        let (col, desc) = self.sort;
        rows.sort_by(|a, b| {
            let o = match col {
                Col::Pos => a.node.cmp(&b.node),
                Col::Name => a.name.cmp(&b.name),
                Col::Role => a.role.cmp(&b.role).then(a.source.cmp(&b.source)),
                Col::Kind => (&*a.kind, a.backward).cmp(&(&*b.kind, b.backward)),
                Col::Group => a.group.cmp(&b.group),
                Col::Param => a.param.cmp(&b.param),
                Col::Bytes => a.bytes.cmp(&b.bytes),
                Col::Bucket => a.bucket.cmp(&b.bucket),
                Col::Decision => a
                    .decision
                    .as_ref()
                    .map(|d| (d.0.as_str(), &*d.1))
                    .cmp(&b.decision.as_ref().map(|d| (d.0.as_str(), &*d.1))),
            }
            .then(a.node.cmp(&b.node));
            if desc {
                o.reverse()
            } else {
                o
            }
        });
        let total = rows.len();
        let pages = total.div_ceil(PAGE).max(1);
        let page = self.page.min(pages - 1);
        let th = |c: Col, label: &str| {
            let mark = if col == c {
                if desc {
                    " ▼"
                } else {
                    " ▲"
                }
            } else {
                ""
            };
            html! { <th><button class="sort" onclick={link.callback(move |_| Msg::Sort(c))}>{ format!("{label}{mark}") }</button></th> }
        };
        html! {
            <section class="table">
                <div class="table-tools">
                    <h2>{"Collectives"}</h2>
                    <input id="search" type="search" placeholder="search name, parameter, kind, bucket, reason" value={self.search.clone()}
                        oninput={link.callback(|e: InputEvent| Msg::Search(e.target_unchecked_into::<HtmlInputElement>().value()))} />
                    <span class="muted" id="row-count">{ format!("{total} of {}", p.rows.len()) }</span>
                    <button disabled={page == 0} onclick={link.callback(move |_| Msg::Page(page.saturating_sub(1)))}>{"‹"}</button>
                    <span class="muted">{ format!("page {} of {pages}", page + 1) }</span>
                    <button disabled={page + 1 >= pages} onclick={link.callback(move |_| Msg::Page(page + 1))}>{"›"}</button>
                </div>
                <table id="collectives">
                    <thead><tr>
                        { th(Col::Pos, "#") }{ th(Col::Name, "node") }{ th(Col::Role, "role") }{ th(Col::Kind, "kind · phase") }
                        { th(Col::Group, "group") }{ th(Col::Param, "parameter") }{ th(Col::Bytes, "bytes") }{ th(Col::Bucket, "bucket") }{ th(Col::Decision, "decision") }
                    </tr></thead>
                    <tbody>{ for rows.iter().skip(page * PAGE).take(PAGE).map(|r| {
                        let id = r.node;
                        let selected = self.selection == Selection::Node(id);
                        html! {
                            <tr key={id} class={classes!(selected.then_some("selected"))} onclick={link.callback(move |_| Msg::Select(Selection::Node(id)))}>
                                <td class="num">{ r.node }</td>
                                <td><code>{ r.name.clone() }</code></td>
                                <td>{ role_badge(r) }</td>
                                <td>{ format!("{} · {}", r.kind, if r.backward { "bwd" } else { "fwd" }) }</td>
                                <td>{ r.group.clone() }</td>
                                <td><code>{ r.param.clone() }</code></td>
                                <td class="num">{ if r.bytes > 0 { timeline::scene::human_bytes(r.bytes) } else { String::new() } }</td>
                                <td>{ r.bucket.as_deref().map(|b| b.rsplit(':').next().unwrap_or(b).to_string()).unwrap_or_default() }</td>
                                <td>{ r.decision.as_ref().map(|(a, why)| format!("{}: {why}", a.as_str())).unwrap_or_default() }</td>
                            </tr>
                        }
                    }) }</tbody>
                </table>
            </section>
        }
    }
}

fn role_badge(r: &Row) -> Html {
    let colour = timeline::role_colour(r.role.as_deref()).hex();
    let source = r.source.as_str();
    html! {
        <span class="role">
            <span class="swatch" style={format!("background:{colour}")}></span>
            { r.role.clone().unwrap_or_else(|| "unclassified".into()) }
            if r.source != RoleSource::Unclassified {
                <span class={classes!("badge", source)}>{ source }</span>
            }
        </span>
    }
}

fn explain(action: Action, reason: &str) -> String {
    let words = commlens::planner::Reason::parse(reason)
        .map(|r| r.explain())
        .unwrap_or("");
    let head = match action {
        Action::Skip => "Skipped",
        Action::Split => "Started a new bucket",
        Action::Singleton => "Kept as a singleton",
    };
    if words.is_empty() {
        format!("{head} ({reason}).")
    } else {
        format!("{head} ({reason}): {words}.")
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}
