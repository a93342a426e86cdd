//! The timeline's layout promises, checked on the conformance corpus, the built-in examples
//! and synthetic graphs at several widths and zooms: bars never overlap, nothing in view is
//! dropped, every split and skip is labelled, no two texts overlap and none leaves the
//! drawing, columns agree with the zoom they lead to; and each split's cause is the node the
//! reference's scan stops at.

mod common;

use commlens::graph::Graph;
use commlens::planner::{Action, BucketPlan, Reason};
use commlens::timeline::scene::{TextMark, MAX_BARS};
use commlens::timeline::{
    build_scene, build_scene_with, render_svg, Collectives, SceneOptions, TimelineInput,
    TimelineScene, Viewport,
};
use std::path::{Path, PathBuf};

fn cases() -> PathBuf {
    commlens_testkit::require_shared("conformance/cases")
}

/// A graph planned with `args` (or its own), and its timeline input.
fn planned(dump: &[u8], args: Option<&serde_json::Value>) -> (Graph, BucketPlan, TimelineInput) {
    let graph = Graph::new(commlens::read_dump(dump).expect("dump"));
    let args = args.map(|a| a.as_object().expect("args object").clone());
    let plan =
        commlens::plan(&graph, &commlens::resolve_args(&graph, args.as_ref())).expect("plan");
    let collectives = Collectives::classify(&graph);
    let input = commlens::timeline::plan_timeline(&graph, &plan, &collectives, "test");
    (graph, plan, input)
}

fn case_input(dir: &Path) -> (Graph, BucketPlan, TimelineInput) {
    let args = dir
        .join("args.json")
        .is_file()
        .then(|| common::json(&dir.join("args.json")));
    planned(&common::read(&dir.join("dump.json")), args.as_ref())
}

/// Every plan case of the corpus (the `err_*` cases have no plan).
fn plan_cases() -> Vec<PathBuf> {
    common::case_dirs(&cases())
        .into_iter()
        .filter(|d| {
            d.join("plan.json").is_file()
                && common::json(&d.join("plan.json")).get("buckets").is_some()
        })
        .collect()
}

fn llama(cap: Option<u64>) -> TimelineInput {
    let bytes = common::read(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/llama_fsdp.json.gz"),
    );
    let args = cap.map(|c| serde_json::json!({"policy": {"cap_bytes": c}}));
    planned(&bytes, args.as_ref()).2
}

fn synth(nodes: usize) -> TimelineInput {
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(nodes));
    planned(text.as_bytes(), None).2
}

/// Views worth checking: the whole graph and a few zooms, at a wide and a narrow width.
fn views(input: &TimelineInput) -> Vec<(Viewport, u32)> {
    let n = input.node_count as f64;
    let mut out = Vec::new();
    for width in [1400, 700, 360] {
        out.push((Viewport::full(input.node_count), width));
        for (a, b) in [(0.0, 0.1), (0.45, 0.55), (0.3, 0.32), (0.9, 1.0)] {
            out.push((
                Viewport {
                    x0: n * a,
                    x1: n * b,
                },
                width,
            ));
        }
    }
    out
}

/// The buckets whose window or first launch meets the view, counted from the input alone.
fn expected_in_view(input: &TimelineInput, vp: Viewport) -> usize {
    let vp = vp.clamped(input.node_count);
    input
        .buckets
        .iter()
        .filter(|b| {
            let (s, e) = b.window();
            let first = b.members.iter().map(|m| m.node).min().unwrap_or(s) as f64;
            let window = (e as f64 + 1.0) > vp.x0 && (s as f64) < vp.x1;
            let launch = first + 0.5 >= vp.x0 && first + 0.5 < vp.x1;
            window || launch
        })
        .count()
}

fn check_scene(what: &str, input: &TimelineInput, scene: &TimelineScene) {
    let w = scene.frame.width as f64;
    let h = scene.frame.height as f64;
    // Bars never overlap, and stay in the plot.
    for (i, a) in scene.bars.iter().enumerate() {
        assert!(
            a.x0 >= scene.frame.plot_x0 - 0.01 && a.x1 <= scene.frame.plot_x1 + 0.01,
            "{what}: bar {} leaves the plot",
            a.bucket_id
        );
        for b in &scene.bars[i + 1..] {
            let apart = a.x1 <= b.x0 || b.x1 <= a.x0 || a.y + a.h <= b.y || b.y + b.h <= a.y;
            assert!(
                apart,
                "{what}: bars {} and {} overlap",
                a.bucket_id, b.bucket_id
            );
        }
    }
    // Nothing in view is dropped.
    let expected = expected_in_view(input, scene.viewport);
    assert_eq!(scene.in_view, expected, "{what}: buckets in view");
    assert_eq!(
        scene.bars.len() + scene.not_drawn,
        scene.in_view,
        "{what}: drawn + counted"
    );
    if !scene.dense {
        let overflow: usize = {
            // Each overflowed window is counted in every run it covers; count windows once by
            // the lane notes instead: bars + overflow == in view.
            scene.in_view - scene.bars.len()
        };
        assert!(
            overflow == 0 || !scene.overflow.is_empty(),
            "{what}: {overflow} windows neither drawn nor counted"
        );
    } else {
        assert!(
            !scene.columns.is_empty() || scene.in_view == 0,
            "{what}: a dense view without columns"
        );
    }
    // Every split and skip is labelled, by itself or by the label that counts it.
    for s in &scene.splits {
        if s.grouped {
            continue;
        }
        let named = s.label.is_some()
            || s.labelled_by
                .is_some_and(|i| scene.splits[i].label.is_some());
        assert!(named, "{what}: split before {} has no label", s.node);
    }
    for s in &scene.skips {
        if s.grouped {
            continue;
        }
        let named = s.label.is_some()
            || s.labelled_by
                .is_some_and(|i| scene.skips[i].label.is_some());
        assert!(named, "{what}: skip of {} has no label", s.node);
    }
    // No text overlaps another or leaves the drawing.
    let texts: Vec<&TextMark> = scene.all_texts().filter(|t| !t.text.is_empty()).collect();
    let boxes: Vec<(f64, f64, f64, f64)> = texts
        .iter()
        .map(|t| {
            let (x0, x1) = t.span();
            (x0, x1, t.y, t.y + t.size * 1.15)
        })
        .collect();
    for (i, (t, b)) in texts.iter().zip(&boxes).enumerate() {
        assert!(
            b.0 >= -0.5 && b.1 <= w + 0.5 && b.2 >= -0.5 && b.3 <= h + 0.5,
            "{what}: {:?} leaves the {w}×{h} drawing",
            t.text
        );
        for (u, c) in texts[i + 1..].iter().zip(&boxes[i + 1..]) {
            let apart = b.1 <= c.0 || c.1 <= b.0 || b.3 <= c.2 || c.3 <= b.2;
            assert!(apart, "{what}: {:?} overlaps {:?}", t.text, u.text);
        }
    }
    // Bar labels sit inside their bar (or right of it, clear of the row's other bars) and
    // contrast with what is under them.
    for b in &scene.bars {
        if let Some(l) = &b.label {
            let (x0, x1) = l.span();
            if x0 < b.x1 {
                assert!(
                    x0 >= b.x0 && x1 <= b.x1,
                    "{what}: label {:?} spills out of its bar",
                    l.text
                );
                let ratio = commlens::timeline::palette::contrast(l.colour, b.colour);
                assert!(
                    ratio >= 4.5,
                    "{what}: label {:?} contrast {ratio:.2}",
                    l.text
                );
            }
            assert!(
                l.y >= b.y && l.y + l.size <= b.y + b.h + 0.5,
                "{what}: label {:?} leaves its row",
                l.text
            );
        }
    }
}

#[test]
fn every_layout_promise_holds_on_the_corpus() {
    let mut checked = 0;
    for dir in plan_cases() {
        let (_, _, input) = case_input(&dir);
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        for (vp, width) in views(&input) {
            let scene = build_scene(&input, vp, width);
            check_scene(&format!("{name} {vp:?} {width}px"), &input, &scene);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} scenes checked");
}

#[test]
fn every_layout_promise_holds_on_the_examples_and_at_scale() {
    for (name, input) in [
        ("llama", llama(None)),
        ("llama cap=6000", llama(Some(6000))),
        ("llama cap=20000", llama(Some(20000))),
        ("synth 12k", synth(12_000)),
    ] {
        for (vp, width) in views(&input) {
            let scene = build_scene(&input, vp, width);
            check_scene(&format!("{name} {vp:?} {width}px"), &input, &scene);
        }
    }
}

/// The case: Llama with cap_bytes=6000 needs more than 10 rows in a lane; all 50
/// buckets are bars, none overlapping (checked above), none aggregated.
#[test]
fn a_lane_grows_until_every_bucket_of_the_llama_example_is_a_bar() {
    let input = llama(Some(6000));
    assert_eq!(input.buckets.len(), 50);
    let scene = build_scene(&input, Viewport::full(input.node_count), 1400);
    assert_eq!(scene.bars.len(), 50);
    assert!(scene.overflow.is_empty());
    assert!(
        scene.lanes.iter().any(|l| l.rows > 10),
        "some lane needs more than 10 rows"
    );
}

#[test]
fn counts_match_the_reference_report() {
    for name in [
        "mlp_capacity",
        "llama2_attention_ffn_groups",
        "mlp_unmatched_paths",
        "llama2_capacity",
    ] {
        let dir = cases().join(name);
        let report = common::json(&dir.join("plan.json"));
        let (_, _, input) = case_input(&dir);
        let svg = render_svg(&build_scene(&input, Viewport::full(input.node_count), 1400));
        let count = |action: &str| {
            report["decisions"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["action"] == action)
                .count()
        };
        assert_eq!(
            svg.matches("<g data-bucket=").count(),
            report["buckets"].as_array().unwrap().len(),
            "{name}"
        );
        assert_eq!(
            svg.matches("<g data-split=").count(),
            count("split"),
            "{name}"
        );
        assert_eq!(
            svg.matches("<g data-skip=").count(),
            count("skip"),
            "{name}"
        );
    }
}

/// In a dense view, zooming to a column's range shows exactly the buckets the column counted,
/// launched in view.
#[test]
fn columns_agree_with_the_zoom_they_lead_to() {
    let input = synth(30_000);
    let scene = build_scene(&input, Viewport::full(input.node_count), 1400);
    assert!(
        scene.dense,
        "{} buckets: the whole view should be dense",
        input.buckets.len()
    );
    assert!(scene.columns.len() > 20);
    let mut compared = 0;
    for c in scene.columns.iter().step_by(7) {
        let zoomed = build_scene(
            &input,
            Viewport {
                x0: c.from,
                x1: c.to,
            },
            1400,
        );
        assert!(!zoomed.dense);
        let lane_key = scene.lanes[c.lane].key;
        let lane = zoomed.lanes.iter().position(|l| l.key == lane_key).unwrap();
        let anchored = zoomed
            .bars
            .iter()
            .filter(|b| b.lane == lane && b.anchored)
            .count();
        assert_eq!(anchored, c.count, "column {:.0}–{:.0}", c.from, c.to);
        compared += 1;
    }
    assert!(compared > 3);
    // Height by bytes: columns order by the bytes they hold; the largest buckets are named.
    for (li, _) in scene.lanes.iter().enumerate() {
        let cols: Vec<_> = scene.columns.iter().filter(|c| c.lane == li).collect();
        for a in &cols {
            for b in &cols {
                if a.total_bytes < b.total_bytes {
                    assert!(a.h <= b.h, "column height follows bytes");
                }
            }
        }
        if !cols.is_empty() {
            let max = cols.iter().map(|c| c.max_bytes).max().unwrap();
            assert!(
                cols.iter().any(|c| c.max_bytes == max && c.label.is_some()),
                "a largest bucket of lane {li} is named"
            );
            assert!(
                cols.iter()
                    .map(|c| c.h.round() as i64)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
                    > 1
            );
        }
    }
    assert!(MAX_BARS < input.buckets.len());
}

/// The focus (the selection) is drawn as a bar whatever the density.
#[test]
fn the_focused_bucket_is_always_a_bar() {
    let input = synth(30_000);
    let focus = input.buckets.len() / 2;
    for vp in [
        Viewport::full(input.node_count),
        Viewport {
            x0: 0.0,
            x1: input.node_count as f64 / 3.0,
        },
    ] {
        let scene = build_scene_with(
            &input,
            &SceneOptions {
                viewport: vp,
                width: 900,
                focus: Some(focus),
                exposed: std::rc::Rc::from(Vec::new()),
                bucket_times: std::rc::Rc::from(Vec::new()),
                time: None,
                marked: None,
            },
        );
        let (s, e) = input.buckets[focus].window();
        if (e as f64) < scene.viewport.x0 || (s as f64) > scene.viewport.x1 {
            continue;
        }
        assert!(scene.bars.iter().any(|b| b.bucket == focus), "{vp:?}");
    }
}

/// The reference's `_intervening_reason`, node by node from the first member: the first node
/// that stops a bucket. Written from the reference, independently of the planner's index.
fn reference_first_stop(
    graph: &Graph,
    members: &[&commlens::planner::Candidate],
    candidate: &commlens::planner::Candidate,
) -> Option<(Reason, usize)> {
    use commlens::dump::Op;
    let rs = |c: &commlens::planner::Candidate| {
        c.key.kind == commlens::planner::CollectiveKind::ReduceScatter
    };
    let mut combined: Vec<&commlens::planner::Candidate> = members.to_vec();
    combined.push(candidate);
    let owned: Vec<usize> = combined.iter().map(|m| m.launch).collect();
    let mut preparations = Vec::new();
    for m in &combined {
        if rs(m) {
            preparations.extend(graph.rs_layout_preparation(m.launch));
        }
    }
    let first = members.iter().map(|m| m.launch).min()?;
    for i in first + 1..candidate.launch {
        if preparations.contains(&i) {
            continue;
        }
        let node = graph.node(i);
        let tag = node.meta_str("comm_type");
        if matches!(
            tag,
            Some("fsdp_reshard_free" | "fsdp_reshard_free_backward")
        ) {
            let owned_free = !rs(candidate)
                && commlens::graph::is_free_tensor_storage(node)
                && node.kwargs.is_empty()
                && combined
                    .iter()
                    .any(|m| graph.inputs(i) == [m.wait] && node.args.len() == 1);
            if !owned_free {
                return Some((Reason::EffectOrStorageRelease, i));
            }
        } else if graph.is_barrier(i) {
            return Some((Reason::EffectOrStorageRelease, i));
        }
        if graph.is_collective(i) && !owned.contains(&i) {
            return Some((Reason::InterveningCollective, i));
        }
        if !matches!(node.op, Op::Placeholder | Op::GetAttr | Op::Output)
            && node.meta_flag("autograd_backward") != candidate.key.backward
        {
            return Some((Reason::PhaseBoundary, i));
        }
    }
    None
}

#[test]
fn each_split_names_the_node_the_reference_scan_stops_at() {
    let mut named = 0;
    for dir in plan_cases() {
        let (graph, plan, input) = case_input(&dir);
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let bucket_of = |node: usize| {
            plan.buckets
                .iter()
                .find(|b| b.members.iter().any(|m| m.launch == node))
        };
        for d in plan.decisions.iter().filter(|d| d.action == Action::Split) {
            let intervening = matches!(
                d.reason,
                Reason::EffectOrStorageRelease
                    | Reason::InterveningCollective
                    | Reason::PhaseBoundary
            );
            if !intervening {
                assert_eq!(d.cause, None, "{name}: {:?}", d.reason);
                continue;
            }
            let before = bucket_of(d.previous_node.unwrap()).expect("the closed bucket");
            let candidate = bucket_of(d.node)
                .unwrap()
                .members
                .iter()
                .find(|m| m.launch == d.node)
                .unwrap();
            let members: Vec<_> = before.members.iter().collect();
            let (reason, at) = reference_first_stop(&graph, &members, candidate).expect("a stop");
            assert_eq!(
                (d.reason, d.cause),
                (reason, Some(at)),
                "{name}: split before {}",
                graph.node(d.node).name
            );
            named += 1;
        }
        // And the timeline carries it to the split's details.
        for d in input.decisions.iter().filter(|d| d.cause.is_some()) {
            assert!(d.cause_name.is_some());
        }
    }
    assert!(named >= 5, "{named} intervening splits checked");
}

#[test]
fn markup_in_names_is_escaped() {
    let dir = cases().join("mlp_unmatched_paths");
    let mut dump = common::json(&dir.join("dump.json"));
    let evil = "<img src=x onerror=alert(1)>";
    let renamed = "all_gather_into_tensor_2";
    fn rename(v: &mut serde_json::Value, from: &str, to: &str) {
        match v {
            serde_json::Value::String(s) if s == from => *s = to.into(),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| rename(x, from, to)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| rename(x, from, to)),
            _ => {}
        }
    }
    rename(&mut dump, renamed, evil);
    let (_, _, mut input) = planned(dump.to_string().as_bytes(), None);
    input.title = evil.into();
    let svg = render_svg(&build_scene(&input, Viewport::full(input.node_count), 900));
    assert!(!svg.contains("<img"));
    assert!(svg.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[test]
fn chrome_trace_is_well_formed() {
    let dir = cases().join("mlp_capacity");
    let (_, plan, input) = case_input(&dir);
    let settings = serde_json::json!({"cap_bytes": 123});
    let trace: serde_json::Value = serde_json::from_str(&commlens::timeline::chrome_trace_with(
        &input,
        Some(&settings),
    ))
    .unwrap();
    assert_eq!(trace["otherData"], settings);
    let events = trace["traceEvents"].as_array().unwrap();
    let x: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    let buckets = x.iter().filter(|e| e["cat"] == "bucket").count();
    assert_eq!(buckets, plan.buckets.len());
    for e in &x {
        assert!(
            e["ts"].is_u64()
                && e["dur"].as_u64().unwrap() >= 1
                && e["pid"].is_u64()
                && e["tid"].is_u64()
        );
        assert!(e["name"].is_string());
    }
    let instants = events.iter().filter(|e| e["ph"] == "i").count();
    assert_eq!(instants, plan.decisions.len());
}

/// Writes a synthetic dump of about `COMMLENS_SYNTH_NODES` nodes (default 100k) to
/// `COMMLENS_SYNTH_OUT`, for the browser scale test (tests/e2e/app.test.mjs runs this).
#[test]
#[ignore]
fn write_synthetic_dump() {
    let Some(out) = std::env::var_os("COMMLENS_SYNTH_OUT") else {
        return;
    };
    let nodes = std::env::var("COMMLENS_SYNTH_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(nodes));
    std::fs::write(out, text).unwrap();
}

/// Scene and SVG times at scale (`cargo test --release --test timeline -- --ignored --nocapture scale`).
#[test]
#[ignore]
fn scale_timing() {
    use std::time::Instant;
    let nodes = std::env::var("COMMLENS_SYNTH_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(nodes));
    let graph = Graph::new(commlens::read_dump(text.as_bytes()).unwrap());
    let plan = commlens::plan(&graph, &commlens::resolve_args(&graph, None)).unwrap();
    let t = Instant::now();
    let collectives = Collectives::classify(&graph);
    let classify = t.elapsed();
    let t = Instant::now();
    let input = commlens::timeline::plan_timeline(&graph, &plan, &collectives, "synth");
    let adapt = t.elapsed();
    for vp in [
        Viewport::full(input.node_count),
        Viewport {
            x0: 50_000.0,
            x1: 52_000.0,
        },
    ] {
        let t = Instant::now();
        let scene = build_scene(&input, vp, 1400);
        let scened = t.elapsed();
        let t = Instant::now();
        let svg = render_svg(&scene);
        eprintln!(
            "{} nodes {vp:?}: classify {classify:?}, input {adapt:?}, scene {scened:?}, svg {:?} ({} bytes, {} bars, {} columns, {} splits, {} skips)",
            graph.len(), t.elapsed(), svg.len(), scene.bars.len(), scene.columns.len(), scene.splits.len(), scene.skips.len()
        );
    }
}

/// On a time axis each graph position is drawn at its estimated time (bars over their
/// windows' times, exposed waits as stretches ending where their node starts), the axis counts
/// microseconds, and the scene maps a pixel back to the position drawn there.
#[test]
fn a_time_axis_places_positions_at_their_times() {
    use commlens::timeline::scene::{position_at_time, time_at};
    use commlens::timeline::ExposedIn;
    use std::rc::Rc;
    let input = llama(Some(6000));
    let n = input.node_count as usize;
    // Uneven times: node k takes k % 7 + 1 microseconds, and a 50 us wait before node n/2.
    let mut time = vec![0.0];
    for k in 0..n {
        let wait = if k + 1 == n / 2 { 50.0 } else { 0.0 };
        time.push(time[k] + (k % 7 + 1) as f64 + wait);
    }
    assert_eq!(time_at(&time, 3.5), (time[3] + time[4]) / 2.0);
    assert_eq!(position_at_time(&time, time_at(&time, 123.25)), 123.25);
    let options = SceneOptions {
        viewport: Viewport::full(input.node_count),
        width: 1400,
        focus: None,
        exposed: Rc::from(vec![ExposedIn {
            before: (n / 2) as u32,
            name: Rc::from("x"),
            us: 50.0,
            waits_for: "bucket_1".into(),
        }]),
        bucket_times: Rc::from(Vec::new()),
        time: Some(Rc::from(time.clone())),
        marked: None,
    };
    let scene = build_scene_with(&input, &options);
    let f = scene.frame;
    let px = |pos: f64| f.plot_x0 + time_at(&time, pos) / time[n] * (f.plot_x1 - f.plot_x0);
    for b in &scene.bars {
        let bucket = input
            .buckets
            .iter()
            .find(|x| *x.id == *b.bucket_id)
            .unwrap();
        let (s, e) = bucket.window();
        if b.x1 - b.x0 > 3.5 {
            assert!((b.x0 - px(s as f64)).abs() < 1e-6, "{}", b.bucket_id);
            assert!((b.x1 - px(e as f64 + 1.0)).abs() < 1e-6, "{}", b.bucket_id);
        }
    }
    let wait = &scene.exposed[0];
    let scale = (f.plot_x1 - f.plot_x0) / time[n];
    assert!((wait.x1 - px((n / 2) as f64)).abs() < 1e-6);
    assert!((wait.x1 - wait.x0 - 50.0 * scale).abs() < 1e-6);
    for x in [
        f.plot_x0 + 10.0,
        (f.plot_x0 + f.plot_x1) / 2.0,
        f.plot_x1 - 3.0,
    ] {
        assert!((px(scene.position_at(x)) - x).abs() < 1e-6);
    }
    let svg = render_svg(&scene);
    assert!(svg.contains("data-axis=\"time\""));
    assert!(svg.contains("estimated time in the planned step"));
    // Without a time axis, the same scene as before.
    let plain = build_scene_with(
        &input,
        &SceneOptions {
            time: None,
            exposed: Rc::from(Vec::new()),
            ..options
        },
    );
    assert_eq!(
        plain,
        build_scene(&input, Viewport::full(input.node_count), 1400)
    );
}

/// A comparison marks its changed buckets and decisions: exactly those marks carry
/// `data-marked` (one attribute per mark, whatever their number), and a scene without marks
/// is drawn as before.
#[test]
fn marked_buckets_and_decisions_carry_data_marked() {
    use commlens::timeline::Marked;
    use std::rc::Rc;
    let input = llama(Some(6000));
    let marked = Marked {
        buckets: (0..input.buckets.len()).map(|i| i % 3 == 0).collect(),
        decisions: (0..input.decisions.len()).map(|i| i % 2 == 1).collect(),
    };
    let plain = build_scene(&input, Viewport::full(input.node_count), 1400);
    let options = SceneOptions {
        viewport: Viewport::full(input.node_count),
        width: 1400,
        focus: None,
        exposed: Rc::from(Vec::new()),
        bucket_times: Rc::from(Vec::new()),
        time: None,
        marked: Some(Rc::new(marked.clone())),
    };
    let scene = build_scene_with(&input, &options);
    assert!(!render_svg(&plain).contains("data-marked"));
    assert!(scene.bars.iter().any(|b| b.marked) && scene.bars.iter().any(|b| !b.marked));
    for b in &scene.bars {
        assert_eq!(b.marked, marked.bucket(b.bucket), "{}", b.bucket_id);
    }
    let decision_marked = |action: Action, node: &str| {
        input
            .decisions
            .iter()
            .enumerate()
            .any(|(i, d)| d.action == action && &*d.name == node && marked.decision(i))
    };
    let single_splits = scene.splits.iter().filter(|s| !s.grouped);
    let single_skips = scene.skips.iter().filter(|s| !s.grouped);
    assert!(
        scene.splits.iter().any(|s| s.marked),
        "a marked split is drawn"
    );
    for s in single_splits.clone() {
        assert_eq!(
            s.marked,
            decision_marked(Action::Split, &s.node),
            "split at {}",
            s.node
        );
    }
    for s in single_skips.clone() {
        assert_eq!(
            s.marked,
            decision_marked(Action::Skip, &s.node),
            "skip at {}",
            s.node
        );
    }
    let expected = scene.bars.iter().filter(|b| b.marked).count()
        + scene.splits.iter().filter(|s| s.marked).count()
        + scene.skips.iter().filter(|s| s.marked).count();
    assert_eq!(
        render_svg(&scene).matches(" data-marked=\"\"").count(),
        expected
    );
    // Marks change nothing else.
    let mut unmarked = scene.clone();
    unmarked.bars.iter_mut().for_each(|b| b.marked = false);
    unmarked.splits.iter_mut().for_each(|s| s.marked = false);
    unmarked.skips.iter_mut().for_each(|s| s.marked = false);
    assert_eq!(unmarked, plain);
}
