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
