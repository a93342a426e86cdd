//! Check ranks: several rank dumps, trace logs or plan reports at once (files, a folder, or a
//! link: `?ranks=A&ranks=B…`, one `validate` manifest, or one folder listing) → a table of
//! ranks with each one's graph signature and per-group digests, and per process group the
//! core's `validate_group_plans` verdict (`commlens validate`): for a divergence, the rank,
//! the file, the field and the first differing bucket or member, with the differing cells
//! marked in the table.

use super::{read_input, FilePick, Input, ViewsAction, ViewsState, ViewsUrl};
use crate::browser;
use crate::components::chart::{Chart, Pick};
use crate::model::Shared;
use crate::url_state::SourceRef;
use commlens::planner::validate::{
    agreement_text, validate_reports, Failure, Field, Finding, LayoutComparison, RankReport,
    ReportRef, ValidationError,
};
use commlens::PyValue;
use serde_json::Value;
use std::rc::Rc;
use yew::prelude::*;

/// What a rank's file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankKind {
    /// A dump or trace log, planned here with its own arguments.
    Graph,
    /// A plan report, as it is.
    Report,
}

/// One rank: its number, its file, its plan report, and what the table shows of it.
pub struct RankEntry {
    pub rank: PyValue,
    pub file: String,
    pub kind: RankKind,
    /// The report JSON (for a graph, the report `commlens plan` writes for it).
    pub report: Vec<u8>,
    pub signature: Option<String>,
    /// `group_digests`, in the report's order.
    pub digests: Vec<(String, String)>,
    /// What reading it noted (a trace log's missing group ranks).
    pub notes: Vec<String>,
    /// A graph's bytes, to draw its timeline when it is in a divergence.
    pub graph: Option<Rc<Vec<u8>>>,
    /// Where the rank came from, and the rank the file's name gives.
    pub rank_from: RankFrom,
    pub name_rank: Option<i128>,
}

/// Where a rank's number came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankFrom {
    /// A manifest (or the caller) listed it.
    Listed,
    /// The file records it (a trace log's header, a dump's `source.rank`).
    Recorded,
    /// The file's name.
    Name,
}

/// Files that all record the same rank (dumps of one rank copied for the others, say) but
/// whose names give distinct ranks are numbered by their names, with a note.
pub fn settle_ranks(entries: &mut [RankEntry]) {
    let distinct = |ranks: Vec<Option<i128>>| {
        let mut seen = std::collections::HashSet::new();
        ranks.iter().all(|r| r.is_some_and(|r| seen.insert(r)))
    };
    let recorded: Vec<Option<i128>> = entries
        .iter()
        .map(|e| match (&e.rank, e.rank_from) {
            (PyValue::Int(r), RankFrom::Recorded | RankFrom::Name) => Some(r.get()),
            _ => None,
        })
        .collect();
    if entries.iter().any(|e| e.rank_from == RankFrom::Listed)
        || distinct(recorded)
        || !distinct(entries.iter().map(|e| e.name_rank).collect())
    {
        return;
    }
    for e in entries.iter_mut() {
        if let (Some(n), RankFrom::Recorded) = (e.name_rank, e.rank_from) {
            if e.rank == PyValue::int(n) {
                e.rank_from = RankFrom::Name;
                continue;
            }
            e.notes.push(format!(
                "the file records rank {}, as another file does; its name's rank {n} is used",
                show(&e.rank)
            ));
            e.rank = PyValue::int(n);
            e.rank_from = RankFrom::Name;
        }
    }
}

/// One group's verdict.
pub struct GroupVerdict {
    pub group: String,
    /// `Ok(agreement)`, or why the reports do not validate (or one could not be read).
    pub result: Result<String, VerdictError>,
}

pub enum VerdictError {
    Invalid(ValidationError),
    Load(String),
}

pub struct RanksView {
    pub entries: Vec<RankEntry>,
    /// The graph read from each trace log (`graph=`).
    pub graph: Option<usize>,
    pub groups: Vec<String>,
    pub verdicts: Vec<GroupVerdict>,
}

/// A rank number from a file name: the digits after `rank` (`rank_3.json`,
/// `dedicated_log_torch_trace_rank_0_x1.log`), else the name's last number.
pub fn rank_from_name(name: &str) -> Option<i128> {
    let lower = name.to_ascii_lowercase();
    let digits_at = |s: &str| -> Option<i128> {
        let d: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
        d.parse().ok()
    };
    if let Some(i) = lower.rfind("rank") {
        let rest = lower[i + 4..].trim_start_matches(['_', '-', '.', ' ']);
        if let Some(n) = digits_at(rest) {
            return Some(n);
        }
    }
    let stem = lower.split('.').next().unwrap_or(&lower);
    let end = stem.rfind(|c: char| c.is_ascii_digit())?;
    let start = stem[..=end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    stem[start..=end].parse().ok()
}

fn is_log_name(name: &str) -> bool {
    name.ends_with(".log") || name.ends_with(".log.gz")
}

/// Ranks taken from names are put in rank order (a listing's order is the alphabet's).
fn by_rank(entries: &mut [RankEntry]) {
    entries.sort_by(|a, b| match (&a.rank, &b.rank) {
        (PyValue::Int(x), PyValue::Int(y)) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    });
}

fn inflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        commlens::dump::gunzip(bytes).map_err(|e| e.to_string())
    } else {
        Ok(bytes.to_vec())
    }
}

/// Reads one rank's file: a graph (planned with its own arguments) or a report.
pub fn read_rank(
    file: &str,
    rank: Option<PyValue>,
    bytes: &[u8],
    graph: Option<usize>,
) -> Result<RankEntry, String> {
    let (kind, report, notes, log_rank) = if commlens::input::holds_graph(bytes) {
        let (graph, plan) = commlens::read_and_plan(bytes, super::choice(bytes, graph), None)
            .map_err(|e| match e {
                commlens::PlanFailure::Input(e) => super::input_error(file, e),
                e => format!("{file}: {e}"),
            })?;
        let log_rank = graph
            .dump
            .source
            .as_ref()
            .and_then(|s| s.get("rank"))
            .and_then(Value::as_i64);
        (
            RankKind::Graph,
            commlens::planner::report::plan_to_json(&plan, &graph).into_bytes(),
            graph.dump.warnings.clone(),
            log_rank,
        )
    } else {
        (
            RankKind::Report,
            inflate(bytes).map_err(|e| format!("{file}: {e}"))?,
            Vec::new(),
            None,
        )
    };
    let value: Value = serde_json::from_slice(&report)
        .map_err(|e| format!("{file}: not a plan report, a dump or a trace log: {e}"))?;
    let signature = value
        .get("signature")
        .and_then(Value::as_str)
        .map(str::to_string);
    let digests = value
        .get("group_digests")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(g, d)| {
                    (
                        g.clone(),
                        d.as_str().map_or_else(|| d.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let name_rank = rank_from_name(file);
    let (rank, rank_from) = match (rank, log_rank, name_rank) {
        (Some(r), _, _) => (r, RankFrom::Listed),
        (None, Some(r), _) => (PyValue::int(r as i128), RankFrom::Recorded),
        (None, None, Some(r)) => (PyValue::int(r), RankFrom::Name),
        (None, None, None) => {
            return Err(format!(
                "{file}: no rank: name the file rank_N, or list it in a manifest"
            ))
        }
    };
    Ok(RankEntry {
        rank,
        file: file.to_string(),
        kind,
        graph: (kind == RankKind::Graph).then(|| Rc::new(bytes.to_vec())),
        rank_from,
        name_rank,
        report,
        signature,
        digests,
        notes,
    })
}

impl RanksView {
    /// Validates every group (or `group` alone) over the ranks, in the order listed (the
    /// first is the reference the others are compared with, as in `commlens validate`).
    pub fn new(entries: Vec<RankEntry>, group: Option<String>) -> RanksView {
        let groups = match group {
            Some(g) => vec![g],
            None => {
                let mut groups: Vec<String> = Vec::new();
                for e in &entries {
                    if let Ok(v) = serde_json::from_slice::<Value>(&e.report) {
                        for key in ["group_ranks", "group_digests"] {
                            for g in v
                                .get(key)
                                .and_then(Value::as_object)
                                .into_iter()
                                .flat_map(|m| m.keys())
                            {
                                if !groups.contains(g) {
                                    groups.push(g.clone());
                                }
                            }
                        }
                    }
                }
                groups
            }
        };
        let refs: Vec<ReportRef> = entries
            .iter()
            .map(|e| ReportRef {
                rank: e.rank.clone(),
                file: Some(e.file.clone()),
            })
            .collect();
        let verdicts = groups
            .iter()
            .map(|group| {
                let load = |i: usize| {
                    RankReport::from_json(&entries[i].report, group)
                        .map_err(|e| format!("{}: not valid JSON: {e}", entries[i].file))
                };
                GroupVerdict {
                    group: group.clone(),
                    result: match validate_reports(group, &refs, load) {
                        Ok(()) => Ok(agreement_text(group, &refs)),
                        Err(Failure::Invalid(e)) => Err(VerdictError::Invalid(e)),
                        Err(Failure::Load(e)) => Err(VerdictError::Load(e)),
                    },
                }
            })
            .collect();
        RanksView {
            entries,
            graph: None,
            groups,
            verdicts,
        }
    }

    /// The cells a verdict blames: (rank, group, field) of the report that disagrees.
    pub fn blamed(&self) -> Vec<(PyValue, String, Field)> {
        self.verdicts
            .iter()
            .filter_map(|v| match &v.result {
                Err(VerdictError::Invalid(e)) => match e.finding.as_ref() {
                    Finding::Disagree { report, field, .. } => {
                        Some((report.rank.clone(), v.group.clone(), *field))
                    }
                    Finding::MissingField { report, field, .. } => {
                        Some((report.rank.clone(), v.group.clone(), *field))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

impl RanksView {
    /// The ranks whose graph signature differs from the first rank's.
    pub fn signatures_differ(&self) -> Vec<&RankEntry> {
        let Some(first) = self.entries.first() else {
            return Vec::new();
        };
        self.entries
            .iter()
            .skip(1)
            .filter(|e| e.signature != first.signature)
            .collect()
    }

    /// Whether every rank planned the same graph, in words.
    pub fn signature_verdict(&self) -> String {
        let differ = self.signatures_differ();
        match (self.entries.first(), differ.is_empty()) {
            (None, _) => "No ranks.".into(),
            (Some(_), true) => format!(
                "Graph signature: the same on all {} ranks.",
                self.entries.len()
            ),
            (Some(first), false) => format!(
                "Graph signatures: {} of {} ranks have another than rank {}'s ({}): {}. Graphs \
                 may differ between ranks (rank-specific values); what must agree is each \
                 group's digest.",
                differ.len(),
                self.entries.len(),
                show(&first.rank),
                first.file,
                differ
                    .iter()
                    .map(|e| format!("rank {} ({})", show(&e.rank), e.file))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Where two ranks' plans first differ: the entries (the reference, the rank that
/// disagrees) and the differing bucket's id in each, with the member's index.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub group: String,
    pub entries: (usize, usize),
    pub bucket_ids: (Option<String>, Option<String>),
    pub member: Option<usize>,
}

impl RanksView {
    /// The first verdict that found a differing bucket or member.
    pub fn divergence(&self) -> Option<Divergence> {
        let index = |r: &ReportRef| {
            self.entries
                .iter()
                .position(|e| e.rank == r.rank && Some(&e.file) == r.file.as_ref())
        };
        self.verdicts.iter().find_map(|v| {
            let Err(VerdictError::Invalid(e)) = &v.result else {
                return None;
            };
            let Finding::Disagree {
                report,
                reference,
                layouts: Some(LayoutComparison::Differ(d)),
                ..
            } = e.finding.as_ref()
            else {
                return None;
            };
            Some(Divergence {
                group: v.group.clone(),
                entries: (index(reference)?, index(report)?),
                bucket_ids: d.bucket_ids.clone(),
                member: d.member,
            })
        })
    }
}

/// What a link's `ranks=` values are: several rank files, or one manifest or folder listing
/// to expand. Ranks listed one by one or in a manifest keep their order (the first listed is
/// the reference, as in `commlens validate`); a folder's are put in rank order.
async fn expand_link(
    sources: &[SourceRef],
    limit_mb: Option<u64>,
) -> Result<(Vec<(Option<PyValue>, Input)>, Option<String>), String> {
    if sources.len() > 1 {
        return Ok((
            sources
                .iter()
                .map(|s| (None, Input::Source(s.clone())))
                .collect(),
            None,
        ));
    }
    let Some(SourceRef::Url(url)) = sources.first() else {
        return Err(
            "ranks= names one example: give several rank files, a manifest or a folder".into(),
        );
    };
    let base = browser::absolute(url);
    let bytes = browser::fetch_bytes(&base, crate::limits::bytes(limit_mb), |_, _| {}).await?;
    let resolve = |path: &str| {
        web_sys::Url::new_with_base(path, &base)
            .map(|u| u.href())
            .unwrap_or_else(|_| path.to_string())
    };
    let Listing { files, group } = listing(&bytes).map_err(|e| format!("{url}: {e}"))?;
    Ok((
        files
            .into_iter()
            .map(|(rank, path)| (rank, Input::Source(SourceRef::Url(resolve(&path)))))
            .collect(),
        group,
    ))
}

/// What a manifest or folder listing names: each file (a manifest's with its rank), and a
/// manifest's group.
#[derive(Debug)]
pub struct Listing {
    pub files: Vec<(Option<PyValue>, String)>,
    pub group: Option<String>,
}

/// The files a manifest (`{"group": G, "plans": [[rank, path], ...]}`, `commlens validate`'s)
/// or a folder listing (an HTML index: its links to `.json`, `.gz` and `.log` files) names,
/// with the manifest's ranks and group.
pub fn listing(bytes: &[u8]) -> Result<Listing, String> {
    if let Ok(manifest) = serde_json::from_slice::<Value>(bytes) {
        let group = manifest
            .get("group")
            .and_then(Value::as_str)
            .map(str::to_string);
        let plans = manifest.get("plans").and_then(Value::as_array).ok_or(
            "a JSON file, but not a manifest ({\"group\": G, \"plans\": [[rank, path], ...]}): to check ranks, give several rank files",
        )?;
        let mut out = Vec::new();
        for (i, entry) in plans.iter().enumerate() {
            match entry.as_array().map(|p| p.as_slice()) {
                Some([rank, Value::String(path)]) => {
                    out.push((Some(PyValue::from_plain_json(rank)), path.clone()))
                }
                _ => {
                    return Err(format!(
                        "\"plans\"[{i}] must be [rank, \"path\"], found {entry}"
                    ))
                }
            }
        }
        return Ok(Listing { files: out, group });
    }
    let text = String::from_utf8_lossy(bytes);
    let mut out: Vec<(Option<PyValue>, String)> = Vec::new();
    for part in text.split("href=").skip(1) {
        let quote = part.chars().next().unwrap_or(' ');
        let link: String = if quote == '"' || quote == '\'' {
            part[1..].chars().take_while(|&c| c != quote).collect()
        } else {
            part.chars()
                .take_while(|c| !c.is_whitespace() && *c != '>')
                .collect()
        };
        let path = link
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string();
        let wanted = [".json", ".json.gz", ".log", ".log.gz", ".gz"]
            .iter()
            .any(|ext| path.ends_with(ext));
        // A folder holds other files too (a manifest, expected results): its rank files are
        // those whose names carry a rank, and trace logs (whose header does).
        let file_name = path.rsplit('/').next().unwrap_or(&path);
        let rank_file = rank_from_name(file_name).is_some() || is_log_name(file_name);
        if wanted && rank_file && !out.iter().any(|(_, p)| p == &path) {
            out.push((None, path));
        }
    }
    if out.is_empty() {
        return Err("neither a manifest nor a folder listing with .json, .gz or .log files".into());
    }
    Ok(Listing {
        files: out,
        group: None,
    })
}

fn run(
    dispatch: UseReducerDispatcher<ViewsState>,
    inputs: Vec<(Option<PyValue>, Input)>,
    group: Option<String>,
    limit_mb: Option<u64>,
    graph: Option<usize>,
    linkable: bool,
    sort: bool,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let started = browser::now_ms();
        let mut entries = Vec::with_capacity(inputs.len());
        let total = inputs.len();
        for (i, (rank, input)) in inputs.into_iter().enumerate() {
            dispatch.dispatch(ViewsAction::Busy(format!(
                "reading rank file {} of {total}…",
                i + 1
            )));
            let (label, _, bytes) = match read_input(&input, limit_mb).await {
                Ok(r) => r,
                Err(e) => return dispatch.dispatch(ViewsAction::Failed(e)),
            };
            browser::yield_now().await;
            match read_rank(&label, rank, &bytes, graph) {
                Ok(e) => entries.push(e),
                Err(e) => return dispatch.dispatch(ViewsAction::Failed(e)),
            }
        }
        if entries.len() < 2 {
            return dispatch.dispatch(ViewsAction::Failed(format!(
                "{} rank file(s): checking ranks needs two or more",
                entries.len()
            )));
        }
        settle_ranks(&mut entries);
        if sort {
            by_rank(&mut entries);
        }
        let view = RanksView {
            graph,
            ..RanksView::new(entries, group)
        };
        dispatch.dispatch(ViewsAction::Ranked(Shared::new(view), linkable, started));
    });
}

/// Starts the check a link asks for.
pub fn start_from_link(dispatch: UseReducerDispatcher<ViewsState>, url: &ViewsUrl) {
    if url.ranks.is_empty() {
        return;
    }
    let (sources, group, limit, graph) = (
        url.ranks.clone(),
        url.group.clone(),
        url.main.limit_mb,
        url.graph,
    );
    wasm_bindgen_futures::spawn_local(async move {
        dispatch.dispatch(ViewsAction::Busy("reading the rank list…".into()));
        match expand_link(&sources, limit).await {
            Ok((inputs, listed_group)) => {
                let sort = sources.len() == 1 && inputs.iter().all(|(rank, _)| rank.is_none());
                run(
                    dispatch,
                    inputs,
                    group.or(listed_group),
                    limit,
                    graph,
                    true,
                    sort,
                )
            }
            Err(e) => dispatch.dispatch(ViewsAction::Failed(e)),
        }
    });
}

/// Files picked or dropped: a manifest among them gives the ranks and group of the files it
/// names; the others are ranks by their names.
fn start_from_files(
    dispatch: UseReducerDispatcher<ViewsState>,
    files: Vec<web_sys::File>,
    group: Option<String>,
    graph: Option<usize>,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let mut manifest: Option<Listing> = None;
        let mut ranks = Vec::new();
        for f in files {
            let name = f.name();
            if name.ends_with(".json") && f.size() < 1e6 {
                if let Ok((_, _, bytes)) = read_input(&Input::File(f.clone()), None).await {
                    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes) {
                        if m.contains_key("plans") && !m.contains_key("buckets") {
                            match listing(&bytes) {
                                Ok(l) => manifest = Some(l),
                                Err(e) => {
                                    return dispatch
                                        .dispatch(ViewsAction::Failed(format!("{name}: {e}")))
                                }
                            }
                            continue;
                        }
                    }
                }
            }
            ranks.push(f);
        }
        let sort = manifest.is_none();
        let (inputs, listed_group) = match manifest {
            Some(Listing {
                files: listed,
                group,
            }) => {
                let mut inputs = Vec::new();
                for (rank, path) in listed {
                    let base = path.rsplit('/').next().unwrap_or(&path).to_string();
                    match ranks.iter().find(|f| f.name() == base) {
                        Some(f) => inputs.push((rank, Input::File(f.clone()))),
                        None => {
                            return dispatch.dispatch(ViewsAction::Failed(format!(
                                "the manifest lists {path}, which was not picked with it"
                            )))
                        }
                    }
                }
                (inputs, group)
            }
            None => {
                // A folder holds other files too: keep those that name a rank, and logs.
                let ranked: Vec<web_sys::File> = ranks
                    .iter()
                    .filter(|f| rank_from_name(&f.name()).is_some() || is_log_name(&f.name()))
                    .cloned()
                    .collect();
                let chosen = if ranked.len() >= 2 { ranked } else { ranks };
                (
                    chosen.into_iter().map(|f| (None, Input::File(f))).collect(),
                    None,
                )
            }
        };
        run(
            dispatch,
            inputs,
            group.or(listed_group),
            None,
            graph,
            false,
            sort,
        );
    });
}

/// The ranks view.
pub fn page(state: &ViewsState, dispatch: &UseReducerDispatcher<ViewsState>) -> Html {
    let on_files = {
        let d = dispatch.clone();
        let (group, graph) = (state.url.group.clone(), state.url.graph);
        Callback::from(move |files: Vec<web_sys::File>| {
            start_from_files(d.clone(), files, group.clone(), graph)
        })
    };
    html! {
        <>
            <section class="picker" aria-label="Open rank files">
                <h2>{"Check ranks"}</h2>
                <p>{"Open every rank's graph dump, trace log or plan report (or their folder, or a "}<code>{"commlens validate"}</code>
                   {" manifest with them): each rank's plan is compared with the first rank's, group by group, as validate_group_plans does. Ranks come from the manifest, a trace log's header, or a file name like rank_3.json. A link: "}
                   <code>{"?ranks=rank_0.json&ranks=rank_1.json"}</code>{", or "}<code>{"?ranks=manifest.json"}</code>{" or a folder listing."}</p>
                <FilePick id="ranks-files" label="Rank files" multiple=true on_files={on_files.clone()} />
                <FilePick id="ranks-folder" label="A folder" folder=true on_files={on_files} />
            </section>
            if let Some(r) = &state.ranks { <RanksPanels ranks={r.clone()} /> }
        </>
    }
}

#[derive(Properties, PartialEq)]
struct RanksPanelsProps {
    ranks: Shared<RanksView>,
}

fn show(value: &PyValue) -> String {
    commlens::pyjson::dumps(value)
}

#[function_component(RanksPanels)]
fn ranks_panels(props: &RanksPanelsProps) -> Html {
    let view = &props.ranks;
    let blamed = view.blamed();
    let reference = view.entries.first();
    let digest_of = |e: &RankEntry, g: &str| {
        e.digests
            .iter()
            .find(|(k, _)| k == g)
            .map(|(_, d)| d.clone())
    };
    html! {
        <>
            <section class="rank-verdicts" id="rank-verdicts" aria-label="Verdicts per group">
                <h2>{"Verdicts"}</h2>
                <p class="signatures">
                    { view.signature_verdict() }</p>
                if view.groups.is_empty() {
                    <p class="muted" id="no-groups">{ if view.entries.iter().any(|e| e.graph.is_some()) {
                        "The plans name no process group with ranks, so no group's plans can be checked: a trace log does not record which ranks form each group (a dump from the exporter does)."
                    } else { "The reports name no process groups." } }</p>
                }
                <ul class="plain verdicts">{ for view.verdicts.iter().map(|v| match &v.result {
                    Ok(text) => html! { <li class="verdict ok" data-group={v.group.clone()}><strong>{"ok"}</strong>{" "}{ text.trim().trim_start_matches("ok: ").to_string() }</li> },
                    Err(VerdictError::Invalid(e)) => html! {
                        <li class="verdict failed" data-group={v.group.clone()} role="alert">
                            <strong>{ format!("ValueError: {}", e.message) }</strong>
                            <pre class="explain">{ e.explain() }</pre>
                        </li>
                    },
                    Err(VerdictError::Load(e)) => html! { <li class="verdict failed" data-group={v.group.clone()}><strong>{"could not read: "}</strong>{ e.clone() }</li> },
                }) }</ul>
            </section>
            if let Some(d) = view.divergence() {
                <DivergenceCharts ranks={view.clone()} divergence={d} />
            }
            <section class="rank-table" aria-label="Ranks">
                <h2>{ format!("Ranks ({})", view.entries.len()) }</h2>
                <table class="ranks-table" id="ranks-table">
                    <thead><tr><th>{"rank"}</th><th>{"file"}</th><th>{"from"}</th><th>{"signature"}</th>
                        { for view.groups.iter().map(|g| html! { <th>{ format!("digest: {g}") }</th> }) }</tr></thead>
                    <tbody>{ for view.entries.iter().map(|e| {
                        let is_blamed = |g: &str| blamed.iter().any(|(r, bg, _)| r == &e.rank && bg == g);
                        // Graphs may differ per rank: a signature is shown, never blamed.
                        let sig_differs = reference.is_some_and(|r| r.signature != e.signature);
                        html! {
                            <tr data-rank={show(&e.rank)}>
                                <th scope="row">{ show(&e.rank) }</th>
                                <td><code>{ e.file.clone() }</code>
                                    if !e.notes.is_empty() { <span class="muted" title={e.notes.join("\n")}>{" (notes)"}</span> }</td>
                                <td>{ match e.kind { RankKind::Graph => "graph, planned here", RankKind::Report => "plan report" } }</td>
                                <td class={classes!(sig_differs.then_some("other-graph"))}><code>{ e.signature.clone().unwrap_or_else(|| "—".into()) }</code></td>
                                { for view.groups.iter().map(|g| {
                                    let d = digest_of(e, g);
                                    let differs = reference.is_some_and(|r| digest_of(r, g) != d);
                                    html! { <td class={classes!(differs.then_some("differs"), is_blamed(g).then_some("blamed"))} data-group={g.clone()}>
                                        <code>{ d.map(|d| d.chars().take(16).collect::<String>()).unwrap_or_else(|| "—".into()) }</code></td> }
                                }) }
                            </tr>
                        }
                    }) }</tbody>
                </table>
                <p class="muted">{"The first rank is the reference the others are compared with. A marked cell differs from it; an outlined one is where the verdict found the difference."}</p>
            </section>
        </>
    }
}

#[derive(Properties, PartialEq)]
struct DivergenceProps {
    ranks: Shared<RanksView>,
    divergence: Divergence,
}

/// One side of a divergence drawn: the rank's timeline and its differing bucket.
struct RankChart {
    label: String,
    timeline: Shared<commlens::timeline::TimelineInput>,
    bucket: Option<usize>,
}

fn rank_chart(
    entry: &RankEntry,
    bucket_id: Option<&str>,
    graph: Option<usize>,
) -> Result<RankChart, String> {
    let bytes = entry
        .graph
        .as_ref()
        .ok_or("a plan report: no graph positions to draw")?;
    let loaded = super::load_graph(&entry.file, None, bytes.as_slice(), graph)?;
    let planned = crate::model::plan(&loaded, &crate::model::Settings::default(), || 0.0);
    if let Some(e) = planned.error {
        return Err(e);
    }
    let bucket =
        bucket_id.and_then(|id| planned.timeline.buckets.iter().position(|b| &*b.id == id));
    Ok(RankChart {
        label: format!("rank {} ({})", show(&entry.rank), entry.file),
        timeline: planned.timeline,
        bucket,
    })
}

/// Both ranks' timelines, one view for both, the first differing bucket outlined in each.
#[function_component(DivergenceCharts)]
fn divergence_charts(props: &DivergenceProps) -> Html {
    let d = &props.divergence;
    let charts = use_memo((props.ranks.clone(), d.clone()), |(ranks, d)| {
        let side = |i: usize, id: &Option<String>| {
            ranks
                .entries
                .get(i)
                .ok_or_else(|| "no such rank".to_string())
                .and_then(|e| rank_chart(e, id.as_deref(), ranks.graph))
        };
        (
            side(d.entries.0, &d.bucket_ids.0),
            side(d.entries.1, &d.bucket_ids.1),
        )
    });
    // The first view shows both buckets.
    let first = {
        let ranges: Vec<(f64, f64)> = [&charts.0, &charts.1]
            .into_iter()
            .filter_map(|c| c.as_ref().ok())
            .filter_map(|c| {
                c.bucket
                    .map(|b| crate::model::bucket_range(&c.timeline.buckets[b]))
            })
            .collect();
        let from = ranges.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let to = ranges.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
        (from.is_finite() && to.is_finite()).then(|| {
            let mid = (from + to) / 2.0;
            let half = ((to - from) * 2.0).max(16.0);
            commlens::timeline::Viewport {
                x0: mid - half,
                x1: mid + half,
            }
        })
    };
    let viewport = use_state(move || first);
    let on_view = {
        let viewport = viewport.clone();
        Callback::from(move |(v, _): (Option<commlens::timeline::Viewport>, bool)| viewport.set(v))
    };
    let chart = |c: &Result<RankChart, String>, id: &'static str, bucket_id: &Option<String>| {
        match c {
            Ok(c) => html! {
                <div id={id} class="rank-chart">
                    <Chart timeline={c.timeline.clone()} viewport={*viewport} focus={c.bucket}
                        selected={c.bucket.map(|b| c.timeline.buckets[b].id.clone())} filter={None::<crate::url_state::Filter>}
                        on_view={on_view.clone()} on_pick={Callback::from(|_: Pick| {})}
                        title={AttrValue::from(format!("{}: {}", c.label,
                            bucket_id.as_deref().map_or("the bucket is missing here".to_string(), |b| format!("first differing bucket {b}"))))} />
                </div>
            },
            Err(e) => html! { <p class="muted" id={id}>{ format!("No timeline: {e}") }</p> },
        }
    };
    html! {
        <section class="divergence" id="divergence" aria-label="Where the plans first differ">
            <h2>{ format!("Where group {} first differs{}", d.group,
                d.member.map(|m| format!(" (member {m} of the bucket)")).unwrap_or_default()) }</h2>
            { chart(&charts.0, "rank-chart-reference", &d.bucket_ids.0) }
            { chart(&charts.1, "rank-chart-other", &d.bucket_ids.1) }
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate_case(name: &str) -> std::path::PathBuf {
        std::env::var_os("COMMLENS_SHARED")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
            })
            .join("conformance/validate")
            .join(name)
    }

    fn view_of(case: &str) -> RanksView {
        let dir = validate_case(case);
        let manifest = std::fs::read(dir.join("validate.json")).unwrap();
        let Listing { files, group } = listing(&manifest).unwrap();
        let entries = files
            .into_iter()
            .map(|(rank, path)| {
                let bytes = std::fs::read(dir.join(&path)).unwrap();
                read_rank(&path, rank, &bytes, None).unwrap()
            })
            .collect();
        RanksView::new(entries, group)
    }

    #[test]
    fn verdicts_are_the_conformance_expectations() {
        for case in [
            "disagree_buckets",
            "llama_four_ranks_ok",
            "missing_rank",
            "disagree_rank_order",
        ] {
            let expected: Value = serde_json::from_slice(
                &std::fs::read(validate_case(case).join("expected.json")).unwrap(),
            )
            .unwrap();
            let view = view_of(case);
            assert_eq!(view.verdicts.len(), 1, "{case}");
            match (&view.verdicts[0].result, expected["ok"].as_bool()) {
                (Ok(_), Some(true)) => {}
                (Err(VerdictError::Invalid(e)), Some(false)) => {
                    assert_eq!(e.message, expected["message"].as_str().unwrap(), "{case}");
                    assert!(!e.explain().contains("None"), "{case}: {}", e.explain());
                }
                _ => panic!("{case}: verdict differs from {expected}"),
            }
        }
        let view = view_of("disagree_buckets");
        let blamed = view.blamed();
        assert_eq!(blamed.len(), 1);
        assert_eq!(blamed[0].0, PyValue::int(1));
        assert_eq!(blamed[0].2, Field::GroupDigests);
    }

    /// Two ranks given as dumps whose plans differ: the divergence names a bucket of each,
    /// and each rank's timeline holds it.
    #[test]
    fn a_divergence_of_graphs_is_found_in_both_timelines() {
        let cases = validate_case("..").join("cases");
        let read = |case: &str, file: &str| {
            let bytes = std::fs::read(cases.join(case).join("dump.json")).unwrap();
            read_rank(file, None, &bytes, None).unwrap()
        };
        let mut entries = vec![
            read("mlp_default", "rank_0.json"),
            read("mlp_fp16", "rank_1.json"),
        ];
        assert_eq!(entries[1].rank, PyValue::int(0), "the dump records rank 0");
        settle_ranks(&mut entries);
        assert_eq!(
            entries[1].rank,
            PyValue::int(1),
            "both record rank 0: the names decide"
        );
        assert!(entries[1].notes[0].contains("records rank 0"));
        let view = RanksView::new(entries, None);
        assert_eq!(view.groups, vec!["fsdp".to_string()]);
        let d = view.divergence().expect("the plans differ in a bucket");
        assert_eq!(d.entries, (0, 1));
        for (i, id) in [(0, &d.bucket_ids.0), (1, &d.bucket_ids.1)] {
            let chart = rank_chart(&view.entries[i], id.as_deref(), None).unwrap();
            let b = chart.bucket.expect("the bucket is drawn");
            assert_eq!(Some(&*chart.timeline.buckets[b].id), id.as_deref());
        }
        // Reports have no graph to draw; the view says so instead.
        let report = validate_case("disagree_buckets").join("rank_0.json");
        let entry = read_rank("rank_0.json", None, &std::fs::read(report).unwrap(), None).unwrap();
        assert!(rank_chart(&entry, None, None).is_err());
    }

    /// Trace logs (issue 10's several rank logs): ranks from their headers, planned through
    /// the core's `input`; without group ranks, the signatures are still compared.
    #[test]
    fn rank_logs_are_read_and_compared_by_signature() {
        let log = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/tracelog/simple_fsdp.log.gz"),
        )
        .unwrap();
        let e = read_rank("simple_fsdp.log.gz", None, &log, None)
            .err()
            .unwrap();
        assert!(e.contains("choose one") && e.contains("graph=K"), "{e}");
        let read = |name: &str, graph: usize| read_rank(name, None, &log, Some(graph)).unwrap();
        let a = read("rank_0.log.gz", 3);
        assert_eq!(a.kind, RankKind::Graph);
        assert_eq!(a.rank_from, RankFrom::Recorded);
        let mut entries = vec![a, read("rank_1.log.gz", 3)];
        settle_ranks(&mut entries);
        let view = RanksView::new(entries, None);
        assert!(view.signatures_differ().is_empty());
        assert!(view.signature_verdict().contains("the same on all 2 ranks"));
        let mut entries = vec![read("rank_0.log.gz", 3), read("rank_1.log.gz", 5)];
        settle_ranks(&mut entries);
        let other = RanksView::new(entries, None);
        assert_eq!(other.signatures_differ().len(), 1);
        assert!(
            other.signature_verdict().contains("rank 1 (rank_1.log.gz)"),
            "{}",
            other.signature_verdict()
        );
    }

    #[test]
    fn ranks_from_names_and_listings() {
        assert_eq!(rank_from_name("rank_3.json"), Some(3));
        assert_eq!(
            rank_from_name("dedicated_log_torch_trace_rank_12_ab3x.log"),
            Some(12)
        );
        assert_eq!(rank_from_name("plan7.json.gz"), Some(7));
        assert_eq!(rank_from_name("plan.json"), None);
        let html = br#"<ul><li><a href="rank_0.json">rank_0.json</a><li><a href='rank_1.json.gz'>x</a><li><a href="../">up</a><li><a href="notes.txt">n</a></ul>"#;
        let Listing { files, group } = listing(html).unwrap();
        assert_eq!(group, None);
        assert_eq!(
            files.into_iter().map(|(_, p)| p).collect::<Vec<_>>(),
            vec!["rank_0.json", "rank_1.json.gz"]
        );
        assert!(listing(b"{\"buckets\": []}")
            .unwrap_err()
            .contains("not a manifest"));
        assert!(listing(b"{\"plans\": [[0]]}")
            .unwrap_err()
            .contains("\"plans\"[0]"));
    }
}
