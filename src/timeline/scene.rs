//! Layout: a [`TimelineInput`] → a [`TimelineScene`] of pixel-placed marks.
//!
//! What the layout promises, at any width and any zoom (the tests hold it to this):
//!
//! - **Bars never overlap.** Each lane packs its buckets' windows into rows; a lane grows up
//!   to [`MAX_ROWS`] rows, and the windows that still do not fit are drawn as one aggregated
//!   strip per lane ([`OverflowMark`]) that counts them. Nothing in view is dropped: every
//!   bucket whose window meets the view is a bar, part of an overflow strip, or (dense views)
//!   counted in a column.
//! - **Dense views say something.** Past [`MAX_BARS`] buckets launched in view, each lane
//!   shows columns per [`BIN`] pixels ([`ColumnMark`]): the buckets whose first member launches
//!   there, the column's height their bytes, the largest buckets of the lane named. A column's graph range is exact, so zooming to it shows the buckets it counted.
//! - **Every split and skip is labelled**, by its own label or by a neighbour's that counts it
//!   (`capacity +2`); labels are placed in lines where they overlap no other text, shortened
//!   when they do not fit, and kept inside the drawing.
//! - **Text stays readable**: widths come from [`super::text`], so no two texts overlap and
//!   none leaves the drawing; text on a bar contrasts at least 4.5:1 with it.

use super::input::{BucketIn, TimelineInput};
use super::lane::Lane;
use super::palette::{self, role_colour, Rgb, INK, MUTED, SKIP, SPLIT};
use super::text::{self, Bands, SLACK};
use crate::planner::{Action, Reason};
use std::collections::BTreeSet;
use std::rc::Rc;

/// The visible range of graph positions (zoom and pan).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    pub x0: f64,
    pub x1: f64,
}

impl Viewport {
    /// The whole graph.
    pub fn full(node_count: u32) -> Viewport {
        Viewport {
            x0: 0.0,
            x1: node_count.max(1) as f64,
        }
    }
    /// Clamped to the graph, at least 4 positions wide.
    pub fn clamped(self, node_count: u32) -> Viewport {
        let n = node_count.max(1) as f64;
        let (mut x0, mut x1) = (self.x0, self.x1);
        if !x0.is_finite() || !x1.is_finite() || x1 <= x0 {
            return Viewport::full(node_count);
        }
        let w = (x1 - x0).clamp(4.0_f64.min(n), n);
        x0 = x0.clamp(0.0, n - w);
        x1 = x0 + w;
        Viewport { x0, x1 }
    }
    /// Zoomed by `factor` (< 1 zooms in) around graph position `at`.
    pub fn zoom(self, factor: f64, at: f64, node_count: u32) -> Viewport {
        let x0 = at - (at - self.x0) * factor;
        let x1 = at + (self.x1 - at) * factor;
        Viewport { x0, x1 }.clamped(node_count)
    }
    /// Moved by `dx` graph positions.
    pub fn pan(self, dx: f64, node_count: u32) -> Viewport {
        Viewport {
            x0: self.x0 + dx,
            x1: self.x1 + dx,
        }
        .clamped(node_count)
    }
    /// Whether `[from, to)` lies inside.
    pub fn contains(self, from: f64, to: f64) -> bool {
        from >= self.x0 && to <= self.x1
    }
    /// A view that shows `[from, to)`: this one when it shows any of it (a link's view is
    /// kept as it was made), else the same width centred on it when it fits, else zoomed out
    /// to it with a margin.
    pub fn reveal(self, from: f64, to: f64, node_count: u32) -> Viewport {
        let vp = self.clamped(node_count);
        if to > vp.x0 && from < vp.x1 {
            return vp;
        }
        let span = (to - from).max(1.0);
        let width = vp.x1 - vp.x0;
        let centre = (from + to) / 2.0;
        if span * 1.1 <= width {
            Viewport {
                x0: centre - width / 2.0,
                x1: centre + width / 2.0,
            }
            .clamped(node_count)
        } else {
            let margin = span * 0.05 + 1.0;
            Viewport {
                x0: from - margin,
                x1: to + margin,
            }
            .clamped(node_count)
        }
    }
}

/// What to lay out, beyond the input.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneOptions {
    pub viewport: Viewport,
    /// Width of the drawing in pixels (at least [`MIN_WIDTH`]).
    pub width: u32,
    /// A bucket (index into the input's buckets) always drawn as a bar when its window meets
    /// the view: the selection, so that it can be seen whatever else is there.
    pub focus: Option<usize>,
    /// Where compute waits for communication, by the cost model (`crate::cost`): drawn on a
    /// lane of their own when given.
    pub exposed: Rc<[ExposedIn]>,
    /// Per bucket, its bucketed collective's estimated time and algorithm (the cost
    /// model's), added to its tooltip; empty without estimates.
    pub bucket_times: Rc<[(f64, Option<&'static str>)]>,
    /// A time axis: the estimated time (µs) at each graph position `0..=node_count` (when
    /// each node starts on the compute stream, then the step's end; non-decreasing). The view
    /// stays a range of graph positions; x follows their times. `None`: x is the position.
    pub time: Option<Rc<[f64]>>,
    /// Buckets and decisions drawn as marked (`data-marked`, for a stylesheet to pick out):
    /// a comparison's changes. `None`: nothing is.
    pub marked: Option<Rc<Marked>>,
}

/// What a drawing marks, by index into its input's buckets and decisions (indices past the
/// ends are unmarked).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marked {
    pub buckets: Vec<bool>,
    pub decisions: Vec<bool>,
}

impl Marked {
    pub fn bucket(&self, i: usize) -> bool {
        self.buckets.get(i).copied().unwrap_or(false)
    }

    pub fn decision(&self, i: usize) -> bool {
        self.decisions.get(i).copied().unwrap_or(false)
    }
}

/// The estimated time at graph position `pos`, linear within a node.
pub fn time_at(time: &[f64], pos: f64) -> f64 {
    let n = time.len().saturating_sub(1);
    if n == 0 {
        return time.first().copied().unwrap_or(0.0);
    }
    let p = pos.clamp(0.0, n as f64);
    let k = (p.floor() as usize).min(n - 1);
    time[k] + (p - k as f64) * (time[k + 1] - time[k])
}

/// The graph position at estimated time `us` (the inverse of [`time_at`]; inside a stretch
/// where time does not move, its start).
pub fn position_at_time(time: &[f64], us: f64) -> f64 {
    let n = time.len().saturating_sub(1);
    if n == 0 {
        return 0.0;
    }
    // The last node boundary at or before `us`.
    let k = time
        .partition_point(|t| *t <= us)
        .saturating_sub(1)
        .min(n - 1);
    let span = time[k + 1] - time[k];
    let f = if span > 0.0 {
        ((us - time[k]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    };
    k as f64 + f
}

/// How graph positions map to pixels: linearly, or through their estimated times.
#[derive(Clone, Copy)]
struct XMap<'a> {
    plot_x0: f64,
    /// Pixels per position (linear) or per microsecond (time).
    scale: f64,
    /// The view's start, in positions or microseconds.
    start: f64,
    time: Option<&'a [f64]>,
}

impl<'a> XMap<'a> {
    fn new(vp: Viewport, plot_x0: f64, plot_x1: f64, time: Option<&'a [f64]>, n: u32) -> XMap<'a> {
        let time = time.filter(|t| {
            t.len() == n as usize + 1
                && t.iter().all(|v| v.is_finite())
                && time_at(t, vp.x1) > time_at(t, vp.x0)
        });
        let (start, end) = match time {
            Some(t) => (time_at(t, vp.x0), time_at(t, vp.x1)),
            None => (vp.x0, vp.x1),
        };
        XMap {
            plot_x0,
            scale: (plot_x1 - plot_x0) / (end - start),
            start,
            time,
        }
    }

    fn unit(&self, pos: f64) -> f64 {
        match self.time {
            Some(t) => time_at(t, pos),
            None => pos,
        }
    }

    fn px(&self, pos: f64) -> f64 {
        self.plot_x0 + (self.unit(pos) - self.start) * self.scale
    }

    fn position(&self, x: f64) -> f64 {
        let u = self.start + (x - self.plot_x0) / self.scale;
        match self.time {
            Some(t) => position_at_time(t, u),
            None => u,
        }
    }
}

/// A stretch where compute waits for communication (a [`crate::cost::Stall`]), at the node
/// whose compute waits.
#[derive(Clone, Debug, PartialEq)]
pub struct ExposedIn {
    pub before: u32,
    /// The node's name.
    pub name: Rc<str>,
    pub us: f64,
    /// What compute waits for, in words (`bucket_3`, a collective's name).
    pub waits_for: String,
}

/// An exposed stretch (or, in dense views, every one in a bin).
#[derive(Clone, Debug, PartialEq)]
pub struct ExposedMark {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub node: Rc<str>,
    pub us: f64,
    pub count: usize,
    pub title: String,
    pub aria: String,
}

/// Height of an [`ExposedMark`].
pub const EXPOSED_H: f64 = 10.0;

/// Which lane a mark sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaneKey {
    /// Buckets of one phase and transport.
    Buckets(Lane),
    /// Collectives the planner skipped.
    Skipped,
    /// Collectives the plan does not bucket and did not decide on (untagged, c10d).
    Unplanned,
    /// Where compute waits for communication (cost model).
    Exposed,
}

impl LaneKey {
    pub fn label(&self) -> String {
        match self {
            LaneKey::Buckets(lane) => lane.label(),
            LaneKey::Skipped => "skipped".to_string(),
            LaneKey::Unplanned => "not planned".to_string(),
            LaneKey::Exposed => "exposed comm (est.)".to_string(),
        }
    }
}

/// A lane's box and what it says about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneBox {
    pub key: LaneKey,
    pub y: f64,
    pub height: f64,
    /// Top of the rows (bars, columns or skip marks).
    pub rows_y: f64,
    pub rows_h: f64,
    pub rows: usize,
    /// Whether every other lane is shaded.
    pub shaded: bool,
}

/// How a label is anchored at its `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// A line of text. `y` is the top of the line box, which is `size` pixels tall.
#[derive(Clone, Debug, PartialEq)]
pub struct TextMark {
    pub x: f64,
    pub y: f64,
    pub text: String,
    pub size: f64,
    pub colour: Rgb,
    pub anchor: Anchor,
    pub bold: bool,
}

impl TextMark {
    /// Horizontal extent `[x0, x1)` by the width estimate.
    pub fn span(&self) -> (f64, f64) {
        let w = text::width(&self.text, self.size);
        match self.anchor {
            Anchor::Start => (self.x, self.x + w),
            Anchor::Middle => (self.x - w / 2.0, self.x + w / 2.0),
            Anchor::End => (self.x - w, self.x),
        }
    }
}

/// A bucket bar over its window.
#[derive(Clone, Debug, PartialEq)]
pub struct BarMark {
    /// Index into `TimelineInput::buckets`.
    pub bucket: usize,
    pub bucket_id: Rc<str>,
    pub lane: usize,
    pub row: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub h: f64,
    pub colour: Rgb,
    pub label: Option<TextMark>,
    /// Hover text: members, bytes, window, the rule.
    pub title: String,
    /// What a screen reader says.
    pub aria: String,
    /// The singleton decision's reason, if the bucket is a singleton.
    pub singleton: Option<Reason>,
    /// Marked by the options (`SceneOptions::marked`).
    pub marked: bool,
    /// The bucket's role (`None`: unclassified or mixed).
    pub role: Option<Rc<str>>,
    /// Whether the bucket's first member launches in view (else its window passes through).
    pub anchored: bool,
    /// The window, in graph positions.
    pub start: u32,
    pub end: u32,
}

/// A member launch (possibly several merged in one pixel column), drawn under its bar.
#[derive(Clone, Debug, PartialEq)]
pub struct TickMark {
    pub x: f64,
    pub y: f64,
    pub h: f64,
    pub count: usize,
}

/// Buckets a full lane could not draw, aggregated over a run of bins.
#[derive(Clone, Debug, PartialEq)]
pub struct OverflowMark {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub h: f64,
    /// Windows not drawn that cover this run.
    pub count: usize,
    pub from: f64,
    pub to: f64,
    pub title: String,
}

/// Dense views: the buckets whose first member launches in one bin of a lane; its height is
/// their bytes, against the lane's fullest bin.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnMark {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    /// Top of the column (its height shows `max_bytes`).
    pub y: f64,
    pub h: f64,
    pub count: usize,
    /// The bin's graph positions `[from, to)`: zooming there shows exactly these buckets
    /// launched in view.
    pub from: f64,
    pub to: f64,
    pub max_bytes: u64,
    pub total_bytes: u64,
    /// The largest bucket of the bin.
    pub largest: usize,
    pub colour: Rgb,
    /// The name of the largest bucket, for the largest columns of the lane.
    pub label: Option<TextMark>,
    pub title: String,
}

/// A split between two buckets (or, in dense views, every split of one bin).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitMark {
    pub lane: usize,
    pub x: f64,
    pub y0: f64,
    pub y1: f64,
    /// `None` when a grouped mark holds several reasons.
    pub reason: Option<Reason>,
    /// The decided collective (the first of the bucket after the split).
    pub node: Rc<str>,
    /// Bucket ids: the one holding the previous collective, and the one holding this one.
    pub before: Option<Rc<str>>,
    pub after: Option<Rc<str>>,
    /// The node between the members that stopped the bucket, when the reason is one.
    pub cause: Option<Rc<str>>,
    pub label: Option<TextMark>,
    /// When this split is named by another split's label (`capacity +2`): that split's index.
    pub labelled_by: Option<usize>,
    pub title: String,
    pub aria: String,
    /// Splits merged in this mark (1 unless grouped).
    pub count: usize,
    /// Marked by the options (grouped: any of its splits is).
    pub marked: bool,
    pub grouped: bool,
}

/// A skipped collective (or, in dense views, every skip of one bin).
#[derive(Clone, Debug, PartialEq)]
pub struct SkipMark {
    pub x: f64,
    pub y: f64,
    pub reason: Option<Reason>,
    pub node: Rc<str>,
    pub count: usize,
    pub grouped: bool,
    /// Marked by the options (grouped: any of its skips is).
    pub marked: bool,
    pub label: Option<TextMark>,
    pub labelled_by: Option<usize>,
    pub title: String,
    pub aria: String,
}

/// A collective the plan does not bucket (or, in dense views, every one launched in a bin),
/// from its launch to its completion.
#[derive(Clone, Debug, PartialEq)]
pub struct CommMark {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub row: usize,
    /// The launch node's name (the first one's, for a group).
    pub node: Rc<str>,
    pub role: Option<Rc<str>>,
    /// The graph range it spans (a group: all of its members').
    pub from: u32,
    pub to: u32,
    pub count: usize,
    pub grouped: bool,
    pub title: String,
    pub aria: String,
}

/// Height of a [`CommMark`].
pub const COMM_H: f64 = 8.0;
/// Rows the not-planned lane grows to; later marks share the last row.
pub const COMM_ROWS: usize = 4;

/// What a legend entry shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LegendShape {
    Bar(Rgb),
    Tick,
    Split,
    Skip,
    Column,
    Overflow,
    Comm,
    Exposed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LegendItem {
    pub shape: LegendShape,
    /// Left edge of the swatch; the text follows it.
    pub x: f64,
    pub y: f64,
    pub text: TextMark,
}

/// One axis tick: its pixel x and the graph position it marks.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisTick {
    pub x: f64,
    pub position: u64,
    pub label: TextMark,
}

/// Pixel geometry of the plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub plot_x0: f64,
    pub plot_x1: f64,
    pub plot_y0: f64,
    pub plot_y1: f64,
}

/// Everything the renderer draws, already in pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineScene {
    pub title: String,
    pub node_count: u32,
    pub viewport: Viewport,
    pub frame: Frame,
    pub lanes: Vec<LaneBox>,
    /// Title, range, lane names and notes, axis caption.
    pub texts: Vec<TextMark>,
    pub bars: Vec<BarMark>,
    pub ticks: Vec<TickMark>,
    pub overflow: Vec<OverflowMark>,
    /// Dense views only.
    pub columns: Vec<ColumnMark>,
    pub splits: Vec<SplitMark>,
    pub skips: Vec<SkipMark>,
    /// Collectives the plan does not bucket.
    pub comms: Vec<CommMark>,
    /// Where compute waits for communication (cost model).
    pub exposed: Vec<ExposedMark>,
    pub legend: Vec<LegendItem>,
    pub axis: Vec<AxisTick>,
    /// Whether lanes show columns instead of bars.
    pub dense: bool,
    /// The time axis it was laid out on (see [`SceneOptions::time`]), when it was.
    pub time: Option<Rc<[f64]>>,
    /// Buckets whose window meets the view (bars + overflow, or column counts + windows from
    /// outside).
    pub in_view: usize,
    /// Of those, the ones not drawn as bars: counted in overflow strips, columns, or lane
    /// notes (windows from outside a dense view).
    pub not_drawn: usize,
    /// Marks outside the viewport, not drawn.
    pub culled: usize,
}

impl TimelineScene {
    /// The graph position drawn at pixel `x` (the inverse of the layout's x mapping, on a time
    /// axis too).
    pub fn position_at(&self, x: f64) -> f64 {
        XMap::new(
            self.viewport,
            self.frame.plot_x0,
            self.frame.plot_x1,
            self.time.as_deref(),
            self.node_count,
        )
        .position(x)
    }

    /// Every text of the drawing, for checks that none overlaps another.
    pub fn all_texts(&self) -> impl Iterator<Item = &TextMark> {
        self.texts
            .iter()
            .chain(self.bars.iter().filter_map(|b| b.label.as_ref()))
            .chain(self.columns.iter().filter_map(|c| c.label.as_ref()))
            .chain(self.splits.iter().filter_map(|s| s.label.as_ref()))
            .chain(self.skips.iter().filter_map(|s| s.label.as_ref()))
            .chain(self.legend.iter().map(|l| &l.text))
            .chain(self.axis.iter().map(|a| &a.label))
    }
}

/// The smallest drawing width.
pub const MIN_WIDTH: u32 = 320;
/// Below this width lane names go above their lanes instead of in a left margin.
pub const WIDE: u32 = 900;
/// Rows a lane grows to before it aggregates.
pub const MAX_ROWS: usize = 20;
/// Past this many rows a lane's rows are compact.
pub const COMPACT_ROWS: usize = 12;
/// More buckets launched in view than this and lanes show columns instead of bars.
pub const MAX_BARS: usize = 400;
/// More split (or skip) marks in view than this and they merge per bin.
pub const MAX_MARKS: usize = 400;
/// Width of a column, and of a merged split or skip bin, in pixels.
pub const BIN: f64 = 4.0;
/// Height of the column area of a dense lane.
pub const COLUMN_H: f64 = 48.0;
/// Label lines above a lane's rows, and below the skip marks.
pub const LABEL_LINES: usize = 3;
/// Height of a label line.
pub const LINE_H: f64 = 14.0;
/// Font size of mark labels.
pub const LABEL_SIZE: f64 = 11.0;
/// Largest buckets named per dense lane.
pub const NAMED_COLUMNS: usize = 3;

const TITLE_SIZE: f64 = 15.0;
const RANGE_SIZE: f64 = 12.0;
const LANE_SIZE: f64 = 12.0;
const NOTE_SIZE: f64 = 11.0;
const AXIS_SIZE: f64 = 11.0;
const LEGEND_SIZE: f64 = 11.0;
const OVERFLOW_H: f64 = 12.0;

/// Row geometry: bar height, tick strip, gap.
#[derive(Clone, Copy, Debug)]
struct RowGeometry {
    bar: f64,
    tick: f64,
    gap: f64,
    font: f64,
}

impl RowGeometry {
    fn of(rows: usize) -> RowGeometry {
        if rows > COMPACT_ROWS {
            RowGeometry {
                bar: 13.0,
                tick: 4.0,
                gap: 2.0,
                font: 10.0,
            }
        } else {
            RowGeometry {
                bar: 16.0,
                tick: 5.0,
                gap: 3.0,
                font: LABEL_SIZE,
            }
        }
    }
    fn pitch(self) -> f64 {
        self.bar + self.tick + self.gap
    }
}

/// Short forms of reasons, for labels where the full one does not fit.
pub fn short_reason(reason: Reason) -> &'static str {
    match reason {
        Reason::UnsupportedOrAlreadyBucketed => "unsupported",
        Reason::PhaseMismatch => "phase",
        Reason::UnsupportedSignature => "signature",
        Reason::UnknownProcessGroup => "group?",
        Reason::GroupSizeMismatch => "group size",
        Reason::GroupMetadataMismatch => "group meta",
        Reason::MissingParameterIdentity => "param id",
        Reason::UnknownOrDynamicShape => "shape",
        Reason::UnsupportedDtype => "dtype",
        Reason::UnknownDevice => "device",
        Reason::InvalidDim0Layout => "layout",
        Reason::UnsupportedWaitUsers => "waits",
        Reason::NoConsumer => "no consumer",
        Reason::UnsupportedReduceOp => "reduce op",
        Reason::NonOutputRsConsumer => "consumer",
        Reason::OutsideModulePlan => "no plan",
        Reason::UnsupportedParallelMode => "mode",
        Reason::IncompatibleKey => "key",
        Reason::RepeatedParameterInstance => "repeat",
        Reason::Capacity => "cap",
        Reason::InputDistance => "input dist",
        Reason::ConsumerDistance => "use dist",
        Reason::DependencyConflict => "dependency",
        Reason::EffectOrStorageRelease => "effect",
        Reason::InterveningCollective => "collective",
        Reason::PhaseBoundary => "phase",
        Reason::Oversized => "oversized",
    }
}

/// Lays `input` out for `viewport` in a drawing `width` pixels wide.
pub fn build_scene(input: &TimelineInput, viewport: Viewport, width: u32) -> TimelineScene {
    build_scene_with(
        input,
        &SceneOptions {
            viewport,
            width,
            focus: None,
            exposed: Rc::from(Vec::new()),
            bucket_times: Rc::from(Vec::new()),
            time: None,
            marked: None,
        },
    )
}

/// A bucket in view, before layout.
#[derive(Clone, Copy, Debug)]
struct Visible {
    bucket: usize,
    lane: usize,
    /// Pixel extent of the window, clipped to the plot.
    a: f64,
    z: f64,
    /// Pixel extent of the window and the member launches: what the bar's row keeps free,
    /// so that its launch ticks never fall under another bar.
    ea: f64,
    ez: f64,
    /// The first member launch, when it is in view.
    anchor: Option<u32>,
}

/// Per lane, the result of packing bars into rows.
#[derive(Default)]
struct Packed {
    /// (visible, row).
    bars: Vec<(Visible, usize)>,
    rows: usize,
    overflow: Vec<Visible>,
    /// Row spans, for labels outside bars.
    spans: Vec<Vec<(f64, f64)>>,
}

/// Lays the input out.
pub fn build_scene_with(input: &TimelineInput, options: &SceneOptions) -> TimelineScene {
    let width = options.width.max(MIN_WIDTH);
    let wide = width >= WIDE;
    let w = width as f64;
    let vp = options.viewport.clamped(input.node_count);
    let plot_x0 = if wide { 172.0 } else { 10.0 };
    let plot_x1 = w - 12.0;
    let xmap = XMap::new(
        vp,
        plot_x0,
        plot_x1,
        options.time.as_deref(),
        input.node_count,
    );
    let time_axis = xmap.time.is_some();
    let px = |pos: f64| xmap.px(pos);
    // A launch is in view when the middle of its node is: a point, so that it lies in one
    // column exactly, and zooming to that column's range keeps it in view.
    let in_view = |node: u32| {
        let at = node as f64 + 0.5;
        at >= vp.x0 && at < vp.x1
    };
    let clip = |x: f64| x.clamp(plot_x0, plot_x1);

    // Lanes: every lane the plan has buckets in (stable across zoom), then the skips.
    let mut keys: BTreeSet<LaneKey> = input
        .buckets
        .iter()
        .map(|b| LaneKey::Buckets(b.lane))
        .collect();
    let has_skips = input.decisions.iter().any(|d| d.action == Action::Skip);
    if has_skips || (keys.is_empty() && input.unplanned.is_empty()) {
        keys.insert(LaneKey::Skipped);
    }
    if !input.unplanned.is_empty() {
        keys.insert(LaneKey::Unplanned);
    }
    if !options.exposed.is_empty() {
        keys.insert(LaneKey::Exposed);
    }
    let lane_keys: Vec<LaneKey> = keys.into_iter().collect();
    let lane_of = |lane: Lane| {
        lane_keys
            .iter()
            .position(|k| *k == LaneKey::Buckets(lane))
            .unwrap_or(0)
    };
    let skip_lane = lane_keys.iter().position(|k| *k == LaneKey::Skipped);

    // Buckets in view, anchored (first launch in view) or passing through.
    let mut culled = 0usize;
    let mut visible: Vec<Visible> = Vec::new();
    for (i, b) in input.buckets.iter().enumerate() {
        let (s, e) = b.window();
        let first = b.members.iter().map(|m| m.node).min().unwrap_or(s);
        let lo = s.min(first) as f64;
        let hi = (e.max(b.members.iter().map(|m| m.node).max().unwrap_or(e)) as f64) + 1.0;
        if hi <= vp.x0 || lo >= vp.x1 {
            culled += 1;
            continue;
        }
        let window_in_view = (e as f64) + 1.0 > vp.x0 && (s as f64) < vp.x1;
        let anchor = in_view(first).then_some(first);
        if !window_in_view && anchor.is_none() {
            culled += 1;
            continue;
        }
        visible.push(Visible {
            bucket: i,
            lane: lane_of(b.lane),
            a: clip(px(s as f64)),
            z: clip(px(e as f64 + 1.0)),
            ea: clip(px(lo)),
            ez: clip(px(hi)),
            anchor,
        });
    }
    let anchored = visible.iter().filter(|v| v.anchor.is_some()).count();
    let dense = anchored > MAX_BARS;
    let focus = options
        .focus
        .and_then(|f| visible.iter().find(|v| v.bucket == f).copied());

    // Bars: per lane, buckets launched in view first, then windows passing through; first fit
    // into rows; what does not fit is overflow. The focus keeps the row it would have, unless
    // it would not be drawn: then the lane is packed again with it first.
    let mut packed: Vec<Packed> = (0..lane_keys.len()).map(|_| Packed::default()).collect();
    if !dense {
        let pack_lanes = |focus_first: Option<usize>| {
            let mut order: Vec<&Visible> = visible.iter().collect();
            order.sort_by(|p, q| {
                let rank = |v: &Visible| {
                    if Some(v.bucket) == focus_first {
                        0
                    } else if v.anchor.is_some() {
                        1
                    } else {
                        2
                    }
                };
                rank(p)
                    .cmp(&rank(q))
                    .then(p.a.total_cmp(&q.a))
                    .then(q.z.total_cmp(&p.z))
            });
            let mut packed: Vec<Packed> = (0..lane_keys.len()).map(|_| Packed::default()).collect();
            for v in order {
                pack(&mut packed[v.lane], *v);
            }
            packed
        };
        packed = pack_lanes(None);
        if let Some(f) = focus {
            if packed[f.lane].overflow.iter().any(|v| v.bucket == f.bucket) {
                packed = pack_lanes(Some(f.bucket));
            }
        }
    } else if let Some(f) = focus {
        pack(&mut packed[f.lane], f);
    }

    // Splits and skips in view; dense sets merge per bin.
    let split_x = |d: &super::input::DecisionIn| {
        let prev = d.previous.unwrap_or(d.node);
        px((prev.min(d.node) as f64 + d.node.max(prev) as f64) / 2.0 + 0.5)
    };
    let inside = |x: f64| x >= plot_x0 - 0.5 && x <= plot_x1 + 0.5;
    let splits_in: Vec<(usize, f64)> = input
        .decisions
        .iter()
        .enumerate()
        .filter(|(_, d)| d.action == Action::Split)
        .map(|(i, d)| (i, split_x(d)))
        .collect();
    let splits_visible: Vec<(usize, f64)> = splits_in
        .iter()
        .copied()
        .filter(|(_, x)| inside(*x))
        .collect();
    culled += splits_in.len() - splits_visible.len();
    let skips_in: Vec<(usize, f64)> = input
        .decisions
        .iter()
        .enumerate()
        .filter(|(_, d)| d.action == Action::Skip)
        .map(|(i, d)| (i, px(d.node as f64 + 0.5)))
        .collect();
    let skips_visible: Vec<(usize, f64)> = skips_in
        .iter()
        .copied()
        .filter(|(_, x)| inside(*x))
        .collect();
    culled += skips_in.len() - skips_visible.len();

    // Columns of dense lanes (bins by first launch), before the labels: they name the
    // largest.
    struct Bin {
        count: usize,
        total: u64,
        max: u64,
        largest: usize,
        role: Option<Option<Rc<str>>>,
        mixed: bool,
    }
    let mut bins: Vec<std::collections::BTreeMap<usize, Bin>> =
        (0..lane_keys.len()).map(|_| Default::default()).collect();
    let mut passing = vec![0usize; lane_keys.len()];
    if dense {
        for v in &visible {
            let Some(anchor) = v.anchor else {
                passing[v.lane] += 1;
                continue;
            };
            let b = &input.buckets[v.bucket];
            let k = ((px(anchor as f64 + 0.5) - plot_x0) / BIN).floor().max(0.0) as usize;
            let bin = bins[v.lane].entry(k).or_insert(Bin {
                count: 0,
                total: 0,
                max: 0,
                largest: v.bucket,
                role: None,
                mixed: false,
            });
            bin.count += 1;
            bin.total = bin.total.saturating_add(b.size_bytes);
            if b.size_bytes > bin.max || bin.count == 1 {
                bin.max = b.size_bytes.max(bin.max);
                bin.largest = v.bucket;
            }
            let role = b.role().cloned();
            match &bin.role {
                None => bin.role = Some(role),
                Some(r) if *r != role => bin.mixed = true,
                _ => {}
            }
        }
    }

    // Labels of splits and column names, per lane, in label lines above the rows.
    let mut lane_bands: Vec<Bands> = (0..lane_keys.len())
        .map(|_| Bands::new(LABEL_LINES))
        .collect();
    let plot_span = (plot_x0, plot_x1);
    // (lane, decision, x, label line, text, anchor) for single splits; grouped bins.
    let dense_splits = splits_visible.len() > MAX_MARKS;
    let marked = |i: usize| options.marked.as_ref().is_some_and(|m| m.decision(i));
    let mut splits: Vec<SplitMark> = Vec::new();
    let mut split_labels: Vec<Option<Placed>> = Vec::new();
    if dense_splits {
        let mut merged: std::collections::BTreeMap<(usize, i64), SplitMark> = Default::default();
        for &(i, x) in &splits_visible {
            let d = &input.decisions[i];
            let lane = lane_of(d.lane);
            let k = ((x - plot_x0) / BIN).floor() as i64;
            let m = merged.entry((lane, k)).or_insert_with(|| SplitMark {
                lane,
                x: plot_x0 + (k as f64 + 0.5) * BIN,
                y0: 0.0,
                y1: 0.0,
                reason: Some(d.reason),
                node: d.name.clone(),
                before: None,
                after: None,
                cause: None,
                label: None,
                labelled_by: None,
                title: String::new(),
                aria: String::new(),
                count: 0,
                grouped: true,
                marked: false,
            });
            m.count += 1;
            m.marked |= marked(i);
            if m.reason != Some(d.reason) {
                m.reason = None;
            }
        }
        for (_, mut m) in merged {
            let what = m.reason.map_or("mixed reasons", Reason::as_str);
            m.title = format!("{} splits here ({what}); zoom in to see each", m.count);
            m.aria = format!("{} splits ({what}); press Enter to zoom in", m.count);
            splits.push(m);
            split_labels.push(None);
        }
    } else {
        for &(i, x) in &splits_visible {
            let d = &input.decisions[i];
            let lane = lane_of(d.lane);
            let after = input.bucket_of(d.node).map(|b| input.buckets[b].id.clone());
            let before = d
                .previous
                .and_then(|p| input.bucket_of(p))
                .map(|b| input.buckets[b].id.clone());
            let cause = d.cause_name.clone();
            let title = split_title(d, before.as_deref(), after.as_deref());
            splits.push(SplitMark {
                lane,
                x,
                y0: 0.0,
                y1: 0.0,
                reason: Some(d.reason),
                node: d.name.clone(),
                before,
                after,
                cause,
                label: None,
                labelled_by: None,
                aria: format!(
                    "split ({}) before {}; press Enter for details",
                    d.reason.as_str(),
                    d.name
                ),
                title,
                count: 1,
                grouped: false,
                marked: marked(i),
            });
        }
        split_labels = place_rare_first(
            &splits,
            |m| m.lane,
            |m| (m.x, m.reason),
            |m, texts| {
                place_label(
                    &mut lane_bands[m.lane],
                    m.x,
                    texts,
                    plot_span,
                    LABEL_SIZE,
                    true,
                )
            },
        );
        aggregate_unlabelled(&mut splits, &mut split_labels, |s| s.lane, |s| s.x);
    }

    // Column names: the largest buckets of each dense lane.
    let mut column_labels: Vec<Vec<(usize, Placed)>> = vec![Vec::new(); lane_keys.len()];
    if dense {
        for (lane, lane_bins) in bins.iter().enumerate() {
            let mut by_size: Vec<(usize, &Bin)> = lane_bins.iter().map(|(k, b)| (*k, b)).collect();
            by_size.sort_by(|p, q| q.1.max.cmp(&p.1.max).then(p.0.cmp(&q.0)));
            for (k, bin) in by_size.into_iter().take(NAMED_COLUMNS) {
                let b = &input.buckets[bin.largest];
                let x = plot_x0 + (k as f64 + 0.5) * BIN;
                let bytes = human_bytes(b.size_bytes);
                let full = format!("{} {bytes}", b.short_id());
                if let Some(placed) = place_label(
                    &mut lane_bands[lane],
                    x,
                    &[full.as_str(), bytes.as_str()],
                    plot_span,
                    LABEL_SIZE,
                    false,
                ) {
                    column_labels[lane].push((k, placed));
                }
            }
        }
    }

    // Skip labels, below the skip marks.
    let mut skip_bands = Bands::new(LABEL_LINES);
    let dense_skips = skips_visible.len() > MAX_MARKS;
    let mut skips: Vec<SkipMark> = Vec::new();
    let mut skip_labels: Vec<Option<Placed>> = Vec::new();
    if dense_skips {
        let mut merged: std::collections::BTreeMap<i64, SkipMark> = Default::default();
        for &(i, x) in &skips_visible {
            let d = &input.decisions[i];
            let k = ((x - plot_x0) / BIN).floor() as i64;
            let m = merged.entry(k).or_insert_with(|| SkipMark {
                x: plot_x0 + (k as f64 + 0.5) * BIN,
                y: 0.0,
                reason: Some(d.reason),
                node: d.name.clone(),
                count: 0,
                grouped: true,
                marked: false,
                label: None,
                labelled_by: None,
                title: String::new(),
                aria: String::new(),
            });
            m.count += 1;
            m.marked |= marked(i);
            if m.reason != Some(d.reason) {
                m.reason = None;
            }
        }
        for (_, mut m) in merged {
            let what = m.reason.map_or("mixed reasons", Reason::as_str);
            m.title = format!(
                "{} skipped collectives here ({what}); zoom in to see each",
                m.count
            );
            m.aria = format!("{} skipped ({what}); press Enter to zoom in", m.count);
            skips.push(m);
            skip_labels.push(None);
        }
    } else {
        for &(i, x) in &skips_visible {
            let d = &input.decisions[i];
            skips.push(SkipMark {
                x,
                y: 0.0,
                reason: Some(d.reason),
                node: d.name.clone(),
                count: 1,
                grouped: false,
                marked: marked(i),
                label: None,
                labelled_by: None,
                title: format!(
                    "skipped: {}\n{} (#{})\n{}",
                    d.reason.as_str(),
                    d.name,
                    d.node,
                    d.reason.explain()
                ),
                aria: format!(
                    "skipped ({}): {}; press Enter for details",
                    d.reason.as_str(),
                    d.name
                ),
            });
        }
        skip_labels = place_rare_first(
            &skips,
            |_| 0,
            |m| (m.x, m.reason),
            |m, texts| place_label(&mut skip_bands, m.x, texts, plot_span, LABEL_SIZE, true),
        );
        aggregate_unlabelled(&mut skips, &mut skip_labels, |_| 0, |s| s.x);
    }

    // Collectives the plan does not bucket: launch to completion, packed into a few rows;
    // dense sets merge per bin of their launch.
    let comms_in: Vec<usize> = input
        .unplanned
        .iter()
        .enumerate()
        .filter(|(_, u)| {
            let (a, b) = u.span();
            (b as f64) + 1.0 > vp.x0 && (a as f64) < vp.x1
        })
        .map(|(i, _)| i)
        .collect();
    culled += input.unplanned.len() - comms_in.len();
    let mut comms: Vec<CommMark> = Vec::new();
    if comms_in.len() > MAX_MARKS {
        let mut merged: std::collections::BTreeMap<i64, CommMark> = Default::default();
        for &i in &comms_in {
            let u = &input.unplanned[i];
            let (a, b) = u.span();
            let x = clip(px(u.node as f64 + 0.5));
            let k = ((x - plot_x0) / BIN).floor() as i64;
            let m = merged.entry(k).or_insert_with(|| CommMark {
                x0: plot_x0 + k as f64 * BIN,
                x1: plot_x0 + (k as f64 + 1.0) * BIN,
                y: 0.0,
                row: 0,
                node: u.name.clone(),
                role: u.role.clone(),
                from: a,
                to: b,
                count: 0,
                grouped: true,
                title: String::new(),
                aria: String::new(),
            });
            m.count += 1;
            m.from = m.from.min(a);
            m.to = m.to.max(b);
            if m.role != u.role {
                m.role = None;
            }
        }
        for (_, mut m) in merged {
            m.title = format!(
                "{} collectives not planned, launched here (#{}–#{}); zoom in to see each",
                m.count, m.from, m.to
            );
            m.aria = format!(
                "{} collectives not planned; press Enter to zoom in",
                m.count
            );
            comms.push(m);
        }
    } else {
        let mut row_end: Vec<f64> = Vec::new();
        for &i in &comms_in {
            let u = &input.unplanned[i];
            let (a, b) = u.span();
            let (mut x0, mut x1) = (clip(px(a as f64)), clip(px(b as f64 + 1.0)));
            if x1 - x0 < 3.0 {
                let c = ((x0 + x1) / 2.0).clamp(plot_x0 + 1.5, plot_x1 - 1.5);
                x0 = c - 1.5;
                x1 = c + 1.5;
            }
            let row = match row_end.iter().position(|&end| x0 >= end + 2.0) {
                Some(r) => r,
                None if row_end.len() < COMM_ROWS => {
                    row_end.push(f64::NEG_INFINITY);
                    row_end.len() - 1
                }
                None => COMM_ROWS - 1,
            };
            row_end[row] = row_end[row].max(x1);
            let role = u
                .role
                .as_deref()
                .unwrap_or(super::collectives::UNCLASSIFIED);
            let completes = match u.completion {
                Some(c) => format!("completes at #{c}"),
                None => "no completion node in the graph".to_string(),
            };
            comms.push(CommMark {
                x0,
                x1,
                y: 0.0,
                row,
                node: u.name.clone(),
                role: u.role.clone(),
                from: a,
                to: b,
                count: 1,
                grouped: false,
                title: format!(
                    "not planned: {} ({} {})\n{} (#{}), {completes}\ngroup {} · {} · {role}",
                    u.lane.label(),
                    u.api.as_str(),
                    u.lane.transport_label(),
                    u.name,
                    u.node,
                    u.group.as_deref().unwrap_or(crate::identity::UNKNOWN_GROUP),
                    u.lane.phase().as_str(),
                ),
                aria: format!(
                    "not planned ({}, {}): {}; press Enter for details",
                    u.lane.label(),
                    u.api.as_str(),
                    u.name
                ),
            });
        }
    }

    // Exposed communication: a mark at the node whose compute waits; dense sets merge per bin.
    let exposed_in: Vec<&ExposedIn> = options
        .exposed
        .iter()
        .filter(|e| in_view(e.before.min(input.node_count.saturating_sub(1))))
        .collect();
    culled += options.exposed.len() - exposed_in.len();
    let exposed_total: f64 = exposed_in.iter().map(|e| e.us).sum();
    let mut exposed: Vec<ExposedMark> = Vec::new();
    for e in &exposed_in {
        let x = clip(px(e.before as f64));
        // On a time axis the wait is a stretch that ends where its node starts.
        let (x0, x1) = if time_axis && e.us * xmap.scale >= 3.0 {
            (clip(x - e.us * xmap.scale), x)
        } else {
            ((x - 1.5).max(plot_x0), (x + 1.5).min(plot_x1))
        };
        if exposed_in.len() > MAX_MARKS {
            let k = ((x - plot_x0) / BIN).floor();
            let bx0 = plot_x0 + k * BIN;
            if let Some(m) = exposed.last_mut().filter(|m| m.x0 == bx0) {
                m.count += 1;
                m.us += e.us;
                continue;
            }
            exposed.push(ExposedMark {
                x0: bx0,
                x1: bx0 + BIN,
                y: 0.0,
                node: e.name.clone(),
                us: e.us,
                count: 1,
                title: String::new(),
                aria: String::new(),
            });
        } else {
            exposed.push(ExposedMark {
                x0,
                x1,
                y: 0.0,
                node: e.name.clone(),
                us: e.us,
                count: 1,
                title: format!(
                    "exposed communication (model estimate): compute waits {} before {} (#{}) for {}",
                    crate::cost::report::us(e.us),
                    e.name,
                    e.before,
                    e.waits_for
                ),
                aria: format!(
                    "compute waits {} before {} for {}; press Enter for details",
                    crate::cost::report::us(e.us),
                    e.name,
                    e.waits_for
                ),
            });
        }
    }
    for m in exposed.iter_mut().filter(|m| m.title.is_empty()) {
        m.title = format!(
            "{} exposed stretches here, {} in all (model estimate); zoom in to see each",
            m.count,
            crate::cost::report::us(m.us)
        );
        m.aria = format!("{} exposed stretches; press Enter for details", m.count);
    }

    // Vertical layout.
    let mut texts: Vec<TextMark> = Vec::new();
    let title = if input.title.is_empty() {
        format!("bucket timeline · {} nodes", input.node_count)
    } else {
        format!("{} · {} nodes", input.title, input.node_count)
    };
    let range = if time_axis {
        format!(
            "estimated {}–{} · graph positions {:.0}–{:.0}",
            crate::cost::report::us(xmap.unit(vp.x0)),
            crate::cost::report::us(xmap.unit(vp.x1)),
            vp.x0,
            vp.x1
        )
    } else {
        format!("graph positions {:.0}–{:.0}", vp.x0, vp.x1)
    };
    let range_w = text::width(&range, RANGE_SIZE);
    let title_room = w - 16.0 - range_w - 16.0;
    let one_line = text::width(&title, TITLE_SIZE) <= title_room;
    let title_text = text::fit(
        &title,
        TITLE_SIZE,
        if one_line { title_room } else { w - 16.0 },
    )
    .unwrap_or_default();
    texts.push(TextMark {
        x: 8.0,
        y: 7.0,
        text: title_text,
        size: TITLE_SIZE,
        colour: INK,
        anchor: Anchor::Start,
        bold: true,
    });
    let mut y = 7.0 + TITLE_SIZE + 6.0;
    if one_line {
        texts.push(TextMark {
            x: w - 8.0,
            y: 8.0,
            text: range,
            size: RANGE_SIZE,
            colour: INK,
            anchor: Anchor::End,
            bold: false,
        });
    } else {
        texts.push(TextMark {
            x: 8.0,
            y,
            text: text::fit(&range, RANGE_SIZE, w - 16.0).unwrap_or_default(),
            size: RANGE_SIZE,
            colour: INK,
            anchor: Anchor::Start,
            bold: false,
        });
        y += RANGE_SIZE + 6.0;
    }
    let plot_y0 = y;

    let mut lanes: Vec<LaneBox> = Vec::new();
    let mut bars: Vec<BarMark> = Vec::new();
    let mut ticks: Vec<TickMark> = Vec::new();
    let mut overflow: Vec<OverflowMark> = Vec::new();
    let mut columns: Vec<ColumnMark> = Vec::new();
    let mut in_view_count = 0usize;
    for (li, key) in lane_keys.iter().enumerate() {
        let lane_y = y;
        // Lane name and note: in the left margin when wide, else on a line of their own.
        let (name, note) = match key {
            LaneKey::Skipped => (key.label(), format!("{} in view", skips_visible.len())),
            LaneKey::Exposed => (
                key.label(),
                format!(
                    "{} in view, {}",
                    exposed_in.len(),
                    crate::cost::report::us(exposed_total)
                ),
            ),
            LaneKey::Unplanned => (
                key.label(),
                format!("{} in view (untagged or c10d)", comms_in.len()),
            ),
            LaneKey::Buckets(_) if dense => {
                let n: usize = bins[li].values().map(|b| b.count).sum();
                let max = bins[li].values().map(|b| b.max).max().unwrap_or(0);
                in_view_count += n + passing[li];
                let mut note = format!("{n} launched in view");
                if n > 0 {
                    note.push_str(&format!(", largest {}", human_bytes(max)));
                }
                if passing[li] > 0 {
                    note.push_str(&format!("; {} windows from outside", passing[li]));
                }
                (key.label(), note)
            }
            LaneKey::Buckets(_) => {
                let p = &packed[li];
                in_view_count += p.bars.len() + p.overflow.len();
                let mut note = format!(
                    "{} in view",
                    plural(p.bars.len() + p.overflow.len(), "bucket")
                );
                if !p.overflow.is_empty() {
                    note = format!(
                        "{} in view, {} not drawn",
                        p.bars.len() + p.overflow.len(),
                        p.overflow.len()
                    );
                }
                (key.label(), note)
            }
        };
        let mut note_height = 0.0;
        if wide {
            texts.push(TextMark {
                x: 8.0,
                y: lane_y + 6.0,
                text: text::fit(&name, LANE_SIZE, plot_x0 - 16.0).unwrap_or_default(),
                size: LANE_SIZE,
                colour: INK,
                anchor: Anchor::Start,
                bold: true,
            });
            let note_lines = text::wrap(&note, NOTE_SIZE, plot_x0 - 16.0, 3);
            note_height = note_lines.len() as f64 * (NOTE_SIZE + 3.0);
            for (i, t) in note_lines.into_iter().enumerate() {
                texts.push(TextMark {
                    x: 8.0,
                    y: lane_y + 6.0 + LANE_SIZE + 4.0 + i as f64 * (NOTE_SIZE + 3.0),
                    text: t,
                    size: NOTE_SIZE,
                    colour: MUTED,
                    anchor: Anchor::Start,
                    bold: false,
                });
            }
            y += 4.0;
        } else {
            let name_text = text::fit(&name, LANE_SIZE, w - 20.0).unwrap_or_default();
            let name_w = text::width(&name_text, LANE_SIZE);
            texts.push(TextMark {
                x: plot_x0,
                y: lane_y + 5.0,
                text: name_text,
                size: LANE_SIZE,
                colour: INK,
                anchor: Anchor::Start,
                bold: true,
            });
            if let Some(t) = text::fit(
                &format!("· {note}"),
                NOTE_SIZE,
                plot_x1 - plot_x0 - name_w - 8.0,
            ) {
                texts.push(TextMark {
                    x: plot_x0 + name_w + 6.0,
                    y: lane_y + 6.0,
                    text: t,
                    size: NOTE_SIZE,
                    colour: MUTED,
                    anchor: Anchor::Start,
                    bold: false,
                });
            }
            y += 5.0 + LANE_SIZE + 4.0;
        }
        // A wide lane is at least as tall as its name and note (the mark lanes below).
        let min_height = if wide {
            6.0 + LANE_SIZE + 4.0 + note_height + 6.0
        } else {
            0.0
        };
        match key {
            LaneKey::Exposed => {
                let rows_y = y + 4.0;
                for m in exposed.iter_mut() {
                    m.y = rows_y;
                }
                let rows_h = EXPOSED_H;
                y = rows_y + rows_h + 6.0;
                let height = (y - lane_y).max(min_height);
                y = lane_y + height;
                lanes.push(LaneBox {
                    key: *key,
                    y: lane_y,
                    height,
                    rows_y,
                    rows_h,
                    rows: 1,
                    shaded: li % 2 == 0,
                });
            }
            LaneKey::Unplanned => {
                let rows_y = y + 4.0;
                let rows = comms.iter().map(|m| m.row + 1).max().unwrap_or(1);
                let pitch = COMM_H + 3.0;
                let rows_h = rows as f64 * pitch;
                for m in comms.iter_mut() {
                    m.y = rows_y + m.row as f64 * pitch;
                }
                y = rows_y + rows_h + 6.0;
                let height = (y - lane_y).max(min_height);
                y = lane_y + height;
                lanes.push(LaneBox {
                    key: *key,
                    y: lane_y,
                    height,
                    rows_y,
                    rows_h,
                    rows,
                    shaded: li % 2 == 0,
                });
            }
            LaneKey::Skipped => {
                let rows_y = y;
                let mark_y = rows_y + 8.0;
                let lines = skip_bands.used();
                let labels_y = rows_y + 17.0;
                let rows_h = 17.0 + lines as f64 * LINE_H + 3.0;
                for (m, placed) in skips.iter_mut().zip(&skip_labels) {
                    m.y = mark_y;
                    if let Some(p) = placed {
                        m.label = Some(p.mark(labels_y + p.line as f64 * LINE_H, SKIP));
                    }
                }
                y = rows_y + rows_h;
                let height = (y - lane_y).max(min_height);
                y = lane_y + height;
                lanes.push(LaneBox {
                    key: *key,
                    y: lane_y,
                    height,
                    rows_y,
                    rows_h,
                    rows: 1,
                    shaded: li % 2 == 0,
                });
            }
            LaneKey::Buckets(_) => {
                let lines = lane_bands[li].used();
                let band_y = y;
                // Line 0 is the one nearest the rows.
                let line_y = |line: usize| {
                    let top = lines.saturating_sub(1);
                    band_y + top.saturating_sub(line) as f64 * LINE_H
                };
                y += lines as f64 * LINE_H + 2.0;
                let rows_y = y;
                let p = &packed[li];
                let geometry = RowGeometry::of(p.rows);
                let focus_rows = if dense { p.rows } else { 0 };
                let rows_h = if dense {
                    focus_rows as f64 * geometry.pitch() + COLUMN_H
                } else {
                    p.rows.max(1) as f64 * geometry.pitch()
                };
                let row_y = |row: usize| rows_y + row as f64 * geometry.pitch();
                // Bars and ticks.
                for &(v, row) in &p.bars {
                    let b = &input.buckets[v.bucket];
                    let (mut x0, mut x1) = (v.a, v.z);
                    if x1 - x0 < 3.0 {
                        let c = ((x0 + x1) / 2.0).clamp(plot_x0 + 1.5, plot_x1 - 1.5);
                        x0 = c - 1.5;
                        x1 = c + 1.5;
                    }
                    let by = row_y(row);
                    let role = b.role().cloned();
                    let colour = role_colour(role.as_deref());
                    let singleton = input.singletons.get(v.bucket).copied().flatten();
                    let label = bar_label(
                        b,
                        singleton,
                        x0,
                        x1,
                        by,
                        geometry,
                        colour,
                        &p.spans[row],
                        plot_x1,
                    );
                    for m in &b.members {
                        if in_view(m.node) {
                            let x = px(m.node as f64 + 0.5).round();
                            match ticks.last_mut() {
                                Some(t) if t.x == x && t.y == by + geometry.bar + 1.0 => {
                                    t.count += 1
                                }
                                _ => ticks.push(TickMark {
                                    x,
                                    y: by + geometry.bar + 1.0,
                                    h: geometry.tick,
                                    count: 1,
                                }),
                            }
                        }
                    }
                    let (s, e) = b.window();
                    bars.push(BarMark {
                        bucket: v.bucket,
                        bucket_id: b.id.clone(),
                        lane: li,
                        row,
                        x0,
                        x1,
                        y: by,
                        h: geometry.bar,
                        colour,
                        label,
                        title: match options.bucket_times.get(v.bucket) {
                            Some((us, algo)) => format!(
                                "{}\nestimated {} ({}; model estimate)",
                                bucket_title(b, singleton, role.as_deref()),
                                crate::cost::report::us(*us),
                                algo.unwrap_or("no time: the model cannot time it")
                            ),
                            None => bucket_title(b, singleton, role.as_deref()),
                        },
                        aria: bucket_aria(b, singleton, role.as_deref()),
                        singleton,
                        marked: options.marked.as_ref().is_some_and(|m| m.bucket(v.bucket)),
                        role,
                        anchored: v.anchor.is_some(),
                        start: s,
                        end: e,
                    });
                }
                // Columns.
                if dense {
                    let top = rows_y + focus_rows as f64 * geometry.pitch();
                    let lane_max = bins[li].values().map(|b| b.total).max().unwrap_or(0).max(1);
                    for (k, bin) in &bins[li] {
                        let x0 = plot_x0 + *k as f64 * BIN;
                        let x1 = (x0 + BIN - 1.0).min(plot_x1);
                        let h = (COLUMN_H - 4.0) * bin.total as f64 / lane_max as f64;
                        let h = h.max(2.0);
                        let from = xmap.position(x0);
                        let to = xmap.position(plot_x0 + (*k as f64 + 1.0) * BIN);
                        let largest = &input.buckets[bin.largest];
                        let colour = if bin.mixed {
                            palette::UNCLASSIFIED
                        } else {
                            role_colour(bin.role.clone().flatten().as_deref())
                        };
                        let label = column_labels[li]
                            .iter()
                            .find(|c| c.0 == *k)
                            .map(|(_, p)| p.mark(line_y(p.line), INK));
                        columns.push(ColumnMark {
                            lane: li,
                            x0,
                            x1,
                            y: top + COLUMN_H - h,
                            h,
                            count: bin.count,
                            from,
                            to,
                            max_bytes: bin.max,
                            total_bytes: bin.total,
                            largest: bin.largest,
                            colour,
                            label,
                            title: format!(
                                "{} bucket(s) launch at graph positions {}–{}, {} in all (the column's height)\nlargest: {} ({})\nclick to zoom in",
                                bin.count,
                                super::svg::Fixed(from, 0),
                                super::svg::Fixed(to, 0),
                                human_bytes(bin.total),
                                largest.short_id(),
                                human_bytes(bin.max)
                            ),
                        });
                    }
                }
                let mut rows_h = rows_h;
                // Overflow: windows not drawn, counted per run of bins.
                if !p.overflow.is_empty() {
                    let oy = rows_y + rows_h + 1.0;
                    let nbins = ((plot_x1 - plot_x0) / BIN).ceil() as usize + 1;
                    let mut diff = vec![0i64; nbins + 1];
                    for v in &p.overflow {
                        let first =
                            (((v.a - plot_x0) / BIN).floor().max(0.0) as usize).min(nbins - 1);
                        let last = (((v.z - plot_x0) / BIN).ceil().max(1.0) as usize - 1)
                            .clamp(first, nbins - 1);
                        diff[first] += 1;
                        diff[last + 1] -= 1;
                    }
                    let mut run = 0i64;
                    let mut current: Option<(usize, i64)> = None;
                    let mut runs: Vec<(usize, usize, i64)> = Vec::new();
                    for (k, d) in diff.iter().take(nbins).enumerate() {
                        run += d;
                        match current {
                            Some((start, c)) if c == run => {
                                let _ = start;
                            }
                            Some((start, c)) => {
                                if c > 0 {
                                    runs.push((start, k, c));
                                }
                                current = Some((k, run));
                            }
                            None => current = Some((k, run)),
                        }
                    }
                    if let Some((start, c)) = current {
                        if c > 0 {
                            runs.push((start, nbins, c));
                        }
                    }
                    let names: Vec<&str> = p
                        .overflow
                        .iter()
                        .take(8)
                        .map(|v| input.buckets[v.bucket].short_id())
                        .collect();
                    for (k0, k1, count) in runs {
                        let x0 = plot_x0 + k0 as f64 * BIN;
                        let x1 = (plot_x0 + k1 as f64 * BIN).min(plot_x1);
                        let from = xmap.position(x0);
                        let to = xmap.position(x1);
                        overflow.push(OverflowMark {
                            lane: li,
                            x0,
                            x1,
                            y: oy,
                            h: OVERFLOW_H - 3.0,
                            count: count as usize,
                            from,
                            to,
                            title: format!(
                                "{count} more bucket window(s) cover graph positions {from:.0}–{to:.0}; the lane is full ({MAX_ROWS} rows), so they are counted here: select one in the table to draw it, or zoom in\n(this lane: {}{})",
                                names.join(", "),
                                if p.overflow.len() > names.len() { ", …" } else { "" }
                            ),
                        });
                    }
                    rows_h += OVERFLOW_H;
                }
                // Split labels and lines.
                for (m, placed) in splits.iter_mut().zip(&split_labels) {
                    if m.lane != li {
                        continue;
                    }
                    m.y0 = rows_y - 3.0;
                    m.y1 = rows_y + rows_h;
                    if let Some(p) = placed {
                        m.label = Some(p.mark(line_y(p.line), SPLIT));
                    }
                }
                y = rows_y + rows_h + 6.0;
                let min_h = if wide {
                    6.0 + LANE_SIZE + 4.0 + NOTE_SIZE + 8.0
                } else {
                    0.0
                };
                let height = (y - lane_y).max(min_h);
                y = lane_y + height;
                lanes.push(LaneBox {
                    key: *key,
                    y: lane_y,
                    height,
                    rows_y,
                    rows_h,
                    rows: p.rows,
                    shaded: li % 2 == 0,
                });
            }
        }
    }
    let plot_y1 = y;

    // Axis ticks at a 1-2-5 step giving about one tick per 90 px (of positions, or of
    // microseconds on a time axis).
    let (u0, u1) = (xmap.unit(vp.x0), xmap.unit(vp.x1));
    let span = u1 - u0;
    let want = ((plot_x1 - plot_x0) / 90.0).max(1.0);
    let raw = span / want;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let step = if time_axis { step } else { step.max(1.0) };
    let mut axis = Vec::new();
    let mut t = (u0 / step).ceil() * step;
    while t <= u1 + 1e-9 * step.max(1.0) && step > 0.0 {
        let x = plot_x0 + (t - u0) * xmap.scale;
        let label = if time_axis {
            crate::cost::report::us(t)
        } else {
            format!("{}", t as u64)
        };
        let lw = text::width(&label, AXIS_SIZE);
        let lx = x.clamp(lw / 2.0 + 2.0, w - lw / 2.0 - 2.0);
        axis.push(AxisTick {
            x,
            position: if time_axis {
                xmap.position(x) as u64
            } else {
                t as u64
            },
            label: TextMark {
                x: lx,
                y: plot_y1 + 7.0,
                text: label,
                size: AXIS_SIZE,
                colour: INK,
                anchor: Anchor::Middle,
                bold: false,
            },
        });
        t += step;
    }
    texts.push(TextMark {
        x: plot_x1,
        y: plot_y1 + 7.0 + AXIS_SIZE + 5.0,
        text: if time_axis {
            "estimated time in the planned step (model estimate)".into()
        } else {
            "graph position (node index)".into()
        },
        size: NOTE_SIZE,
        colour: MUTED,
        anchor: Anchor::End,
        bold: false,
    });
    let mut y = plot_y1 + 7.0 + AXIS_SIZE + 5.0 + NOTE_SIZE + 12.0;

    // Legend: what is drawn, wrapped to the width.
    let mut entries: Vec<(LegendShape, String)> = Vec::new();
    let mut roles: BTreeSet<Option<Rc<str>>> = BTreeSet::new();
    for b in &bars {
        roles.insert(b.role.clone());
    }
    if dense {
        for b in &input.buckets {
            roles.insert(b.role().cloned());
        }
    }
    for r in roles {
        entries.push((
            LegendShape::Bar(role_colour(r.as_deref())),
            r.as_deref().unwrap_or("unclassified or mixed").to_string(),
        ));
    }
    if !bars.is_empty() {
        entries.push((
            LegendShape::Tick,
            "member launch (where the graph launches it now; may lie outside the window)".into(),
        ));
    }
    if dense {
        entries.push((
            LegendShape::Column,
            "buckets launched in a bin; height: their bytes".into(),
        ));
    }
    if !overflow.is_empty() {
        entries.push((
            LegendShape::Overflow,
            "windows not drawn (the lane is full), counted".into(),
        ));
    }
    entries.push((LegendShape::Split, "split (reason)".into()));
    if skip_lane.is_some() {
        entries.push((LegendShape::Skip, "skipped (reason)".into()));
    }
    if !options.exposed.is_empty() {
        entries.push((
            LegendShape::Exposed,
            "compute waits for communication (model estimate)".into(),
        ));
    }
    if !input.unplanned.is_empty() {
        entries.push((LegendShape::Comm, "not planned: launch → completion".into()));
    }
    let mut legend = Vec::new();
    let mut x = 8.0;
    for (shape, label) in entries {
        let text_w = text::width(&label, LEGEND_SIZE);
        let item_w = 20.0 + text_w + 18.0;
        if x > 8.0 && x + item_w > w - 8.0 {
            x = 8.0;
            y += 18.0;
        }
        let text = text::fit(&label, LEGEND_SIZE, w - 8.0 - x - 20.0).unwrap_or_default();
        let used = 20.0 + text::width(&text, LEGEND_SIZE) + 18.0;
        legend.push(LegendItem {
            shape,
            x,
            y,
            text: TextMark {
                x: x + 20.0,
                y: y - LEGEND_SIZE / 2.0,
                text,
                size: LEGEND_SIZE,
                colour: INK,
                anchor: Anchor::Start,
                bold: false,
            },
        });
        x += used;
    }
    let height = (y + 16.0).ceil() as u32;

    let not_drawn = in_view_count.saturating_sub(bars.len());
    TimelineScene {
        title: input.title.clone(),
        node_count: input.node_count,
        viewport: vp,
        frame: Frame {
            width,
            height,
            plot_x0,
            plot_x1,
            plot_y0,
            plot_y1,
        },
        lanes,
        texts,
        bars,
        ticks,
        overflow,
        columns,
        splits,
        skips,
        comms,
        exposed,
        legend,
        axis,
        dense,
        time: time_axis.then(|| options.time.clone()).flatten(),
        in_view: in_view_count,
        not_drawn,
        culled,
    }
}

/// Puts `v` in the first row where its extent (plus a gap) is free; a new row while the lane
/// has fewer than [`MAX_ROWS`]; else overflow.
fn pack(p: &mut Packed, v: Visible) {
    let (a, z) = (v.ea.min(v.a - 1.5), v.ez.max(v.z).max(v.a + 3.0));
    let row = (0..p.rows).find(|&r| {
        p.spans[r]
            .iter()
            .all(|&(s, e)| z + 2.0 <= s || a >= e + 2.0)
    });
    let row = match row {
        Some(r) => r,
        None if p.rows < MAX_ROWS => {
            p.rows += 1;
            p.spans.push(Vec::new());
            p.rows - 1
        }
        None => {
            p.overflow.push(v);
            return;
        }
    };
    let spans = &mut p.spans[row];
    let at = spans.partition_point(|s| s.0 < a);
    spans.insert(at, (a, z));
    p.bars.push((v, row));
}

/// A label placed on a line of a band, before the band's position is known.
#[derive(Clone, Debug)]
struct Placed {
    line: usize,
    text: String,
    anchor: Anchor,
    x: f64,
}

impl Placed {
    fn mark(&self, y: f64, colour: Rgb) -> TextMark {
        TextMark {
            x: self.x,
            y,
            text: self.text.clone(),
            size: LABEL_SIZE,
            colour,
            anchor: self.anchor,
            bold: false,
        }
    }
}

/// Places a label for a mark at `x`: the first of `texts` that fits, right of the mark or
/// else left of it, on the first free line. With
/// `room_for_count`, room is kept for a `+N` suffix (marks aggregated into this label).
fn place_label(
    bands: &mut Bands,
    x: f64,
    texts: &[&str],
    (plot_x0, plot_x1): (f64, f64),
    size: f64,
    room_for_count: bool,
) -> Option<Placed> {
    let suffix = if room_for_count {
        text::width(" +99", size)
    } else {
        0.0
    };
    for t in texts {
        let tw = text::width(t, size) + suffix + SLACK;
        let right = (x + 3.0, x + 3.0 + tw);
        let left = (x - 3.0 - tw, x - 3.0);
        for line in 0..LABEL_LINES {
            if right.1 <= plot_x1 && bands.free(line, right.0, right.1) {
                bands.take(line, right.0, right.1);
                return Some(Placed {
                    line,
                    text: t.to_string(),
                    anchor: Anchor::Start,
                    x: right.0,
                });
            }
            if left.0 >= plot_x0 && bands.free(line, left.0, left.1) {
                bands.take(line, left.0, left.1);
                return Some(Placed {
                    line,
                    text: t.to_string(),
                    anchor: Anchor::End,
                    x: left.1,
                });
            }
        }
    }
    None
}

/// Places the labels of `marks`, those of the rarest reasons in their lane first: when a lane
/// is crowded, each kind of split gets its own label before the common ones fill the room
/// left (and the common ones are counted by a neighbour's label).
fn place_rare_first<M>(
    marks: &[M],
    lane: impl Fn(&M) -> usize,
    at: impl Fn(&M) -> (f64, Option<Reason>),
    mut place: impl FnMut(&M, &[&str]) -> Option<Placed>,
) -> Vec<Option<Placed>> {
    let mut frequency: std::collections::HashMap<(usize, Option<Reason>), usize> =
        std::collections::HashMap::new();
    for m in marks {
        *frequency.entry((lane(m), at(m).1)).or_default() += 1;
    }
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by(|&p, &q| {
        let key = |i: usize| {
            let (x, reason) = at(&marks[i]);
            (frequency[&(lane(&marks[i]), reason)], x)
        };
        let (a, b) = (key(p), key(q));
        a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
    });
    let mut placed = vec![None; marks.len()];
    for i in order {
        let reason = at(&marks[i]).1;
        let texts = match reason {
            Some(r) => vec![r.as_str(), short_reason(r)],
            None => vec!["mixed"],
        };
        placed[i] = place(&marks[i], &texts);
    }
    placed
}

/// Marks that found no room for their own label are named by the nearest labelled mark of
/// the same lane and reason close by (`capacity ×3`), else the nearest labelled one
/// (`capacity +2`).
fn aggregate_unlabelled<M: Labelled>(
    marks: &mut [M],
    labels: &mut [Option<Placed>],
    lane: impl Fn(&M) -> usize,
    x: impl Fn(&M) -> f64,
) {
    let mut extra: Vec<Vec<usize>> = vec![Vec::new(); marks.len()];
    for i in 0..marks.len() {
        if labels[i].is_some() {
            continue;
        }
        let distance = |j: usize| (x(&marks[j]) - x(&marks[i])).abs();
        let labelled = |j: &usize| labels[*j].is_some() && lane(&marks[*j]) == lane(&marks[i]);
        let same = (0..marks.len())
            .filter(labelled)
            .filter(|&j| marks[j].reason() == marks[i].reason() && distance(j) <= 240.0)
            .min_by(|&p, &q| distance(p).total_cmp(&distance(q)));
        let nearest = same.or_else(|| {
            (0..marks.len())
                .filter(labelled)
                .min_by(|&p, &q| distance(p).total_cmp(&distance(q)))
        });
        if let Some(j) = nearest {
            extra[j].push(i);
            marks[i].set_labelled_by(j);
        }
    }
    for (j, others) in extra.into_iter().enumerate() {
        if others.is_empty() {
            continue;
        }
        let same = others
            .iter()
            .all(|&i| marks[i].reason() == marks[j].reason());
        if let Some(p) = labels[j].as_mut() {
            if same {
                p.text.push_str(&format!(" ×{}", others.len() + 1));
            } else {
                p.text.push_str(&format!(" +{}", others.len()));
            }
        }
        let named: Vec<String> = others.iter().map(|&i| marks[i].describe()).collect();
        marks[j].note_also(&named);
    }
}

/// What label aggregation needs of a mark.
trait Labelled {
    fn reason(&self) -> Option<Reason>;
    fn set_labelled_by(&mut self, by: usize);
    fn describe(&self) -> String;
    fn note_also(&mut self, others: &[String]);
}

impl Labelled for SplitMark {
    fn reason(&self) -> Option<Reason> {
        self.reason
    }
    fn set_labelled_by(&mut self, by: usize) {
        self.labelled_by = Some(by);
    }
    fn describe(&self) -> String {
        format!("{} ({})", self.node, self.reason.map_or("", Reason::as_str))
    }
    fn note_also(&mut self, others: &[String]) {
        self.title.push_str(&format!(
            "\nthis label also names the splits before: {}",
            others.join(", ")
        ));
    }
}

impl Labelled for SkipMark {
    fn reason(&self) -> Option<Reason> {
        self.reason
    }
    fn set_labelled_by(&mut self, by: usize) {
        self.labelled_by = Some(by);
    }
    fn describe(&self) -> String {
        format!("{} ({})", self.node, self.reason.map_or("", Reason::as_str))
    }
    fn note_also(&mut self, others: &[String]) {
        self.title.push_str(&format!(
            "\nthis label also names the skipped: {}",
            others.join(", ")
        ));
    }
}

/// A bar's label: inside the bar when it fits (full, else the short id), else right of the
/// bar when the row is free there.
#[allow(clippy::too_many_arguments)]
fn bar_label(
    b: &BucketIn,
    singleton: Option<Reason>,
    x0: f64,
    x1: f64,
    y: f64,
    g: RowGeometry,
    colour: Rgb,
    row: &[(f64, f64)],
    plot_x1: f64,
) -> Option<TextMark> {
    let short = b.short_id();
    let full = match singleton {
        Some(r) => format!("{short} singleton: {}", r.as_str()),
        None => format!("{short} ×{} {}", b.members.len(), human_bytes(b.size_bytes)),
    };
    let room = x1 - x0 - 8.0;
    let ty = y + (g.bar - g.font) / 2.0;
    for t in [full.as_str(), short] {
        if text::width(t, g.font) + SLACK <= room {
            return Some(TextMark {
                x: x0 + 4.0,
                y: ty,
                text: t.to_string(),
                size: g.font,
                colour: palette::text_on(colour),
                anchor: Anchor::Start,
                bold: false,
            });
        }
    }
    // Outside, up to the next bar of the row.
    let next = row
        .iter()
        .map(|s| s.0)
        .filter(|&s| s > x1)
        .fold(plot_x1, f64::min);
    for t in [full.as_str(), short] {
        if x1 + 4.0 + text::width(t, g.font) + SLACK <= next - 2.0 {
            return Some(TextMark {
                x: x1 + 4.0,
                y: ty,
                text: t.to_string(),
                size: g.font,
                colour: INK,
                anchor: Anchor::Start,
                bold: false,
            });
        }
    }
    None
}

fn split_title(d: &super::input::DecisionIn, before: Option<&str>, after: Option<&str>) -> String {
    let mut t = format!(
        "split: {}\n{} (#{}) is not bucketed with the collective before it",
        d.reason.as_str(),
        d.name,
        d.node
    );
    if let Some(cause) = &d.cause_name {
        t.push_str(&format!(
            "\ncaused by {cause} (#{}), between the members",
            d.cause.unwrap_or_default()
        ));
    }
    t.push_str(&format!(
        "\nbetween {} and {}\n{}",
        before.map_or("?", short_bucket),
        after.map_or("?", short_bucket),
        d.reason.explain()
    ));
    t
}

fn short_bucket(id: &str) -> &str {
    super::input::short_bucket_id(id)
}

/// The hover text of a bucket.
pub fn bucket_title(b: &BucketIn, singleton: Option<Reason>, role: Option<&str>) -> String {
    let mut t = format!(
        "{}\nrole: {}\n{} member(s), {}\nwindow: latest input #{} → earliest consumer #{}\n",
        b.id,
        role.unwrap_or("unclassified (mixed or none)"),
        b.members.len(),
        human_bytes(b.size_bytes),
        b.latest_input,
        b.earliest_consumer
    );
    match singleton {
        Some(r) => t.push_str(&format!("rule: singleton ({}): {}\n", r.as_str(), r.explain())),
        None => t.push_str(&format!(
            "rule: same kind, phase, group, dtype, device and scope; one fused launch fits after the latest input #{} and before the earliest consumer #{}, within cap_bytes and the distance limits{}\n",
            b.latest_input,
            b.earliest_consumer,
            if b.fusable { "" } else { " (a single member: nothing to fuse)" }
        )),
    }
    for m in b.members.iter().take(12) {
        t.push_str(&format!(
            "  #{} {} {} ({})\n",
            m.node,
            m.name,
            m.param_name.as_deref().unwrap_or("-"),
            human_bytes(m.size_bytes)
        ));
    }
    if b.members.len() > 12 {
        t.push_str(&format!("  … {} more\n", b.members.len() - 12));
    }
    t.trim_end().to_string()
}

fn bucket_aria(b: &BucketIn, singleton: Option<Reason>, role: Option<&str>) -> String {
    format!(
        "{}, {} member(s), {}, {}{}; press Enter for details",
        b.short_id(),
        b.members.len(),
        human_bytes(b.size_bytes),
        role.unwrap_or("unclassified"),
        singleton.map_or(String::new(), |r| format!(", singleton ({})", r.as_str()))
    )
}

/// `1 bucket`, `2 buckets`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < U.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[u])
    }
}
