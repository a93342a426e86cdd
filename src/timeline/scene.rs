//! Layout: a [`TimelineInput`] → a [`TimelineScene`] of pixel-placed marks.

use super::input::{Action, BucketIn, TimelineInput};
use super::palette::{role_colour, Rgb, SKIP, SPLIT};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
}

/// Which lane a mark sits in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaneKey {
    /// Buckets of one phase (`backward`) and kind.
    Buckets { backward: bool, kind: String },
    /// Collectives the planner skipped.
    Skipped,
}

impl LaneKey {
    pub fn label(&self) -> String {
        match self {
            LaneKey::Buckets { backward, kind } => {
                let phase = if *backward { "backward" } else { "forward" };
                let k = match kind.as_str() {
                    "fsdp_all_gather" | "fsdp_all_gather_backward" => "all-gather",
                    "fsdp_reduce_scatter" => "reduce-scatter",
                    "dp_all_reduce" => "all-reduce",
                    other => other,
                };
                format!("{phase} · {k}")
            }
            LaneKey::Skipped => "skipped".to_string(),
        }
    }
    fn order(&self) -> (u8, String) {
        match self {
            LaneKey::Buckets { backward, kind } => {
                let k = match kind.as_str() {
                    "fsdp_all_gather" | "fsdp_all_gather_backward" => 0,
                    "fsdp_reduce_scatter" => 1,
                    _ => 2,
                };
                (k + if *backward { 3 } else { 0 }, kind.clone())
            }
            LaneKey::Skipped => (9, String::new()),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub key: LaneKey,
    pub label: String,
    pub y: f64,
    pub height: f64,
    pub rows: usize,
}

/// A bucket bar over its window.
#[derive(Clone, Debug, PartialEq)]
pub struct BarMark {
    /// Index into `TimelineInput::buckets`.
    pub bucket: usize,
    pub bucket_id: String,
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub h: f64,
    pub colour: Rgb,
    pub label: String,
    /// Hover text: members, bytes, window, the rule.
    pub title: String,
    /// The singleton decision's reason, if the bucket is a singleton.
    pub singleton: Option<String>,
    /// The bucket's role (`None`: unclassified or mixed).
    pub role: Option<String>,
}

/// A member launch (possibly several merged in one pixel column).
#[derive(Clone, Debug, PartialEq)]
pub struct TickMark {
    pub x: f64,
    pub y: f64,
    pub h: f64,
    pub count: usize,
}

/// A split between two buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitMark {
    pub x: f64,
    pub y: f64,
    pub h: f64,
    pub reason: String,
    pub node: String,
    /// Bucket ids: the one holding the previous collective, and the one holding this one.
    pub before: Option<String>,
    pub after: Option<String>,
    pub show_label: bool,
    pub title: String,
    /// Splits merged in this mark (1 unless the view is dense).
    pub count: usize,
    /// Whether this mark stands for all splits in a bin (dense view).
    pub grouped: bool,
}

/// Where buckets are too dense to draw one by one: how many cover a bin of a lane.
#[derive(Clone, Debug, PartialEq)]
pub struct DensityMark {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    pub h: f64,
    pub count: usize,
    pub opacity: f64,
    pub colour: Rgb,
    /// Graph positions the bin covers.
    pub from: u32,
    pub to: u32,
}

/// A skipped collective (or several in one pixel column when `count > 1`).
#[derive(Clone, Debug, PartialEq)]
pub struct SkipMark {
    pub x: f64,
    pub y: f64,
    pub reason: String,
    pub node: String,
    pub count: usize,
    pub show_label: bool,
    pub title: String,
    /// Whether this mark stands for all skips in a bin (dense view).
    pub grouped: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub label: String,
    pub colour: Rgb,
    /// `bar`, `split`, `skip` or `tick`.
    pub shape: &'static str,
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
    pub legend_y: f64,
}

/// Everything the renderer draws, already in pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineScene {
    pub title: String,
    pub node_count: u32,
    pub viewport: Viewport,
    pub frame: Frame,
    pub lanes: Vec<Lane>,
    pub bars: Vec<BarMark>,
    /// Density bins, when there are too many buckets in view for bars.
    pub density: Vec<DensityMark>,
    pub ticks: Vec<TickMark>,
    pub splits: Vec<SplitMark>,
    pub skips: Vec<SkipMark>,
    pub legend: Vec<LegendEntry>,
    /// Axis ticks: (pixel x, graph position).
    pub axis: Vec<(f64, u64)>,
    /// Marks outside the viewport, not drawn.
    pub culled: usize,
}

pub const LEFT: f64 = 150.0;
pub const RIGHT: f64 = 16.0;
pub const TOP: f64 = 28.0;
pub const ROW_H: f64 = 16.0;
pub const ROW_GAP: f64 = 4.0;
pub const LANE_PAD: f64 = 8.0;
pub const SKIP_LANE_H: f64 = 34.0;
pub const MAX_ROWS: usize = 10;
/// More visible buckets than this and the lanes show density bins instead of bars.
pub const MAX_BARS: usize = 800;
/// More visible split (or skip) marks than this and they merge per bin.
pub const MAX_MARKS: usize = 600;
/// Width of a density bin in pixels.
pub const BIN: f64 = 4.0;
/// Approximate width of one character of the 10px label font.
pub const CHAR_W: f64 = 6.0;

/// Lays `input` out for `viewport` in a chart `width` pixels wide.
pub fn build_scene(input: &TimelineInput, viewport: Viewport, width: u32) -> TimelineScene {
    let width = width.max(320);
    let vp = viewport.clamped(input.node_count);
    let plot_x0 = LEFT;
    let plot_x1 = width as f64 - RIGHT;
    let scale = (plot_x1 - plot_x0) / (vp.x1 - vp.x0);
    let px = |pos: f64| plot_x0 + (pos - vp.x0) * scale;
    let visible = |a: f64, b: f64| b >= plot_x0 - 0.5 && a <= plot_x1 + 0.5;
    let clip = |x: f64| x.clamp(plot_x0, plot_x1);

    // Which bucket holds each launch; singleton reasons.
    let mut bucket_of: HashMap<u32, usize> = HashMap::new();
    for (i, b) in input.buckets.iter().enumerate() {
        for m in &b.members {
            bucket_of.insert(m.node, i);
        }
    }
    let mut singleton: HashMap<usize, String> = HashMap::new();
    for d in &input.decisions {
        if d.action == Action::Singleton {
            if let Some(&b) = bucket_of.get(&d.node) {
                singleton.insert(b, d.reason.clone());
            }
        }
    }

    // Lanes.
    let lane_key = |b: &BucketIn| -> LaneKey {
        let m = b.members.first();
        LaneKey::Buckets {
            backward: m.map(|m| m.backward).unwrap_or(false),
            kind: m.map(|m| m.kind.to_string()).unwrap_or_default(),
        }
    };
    let mut keys: BTreeSet<(u8, String, LaneKey)> = BTreeSet::new();
    for b in &input.buckets {
        let k = lane_key(b);
        let (o, s) = k.order();
        keys.insert((o, s, k));
    }
    let has_skips = input.decisions.iter().any(|d| d.action == Action::Skip);
    if has_skips || keys.is_empty() {
        keys.insert((9, String::new(), LaneKey::Skipped));
    }
    let lane_keys: Vec<LaneKey> = keys.into_iter().map(|(_, _, k)| k).collect();
    let lane_index: HashMap<LaneKey, usize> = lane_keys
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();

    let mut culled = 0usize;
    let mut bars = Vec::new();
    let mut density = Vec::new();
    let mut tick_cols: BTreeMap<(usize, usize, i64), usize> = BTreeMap::new();
    let mut roles: BTreeSet<(Option<String>, u8)> = BTreeSet::new();
    // Visible buckets first; past MAX_BARS they become per-lane density bins.
    let mut shown: Vec<(usize, usize, f64, f64, Option<String>)> = Vec::new();
    for (i, b) in input.buckets.iter().enumerate() {
        let lane = lane_index[&lane_key(b)];
        let (s, e) = window(b);
        let (a, z) = (px(s as f64), px(e as f64 + 1.0));
        let role = bucket_role(b);
        roles.insert((role.clone(), 0));
        if !visible(a, z) {
            culled += 1;
            continue;
        }
        shown.push((i, lane, a, z, role));
    }
    // Too many: keep the buckets anchored in view (a member launch, or the window's start or
    // end, inside it) and cull those whose windows only pass through.
    if shown.len() > MAX_BARS {
        let inside = |pos: u32| {
            let x = px(pos as f64 + 0.5);
            x >= plot_x0 && x <= plot_x1
        };
        let anchored: Vec<_> = shown
            .iter()
            .filter(|(i, ..)| {
                let b = &input.buckets[*i];
                inside(b.latest_input)
                    || inside(b.earliest_consumer)
                    || b.members.iter().any(|m| inside(m.node))
            })
            .cloned()
            .collect();
        if anchored.len() <= MAX_BARS {
            culled += shown.len() - anchored.len();
            shown = anchored;
        }
    }
    let dense = shown.len() > MAX_BARS;

    // Row packing per lane (first fit in graph positions, at most MAX_ROWS rows).
    let mut order: Vec<usize> = if dense {
        Vec::new()
    } else {
        shown.iter().map(|x| x.0).collect()
    };
    order.sort_by_key(|&i| {
        (
            input.buckets[i].latest_input,
            input.buckets[i].earliest_consumer,
            i,
        )
    });
    let mut row_ends: Vec<Vec<u32>> = vec![Vec::new(); lane_keys.len()];
    let mut row_of = vec![0usize; input.buckets.len()];
    for &i in &order {
        let b = &input.buckets[i];
        let lane = lane_index[&lane_key(b)];
        let ends = &mut row_ends[lane];
        let (s, e) = window(b);
        let row = match ends.iter().position(|&end| end < s) {
            Some(r) => r,
            None if ends.len() < MAX_ROWS => {
                ends.push(0);
                ends.len() - 1
            }
            None => (0..ends.len()).min_by_key(|&r| ends[r]).unwrap_or(0),
        };
        ends[row] = ends[row].max(e);
        row_of[i] = row;
    }

    let mut lanes = Vec::new();
    let mut y = TOP;
    for (i, key) in lane_keys.iter().enumerate() {
        let (rows, height) = match key {
            LaneKey::Skipped => (1, SKIP_LANE_H),
            _ => {
                let rows = if dense { 3 } else { row_ends[i].len().max(1) };
                (
                    rows,
                    rows as f64 * (ROW_H + ROW_GAP) - ROW_GAP + 2.0 * LANE_PAD + 12.0,
                )
            }
        };
        lanes.push(Lane {
            key: key.clone(),
            label: key.label(),
            y,
            height,
            rows,
        });
        y += height;
    }
    let plot_y1 = y;
    let row_y =
        |lane: usize, row: usize| lanes[lane].y + LANE_PAD + 12.0 + row as f64 * (ROW_H + ROW_GAP);

    if dense {
        // Per lane and role, a difference array over bins: how many buckets cover each bin.
        let nbins = ((plot_x1 - plot_x0) / BIN).ceil() as usize + 1;
        let mut role_ids: Vec<Option<String>> = Vec::new();
        let mut diff: HashMap<(usize, usize), Vec<i64>> = HashMap::new();
        for (_, lane, a, z, role) in &shown {
            let r = match role_ids.iter().position(|x| x == role) {
                Some(r) => r,
                None => {
                    role_ids.push(role.clone());
                    role_ids.len() - 1
                }
            };
            let first = (((clip(*a) - plot_x0) / BIN).floor().max(0.0) as usize).min(nbins - 1);
            let last =
                (((clip(*z) - plot_x0) / BIN).floor().max(0.0) as usize).clamp(first, nbins - 1);
            let d = diff.entry((*lane, r)).or_insert_with(|| vec![0; nbins + 1]);
            d[first] += 1;
            d[last + 1] -= 1;
        }
        // bin → (count, role if uniform)
        let mut bins: BTreeMap<(usize, usize), (usize, Option<Option<String>>)> = BTreeMap::new();
        let mut keys: Vec<_> = diff.keys().copied().collect();
        keys.sort();
        for (lane, r) in keys {
            let d = &diff[&(lane, r)];
            let mut run = 0i64;
            for (bin, delta) in d.iter().take(nbins).enumerate() {
                run += delta;
                if run > 0 {
                    let entry = bins
                        .entry((lane, bin))
                        .or_insert((0, Some(role_ids[r].clone())));
                    if entry.0 > 0 && entry.1.as_ref() != Some(&role_ids[r]) {
                        entry.1 = None;
                    }
                    entry.0 += run as usize;
                }
            }
        }
        let max = bins.values().map(|v| v.0).max().unwrap_or(1).max(1) as f64;
        let to_pos = |x: f64| vp.x0 + (x - plot_x0) / scale;
        for ((lane, bin), (count, role)) in bins {
            let x0 = plot_x0 + bin as f64 * BIN;
            let x1 = (x0 + BIN).min(plot_x1);
            let l = &lanes[lane];
            density.push(DensityMark {
                lane,
                x0,
                x1,
                y: l.y + LANE_PAD,
                h: l.height - 2.0 * LANE_PAD,
                count,
                opacity: 0.25 + 0.75 * (count as f64 / max).sqrt(),
                colour: match &role {
                    Some(r) => role_colour(r.as_deref()),
                    None => role_colour(None),
                },
                from: to_pos(x0).max(0.0).floor() as u32,
                to: to_pos(x1).max(0.0).ceil() as u32,
            });
        }
    }
    for (i, lane, a, z, role) in shown.into_iter().filter(|_| !dense) {
        let b = &input.buckets[i];
        let (mut x0, mut x1) = (clip(a), clip(z));
        if x1 - x0 < 2.0 {
            let c = (x0 + x1) / 2.0;
            x0 = c - 1.0;
            x1 = c + 1.0;
        }
        let short = b.id.rsplit(':').next().unwrap_or(&b.id).to_string();
        let sing = singleton.get(&i).cloned();
        let mut label = format!("{short} ×{} {}", b.members.len(), human_bytes(b.size_bytes));
        if let Some(r) = &sing {
            label = format!("{short} singleton: {r}");
        }
        let fits = (x1 - x0 - 6.0) / CHAR_W;
        let label = if (fits as usize) >= label.chars().count() {
            label
        } else if (fits as usize) >= short.chars().count() {
            short.clone()
        } else {
            String::new()
        };
        let y = row_y(lane, row_of[i]);
        for m in &b.members {
            let x = px(m.node as f64 + 0.5);
            if x >= plot_x0 && x <= plot_x1 {
                *tick_cols
                    .entry((lane, row_of[i], x.round() as i64))
                    .or_insert(0) += 1;
            }
        }
        bars.push(BarMark {
            bucket: i,
            bucket_id: b.id.clone(),
            lane,
            x0,
            x1,
            y,
            h: ROW_H,
            colour: role_colour(role.as_deref()),
            label,
            title: bucket_title(b, sing.as_deref(), role.as_deref()),
            singleton: sing,
            role,
        });
    }
    let ticks = tick_cols
        .into_iter()
        .map(|((lane, row, x), count)| TickMark {
            x: x as f64,
            y: row_y(lane, row),
            h: ROW_H,
            count,
        })
        .collect();

    // Splits, in the lane of the bucket they start; past MAX_MARKS, one mark per bin.
    let mut splits = Vec::new();
    let mut last_label_end: HashMap<usize, f64> = HashMap::new();
    let mut visible_splits = Vec::new();
    for d in input.decisions.iter().filter(|d| d.action == Action::Split) {
        let prev = d.previous.unwrap_or(d.node);
        let x = px((prev.min(d.node) as f64 + d.node.max(prev) as f64) / 2.0 + 0.5);
        if x < plot_x0 - 0.5 || x > plot_x1 + 0.5 {
            culled += 1;
            continue;
        }
        visible_splits.push((d, prev, x));
    }
    let dense_splits = visible_splits.len() > MAX_MARKS;
    let mut split_bins: BTreeMap<(usize, i64), SplitMark> = BTreeMap::new();
    for (d, prev, x) in visible_splits {
        let after = bucket_of.get(&d.node).copied();
        let before = bucket_of.get(&prev).copied();
        let lane = after
            .or(before)
            .map(|b| lane_index[&lane_key(&input.buckets[b])])
            .unwrap_or(0);
        if dense_splits {
            let bin = ((x - plot_x0) / BIN).floor() as i64;
            let m = split_bins.entry((lane, bin)).or_insert_with(|| SplitMark {
                x: plot_x0 + (bin as f64 + 0.5) * BIN,
                y: lanes[lane].y + 2.0,
                h: lanes[lane].height - 4.0,
                reason: d.reason.clone(),
                node: d.name.clone(),
                before: None,
                after: None,
                show_label: false,
                title: String::new(),
                count: 0,
                grouped: true,
            });
            m.count += 1;
            if m.reason != d.reason {
                m.reason = "mixed".into();
            }
            continue;
        }
        let end = last_label_end.entry(lane).or_insert(f64::MIN);
        let show_label = x > *end;
        if show_label {
            *end = x + 4.0 + d.reason.chars().count() as f64 * CHAR_W;
        }
        let id = |b: Option<usize>| b.map(|b| input.buckets[b].id.clone());
        splits.push(SplitMark {
            x,
            y: lanes[lane].y + 2.0,
            h: lanes[lane].height - 4.0,
            reason: d.reason.clone(),
            node: d.name.clone(),
            before: id(before),
            after: id(after),
            show_label,
            title: format!(
                "split: {}\n{} is not bucketed with the collective before it\nbetween {} and {}",
                d.reason,
                d.name,
                id(before).unwrap_or_else(|| "?".into()),
                id(after).unwrap_or_else(|| "?".into())
            ),
            count: 1,
            grouped: false,
        });
    }
    for (_, mut m) in split_bins {
        m.title = format!(
            "{} splits here ({}); zoom in to see each",
            m.count, m.reason
        );
        splits.push(m);
    }

    // Skipped collectives; merged per pixel column only when there are more than columns.
    let mut skips = Vec::new();
    if let Some(&lane) = lane_index.get(&LaneKey::Skipped) {
        let sk: Vec<_> = input
            .decisions
            .iter()
            .filter(|d| d.action == Action::Skip)
            .collect();
        let visible_skips: Vec<_> = sk
            .iter()
            .filter(|d| {
                let x = px(d.node as f64 + 0.5);
                x >= plot_x0 - 0.5 && x <= plot_x1 + 0.5
            })
            .collect();
        culled += sk.len() - visible_skips.len();
        let merge = visible_skips.len() > MAX_MARKS;
        let y = lanes[lane].y + 10.0;
        let mut label_end = f64::MIN;
        let mut cols: BTreeMap<i64, SkipMark> = BTreeMap::new();
        for d in visible_skips {
            let x = px(d.node as f64 + 0.5);
            if merge {
                let bin = ((x - plot_x0) / BIN).floor() as i64;
                let e = cols.entry(bin).or_insert_with(|| SkipMark {
                    x: plot_x0 + (bin as f64 + 0.5) * BIN,
                    y,
                    reason: d.reason.clone(),
                    node: d.name.clone(),
                    count: 0,
                    show_label: false,
                    title: String::new(),
                    grouped: true,
                });
                e.count += 1;
                if e.reason != d.reason {
                    e.reason = "mixed".into();
                }
                continue;
            }
            let show_label = x > label_end;
            if show_label {
                label_end = x + 8.0 + d.reason.chars().count() as f64 * CHAR_W;
            }
            skips.push(SkipMark {
                x,
                y,
                reason: d.reason.clone(),
                node: d.name.clone(),
                count: 1,
                show_label,
                title: format!("skipped: {}\n{}", d.reason, d.name),
                grouped: false,
            });
        }
        for (_, mut m) in cols {
            m.title = format!(
                "{} skipped collectives here ({}); zoom in to see each",
                m.count, m.reason
            );
            skips.push(m);
        }
    }

    // Legend: roles present, then the marks.
    let mut legend: Vec<LegendEntry> = roles
        .into_iter()
        .map(|(r, _)| LegendEntry {
            label: r.clone().unwrap_or_else(|| "unclassified".into()),
            colour: role_colour(r.as_deref()),
            shape: "bar",
        })
        .collect();
    legend.push(LegendEntry {
        label: "member launch".into(),
        colour: SPLIT,
        shape: "tick",
    });
    legend.push(LegendEntry {
        label: "split (reason)".into(),
        colour: SPLIT,
        shape: "split",
    });
    legend.push(LegendEntry {
        label: "skipped (reason)".into(),
        colour: SKIP,
        shape: "skip",
    });

    // Axis ticks at a 1-2-5 step giving about one tick per 90 px.
    let span = vp.x1 - vp.x0;
    let want = ((plot_x1 - plot_x0) / 90.0).max(1.0);
    let raw = span / want;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
        .max(1.0);
    let mut axis = Vec::new();
    let mut t = (vp.x0 / step).ceil() * step;
    while t <= vp.x1 + 1e-9 {
        axis.push((px(t), t as u64));
        t += step;
    }

    let legend_y = plot_y1 + 50.0;
    let frame = Frame {
        width,
        height: (legend_y + 24.0) as u32,
        plot_x0,
        plot_x1,
        plot_y0: TOP,
        plot_y1,
        legend_y,
    };
    TimelineScene {
        title: input.title.clone(),
        node_count: input.node_count,
        viewport: vp,
        frame,
        lanes,
        bars,
        density,
        ticks,
        splits,
        skips,
        legend,
        axis,
        culled,
    }
}

/// The planner's window of a bucket, ordered.
fn window(b: &BucketIn) -> (u32, u32) {
    let s = b.latest_input.min(b.earliest_consumer);
    let e = b.latest_input.max(b.earliest_consumer);
    (s, e)
}

/// The bucket's role: the members' common role, else none (a mixed bucket has no scalar role).
pub fn bucket_role(b: &BucketIn) -> Option<String> {
    let first = b.members.first()?.role.clone();
    if b.members.iter().all(|m| m.role == first) {
        first.map(|r| r.to_string())
    } else {
        None
    }
}

pub fn bucket_title(b: &BucketIn, singleton: Option<&str>, role: Option<&str>) -> String {
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
        Some(r) => t.push_str(&format!("rule: singleton ({r})\n")),
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
