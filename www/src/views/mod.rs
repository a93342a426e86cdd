//! Review views beside the single-plan app: **compare** two plans (`?src=A&base=B`, or one dump
//! with two settings), **audit** a transform (`?src=AFTER&before=BEFORE`) and check **ranks**
//! (`?ranks=…`). A link names its view by its parameters (or `view=compare|audit|ranks`, which
//! opens the view's own file pickers); [`ViewsUrl::mode`] decides, and `main.rs` renders
//! [`Views`] instead of the single-plan app.
//!
//! The views hold their state in one reducer ([`ViewsState`]), loaded once per link or pick;
//! all the work is the core's (`commlens::diff`, `identity::audit`, `planner::validate`), and
//! the panels are one file per view: `compare.rs`, `audit.rs`, `ranks.rs`.

pub mod audit;
pub mod compare;
pub mod ranks;

use crate::browser;
use crate::components::loader::example_path;
use crate::components::status::Status;
use crate::limits;
use crate::model::{Loaded, Settings, Shared};
use crate::url_state::{SourceRef, UrlState};
use commlens::graph::Graph;
use commlens::planner::Planner;
use commlens::timeline::Viewport;
use std::rc::Rc;
use yew::prelude::*;

/// Which review view a link opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Compare,
    Audit,
    Ranks,
}

impl Mode {
    pub fn key(self) -> &'static str {
        match self {
            Mode::Compare => "compare",
            Mode::Audit => "audit",
            Mode::Ranks => "ranks",
        }
    }

    fn from_key(key: &str) -> Option<Mode> {
        [Mode::Compare, Mode::Audit, Mode::Ranks]
            .into_iter()
            .find(|m| m.key() == key)
    }
}

/// The base plan's settings are the single-plan parameters with a `b` in front.
const BASE_SETTING_KEYS: [&str; 5] = ["bcap", "bmid", "bmcd", "bplans", "bptext"];

/// Everything a review link carries: the single-plan parameters (`src`/`example` is the plan
/// compared, or the graph after a transform; `cap`… its settings; `x0`/`x1` the view) and the
/// view's own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewsUrl {
    /// `view=`, when the link names it.
    pub view: Option<Mode>,
    pub main: UrlState,
    /// `base=`: the plan compared against (URL, or `example:KEY`).
    pub base: Option<SourceRef>,
    /// `bcap`, `bmid`, `bmcd`, `bplans`, `bptext`: the base plan's settings (a dump compared
    /// with itself under other settings, or the base dump's settings).
    pub base_settings: Option<Settings>,
    /// `before=`: the graph before a transform.
    pub before: Option<SourceRef>,
    /// `ranks=` (repeated): rank files, or one manifest or folder listing.
    pub ranks: Vec<SourceRef>,
    /// `group=`: the process group whose plans must agree (default: every group).
    pub group: Option<String>,
    /// `row=`: the compared collective selected in the changes table, `kind:param:state_idx`.
    pub row: Option<String>,
    /// `graph=K`: the post-grad graph of every trace log opened (0-based, in log order).
    pub graph: Option<usize>,
}

fn source_of(value: &str) -> SourceRef {
    match value.strip_prefix("example:") {
        Some(key) => SourceRef::Example(key.to_string()),
        None => SourceRef::Url(value.to_string()),
    }
}

fn source_text(source: &SourceRef) -> String {
    match source {
        SourceRef::Url(u) => u.clone(),
        SourceRef::Example(k) => format!("example:{k}"),
    }
}

impl ViewsUrl {
    /// Reads a query string; values it cannot use are explained in the returned problems.
    pub fn parse(query: &str) -> (ViewsUrl, Vec<String>) {
        let (mut main, mut problems) = UrlState::parse(query);
        let mut url = ViewsUrl::default();
        let mut base_query = form_urlencoded::Serializer::new(String::new());
        let mut has_base_settings = false;
        let mut other = Vec::new();
        for (key, value) in std::mem::take(&mut main.other) {
            match key.as_str() {
                "view" => match Mode::from_key(&value) {
                    Some(m) => url.view = Some(m),
                    None => {
                        problems.push(format!("view={value}: expected compare, audit or ranks"))
                    }
                },
                "base" if !value.is_empty() => url.base = Some(source_of(&value)),
                "before" if !value.is_empty() => url.before = Some(source_of(&value)),
                "ranks" if !value.is_empty() => url.ranks.push(source_of(&value)),
                "group" if !value.is_empty() => url.group = Some(value),
                "row" if !value.is_empty() => url.row = Some(value),
                "graph" => {}
                k if BASE_SETTING_KEYS.contains(&k) => {
                    has_base_settings = true;
                    base_query.append_pair(&k[1..], &value);
                }
                _ => other.push((key, value)),
            }
        }
        main.other = other;
        // Read from the whole query: the single-plan app may know `graph` too.
        for (key, value) in form_urlencoded::parse(query.trim_start_matches('?').as_bytes()) {
            if key == "graph" {
                match value.parse::<usize>() {
                    Ok(k) => url.graph = Some(k),
                    Err(_) => {
                        problems.push(format!("graph={value}: not a graph number (0, 1, ...)"))
                    }
                }
            }
        }
        if has_base_settings {
            let (base, base_problems) = UrlState::parse(&base_query.finish());
            url.base_settings = Some(base.settings);
            problems.extend(base_problems.into_iter().map(|p| format!("b{p}")));
        }
        url.main = main;
        (url, problems)
    }

    /// The view this link opens, or `None` for the single-plan app.
    pub fn mode(&self) -> Option<Mode> {
        self.view
            .or(if self.base.is_some() || self.base_settings.is_some() {
                Some(Mode::Compare)
            } else if self.before.is_some() {
                Some(Mode::Audit)
            } else if !self.ranks.is_empty() {
                Some(Mode::Ranks)
            } else {
                None
            })
    }

    /// The query string (without `?`): the single-plan parameters, then the view's.
    pub fn to_query(&self) -> String {
        let main = self.main.to_query();
        let main_has_graph = form_urlencoded::parse(main.as_bytes()).any(|(k, _)| k == "graph");
        let mut q = form_urlencoded::Serializer::new(main);
        if let (Some(k), false) = (self.graph, main_has_graph) {
            q.append_pair("graph", &k.to_string());
        }
        if let Some(m) = self.view {
            q.append_pair("view", m.key());
        }
        if let Some(b) = &self.base {
            q.append_pair("base", &source_text(b));
        }
        if let Some(s) = &self.base_settings {
            let base = UrlState {
                settings: s.clone(),
                ..UrlState::default()
            };
            let base = base.to_query();
            for (k, v) in form_urlencoded::parse(base.as_bytes()) {
                q.append_pair(&format!("b{k}"), &v);
            }
            // The dump's own settings write nothing: say so, or the link would lose them.
            if base.is_empty() {
                q.append_pair("bplans", "dump");
            }
        }
        if let Some(b) = &self.before {
            q.append_pair("before", &source_text(b));
        }
        for r in &self.ranks {
            q.append_pair("ranks", &source_text(r));
        }
        if let Some(g) = &self.group {
            q.append_pair("group", g);
        }
        if let Some(r) = &self.row {
            q.append_pair("row", r);
        }
        q.finish()
    }
}

/// Whether the page's link opens a review view (read once, by `main.rs`).
pub fn wanted() -> bool {
    ViewsUrl::parse(&browser::query_string()).0.mode().is_some()
}

/// The graph to read from `bytes`: `graph` for a trace log, none for a dump (which holds one).
pub fn choice(bytes: &[u8], graph: Option<usize>) -> Option<usize> {
    use commlens::input::{detect, Format};
    graph.filter(|_| matches!(detect(bytes), Ok((Format::TraceLog, _))))
}

/// An input error for people: a log holding several graphs says how a link chooses one.
pub fn input_error(label: &str, e: commlens::InputError) -> String {
    let hint = matches!(
        e,
        commlens::InputError::TraceLog(commlens::tracelog::TraceLogError::ChooseGraph { .. })
    );
    format!(
        "{label}: {e}{}",
        if hint { "\n(in a link: graph=K)" } else { "" }
    )
}

/// The reader of [`load_graph`] and [`load_graph_digested`]: the input's size, and the read
/// that prepares its graph for planning.
fn graph_reader<'a>(
    label: &'a str,
    bytes: impl Into<std::borrow::Cow<'a, [u8]>>,
    graph: Option<usize>,
) -> (
    usize,
    impl FnOnce() -> Result<Planner<Rc<Graph>>, String> + 'a,
) {
    let bytes = bytes.into();
    let size = bytes.len();
    let graph = choice(&bytes, graph);
    let read = move || {
        commlens::input::read_prepared::<Rc<Graph>>(bytes, graph).map_err(|e| input_error(label, e))
    };
    (size, read)
}

/// A graph read, classified and prepared for planning, from any input the core's `input`
/// door takes (a dump or a trace log, plain or gzip; `graph` picks a log's graph).
/// Owned bytes are handed to the reader, which keeps a dump's text rather than a copy.
pub fn load_graph<'a>(
    label: &'a str,
    source: Option<SourceRef>,
    bytes: impl Into<std::borrow::Cow<'a, [u8]>>,
    graph: Option<usize>,
) -> Result<Loaded, String> {
    let (size, read) = graph_reader(label, bytes, graph);
    Ok(Loaded::new(label.to_string(), source, None, read()?, size))
}

/// [`load_graph`], with the graph signature digested by the browser where the page can
/// (`digest::read_digesting`).
pub async fn load_graph_digested<'a>(
    label: &'a str,
    source: Option<SourceRef>,
    bytes: impl Into<std::borrow::Cow<'a, [u8]>>,
    graph: Option<usize>,
) -> Result<Loaded, String> {
    let bytes = bytes.into();
    let beside = crate::digest::SignatureWorker::request(&bytes);
    let (size, read) = graph_reader(label, bytes, graph);
    let (planner, pending) = crate::digest::read_digesting(beside, read)?;
    let mut loaded = Loaded::new(label.to_string(), source, None, planner, size);
    crate::digest::settle_signature(&mut loaded, pending).await;
    Ok(loaded)
}

/// The bytes at a link's source, with a label for messages.
async fn fetch_source(
    source: &SourceRef,
    limit_mb: Option<u64>,
) -> Result<(String, Vec<u8>), String> {
    let (url, label) = source_url(source)?;
    let bytes = browser::fetch_bytes(&url, limits::bytes(limit_mb), |_, _| {}).await?;
    Ok((label, bytes))
}

/// A link's source as an absolute URL, and a label for messages (its file name).
pub fn source_url(source: &SourceRef) -> Result<(String, String), String> {
    let url = match source {
        SourceRef::Url(u) => browser::absolute(u),
        SourceRef::Example(k) => example_path(k)?.to_string(),
    };
    let label = url
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(&url)
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string();
    Ok((url, label))
}

/// One input of a view: from a link, or a picked or dropped file.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Source(SourceRef),
    File(web_sys::File),
}

/// An input's label, the source a link can name (files have none), and its bytes.
pub async fn read_input(
    input: &Input,
    limit_mb: Option<u64>,
) -> Result<(String, Option<SourceRef>, Vec<u8>), String> {
    match input {
        Input::Source(s) => {
            let (label, bytes) = fetch_source(s, limit_mb).await?;
            Ok((label, Some(s.clone()), bytes))
        }
        Input::File(f) => Ok((
            f.name(),
            None,
            browser::read_file(f, limits::bytes(limit_mb)).await?,
        )),
    }
}

/// The state of the review views, in one reducer.
#[derive(Clone, Default)]
pub struct ViewsState {
    pub url: ViewsUrl,
    pub busy: Option<String>,
    pub error: Option<String>,
    pub notice: Option<String>,
    pub compare: Option<Shared<compare::Comparison>>,
    pub audit: Option<Shared<audit::AuditView>>,
    pub ranks: Option<Shared<ranks::RanksView>>,
    /// The compare view's shared view (both charts), as dragged and as committed.
    pub viewport: Option<Viewport>,
    pub committed: Option<Viewport>,
    /// Whether the address bar reproduces what is shown (not after opening files).
    pub linkable: bool,
    /// The last view shown, for its paint timing (`#perf`, as in the single-plan app).
    pub timing: Option<ViewTiming>,
}

/// A shown view's paint timing: which (`compare`, `audit`, `ranks`), when its loading started,
/// a counter the timing follows, and the loading's stages in words.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewTiming {
    pub what: &'static str,
    pub started: f64,
    pub seq: u64,
    pub stages: Rc<str>,
}

pub enum ViewsAction {
    Init(Box<ViewsUrl>, Vec<String>),
    Busy(String),
    Failed(String),
    /// A comparison, whether a link reproduces it, and when its loading started.
    Compared(Shared<compare::Comparison>, bool, f64),
    Audited(Shared<audit::AuditView>, bool, f64),
    Ranked(Shared<ranks::RanksView>, bool, f64),
    View {
        viewport: Option<Viewport>,
        commit: bool,
    },
    /// A compared collective picked in the table (its `row=` id): both charts show it.
    Row(Option<String>),
    /// New planner settings for one side of the comparison (`after`, or the base).
    Settings {
        after: bool,
        settings: Settings,
    },
    DismissError,
    DismissNotice,
}

impl Reducible for ViewsState {
    type Action = ViewsAction;

    fn reduce(self: Rc<Self>, action: ViewsAction) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            ViewsAction::Init(url, problems) => {
                s.viewport = url.main.viewport;
                s.committed = url.main.viewport;
                s.url = *url;
                if !problems.is_empty() {
                    s.notice = Some(format!(
                        "Some of the link's values were not used: {}.",
                        problems.join("; ")
                    ));
                }
            }
            ViewsAction::Busy(text) => {
                s.busy = Some(text);
                s.error = None;
            }
            ViewsAction::Failed(e) => {
                s.busy = None;
                s.error = Some(e);
            }
            ViewsAction::Compared(c, linkable, started) => {
                s.timed("compare", started, &c.stages);
                s.busy = None;
                s.error = None;
                s.linkable = linkable;
                if !linkable {
                    s.url.row = None;
                    s.viewport = None;
                    s.committed = None;
                }
                if let Some(row) = s.url.row.clone() {
                    if c.row_by_id(&row).is_none() {
                        s.notice = Some(format!("The link's collective {row} did not change."));
                        s.url.row = None;
                    } else if s.viewport.is_none() {
                        s.viewport = c.reveal(&row);
                        s.committed = s.viewport;
                    }
                }
                s.compare = Some(c);
            }
            ViewsAction::Audited(a, linkable, started) => {
                s.timed("audit", started, "");
                s.busy = None;
                s.error = None;
                s.linkable = linkable;
                s.audit = Some(a);
            }
            ViewsAction::Ranked(r, linkable, started) => {
                s.timed("ranks", started, "");
                s.busy = None;
                s.error = None;
                s.linkable = linkable;
                s.ranks = Some(r);
            }
            ViewsAction::View { viewport, commit } => {
                s.viewport = viewport;
                if commit {
                    s.committed = viewport;
                }
            }
            ViewsAction::Row(row) => {
                if let (Some(c), Some(id)) = (&s.compare, &row) {
                    s.viewport = c.reveal(id);
                    s.committed = s.viewport;
                }
                s.url.row = row;
            }
            ViewsAction::Settings { after, settings } => {
                let Some(c) = s.compare.clone() else {
                    return self;
                };
                let started = browser::now_ms();
                match c.replan(after, &settings, browser::now_ms) {
                    Ok(next) => {
                        // Both sides' settings are written out: the base no longer follows `src`.
                        let side =
                            |s: &compare::SideInput| s.graph.as_ref().map(|g| g.settings.clone());
                        if let Some(a) = side(&next.after) {
                            s.url.main.settings = a;
                        }
                        s.url.base_settings = side(&next.before).or(s.url.base_settings.take());
                        if s.url
                            .row
                            .as_ref()
                            .is_some_and(|r| next.row_by_id(r).is_none())
                        {
                            s.url.row = None;
                        }
                        s.notice = None;
                        s.timed("compare", started, &next.stages);
                        s.compare = Some(Shared::new(next));
                    }
                    Err(e) => s.notice = Some(format!("Not applied: {e}")),
                }
            }
            ViewsAction::DismissError => s.error = None,
            ViewsAction::DismissNotice => s.notice = None,
        }
        Rc::new(s)
    }
}

impl ViewsState {
    fn timed(&mut self, what: &'static str, started: f64, stages: &str) {
        let seq = self.timing.as_ref().map_or(0, |t| t.seq) + 1;
        self.timing = Some(ViewTiming {
            what,
            started,
            seq,
            stages: stages.into(),
        });
    }

    /// The link that reproduces what is shown.
    pub fn query(&self) -> String {
        let mut url = self.url.clone();
        url.main.viewport = self.committed;
        url.to_query()
    }
}

/// The page of the review views.
#[function_component(Views)]
pub fn views() -> Html {
    let state = use_reducer(ViewsState::default);
    let dispatch = state.dispatcher();
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let (url, problems) = ViewsUrl::parse(&browser::query_string());
            let mode = url.mode();
            dispatch.dispatch(ViewsAction::Init(Box::new(url.clone()), problems));
            match mode {
                Some(Mode::Compare) => compare::start_from_link(dispatch, &url),
                Some(Mode::Audit) => audit::start_from_link(dispatch, &url),
                Some(Mode::Ranks) => ranks::start_from_link(dispatch, &url),
                None => {}
            }
        });
    }
    // The address bar follows what a link can reproduce.
    let query = state.linkable.then(|| state.query());
    use_effect_with(query, |q| {
        if let Some(q) = q {
            browser::replace_query(q);
        }
    });
    // Paint timing: from the start of loading to the frame after the view is shown.
    let perf = use_node_ref();
    {
        let perf = perf.clone();
        use_effect_with(state.timing.clone(), move |t| {
            if let Some(t) = t.clone() {
                browser::next_frame(move || {
                    let ms = browser::now_ms() - t.started;
                    if let Some(el) = perf.cast::<web_sys::Element>() {
                        let what = t.what;
                        let _ = el.set_attribute(&format!("data-{what}-ms"), &format!("{ms:.1}"));
                        let _ = el.set_attribute("data-seq", &t.seq.to_string());
                        let stages = if t.stages.is_empty() {
                            String::new()
                        } else {
                            format!(" · {}", t.stages)
                        };
                        el.set_text_content(Some(&format!(
                            "{what} → painted in {ms:.0} ms{stages}"
                        )));
                    }
                });
            }
        });
    }
    let on_dismiss_error = use_callback(dispatch.clone(), |(), d| {
        d.dispatch(ViewsAction::DismissError)
    });
    let on_dismiss_notice = use_callback(dispatch.clone(), |(), d| {
        d.dispatch(ViewsAction::DismissNotice)
    });
    let mode = state.url.mode().unwrap_or(Mode::Compare);
    let showing = match mode {
        Mode::Compare => state.compare.is_some(),
        Mode::Audit => state.audit.is_some(),
        Mode::Ranks => state.ranks.is_some(),
    };
    let tab = |m: Mode, label: &'static str| {
        let href = format!("?view={}", m.key());
        html! {
            <a class={classes!("view-tab", (m == mode).then_some("active"))} href={href}
                aria-current={(m == mode).then_some("page")}>{ label }</a>
        }
    };
    let body = match mode {
        Mode::Compare => compare::page(&state, &dispatch),
        Mode::Audit => audit::page(&state, &dispatch),
        Mode::Ranks => ranks::page(&state, &dispatch),
    };
    html! {
        <div class="app views" data-view={mode.key()}>
            <header>
                <h1><a href="?" class="home">{"commlens"}</a></h1>
                <nav class="view-tabs" aria-label="Review views">
                    { tab(Mode::Compare, "Compare plans") }
                    { tab(Mode::Audit, "Audit a transform") }
                    { tab(Mode::Ranks, "Check ranks") }
                </nav>
            </header>
            <Status busy={state.busy.clone().map(AttrValue::from)} error={state.error.clone().map(AttrValue::from)}
                notice={state.notice.clone().map(AttrValue::from)} showing={showing}
                on_dismiss_error={on_dismiss_error} on_dismiss_notice={on_dismiss_notice} />
            <main class="review" id="main" tabindex="-1">{ body }</main>
            <div ref={perf} class="perf" id="perf" aria-hidden="true"></div>
        </div>
    }
}

/// A labelled file input (a real button, reachable by keyboard).
#[derive(Properties, PartialEq)]
pub struct FilePickProps {
    pub id: AttrValue,
    pub label: AttrValue,
    #[prop_or_default]
    pub multiple: bool,
    /// Pick a folder (every file in it).
    #[prop_or_default]
    pub folder: bool,
    pub on_files: Callback<Vec<web_sys::File>>,
}

#[function_component(FilePick)]
pub fn file_pick(props: &FilePickProps) -> Html {
    let onchange = {
        let cb = props.on_files.clone();
        Callback::from(move |e: Event| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            let mut files = Vec::new();
            if let Some(list) = input.files() {
                for i in 0..list.length() {
                    if let Some(f) = list.get(i) {
                        files.push(f);
                    }
                }
            }
            if !files.is_empty() {
                cb.emit(files);
            }
        })
    };
    let input = if props.folder {
        html! { <input id={props.id.clone()} type="file" webkitdirectory={true} multiple={true} {onchange} /> }
    } else {
        html! { <input id={props.id.clone()} type="file" multiple={props.multiple}
        accept=".json,.gz,.log,.txt,application/json,application/gzip" {onchange} /> }
    };
    html! {
        <label class="file-pick">
            <span>{ props.label.clone() }</span>
            { input }
        </label>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PlansMode;

    #[test]
    fn a_compare_link_round_trips() {
        let q = "src=after.json&cap=5000&x0=1.00&x1=9.00&base=example:mlp&bcap=100&bplans=none&row=all_gather:w:0";
        let (url, problems) = ViewsUrl::parse(q);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(url.mode(), Some(Mode::Compare));
        assert_eq!(url.base, Some(SourceRef::Example("mlp".into())));
        let base = url.base_settings.clone().unwrap();
        assert_eq!(base.cap_bytes, Some(100));
        assert_eq!(base.plans, PlansMode::Nothing);
        assert_eq!(url.main.settings.cap_bytes, Some(5000));
        assert_eq!(url.row.as_deref(), Some("all_gather:w:0"));
        let (url, _) = ViewsUrl::parse(&format!("{q}&graph=3"));
        assert_eq!(url.graph, Some(3));
        assert_eq!(url.to_query().matches("graph=3").count(), 1);
        let (back, _) = ViewsUrl::parse(&url.to_query());
        assert_eq!(back, url);
    }

    #[test]
    fn base_settings_alone_compare_a_dump_with_itself() {
        let (url, _) = ViewsUrl::parse("example=llama&bcap=1e6");
        assert_eq!(url.mode(), Some(Mode::Compare));
        assert_eq!(url.base, None);
        let (url, problems) = ViewsUrl::parse("example=llama&bcap=0");
        assert!(
            problems.iter().any(|p| p.starts_with("bcap=0")),
            "{problems:?}"
        );
        assert_eq!(url.base_settings.unwrap().cap_bytes, None);
    }

    #[test]
    fn the_dumps_own_settings_as_base_survive_a_round_trip() {
        let (url, problems) = ViewsUrl::parse("example=mlp&cap=4000&bplans=dump");
        assert!(problems.is_empty());
        assert_eq!(url.base_settings, Some(Settings::default()));
        assert_eq!(url.mode(), Some(Mode::Compare));
        assert_eq!(ViewsUrl::parse(&url.to_query()).0, url);
    }

    #[test]
    fn audit_and_ranks_links() {
        let (url, _) = ViewsUrl::parse("src=after.json&before=before.json");
        assert_eq!(url.mode(), Some(Mode::Audit));
        let (url, _) = ViewsUrl::parse("ranks=r0.json&ranks=r1.json&group=fsdp");
        assert_eq!(url.mode(), Some(Mode::Ranks));
        assert_eq!(url.ranks.len(), 2);
        assert_eq!(url.group.as_deref(), Some("fsdp"));
        assert_eq!(ViewsUrl::parse(&url.to_query()).0, url);
        let (url, _) = ViewsUrl::parse("view=ranks");
        assert_eq!(url.mode(), Some(Mode::Ranks));
        let (url, problems) = ViewsUrl::parse("example=mlp&view=nope&zzz=1");
        assert_eq!(url.mode(), None, "the single-plan app");
        assert!(problems.iter().any(|p| p.contains("view=nope")));
        assert_eq!(url.main.other, vec![("zzz".to_string(), "1".to_string())]);
    }
}
