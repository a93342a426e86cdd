//! SVG rendering of a [`TimelineScene`] with plotters' SVG backend.
//!
//! The frame (title, lanes, axis, legend) is drawn on one backend; each countable mark (bucket
//! bar, split, skip) is drawn by plotters on its own backend and wrapped in a `<g>` carrying
//! `data-*` attributes and a `<title>` tooltip, so the output can be counted, clicked and
//! hovered. Every user-provided string is XML-escaped (plotters escapes text it draws; this
//! module escapes attributes and titles).

use super::palette::{Rgb, GRID, INK, LANE_BG, SKIP, SPLIT};
use super::scene::{TimelineScene, CHAR_W};
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
            c => out.push(c),
        }
    }
    out
}

fn text_style(size: f64, c: Rgb, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: ("sans-serif", size).into_font(),
        color: colour(c).to_backend_color(),
        pos: Pos::new(h, v),
    }
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

/// Renders the scene to a standalone SVG document.
pub fn render_svg(scene: &TimelineScene) -> String {
    let f = scene.frame;
    let size = (f.width, f.height);
    let frame = fragment(size, |area| draw_frame(area, scene));
    let mut out = String::with_capacity(frame.len() + 256 * (scene.bars.len() + scene.skips.len()));
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"commlens-timeline\" width=\"{}\" height=\"{}\" \
         viewBox=\"0 0 {} {}\" data-nodes=\"{}\" data-x0=\"{:.3}\" data-x1=\"{:.3}\" data-plot-x0=\"{}\" \
         data-plot-x1=\"{}\" data-bars=\"{}\" data-dense=\"{}\">\n",
        f.width,
        f.height,
        f.width,
        f.height,
        scene.node_count,
        scene.viewport.x0,
        scene.viewport.x1,
        f.plot_x0,
        f.plot_x1,
        scene.bars.len(),
        !scene.density.is_empty()
    );
    out.push_str("<g class=\"frame\">\n");
    out.push_str(&frame);
    out.push_str("\n</g>\n<g class=\"bars\">\n");
    for b in &scene.bars {
        let body = fragment(size, |area| {
            e(area.draw(&Rectangle::new(
                [
                    (b.x0.round() as i32, b.y as i32),
                    (b.x1.round() as i32, (b.y + b.h) as i32),
                ],
                colour(b.colour).mix(0.85).filled(),
            )))?;
            if !b.label.is_empty() {
                e(area.draw(&Text::new(
                    b.label.clone(),
                    (b.x0 as i32 + 4, (b.y + b.h / 2.0) as i32),
                    text_style(12.0, Rgb(255, 255, 255), HPos::Left, VPos::Center),
                )))?;
            }
            Ok(())
        });
        let _ = write!(
            out,
            "<g data-bucket=\"{}\" data-lane=\"{}\" data-role=\"{}\"{}><title>{}</title>\n{}\n</g>\n",
            xml_escape(&b.bucket_id),
            b.lane,
            xml_escape(b.role.as_deref().unwrap_or("unclassified")),
            b.singleton
                .as_ref()
                .map(|r| format!(" data-singleton=\"{}\"", xml_escape(r)))
                .unwrap_or_default(),
            xml_escape(&b.title),
            body
        );
    }
    for d in &scene.density {
        let body = fragment(size, |area| {
            e(area.draw(&Rectangle::new(
                [
                    (d.x0.round() as i32, d.y as i32),
                    (d.x1.round() as i32, (d.y + d.h) as i32),
                ],
                colour(d.colour).mix(d.opacity).filled(),
            )))
        });
        let _ = write!(
            out,
            "<g data-bucket-group=\"{}\" data-from=\"{}\" data-to=\"{}\" data-lane=\"{}\"><title>{} buckets cover graph positions {}–{}; click to zoom in</title>\n{}\n</g>\n",
            d.count, d.from, d.to, d.lane, d.count, d.from, d.to, body
        );
    }
    out.push_str("</g>\n<g class=\"ticks\" pointer-events=\"none\">\n");
    let ticks = fragment(size, |area| {
        for t in &scene.ticks {
            let x = t.x as i32;
            e(area.draw(&PathElement::new(
                vec![(x, t.y as i32 + 2), (x, (t.y + t.h) as i32 - 2)],
                colour(SPLIT).stroke_width(if t.count > 1 { 2 } else { 1 }),
            )))?;
        }
        Ok(())
    });
    out.push_str(&ticks);
    out.push_str("\n</g>\n<g class=\"splits\">\n");
    for s in &scene.splits {
        let body = fragment(size, |area| {
            let x = s.x.round() as i32;
            let (y0, y1) = (s.y as i32, (s.y + s.h) as i32);
            // dashed vertical line, plus a wide transparent hit area
            e(area.draw(&Rectangle::new(
                [(x - 3, y0), (x + 3, y1)],
                colour(SPLIT).mix(0.0).filled(),
            )))?;
            let mut y = y0;
            if s.grouped {
                e(area.draw(&PathElement::new(
                    vec![(x, y0), (x, y1)],
                    colour(SPLIT).mix(0.6).stroke_width(1),
                )))?;
                y = y1;
            }
            while y < y1 {
                e(area.draw(&PathElement::new(
                    vec![(x, y), (x, (y + 4).min(y1))],
                    colour(SPLIT).stroke_width(2),
                )))?;
                y += 7;
            }
            if s.show_label {
                e(area.draw(&Text::new(
                    s.reason.clone(),
                    (x + 3, y0 + 1),
                    text_style(12.0, SPLIT, HPos::Left, VPos::Top),
                )))?;
            }
            Ok(())
        });
        if s.grouped {
            let _ = write!(
                out,
                "<g data-split-group=\"{}\" data-count=\"{}\"><title>{}</title>\n{}\n</g>\n",
                xml_escape(&s.reason),
                s.count,
                xml_escape(&s.title),
                body
            );
            continue;
        }
        let _ = write!(
            out,
            "<g data-split=\"{}\" data-node=\"{}\" data-before=\"{}\" data-after=\"{}\"><title>{}</title>\n{}\n</g>\n",
            xml_escape(&s.reason),
            xml_escape(&s.node),
            xml_escape(s.before.as_deref().unwrap_or("")),
            xml_escape(s.after.as_deref().unwrap_or("")),
            xml_escape(&s.title),
            body
        );
    }
    out.push_str("</g>\n<g class=\"skips\">\n");
    for s in &scene.skips {
        let body = fragment(size, |area| {
            let (x, y) = (s.x.round() as i32, s.y as i32);
            let r = if s.grouped { 5 } else { 4 };
            e(area.draw(&Polygon::new(
                vec![(x - r, y - r), (x + r, y - r), (x, y + r)],
                colour(SKIP).filled(),
            )))?;
            if s.show_label {
                e(area.draw(&Text::new(
                    s.reason.clone(),
                    (x + 6, y + 8),
                    text_style(12.0, SKIP, HPos::Left, VPos::Top),
                )))?;
            }
            Ok(())
        });
        let attr = if s.count > 1 {
            "data-skip-group"
        } else {
            "data-skip"
        };
        let _ = write!(
            out,
            "<g {attr}=\"{}\" data-node=\"{}\" data-count=\"{}\"><title>{}</title>\n{}\n</g>\n",
            xml_escape(&s.reason),
            xml_escape(&s.node),
            s.count,
            xml_escape(&s.title),
            body
        );
    }
    out.push_str("</g>\n</svg>\n");
    out
}

fn draw_frame(area: &Area, scene: &TimelineScene) -> Result<(), String> {
    let f = scene.frame;
    e(area.fill(&WHITE))?;
    let title = if scene.title.is_empty() {
        format!("bucket timeline · {} nodes", scene.node_count)
    } else {
        format!("{} · {} nodes", scene.title, scene.node_count)
    };
    e(area.draw(&Text::new(
        title,
        (8, 8),
        text_style(16.0, INK, HPos::Left, VPos::Top),
    )))?;
    let range = format!(
        "graph positions {:.0}–{:.0}",
        scene.viewport.x0, scene.viewport.x1
    );
    e(area.draw(&Text::new(
        range,
        (f.width as i32 - 8, 8),
        text_style(13.0, INK, HPos::Right, VPos::Top),
    )))?;
    let (px0, px1) = (f.plot_x0 as i32, f.plot_x1 as i32);
    for (i, lane) in scene.lanes.iter().enumerate() {
        let (y0, y1) = (lane.y as i32, (lane.y + lane.height) as i32);
        if i % 2 == 0 {
            e(area.draw(&Rectangle::new(
                [(px0, y0), (px1, y1)],
                colour(LANE_BG).filled(),
            )))?;
        }
        e(area.draw(&PathElement::new(vec![(4, y1), (px1, y1)], colour(GRID))))?;
        e(area.draw(&Text::new(
            lane.label.clone(),
            (8, (lane.y + lane.height / 2.0) as i32),
            text_style(13.0, INK, HPos::Left, VPos::Center),
        )))?;
    }
    let (ay0, ay1) = (f.plot_y0 as i32, f.plot_y1 as i32);
    for &(x, pos) in &scene.axis {
        let x = x.round() as i32;
        e(area.draw(&PathElement::new(vec![(x, ay0), (x, ay1)], colour(GRID))))?;
        e(area.draw(&PathElement::new(vec![(x, ay1), (x, ay1 + 5)], colour(INK))))?;
        e(area.draw(&Text::new(
            format!("{pos}"),
            (x, ay1 + 7),
            text_style(12.0, INK, HPos::Center, VPos::Top),
        )))?;
    }
    e(area.draw(&PathElement::new(vec![(px0, ay1), (px1, ay1)], colour(INK))))?;
    e(area.draw(&PathElement::new(vec![(px0, ay0), (px0, ay1)], colour(INK))))?;
    e(area.draw(&Text::new(
        "graph position (node index)".to_string(),
        (px1, ay1 + 24),
        text_style(11.0, INK, HPos::Right, VPos::Top),
    )))?;
    // Legend.
    let mut x = 8i32;
    let y = f.legend_y as i32;
    for l in &scene.legend {
        let c = colour(l.colour);
        match l.shape {
            "bar" => e(area.draw(&Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled())))?,
            "tick" => e(area.draw(&PathElement::new(vec![(x + 8, y - 6), (x + 8, y + 6)], c)))?,
            "split" => e(area.draw(&PathElement::new(
                vec![(x + 8, y - 7), (x + 8, y + 7)],
                c.stroke_width(2),
            )))?,
            _ => e(area.draw(&Polygon::new(
                vec![(x + 4, y - 4), (x + 12, y - 4), (x + 8, y + 4)],
                c.filled(),
            )))?,
        }
        e(area.draw(&Text::new(
            l.label.clone(),
            (x + 20, y),
            text_style(12.0, INK, HPos::Left, VPos::Center),
        )))?;
        x += 20 + (l.label.chars().count() as f64 * CHAR_W) as i32 + 18;
    }
    Ok(())
}
