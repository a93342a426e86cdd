//! The app's state in one reducer (yew's function_todomvc style): panels read it through
//! props and change it by dispatching an [`Action`]. Re-planning happens here, so the
//! settings and the plan on screen never disagree.

use crate::model::{self, CostView, Loaded, Planned, PlansMode, Settings};
use crate::url_state::{Filter, SelectionRef, UrlState};
use commlens::cost::Network;
use commlens::timeline::{TimelineInput, Viewport};
use std::rc::Rc;
use yew::Reducible;

/// What is selected. A bucket is held by one of its collectives (its first launch), not by
/// its positional id: after a re-plan the selection follows that collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Selection {
    #[default]
    None,
    Node(u32),
    Bucket {
        anchor: u32,
    },
}

impl Selection {
    /// The bucket (index) a selection shows, in this plan.
    pub fn bucket(&self, timeline: &TimelineInput) -> Option<usize> {
        match self {
            Selection::None => None,
            Selection::Node(n) | Selection::Bucket { anchor: n } => timeline.bucket_of(*n),
        }
    }

    /// The selection of bucket `index` of `timeline`.
    pub fn of_bucket(timeline: &TimelineInput, index: usize) -> Selection {
        match timeline.buckets.get(index) {
            Some(b) => Selection::Bucket {
                anchor: b.members.iter().map(|m| m.node).min().unwrap_or(0),
            },
            None => Selection::None,
        }
    }

    /// How a link names it.
    pub fn to_ref(self, timeline: &TimelineInput) -> Option<SelectionRef> {
        match self {
            Selection::None => None,
            Selection::Node(n) => Some(SelectionRef::Node(n)),
            Selection::Bucket { .. } => self
                .bucket(timeline)
                .map(|b| SelectionRef::Bucket(timeline.buckets[b].short_id().to_string())),
        }
    }

    /// A link's selection in this plan.
    pub fn from_ref(r: &SelectionRef, timeline: &TimelineInput) -> Selection {
        match r {
            SelectionRef::Node(n) => Selection::Node(*n),
            SelectionRef::Bucket(id) => {
                let short = commlens::timeline::input::short_bucket_id(id);
                timeline
                    .buckets
                    .iter()
                    .position(|b| &*b.id == id.as_str() || b.short_id() == short)
                    .map_or(Selection::None, |i| Selection::of_bucket(timeline, i))
            }
        }
    }
}

/// A change whose paint is timed (`#perf`).
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub seq: u64,
    /// `load` or `replan`.
    pub what: &'static str,
    pub started: f64,
    pub stages: String,
}

/// Everything the panels show.
#[derive(Clone, Default)]
pub struct State {
    pub loaded: Option<Rc<Loaded>>,
    pub planned: Option<Rc<Planned>>,
    pub settings: Settings,
    pub selection: Selection,
    /// The view as the chart shows it (changes while dragging).
    pub viewport: Option<Viewport>,
    /// The view the address bar shows (changes when a gesture ends).
    pub committed_viewport: Option<Viewport>,
    pub filter: Option<Filter>,
    pub search: String,
    pub busy: Option<String>,
    pub error: Option<String>,
    /// Something the user should know that is not an error (a selection that moved, settings
    /// that did not carry over, a link's values that were not understood).
    pub notice: Option<String>,
    pub embed: bool,
    pub limit_mb: Option<u64>,
    /// The hardware time estimates are made for; `None`: no estimates.
    pub hardware: Option<Network>,
    /// The current plan's time estimates on that hardware.
    pub cost: Option<Rc<CostView>>,
    /// The chart's x axis is the estimated time (when there are estimates).
    pub time_axis: bool,
    /// How long the last time estimates took.
    cost_ms: f64,
    /// Parameters of the link this version does not use, written back unchanged.
    pub other_params: Vec<(String, String)>,
    /// The link's selection and view, applied once the first dump is read.
    pub pending: Option<(Option<SelectionRef>, Option<Viewport>)>,
    pub timing: Option<Timing>,
    seq: u64,
}

pub enum Action {
    /// The page's link, read at start.
    Init(Box<UrlState>, Vec<String>),
    Busy(String),
    LoadFailed(String),
    Loaded {
        loaded: Rc<Loaded>,
        /// What the reader could not use (a link's graph out of range).
        notice: Option<String>,
        started: f64,
        stages: String,
    },
    /// New planner settings (already checked by the controls).
    Settings(Settings),
    /// `reveal`: move the view so that the selection is in it (a row or a link chose it; a
    /// click in the chart needs no move).
    Select {
        selection: Selection,
        reveal: bool,
    },
    /// The chart's view; `commit` when a gesture ends (the address bar follows).
    View {
        viewport: Option<Viewport>,
        commit: bool,
    },
    Filter(Option<Filter>),
    Search(String),
    DismissError,
    DismissNotice,
    /// The input size limit, in MiB.
    Limit(Option<u64>),
    /// Time estimates on this hardware (`None`: off).
    Hardware(Option<Network>),
    /// The x axis: estimated time (`true`) or graph position.
    TimeAxis(bool),
}

impl State {
    /// The link that reproduces this view.
    pub fn url_state(&self) -> UrlState {
        let timeline = self.planned.as_ref().map(|p| p.timeline.clone());
        UrlState {
            source: self.loaded.as_ref().and_then(|l| l.source.clone()),
            graph: self.loaded.as_ref().and_then(|l| l.graph_choice()),
            settings: self.settings.clone(),
            selection: timeline.and_then(|t| self.selection.to_ref(&t)),
            viewport: self.committed_viewport,
            filter: self.filter.clone(),
            search: self.search.clone(),
            embed: self.embed,
            limit_mb: self.limit_mb,
            hardware: self.hardware.clone(),
            time_axis: self.time_axis && self.hardware.is_some(),
            other: self.other_params.clone(),
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Re-plans with the current settings, keeping the selection on the collective it was
    /// on (or saying what became of it).
    fn replan(&mut self, now: impl Fn() -> f64) {
        let Some(loaded) = self.loaded.clone() else {
            return;
        };
        let before = self.planned.as_ref().map(|p| p.timeline.clone());
        let planned = model::plan(&loaded, &self.settings, now);
        if let (Selection::Bucket { anchor }, Some(before)) = (self.selection, before) {
            let old = before
                .bucket_of(anchor)
                .map(|b| before.buckets[b].short_id().to_string());
            let name = loaded.graph.node(anchor as usize).name.clone();
            match planned.timeline.bucket_of(anchor) {
                Some(b) => {
                    let new = planned.timeline.buckets[b].short_id().to_string();
                    if old.as_deref() != Some(new.as_str()) {
                        self.notice = Some(format!(
                            "The plan changed: the selection follows {name}, now in {new} (it was in {}).",
                            old.as_deref().unwrap_or("another bucket")
                        ));
                    }
                    self.selection = Selection::of_bucket(&planned.timeline, b);
                }
                None => {
                    self.notice = Some(format!(
                        "The plan changed: {name} is in no bucket now, so its collective is selected instead of {}.",
                        old.as_deref().unwrap_or("the bucket")
                    ));
                    self.selection = Selection::Node(anchor);
                }
            }
        }
        self.planned = Some(Rc::new(planned));
        self.recost();
    }

    /// Time estimates of the plan on screen, on the chosen hardware.
    fn recost(&mut self) {
        let t0 = crate::browser::now_ms();
        self.cost = match (&self.loaded, &self.planned, &self.hardware) {
            (Some(l), Some(p), Some(hw)) => model::cost(l, p, hw).map(Rc::new),
            _ => None,
        };
        self.cost_ms = crate::browser::now_ms() - t0;
    }

    /// Moves the view so that the selection is in it.
    fn reveal(&mut self) {
        let (Some(planned), Some(loaded)) = (&self.planned, &self.loaded) else {
            return;
        };
        let n = loaded.graph.len() as u32;
        let range = match self.selection.bucket(&planned.timeline) {
            Some(b) => Some(model::bucket_range(&planned.timeline.buckets[b])),
            None => match self.selection {
                Selection::Node(id) => Some((id as f64, id as f64 + 1.0)),
                _ => None,
            },
        };
        if let Some((from, to)) = range {
            let current = self.viewport.unwrap_or_else(|| Viewport::full(n));
            let next = current.reveal(from, to, n);
            if next != current.clamped(n) {
                self.viewport = Some(next);
                self.committed_viewport = Some(next);
            }
        }
    }

    fn plan_stages(&self) -> String {
        self.planned
            .as_ref()
            .map(|p| {
                let cost = if self.cost.is_some() {
                    format!(" · time estimates {:.1} ms", self.cost_ms)
                } else {
                    String::new()
                };
                format!(
                    "plan {:.1} ms · views {:.1} ms ({}){cost}",
                    p.plan_ms, p.views_ms, p.detail
                )
            })
            .unwrap_or_default()
    }
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        let now = crate::browser::now_ms;
        match action {
            Action::Init(url, problems) => {
                let url = *url;
                s.settings = url.settings;
                s.filter = url.filter;
                s.search = url.search;
                s.embed = url.embed;
                s.limit_mb = url.limit_mb;
                s.hardware = url.hardware;
                s.time_axis = url.time_axis;
                s.other_params = url.other;
                s.pending = Some((url.selection, url.viewport));
                if !problems.is_empty() {
                    s.notice = Some(format!(
                        "Some of the link's values were not used: {}.",
                        problems.join("; ")
                    ));
                }
            }
            Action::Busy(text) => {
                s.busy = Some(text);
                s.error = None;
            }
            Action::LoadFailed(e) => {
                s.busy = None;
                s.error = Some(e);
                s.pending = None;
            }
            Action::Loaded {
                loaded,
                notice,
                started,
                stages,
            } => {
                s.busy = None;
                s.error = None;
                if notice.is_some() {
                    s.notice = notice;
                }
                let first = s.loaded.is_none();
                // Settings carry over only where they mean the same in the new graph: the
                // policy's numbers do; module names must exist in it.
                if !first && s.settings.plans.names_modules() {
                    if let Some(problem) = model::plans_problem(&loaded.graph, &s.settings.plans) {
                        s.notice = Some(format!(
                            "The module plans of the previous dump do not fit {} ({problem}): using the dump's own.",
                            loaded.label
                        ));
                        s.settings.plans = PlansMode::Dump;
                    }
                }
                s.loaded = Some(loaded);
                s.planned = None;
                s.selection = Selection::None;
                s.viewport = None;
                s.committed_viewport = None;
                if !first {
                    s.filter = None;
                    s.search.clear();
                }
                let t0 = now();
                s.replan(now);
                let draw_from = now();
                if let Some((selection, viewport)) = s.pending.take() {
                    s.viewport = viewport;
                    s.committed_viewport = viewport;
                    if let (Some(r), Some(p)) = (selection, &s.planned) {
                        s.selection = Selection::from_ref(&r, &p.timeline);
                        if s.selection == Selection::None {
                            s.notice =
                                Some(format!("The link's selection ({r:?}) is not in this plan."));
                        } else {
                            s.reveal();
                        }
                    }
                }
                let seq = s.next_seq();
                s.timing = Some(Timing {
                    seq,
                    what: "load",
                    started,
                    stages: format!(
                        "{stages} · {} · setup {:.0} ms",
                        s.plan_stages(),
                        draw_from - t0
                    ),
                });
            }
            Action::Settings(settings) => {
                if settings == s.settings {
                    return self;
                }
                let started = now();
                s.settings = settings;
                s.replan(now);
                let seq = s.next_seq();
                s.timing = Some(Timing {
                    seq,
                    what: "replan",
                    started,
                    stages: s.plan_stages(),
                });
            }
            Action::Select { selection, reveal } => {
                if selection == s.selection && !reveal {
                    return self;
                }
                s.selection = selection;
                if reveal {
                    s.reveal();
                }
            }
            Action::View { viewport, commit } => {
                s.viewport = viewport;
                if commit {
                    s.committed_viewport = viewport;
                }
            }
            Action::Filter(f) => s.filter = f,
            Action::Search(q) => s.search = q,
            Action::DismissError => s.error = None,
            Action::DismissNotice => s.notice = None,
            Action::Limit(l) => s.limit_mb = l,
            Action::TimeAxis(on) => {
                if on == s.time_axis {
                    return self;
                }
                s.time_axis = on;
                let seq = s.next_seq();
                s.timing = Some(Timing {
                    seq,
                    what: "replan",
                    started: now(),
                    stages: "axis".into(),
                });
            }
            Action::Hardware(hw) => {
                if hw == s.hardware {
                    return self;
                }
                let started = now();
                s.hardware = hw;
                s.recost();
                let seq = s.next_seq();
                s.timing = Some(Timing {
                    seq,
                    what: "replan",
                    started,
                    stages: "time estimates".into(),
                });
            }
        }
        Rc::new(s)
    }
}
