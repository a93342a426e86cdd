//! Timeline scene and SVG renderer, on recorded conformance reports.

use commlens::timeline::{build_scene, render_svg, Action, TimelineInput, Viewport};
use std::path::PathBuf;

fn shared() -> Option<PathBuf> {
    let p = std::env::var_os("COMMLENS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    p.join("conformance/cases").is_dir().then_some(p)
}

fn case(name: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    let dir = shared()?.join("conformance/cases").join(name);
    let dump = serde_json::from_slice(&std::fs::read(dir.join("dump.json")).ok()?).ok()?;
    let plan = serde_json::from_slice(&std::fs::read(dir.join("plan.json")).ok()?).ok()?;
    Some((dump, plan))
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

#[test]
fn counts_match_the_report() {
    for name in [
        "mlp_capacity",
        "llama2_attention_ffn_groups",
        "mlp_unmatched_paths",
        "llama2_capacity",
    ] {
        let Some((dump, plan)) = case(name) else {
            eprintln!("shared conformance corpus not found: skipped");
            return;
        };
        let input = TimelineInput::from_report(&dump, &plan);
        let scene = build_scene(&input, Viewport::full(input.node_count), 1400);
        let svg = render_svg(&scene);
        if let Ok(dir) = std::env::var("TIMELINE_OUT") {
            std::fs::write(format!("{dir}/{name}.svg"), &svg).unwrap();
        }
        let buckets = plan["buckets"].as_array().unwrap().len();
        let splits = input
            .decisions
            .iter()
            .filter(|d| d.action == Action::Split)
            .count();
        let skips = input
            .decisions
            .iter()
            .filter(|d| d.action == Action::Skip)
            .count();
        assert_eq!(count(&svg, "<g data-bucket="), buckets, "{name}");
        assert_eq!(count(&svg, "<g data-split="), splits, "{name}");
        assert_eq!(count(&svg, "<g data-skip="), skips, "{name}");
    }
}

#[test]
fn markup_in_names_is_escaped() {
    let Some((mut dump, plan)) = case("mlp_unmatched_paths") else {
        return;
    };
    let evil = "<img src=x onerror=alert(1)>";
    for n in dump["nodes"].as_array_mut().unwrap() {
        if n["name"] == "all_gather_into_tensor_2" {
            n["name"] = evil.into();
        }
    }
    let mut plan = plan;
    for d in plan["decisions"].as_array_mut().unwrap() {
        if d["node"] == "all_gather_into_tensor_2" {
            d["node"] = evil.into();
        }
    }
    let mut input = TimelineInput::from_report(&dump, &plan);
    input.title = evil.into();
    let svg = render_svg(&build_scene(&input, Viewport::full(input.node_count), 900));
    assert!(!svg.contains("<img"));
    assert!(svg.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[test]
fn zoom_culls() {
    let Some((dump, plan)) = case("llama2_capacity") else {
        return;
    };
    let input = TimelineInput::from_report(&dump, &plan);
    let full = build_scene(&input, Viewport::full(input.node_count), 1200);
    let zoomed = build_scene(&input, Viewport { x0: 0.0, x1: 100.0 }, 1200);
    assert!(zoomed.bars.len() < full.bars.len());
    assert!(zoomed.culled > 0);
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
    let t = Instant::now();
    let graph = commlens::Graph::new(commlens::read_dump(text.as_bytes()).unwrap());
    let read = t.elapsed();
    let t = Instant::now();
    let plan = commlens::plan(&graph, &commlens::resolve_args(&graph, None)).unwrap();
    let planned = t.elapsed();
    let t = Instant::now();
    let input = commlens::timeline::plan_timeline(
        &graph,
        &plan,
        &commlens::timeline::Roles::classify(&graph),
        "synth",
    );
    let adapt = t.elapsed();
    let t = Instant::now();
    let scene = build_scene(&input, Viewport::full(input.node_count), 1400);
    let scened = t.elapsed();
    let t = Instant::now();
    let svg = render_svg(&scene);
    let rendered = t.elapsed();
    eprintln!(
        "{} nodes: read {read:?}, plan {planned:?}, adapt {adapt:?}, scene {scened:?}, svg {rendered:?} ({} bytes, {} bars, {} ticks, {} splits, {} skips, {} buckets, {} decisions)",
        graph.len(), svg.len(), scene.bars.len(), scene.ticks.len(), scene.splits.len(), scene.skips.len(), input.buckets.len(), input.decisions.len()
    );
}

#[test]
#[ignore]
fn scene_repeat() {
    use std::time::Instant;
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(100_000));
    let graph = commlens::Graph::new(commlens::read_dump(text.as_bytes()).unwrap());
    let plan = commlens::plan(&graph, &commlens::resolve_args(&graph, None)).unwrap();
    let input = commlens::timeline::plan_timeline(
        &graph,
        &plan,
        &commlens::timeline::Roles::classify(&graph),
        "synth",
    );
    for w in [1400u32, 1400, 1400] {
        let t = Instant::now();
        let scene = build_scene(&input, Viewport::full(input.node_count), w);
        let a = t.elapsed();
        let t = Instant::now();
        let svg = render_svg(&scene);
        eprintln!("scene {a:?} svg {:?} {}", t.elapsed(), svg.len());
        let t = Instant::now();
        let z = build_scene(
            &input,
            Viewport {
                x0: 50_000.0,
                x1: 52_000.0,
            },
            w,
        );
        let a = t.elapsed();
        let t = Instant::now();
        let svg = render_svg(&z);
        eprintln!(
            "zoomed: scene {a:?} svg {:?} {} bytes {} bars {} splits",
            t.elapsed(),
            svg.len(),
            z.bars.len(),
            z.splits.len()
        );
    }
}

#[test]
#[ignore]
fn adapt_repeat() {
    use std::time::Instant;
    let text = commlens::synth::synthetic_dump(commlens::synth::SynthSpec::with_nodes(100_000));
    let graph = commlens::Graph::new(commlens::read_dump(text.as_bytes()).unwrap());
    let t = Instant::now();
    let roles = commlens::timeline::Roles::classify(&graph);
    eprintln!("classify {:?}", t.elapsed());
    let plan = commlens::plan(&graph, &commlens::resolve_args(&graph, None)).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let input = commlens::timeline::plan_timeline(&graph, &plan, &roles, "synth");
        eprintln!("adapt {:?} ({} buckets)", t.elapsed(), input.buckets.len());
    }
}

#[test]
fn chrome_trace_is_well_formed() {
    let Some((dump, plan)) = case("mlp_capacity") else {
        return;
    };
    let input = TimelineInput::from_report(&dump, &plan);
    let trace: serde_json::Value =
        serde_json::from_str(&commlens::timeline::chrome_trace(&input)).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let x: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    let buckets = x.iter().filter(|e| e["cat"] == "bucket").count();
    assert_eq!(buckets, plan["buckets"].as_array().unwrap().len());
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
    assert_eq!(instants, plan["decisions"].as_array().unwrap().len());
}
