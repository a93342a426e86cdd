//! SVG rendering of a [`TimelineScene`] with plotters' SVG backend, one small function per
//! kind of mark.
//!
//! The frame (title, lanes, axis, legend) is drawn on one backend; each countable mark (bucket
//! bar, column, overflow strip, split, skip, not-planned collective) is drawn by plotters on its own backend and
//! wrapped in a `<g>` carrying `data-*` attributes, a `<title>` tooltip, and what keyboard and
//! screen-reader users need (`tabindex="0"`, `role="button"`, `aria-label`), so the output can
//! be counted, clicked, focused and read. Every user-provided string is XML-escaped (plotters
//! escapes text it draws; this module escapes attributes and titles).

use super::palette::role_colour;
use super::palette::{Rgb, GRID, INK, LANE_BG, SKIP, SPLIT};
use super::scene::{
    Anchor, BarMark, ColumnMark, CommMark, ExposedMark, LegendItem, LegendShape, OverflowMark,
    SkipMark, SplitMark, TextMark, TimelineScene, COMM_H, EXPOSED_H,
};
use super::text::FONT_FAMILY;
use crate::planner::Reason;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn colour(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// XML-escapes `s` for text and attribute values.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c if !crate::text::is_xml_char(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `{:.N}` of a graph position, `N` at most 3, written from integers where that is exact.
/// In wasm, `core::fmt` writes many fixed-precision floats by its bignum fallback (Dragon4):
/// the marks' positions were 8 ms of a 100k-node chart's drawing in the browser.
pub(crate) struct Fixed(pub f64, pub usize);

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Fixed(v, digits) = *self;
        const SCALES: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];
        let scaled = v * SCALES[digits.min(3)];
        // `scaled` is within half an ulp of v·10^N (below 2^-52 of it): its rounding is the
        // exact one unless v·10^N is that close to a half. Such values, negatives (`-0.000`)
        // and the very large or not finite are left to `core::fmt`.
        let frac = scaled - scaled.floor();
        if digits > 3
            || !(0.0..1e15).contains(&scaled)
            || v.is_sign_negative()
            || (frac - 0.5).abs() <= scaled * 4e-16
        {
            return write!(f, "{v:.digits$}");
        }
        let n = scaled.round() as u64;
        if digits == 0 {
            return write!(f, "{n}");
        }
        let unit = 10u64.pow(digits as u32);
        write!(f, "{}.{:0digits$}", n / unit, n % unit)
    }
}

/// Plotters writes `font-size` as the size it is given divided by 1.24; this undoes that, so
/// a [`TextMark`]'s size is the pixel size in the SVG.
const PLOTTERS_FONT_SCALE: f64 = 1.24;

/// Draws a text mark.
fn draw_text(area: &Area, t: &TextMark) -> Result<(), String> {
    if t.text.is_empty() {
        return Ok(());
    }
    let h = match t.anchor {
        Anchor::Start => HPos::Left,
        Anchor::Middle => HPos::Center,
        Anchor::End => HPos::Right,
    };
    let mut font = (FONT_FAMILY, t.size * PLOTTERS_FONT_SCALE).into_font();
    if t.bold {
        font = font.style(FontStyle::Bold);
    }
    let style = TextStyle {
        font,
        color: colour(t.colour).to_backend_color(),
        pos: Pos::new(h, VPos::Top),
    };
    e(area.draw(&Text::new(
        t.text.clone(),
        (t.x.round() as i32, t.y.round() as i32),
        style,
    )))
}

/// Draws with plotters on a fresh backend and returns the element markup only.
fn fragment(size: (u32, u32), draw: impl FnOnce(&Area) -> Result<(), String>) -> String {
    let mut buf = String::new();
    {
        let area = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        let _ = draw(&area);
        let _ = area.present();
    }
    strip_svg(&buf).to_string()
}

/// The markup between the `<svg …>` open tag and `</svg>`.
fn strip_svg(s: &str) -> &str {
    let start = s.find('>').map(|i| i + 1).unwrap_or(0);
    let end = s.rfind("</svg>").unwrap_or(s.len());
    s.get(start..end).unwrap_or("").trim_matches('\n')
}

fn e<T>(r: Result<T, impl std::fmt::Debug>) -> Result<T, String> {
    r.map_err(|err| format!("{err:?}"))
}

/// What an exported file records about how it was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SvgMeta {
    /// The document's `<title>` (the dump and the settings, in words).
    pub title: String,
    /// A JSON object written into `<metadata>` (the settings, machine-readable).
    pub metadata_json: String,
}

/// Renders the scene to a standalone SVG document.
pub fn render_svg(scene: &TimelineScene) -> String {
    render_svg_with(scene, None)
}

/// Renders the scene, recording in the document how it was made.
pub fn render_svg_with(scene: &TimelineScene, meta: Option<&SvgMeta>) -> String {
    let f = scene.frame;
    let size = (f.width, f.height);
    let frame = fragment(size, |area| draw_frame(area, scene));
    let mut out = String::with_capacity(
        frame.len() + 400 * (scene.bars.len() + scene.skips.len() + scene.columns.len()),
    );
    let summary = format!(
        "Bucket timeline{}: {} buckets in view of graph positions {:.0}–{:.0}, {} splits, {} skipped",
        if scene.title.is_empty() {
            String::new()
        } else {
            format!(" of {}", scene.title)
        },
        scene.in_view,
        scene.viewport.x0,
        scene.viewport.x1,
        scene.splits.iter().map(|s| s.count).sum::<usize>(),
        scene.skips.iter().map(|s| s.count).sum::<usize>(),
    );
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"commlens-timeline\" width=\"{}\" height=\"{}\" \
         viewBox=\"0 0 {} {}\" role=\"group\" aria-label=\"{}\" data-nodes=\"{}\" data-x0=\"{:.3}\" data-x1=\"{:.3}\" \
         data-plot-x0=\"{}\" data-plot-x1=\"{}\" data-bars=\"{}\" data-in-view=\"{}\" data-not-drawn=\"{}\" data-dense=\"{}\"{}>",
        f.width,
        f.height,
        f.width,
        f.height,
        xml_escape(&summary),
        scene.node_count,
        scene.viewport.x0,
        scene.viewport.x1,
        f.plot_x0,
        f.plot_x1,
        scene.bars.len(),
        scene.in_view,
        scene.not_drawn,
        scene.dense,
        if scene.time.is_some() {
            " data-axis=\"time\""
        } else {
            ""
        }
    );
    if let Some(m) = meta {
        let _ = writeln!(out, "<title>{}</title>", xml_escape(&m.title));
        let _ = writeln!(
            out,
            "<metadata id=\"commlens-settings\">{}</metadata>",
            xml_escape(&m.metadata_json)
        );
    }
    out.push_str("<g class=\"frame\">\n");
    out.push_str(&frame);
    out.push_str("\n</g>\n<g class=\"splits\">\n");
    for (i, s) in scene.splits.iter().enumerate() {
        split_mark(&mut out, size, i, s);
    }
    out.push_str("</g>\n<g class=\"bars\">\n");
    for b in &scene.bars {
        bar_mark(&mut out, size, b);
    }
    out.push_str("</g>\n<g class=\"columns\">\n");
    for c in &scene.columns {
        column_mark(&mut out, size, c);
    }
    out.push_str("</g>\n<g class=\"overflow\">\n");
    for o in &scene.overflow {
        overflow_mark(&mut out, size, o);
    }
    out.push_str("</g>\n<g class=\"ticks\" pointer-events=\"none\">\n");
    let ticks = fragment(size, |area| {
        for t in &scene.ticks {
            let x = t.x as i32;
            e(area.draw(&PathElement::new(
                vec![(x, t.y as i32), (x, (t.y + t.h) as i32)],
                colour(SPLIT).stroke_width(if t.count > 1 { 2 } else { 1 }),
            )))?;
        }
        Ok(())
    });
    out.push_str(&ticks);
    out.push_str("\n</g>\n<g class=\"skips\">\n");
    for (i, s) in scene.skips.iter().enumerate() {
        skip_mark(&mut out, size, i, s);
    }
    out.push_str("</g>\n");
    // Groups only for marks there are: a plan with neither draws as it did before them.
    if !scene.comms.is_empty() {
        out.push_str("<g class=\"comms\">\n");
        for (i, c) in scene.comms.iter().enumerate() {
            comm_mark(&mut out, size, i, c);
        }
        out.push_str("</g>\n");
    }
    if !scene.exposed.is_empty() {
        out.push_str("<g class=\"exposed\">\n");
        for (i, x) in scene.exposed.iter().enumerate() {
            exposed_mark(&mut out, size, i, x);
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    // Names reach the SVG through plotters' text too: whatever XML forbids (U+FFFE, U+FFFF,
    // control characters) becomes U+FFFD, so the document is always well-formed.
    crate::text::into_xml_chars(out)
}

fn exposed_mark(out: &mut String, size: (u32, u32), index: usize, x: &ExposedMark) {
    let body = fragment(size, |area| {
        e(area.draw(&Rectangle::new(
            [
                (x.x0.round() as i32, x.y.round() as i32),
                (
                    x.x1.round().max(x.x0.round() + 2.0) as i32,
                    (x.y + EXPOSED_H).round() as i32,
                ),
            ],
            colour(SKIP).filled(),
        )))
    });
    let _ = write!(
        out,
        "<g data-exposed=\"{}\" data-mark=\"e{index}\" data-node=\"{}\" data-count=\"{}\"{}><title>{}</title>\n{}\n</g>\n",
        x.us,
        xml_escape(&x.node),
        x.count,
        focusable(&x.aria),
        xml_escape(&x.title),
        body
    );
}

/// A collective's span, filled with its role's colour and outlined (bucket bars are not), so
/// it reads as "not planned" next to the buckets.
fn comm_box(area: &Area, a: (i32, i32), b: (i32, i32), fill: Rgb) -> Result<(), String> {
    e(area.draw(&Rectangle::new([a, b], colour(fill).filled())))?;
    e(area.draw(&Rectangle::new([a, b], colour(INK).stroke_width(1))))
}

fn comm_mark(out: &mut String, size: (u32, u32), index: usize, c: &CommMark) {
    let body = fragment(size, |area| {
        comm_box(
            area,
            (c.x0.round() as i32, c.y.round() as i32),
            (c.x1.round() as i32, (c.y + COMM_H).round() as i32),
            role_colour(c.role.as_deref()),
        )
    });
    let attr = if c.grouped {
        "data-comm-group"
    } else {
        "data-comm"
    };
    let _ = write!(
        out,
        "<g {attr}=\"{}\" data-mark=\"c{index}\" data-node=\"{}\" data-role=\"{}\" data-from=\"{}\" data-to=\"{}\" data-count=\"{}\"{}><title>{}</title>\n{}\n</g>\n",
        c.count,
        xml_escape(&c.node),
        xml_escape(c.role.as_deref().unwrap_or("unclassified")),
        c.from,
        c.to + 1,
        c.count,
        focusable(&c.aria),
        xml_escape(&c.title),
        body
    );
}

/// `data-marked` when the mark is marked (`SceneOptions::marked`), then [`focusable`]'s
/// attributes.
fn marked(marked: bool, aria: &str) -> String {
    let attr = if marked { " data-marked=\"\"" } else { "" };
    format!("{attr}{}", focusable(aria))
}

/// The attributes that make a mark focusable and named.
fn focusable(aria: &str) -> String {
    format!(
        " tabindex=\"0\" role=\"button\" aria-label=\"{}\"",
        xml_escape(aria)
    )
}

fn bar_mark(out: &mut String, size: (u32, u32), b: &BarMark) {
    let body = fragment(size, |area| {
        e(area.draw(&Rectangle::new(
            [
                (b.x0.round() as i32, b.y.round() as i32),
                (b.x1.round() as i32, (b.y + b.h).round() as i32),
            ],
            colour(b.colour).filled(),
        )))?;
        if let Some(label) = &b.label {
            draw_text(area, label)?;
        }
        Ok(())
    });
    let _ = write!(
        out,
        "<g data-bucket=\"{}\" data-lane=\"{}\" data-row=\"{}\" data-role=\"{}\" data-start=\"{}\" data-end=\"{}\" data-anchored=\"{}\"{}{}><title>{}</title>\n{}\n</g>\n",
        xml_escape(&b.bucket_id),
        b.lane,
        b.row,
        xml_escape(b.role.as_deref().unwrap_or("unclassified")),
        b.start,
        b.end,
        b.anchored,
        b.singleton
            .map(|r| format!(" data-singleton=\"{}\"", r.as_str()))
            .unwrap_or_default(),
        marked(b.marked, &b.aria),
        xml_escape(&b.title),
        body
    );
}

fn column_mark(out: &mut String, size: (u32, u32), c: &ColumnMark) {
    let body = fragment(size, |area| {
        e(area.draw(&Rectangle::new(
            [
                (c.x0.round() as i32, c.y.round() as i32),
                (c.x1.round() as i32, (c.y + c.h).round() as i32),
            ],
            colour(c.colour).filled(),
        )))?;
        if let Some(label) = &c.label {
            draw_text(area, label)?;
        }
        Ok(())
    });
    let _ = write!(
        out,
        "<g data-bucket-group=\"{}\" data-from=\"{}\" data-to=\"{}\" data-lane=\"{}\" data-max-bytes=\"{}\"{}><title>{}</title>\n{}\n</g>\n",
        c.count,
        Fixed(c.from, 3),
        Fixed(c.to, 3),
        c.lane,
        c.max_bytes,
        focusable(&format!(
            "{} buckets launched at graph positions {} to {}, the largest {}; press Enter to zoom in",
            c.count,
            Fixed(c.from, 0),
            Fixed(c.to, 0),
            super::scene::human_bytes(c.max_bytes)
        )),
        xml_escape(&c.title),
        body
    );
}

fn overflow_mark(out: &mut String, size: (u32, u32), o: &OverflowMark) {
    let body = fragment(size, |area| {
        let (x0, x1) = (o.x0.round() as i32, o.x1.round() as i32);
        let (y0, y1) = (o.y.round() as i32, (o.y + o.h).round() as i32);
        e(area.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour(GRID).filled())))?;
        // Hatching: what is here is counted, not drawn.
        let h = y1 - y0;
        let mut x = x0;
        while x + h <= x1 {
            e(area.draw(&PathElement::new(
                vec![(x, y1), (x + h, y0)],
                colour(INK).stroke_width(1),
            )))?;
            x += 6;
        }
        Ok(())
    });
    let _ = write!(
        out,
        "<g data-overflow=\"{}\" data-from=\"{}\" data-to=\"{}\" data-lane=\"{}\"{}><title>{}</title>\n{}\n</g>\n",
        o.count,
        Fixed(o.from, 3),
        Fixed(o.to, 3),
        o.lane,
        focusable(&format!(
            "{} more buckets not drawn at graph positions {} to {}; press Enter to zoom in",
            o.count,
            Fixed(o.from, 0),
            Fixed(o.to, 0)
        )),
        xml_escape(&o.title),
        body
    );
}

fn reason_attr(r: Option<Reason>) -> &'static str {
    r.map_or("mixed", Reason::as_str)
}

fn split_mark(out: &mut String, size: (u32, u32), index: usize, s: &SplitMark) {
    let body = fragment(size, |area| {
        let x = s.x.round() as i32;
        let (y0, y1) = (s.y0.round() as i32, s.y1.round() as i32);
        // A wide transparent hit area, then the dashed line (solid when grouped).
        e(area.draw(&Rectangle::new(
            [(x - 3, y0), (x + 3, y1)],
            colour(SPLIT).mix(0.0).filled(),
        )))?;
        if s.grouped {
            e(area.draw(&PathElement::new(
                vec![(x, y0), (x, y1)],
                colour(SPLIT).mix(0.6).stroke_width(1),
            )))?;
        } else {
            dashed(area, x, y0, y1)?;
        }
        if let Some(label) = &s.label {
            draw_text(area, label)?;
        }
        Ok(())
    });
    if s.grouped {
        let _ = write!(
            out,
            "<g data-split-group=\"{}\" data-count=\"{}\" data-mark=\"{index}\"{}><title>{}</title>\n{}\n</g>\n",
            reason_attr(s.reason),
            s.count,
            marked(s.marked, &s.aria),
            xml_escape(&s.title),
            body
        );
        return;
    }
    let _ = write!(
        out,
        "<g data-split=\"{}\" data-mark=\"{index}\" data-node=\"{}\" data-before=\"{}\" data-after=\"{}\"{}{}{}><title>{}</title>\n{}\n</g>\n",
        reason_attr(s.reason),
        xml_escape(&s.node),
        xml_escape(s.before.as_deref().unwrap_or("")),
        xml_escape(s.after.as_deref().unwrap_or("")),
        s.cause
            .as_ref()
            .map(|c| format!(" data-cause=\"{}\"", xml_escape(c)))
            .unwrap_or_default(),
        s.labelled_by
            .map(|m| format!(" data-labelled-by=\"{m}\""))
            .unwrap_or_default(),
        marked(s.marked, &s.aria),
        xml_escape(&s.title),
        body
    );
}

/// A dashed vertical line (4 on, 3 off), the split's mark and its legend swatch.
fn dashed(area: &Area, x: i32, y0: i32, y1: i32) -> Result<(), String> {
    let mut y = y0;
    while y < y1 {
        e(area.draw(&PathElement::new(
            vec![(x, y), (x, (y + 4).min(y1))],
            colour(SPLIT).stroke_width(2),
        )))?;
        y += 7;
    }
    Ok(())
}

fn skip_triangle(area: &Area, x: i32, y: i32, r: i32) -> Result<(), String> {
    e(area.draw(&Polygon::new(
        vec![(x - r, y - r), (x + r, y - r), (x, y + r)],
        colour(SKIP).filled(),
    )))
}

fn skip_mark(out: &mut String, size: (u32, u32), index: usize, s: &SkipMark) {
    let body = fragment(size, |area| {
        skip_triangle(
            area,
            s.x.round() as i32,
            s.y.round() as i32,
            if s.grouped { 5 } else { 4 },
        )?;
        if let Some(label) = &s.label {
            draw_text(area, label)?;
        }
        Ok(())
    });
    let attr = if s.grouped {
        "data-skip-group"
    } else {
        "data-skip"
    };
    let _ = write!(
        out,
        "<g {attr}=\"{}\" data-mark=\"{index}\" data-node=\"{}\" data-count=\"{}\"{}{}><title>{}</title>\n{}\n</g>\n",
        reason_attr(s.reason),
        xml_escape(&s.node),
        s.count,
        s.labelled_by
            .map(|m| format!(" data-labelled-by=\"{m}\""))
            .unwrap_or_default(),
        marked(s.marked, &s.aria),
        xml_escape(&s.title),
        body
    );
}

fn draw_frame(area: &Area, scene: &TimelineScene) -> Result<(), String> {
    let f = scene.frame;
    e(area.fill(&WHITE))?;
    let (px0, px1) = (f.plot_x0 as i32, f.plot_x1 as i32);
    for lane in &scene.lanes {
        let (y0, y1) = (lane.y as i32, (lane.y + lane.height) as i32);
        if lane.shaded {
            e(area.draw(&Rectangle::new(
                [(0, y0), (f.width as i32, y1)],
                colour(LANE_BG).filled(),
            )))?;
        }
        e(area.draw(&PathElement::new(
            vec![(4, y1), (f.width as i32 - 4, y1)],
            colour(GRID),
        )))?;
    }
    let (ay0, ay1) = (f.plot_y0 as i32, f.plot_y1 as i32);
    for tick in &scene.axis {
        let x = tick.x.round() as i32;
        e(area.draw(&PathElement::new(vec![(x, ay0), (x, ay1)], colour(GRID))))?;
        e(area.draw(&PathElement::new(vec![(x, ay1), (x, ay1 + 5)], colour(INK))))?;
        draw_text(area, &tick.label)?;
    }
    e(area.draw(&PathElement::new(vec![(px0, ay1), (px1, ay1)], colour(INK))))?;
    e(area.draw(&PathElement::new(vec![(px0, ay0), (px0, ay1)], colour(INK))))?;
    for t in &scene.texts {
        draw_text(area, t)?;
    }
    for item in &scene.legend {
        legend_item(area, item)?;
    }
    Ok(())
}

/// A legend entry: the mark as the chart draws it, then its text.
fn legend_item(area: &Area, l: &LegendItem) -> Result<(), String> {
    let (x, y) = (l.x.round() as i32, l.y.round() as i32);
    match l.shape {
        LegendShape::Bar(c) => e(area.draw(&Rectangle::new(
            [(x, y - 5), (x + 16, y + 5)],
            colour(c).filled(),
        )))?,
        LegendShape::Tick => e(area.draw(&PathElement::new(
            vec![(x + 8, y - 6), (x + 8, y + 6)],
            colour(SPLIT),
        )))?,
        LegendShape::Split => dashed(area, x + 8, y - 8, y + 8)?,
        LegendShape::Skip => skip_triangle(area, x + 8, y, 4)?,
        LegendShape::Column => {
            for (i, h) in [4, 9, 6].into_iter().enumerate() {
                let cx = x + 2 + i as i32 * 5;
                e(area.draw(&Rectangle::new(
                    [(cx, y + 6 - h), (cx + 3, y + 6)],
                    colour(INK).filled(),
                )))?;
            }
        }
        LegendShape::Comm => comm_box(area, (x, y - 4), (x + 16, y + 4), role_colour(None))?,
        LegendShape::Exposed => e(area.draw(&Rectangle::new(
            [(x + 6, y - 5), (x + 10, y + 5)],
            colour(SKIP).filled(),
        )))?,
        LegendShape::Overflow => {
            e(area.draw(&Rectangle::new(
                [(x, y - 4), (x + 16, y + 4)],
                colour(GRID).filled(),
            )))?;
            for dx in [2, 8, 14] {
                e(area.draw(&PathElement::new(
                    vec![(x + dx - 2, y + 4), (x + dx + 2, y - 4)],
                    colour(INK),
                )))?;
            }
        }
    }
    draw_text(area, &l.text)
}

#[cfg(test)]
mod tests {
    use super::Fixed;

    /// `Fixed` writes what `{:.N}` writes: on halves (exact binary ties, and decimal ones that
    /// are not exact in binary), negatives, zero, the huge and the not finite, and on random
    /// positions of every magnitude the timeline draws.
    #[test]
    fn fixed_writes_what_core_fmt_writes() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            1.0625,
            0.0005,
            0.0015,
            2.0005,
            1e14 + 0.5,
            1e15,
            1e300,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            -1.25,
            5654.961,
            6320.25,
        ];
        for k in 0..20_000u32 {
            values.push(f64::from(k) / 2000.0);
            values.push(f64::from(k) / 16.0 + 0.0005);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
            values.push(unit * 10f64.powi((z % 13) as i32));
        }
        for v in values {
            for digits in 0..=4 {
                assert_eq!(
                    Fixed(v, digits).to_string(),
                    format!("{v:.digits$}"),
                    "{v:e} to {digits} digits"
                );
            }
        }
    }
}
