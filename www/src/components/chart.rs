//! The bucket timeline: the core's scene drawn as SVG, with zoom and pan by wheel, drag,
//! keys and buttons, marks that can be clicked or focused (Enter opens the detail), and a
//! width that follows its box.
//!
//! The chart owns its DOM and listeners through [`NodeRef`]s (no element ids), and its
//! interaction state (a drag, the embed's armed wheel, its measured width). The view itself
//! is a prop with a callback (`viewport`, `on_view`): two charts given the same pair zoom and
//! pan together, as a compare view of two plans needs.
//!
//! In an embed (`embed`), the wheel scrolls the host page unless the reader has clicked into
//! the chart (or holds Ctrl), as map embeds do: no scroll trap.

use crate::model::Shared;
use crate::url_state::Filter;
use commlens::planner::Action;
use commlens::timeline::{
    build_scene_with, render_svg, ExposedIn, Marked, SceneOptions, TimelineInput, TimelineScene,
    Viewport,
};
use gloo_events::{EventListener, EventListenerOptions};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, KeyboardEvent, MouseEvent, WheelEvent};
use yew::prelude::*;

/// What a click or Enter on a mark asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    /// A bucket, by index in the timeline's buckets.
    Bucket(usize),
    /// A node, by name (a split's or skip's collective).
    Node(String),
}

#[derive(Properties, PartialEq)]
pub struct ChartProps {
    pub timeline: Shared<TimelineInput>,
    /// Where compute waits for communication (the time estimates), marked on a lane.
    #[prop_or_default]
    pub exposed: Option<Rc<[ExposedIn]>>,
    /// Per bucket, its estimated time and algorithm, for its tooltip.
    #[prop_or_default]
    pub bucket_times: Option<Rc<[crate::model::BucketTime]>>,
    /// A time axis: the estimated time at each graph position (see `SceneOptions::time`).
    #[prop_or_default]
    pub time: Option<Rc<[f64]>>,
    /// Buckets and decisions drawn with `data-marked` (a comparison's changes).
    #[prop_or_default]
    pub marked: Option<Rc<Marked>>,
    /// `None`: the whole graph.
    pub viewport: Option<Viewport>,
    /// A bucket always drawn as a bar (the selection).
    pub focus: Option<usize>,
    /// The selected bucket's id, outlined.
    pub selected: Option<Rc<str>>,
    /// The overview's filter: what it excludes is dimmed.
    pub filter: Option<Filter>,
    /// A new view; `true` when a gesture ends (the address bar follows then).
    pub on_view: Callback<(Option<Viewport>, bool)>,
    pub on_pick: Callback<Pick>,
    #[prop_or_default]
    pub embed: bool,
    /// The width to lay out at before the chart's box is measured (0: wait for it). A good
    /// guess draws the first view once; a wrong one is corrected when the box is measured.
    #[prop_or_default]
    pub width_hint: u32,
    /// An id for the drawing's element (the app's one chart has `chart`).
    #[prop_or_default]
    pub dom_id: Option<AttrValue>,
    /// The chart's accessible name and heading.
    #[prop_or(AttrValue::Static("Bucket timeline"))]
    pub title: AttrValue,
}

/// A drag in progress.
struct Drag {
    x: f64,
    start: Viewport,
    current: Viewport,
    moved: bool,
    target: Option<Element>,
}

/// What the listeners (attached once) read: the latest props and scene.
#[derive(Default)]
struct Live {
    scene: Option<Rc<(TimelineScene, AttrValue)>>,
    timeline: Option<Shared<TimelineInput>>,
    on_view: Callback<(Option<Viewport>, bool)>,
    on_pick: Callback<Pick>,
    embed: bool,
    /// Embed: the wheel zooms (the reader clicked into the chart).
    armed: bool,
    drag: Option<Drag>,
    drag_listeners: Vec<EventListener>,
    /// A pending commit of the view after wheel zooming.
    commit_timer: Option<i32>,
    /// The mark to focus again after the drawing is replaced (keyboard users keep their place).
    refocus: Option<(String, String)>,
    show_hint: Callback<()>,
    /// The element the drawing is in.
    host: Option<Element>,
}

thread_local! {
    static NEXT_ID: RefCell<u32> = const { RefCell::new(0) };
}

fn next_id() -> u32 {
    NEXT_ID.with(|n| {
        let mut n = n.borrow_mut();
        *n += 1;
        *n
    })
}

const MARKS: &str = "[data-bucket],[data-split],[data-skip],[data-skip-group],[data-split-group],[data-bucket-group],[data-overflow],[data-comm],[data-comm-group],[data-exposed]";

#[function_component(Chart)]
pub fn chart(props: &ChartProps) -> Html {
    let host = use_node_ref();
    let id = use_state(next_id);
    let width = use_state(|| props.width_hint);
    let hint = use_state(|| false);
    let live = use_mut_ref(Live::default);

    // Laid out once the chart's width is known (its first render has no box yet).
    let scene = use_memo(
        (
            props.timeline.clone(),
            props.exposed.clone(),
            props.bucket_times.clone(),
            props.time.clone(),
            props.viewport,
            *width,
            props.focus,
            props.marked.clone(),
        ),
        |(timeline, exposed, bucket_times, time, viewport, width, focus, marked)| {
            if *width == 0 {
                return None;
            }
            let vp = viewport.unwrap_or_else(|| Viewport::full(timeline.node_count));
            let scene = build_scene_with(
                timeline,
                &SceneOptions {
                    viewport: vp,
                    width: (*width).max(commlens::timeline::scene::MIN_WIDTH),
                    focus: *focus,
                    exposed: exposed.clone().unwrap_or_else(|| Rc::from(Vec::new())),
                    bucket_times: bucket_times.clone().unwrap_or_else(|| Rc::from(Vec::new())),
                    time: time.clone(),
                    marked: marked.clone(),
                },
            );
            let svg = AttrValue::from(render_svg(&scene));
            Some(Rc::new((scene, svg)))
        },
    );
    {
        let hint = hint.clone();
        let mut l = live.borrow_mut();
        l.scene = (*scene).clone();
        l.timeline = Some(props.timeline.clone());
        l.on_view = props.on_view.clone();
        l.on_pick = props.on_pick.clone();
        l.embed = props.embed;
        l.show_hint = Callback::from(move |()| {
            if !*hint {
                hint.set(true);
                let hint = hint.clone();
                crate::browser::set_timeout(1800, move || hint.set(false));
            }
        });
    }

    // Listeners and the width, once.
    {
        let host = host.clone();
        let live = live.clone();
        let width = width.clone();
        use_effect_with((), move |_| {
            let mut guards: Vec<EventListener> = Vec::new();
            let mut observer = None;
            if let Some(el) = host.cast::<HtmlElement>() {
                live.borrow_mut().host = Some(el.clone().into());
                guards.push(listen_wheel(&el, live.clone()));
                guards.push(listen_mousedown(&el, live.clone()));
                guards.push(listen_keys(&el, live.clone()));
                {
                    let live = live.clone();
                    guards.push(EventListener::new(&el, "mouseleave", move |_| {
                        live.borrow_mut().armed = false;
                    }));
                }
                {
                    let live = live.clone();
                    let el2 = el.clone();
                    guards.push(EventListener::new(&el, "focusout", move |e| {
                        // Disarm when the focus leaves the chart altogether.
                        let inside = e
                            .dyn_ref::<web_sys::FocusEvent>()
                            .and_then(|f| f.related_target())
                            .and_then(|t| t.dyn_into::<web_sys::Node>().ok())
                            .is_some_and(|n| el2.contains(Some(&n)));
                        if !inside {
                            live.borrow_mut().armed = false;
                        }
                    }));
                }
                // The observer reports the first width after the browser's own layout, before
                // the first paint; reading it here would force a layout of the whole page in
                // the middle of the load (110 ms of a 100k-node link's load in a profile).
                observer = observe_width(&el, width.clone());
                if observer.is_none() {
                    let measured = el.client_width().max(0) as u32;
                    if measured.abs_diff(*width) > 1 {
                        width.set(measured);
                    }
                }
            }
            move || {
                drop(guards);
                if let Some((o, _cb)) = observer {
                    o.disconnect();
                }
                live.borrow_mut().drag_listeners.clear();
            }
        });
    }

    // Keyboard users keep their place when the drawing is replaced.
    {
        let host = host.clone();
        let live = live.clone();
        let svg = scene.as_ref().as_ref().map(|s| s.1.clone());
        use_effect_with(svg, move |_| {
            let refocus = live.borrow_mut().refocus.take();
            if let (Some((attr, value)), Some(el)) = (refocus, host.cast::<Element>()) {
                if let Ok(list) = el.query_selector_all(&format!("[{attr}]")) {
                    for i in 0..list.length() {
                        let Some(node) = list.item(i) else { continue };
                        let Ok(mark) = node.dyn_into::<web_sys::SvgElement>() else {
                            continue;
                        };
                        if mark.get_attribute(&attr).as_deref() == Some(value.as_str()) {
                            let _ = mark.focus();
                            break;
                        }
                    }
                }
            }
        });
    }

    let class = format!("chart-{}", *id);
    let css = highlight_css(&class, props.selected.as_deref(), props.filter.as_ref());
    let n = props.timeline.node_count;
    let vp = scene
        .as_ref()
        .as_ref()
        .map(|s| s.0.viewport)
        .unwrap_or_else(|| {
            props
                .viewport
                .unwrap_or_else(|| Viewport::full(n))
                .clamped(n)
        });
    let zoom = {
        let on_view = props.on_view.clone();
        move |factor: f64| {
            let on_view = on_view.clone();
            Callback::from(move |_: MouseEvent| {
                let at = (vp.x0 + vp.x1) / 2.0;
                on_view.emit((Some(vp.zoom(factor, at, n)), true));
            })
        }
    };
    let pan = {
        let on_view = props.on_view.clone();
        move |frac: f64| {
            let on_view = on_view.clone();
            Callback::from(move |_: MouseEvent| {
                on_view.emit((Some(vp.pan((vp.x1 - vp.x0) * frac, n)), true));
            })
        }
    };
    let reset = {
        let on_view = props.on_view.clone();
        Callback::from(move |_: MouseEvent| on_view.emit((None, true)))
    };
    let help = if props.embed {
        "click the chart, then wheel to zoom (or hold Ctrl); drag to pan; Tab to a bar and Enter for details"
    } else {
        "wheel or +/− to zoom, drag or ←/→ to pan, Tab to a bar and Enter for details"
    };
    let drawn = scene.as_ref().as_ref().map(|s| s.1.clone());
    // The app's one chart keeps the toolbar ids links and scripts know; other instances
    // (a compared plan's) have none.
    let tool_id = |name: &'static str| props.dom_id.as_ref().map(|_| AttrValue::Static(name));
    html! {
        <section class={classes!("timeline", props.embed.then_some("embedded"))} aria-label={props.title.clone()}>
            <div class="chart-tools">
                if !props.embed { <h2>{ props.title.clone() }</h2> }
                <button id={tool_id("zoom-in")} class="zoom-in" aria-label="Zoom in" onclick={zoom(0.5)}>{"+"}</button>
                <button id={tool_id("zoom-out")} class="zoom-out" aria-label="Zoom out" onclick={zoom(2.0)}>{"−"}</button>
                <button id={tool_id("pan-left")} class="pan-left" aria-label="Pan left" onclick={pan(-0.25)}>{"◀"}</button>
                <button id={tool_id("pan-right")} class="pan-right" aria-label="Pan right" onclick={pan(0.25)}>{"▶"}</button>
                <button id={tool_id("zoom-reset")} class="zoom-reset" onclick={reset}>{"Whole graph"}</button>
                <span class="muted">{ help }</span>
            </div>
            <style>{ css }</style>
            <div class="chart-host">
                <div ref={host} id={props.dom_id.clone()} class={classes!("chart", class)} tabindex="0" role="group"
                    aria-roledescription="timeline"
                    aria-label={format!("{}: use + and − to zoom, the arrow keys to pan, Tab to reach each mark, Enter to open it", props.title)}
                    data-armed={live.borrow().armed.to_string()}>
                    if let Some(svg) = drawn { { Html::from_html_unchecked(svg) } }
                    if *hint {
                        <div class="wheel-hint" role="status">{"Click the chart (or hold Ctrl) to zoom with the wheel"}</div>
                    }
                </div>
            </div>
        </section>
    }
}

/// A resize observer and the callback it holds (dropped together).
type Observer = (
    web_sys::ResizeObserver,
    wasm_bindgen::closure::Closure<dyn FnMut(js_sys::Array)>,
);

/// Watches the chart's box; the drawing is laid out again at its new width.
fn observe_width(el: &HtmlElement, width: UseStateHandle<u32>) -> Option<Observer> {
    let cb = wasm_bindgen::closure::Closure::<dyn FnMut(js_sys::Array)>::new(
        move |entries: js_sys::Array| {
            let Some(entry) = entries
                .get(0)
                .dyn_into::<web_sys::ResizeObserverEntry>()
                .ok()
            else {
                return;
            };
            let w = entry.content_rect().width().floor().max(0.0) as u32;
            if w > 0 && w.abs_diff(*width) > 1 {
                width.set(w);
            }
        },
    );
    let observer = web_sys::ResizeObserver::new(cb.as_ref().unchecked_ref()).ok()?;
    observer.observe(el);
    Some((observer, cb))
}

/// The drawn SVG's box, and the scene's pixels per client pixel.
fn svg_box(live: &Live) -> Option<(web_sys::DomRect, f64)> {
    let scene = live.scene.as_ref()?;
    let svg = live.host.as_ref()?.query_selector("svg").ok()??;
    let r = svg.get_bounding_client_rect();
    let scale = scene.0.frame.width as f64 / r.width().max(1.0);
    Some((r, scale))
}

/// The graph position under a client x.
fn position_at(live: &Live, client_x: f64) -> Option<f64> {
    let scene = &live.scene.as_ref()?.0;
    let (r, scale) = svg_box(live)?;
    let f = scene.frame;
    let px = (client_x - r.left()) * scale;
    let _ = f;
    Some(scene.position_at(px))
}

/// Graph positions per client pixel at the current zoom.
fn positions_per_px(live: &Live) -> f64 {
    let Some(scene) = live.scene.as_ref().map(|s| &s.0) else {
        return 0.0;
    };
    let scale = svg_box(live).map_or(1.0, |(_, s)| s);
    let f = scene.frame;
    scale * (scene.viewport.x1 - scene.viewport.x0) / (f.plot_x1 - f.plot_x0)
}

fn node_count(live: &Live) -> u32 {
    live.timeline.as_ref().map_or(1, |t| t.node_count)
}

/// Emits a view now and commits it a moment after the last wheel step (the address bar is
/// not rewritten on every step).
fn view_then_commit(live: &Rc<RefCell<Live>>, vp: Viewport) {
    let mut l = live.borrow_mut();
    l.on_view.emit((Some(vp), false));
    if let Some(t) = l.commit_timer.take() {
        crate::browser::cancel_timeout(t);
    }
    let on_view = l.on_view.clone();
    l.commit_timer = crate::browser::set_timeout(250, move || on_view.emit((Some(vp), true)));
}

fn listen_wheel(el: &HtmlElement, live: Rc<RefCell<Live>>) -> EventListener {
    EventListener::new_with_options(
        el,
        "wheel",
        EventListenerOptions::enable_prevent_default(),
        move |e| {
            let Some(e) = e.dyn_ref::<WheelEvent>() else {
                return;
            };
            let (embed, armed) = {
                let l = live.borrow();
                (l.embed, l.armed)
            };
            if embed && !armed && !e.ctrl_key() {
                // The page scrolls; say how to zoom.
                let hint = live.borrow().show_hint.clone();
                hint.emit(());
                return;
            }
            e.prevent_default();
            let next = {
                let l = live.borrow();
                let Some(scene) = l.scene.as_ref() else {
                    return;
                };
                let vp = scene.0.viewport;
                let at = position_at(&l, e.client_x() as f64).unwrap_or((vp.x0 + vp.x1) / 2.0);
                let factor = if e.delta_y() > 0.0 { 1.25 } else { 0.8 };
                vp.zoom(factor, at, node_count(&l))
            };
            view_then_commit(&live, next);
        },
    )
}

fn listen_mousedown(el: &HtmlElement, live: Rc<RefCell<Live>>) -> EventListener {
    EventListener::new(el, "mousedown", move |e| {
        let Some(e) = e.dyn_ref::<MouseEvent>() else {
            return;
        };
        if e.button() != 0 {
            return;
        }
        // The press focuses what it lands on, as browsers do (the chart, or the mark, which
        // shows a focus ring only when reached by keyboard); the chart's text is not
        // selectable, so a drag selects nothing.
        let target = e.target().and_then(|t| t.dyn_into::<Element>().ok());
        let start = {
            let mut l = live.borrow_mut();
            l.armed = true;
            let Some(scene) = l.scene.as_ref() else {
                return;
            };
            scene.0.viewport
        };
        live.borrow_mut().drag = Some(Drag {
            x: e.client_x() as f64,
            start,
            current: start,
            moved: false,
            target,
        });
        // Move and release are followed on the whole window: releasing outside the chart
        // still ends the drag, and the address bar follows the view.
        let window = crate::browser::window();
        let move_live = live.clone();
        let on_move = EventListener::new(&window, "mousemove", move |e| {
            let Some(e) = e.dyn_ref::<MouseEvent>() else {
                return;
            };
            let next = {
                let l = move_live.borrow();
                let Some(d) = l.drag.as_ref() else { return };
                let dx = e.client_x() as f64 - d.x;
                if !d.moved && dx.abs() < 4.0 {
                    return;
                }
                d.start.pan(-dx * positions_per_px(&l), node_count(&l))
            };
            let on_view = {
                let mut l = move_live.borrow_mut();
                if let Some(d) = l.drag.as_mut() {
                    d.moved = true;
                    d.current = next;
                }
                l.on_view.clone()
            };
            on_view.emit((Some(next), false));
        });
        let up_live = live.clone();
        let on_up = EventListener::new(&window, "mouseup", move |e| {
            let client_x = e
                .dyn_ref::<MouseEvent>()
                .map_or(0.0, |m| m.client_x() as f64);
            let (drag, on_view) = {
                let mut l = up_live.borrow_mut();
                let drag = l.drag.take();
                (drag, l.on_view.clone())
            };
            // Listeners go after this handler returns (they cannot drop themselves).
            let later = up_live.clone();
            crate::browser::set_timeout(0, move || later.borrow_mut().drag_listeners.clear());
            let Some(d) = drag else { return };
            if d.moved {
                on_view.emit((Some(d.current), true));
            } else if let Some(t) = d.target {
                activate(&up_live, &t, client_x, false);
            }
        });
        live.borrow_mut().drag_listeners = vec![on_move, on_up];
    })
}

fn listen_keys(el: &HtmlElement, live: Rc<RefCell<Live>>) -> EventListener {
    EventListener::new_with_options(
        el,
        "keydown",
        EventListenerOptions::enable_prevent_default(),
        move |e| {
            let Some(e) = e.dyn_ref::<KeyboardEvent>() else {
                return;
            };
            if e.ctrl_key() || e.meta_key() || e.alt_key() {
                return;
            }
            let key = e.key();
            if key == "Escape" {
                live.borrow_mut().armed = false;
                return;
            }
            if key == "Enter" || key == " " {
                let target = e.target().and_then(|t| t.dyn_into::<Element>().ok());
                if let Some(t) = target {
                    if t.closest(MARKS).ok().flatten().is_some() {
                        e.prevent_default();
                        activate(&live, &t, f64::NAN, true);
                    }
                }
                return;
            }
            let next = {
                let l = live.borrow();
                let Some(scene) = l.scene.as_ref() else {
                    return;
                };
                let vp = scene.0.viewport;
                let n = node_count(&l);
                let mid = (vp.x0 + vp.x1) / 2.0;
                match key.as_str() {
                    "+" | "=" => Some(Some(vp.zoom(0.5, mid, n))),
                    "-" | "_" => Some(Some(vp.zoom(2.0, mid, n))),
                    "ArrowLeft" => Some(Some(vp.pan(-(vp.x1 - vp.x0) * 0.25, n))),
                    "ArrowRight" => Some(Some(vp.pan((vp.x1 - vp.x0) * 0.25, n))),
                    "0" | "Home" => Some(None),
                    _ => None,
                }
            };
            if let Some(vp) = next {
                e.prevent_default();
                let on_view = live.borrow().on_view.clone();
                on_view.emit((vp, true));
            }
        },
    )
}

/// A click or Enter on a mark: a bar, split or skip opens its detail; a column zooms to the
/// graph range it counts; merged marks and overflow zoom in around themselves.
fn activate(live: &Rc<RefCell<Live>>, target: &Element, client_x: f64, keyboard: bool) {
    let Some(hit) = target.closest(MARKS).ok().flatten() else {
        return;
    };
    let (scene, timeline, on_view, on_pick) = {
        let l = live.borrow();
        let (Some(scene), Some(timeline)) = (l.scene.clone(), l.timeline.clone()) else {
            return;
        };
        (scene, timeline, l.on_view.clone(), l.on_pick.clone())
    };
    let n = timeline.node_count;
    let vp = scene.0.viewport;
    let range = |el: &Element| -> Option<(f64, f64)> {
        let from = el.get_attribute("data-from")?.parse::<f64>().ok()?;
        let to = el.get_attribute("data-to")?.parse::<f64>().ok()?;
        Some((from, to))
    };
    if hit.has_attribute("data-bucket-group") || hit.has_attribute("data-comm-group") {
        if let Some((from, to)) = range(&hit) {
            on_view.emit((Some(Viewport { x0: from, x1: to }.clamped(n)), true));
        }
        return;
    }
    if hit.has_attribute("data-overflow")
        || hit.has_attribute("data-split-group")
        || hit.has_attribute("data-skip-group")
    {
        let at = if client_x.is_finite() {
            position_at(&live.borrow(), client_x)
        } else {
            None
        }
        .or_else(|| range(&hit).map(|(a, b)| (a + b) / 2.0))
        .unwrap_or((vp.x0 + vp.x1) / 2.0);
        on_view.emit((Some(vp.zoom(0.25, at, n)), true));
        return;
    }
    let remember = |attr: &str| {
        if keyboard {
            if let Some(v) = hit.get_attribute(attr) {
                live.borrow_mut().refocus = Some((attr.to_string(), v));
            }
        }
    };
    if let Some(id) = hit.get_attribute("data-bucket") {
        if let Some(i) = timeline.buckets.iter().position(|b| *b.id == *id) {
            remember("data-bucket");
            on_pick.emit(Pick::Bucket(i));
        }
    } else if let Some(name) = hit.get_attribute("data-node") {
        remember("data-mark");
        on_pick.emit(Pick::Node(name));
    }
}

/// CSS, scoped to one chart, that outlines the selected bucket and dims what the overview's
/// filter leaves out.
fn highlight_css(class: &str, selected: Option<&str>, filter: Option<&Filter>) -> String {
    let q = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('<', "\\3c ")
    };
    let mut css = String::new();
    if let Some(b) = selected {
        css.push_str(&format!(
            ".{class} [data-bucket=\"{}\"] rect {{ stroke: #111827; stroke-width: 3px; }}\n",
            q(b)
        ));
    }
    match filter {
        Some(Filter::Role(r)) => css.push_str(&format!(
            ".{class} [data-bucket]:not([data-role=\"{}\"]) {{ opacity: .25; }}\n",
            q(r)
        )),
        Some(Filter::Decision(Action::Split, r)) => css.push_str(&format!(
            ".{class} [data-split]:not([data-split=\"{}\"]) {{ opacity: .2; }}\n",
            r.as_str()
        )),
        Some(Filter::Decision(Action::Skip, r)) => css.push_str(&format!(
            ".{class} [data-skip]:not([data-skip=\"{}\"]) {{ opacity: .2; }}\n",
            r.as_str()
        )),
        Some(Filter::Decision(Action::Singleton, _)) => css.push_str(&format!(
            ".{class} [data-bucket]:not([data-singleton]) {{ opacity: .25; }}\n"
        )),
        _ => {}
    }
    css
}
