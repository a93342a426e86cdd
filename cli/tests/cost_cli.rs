//! `commlens cost` as a user runs it: options reach the model, exit codes and messages.

use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_commlens"))
        .args(args)
        .output()
        .expect("run commlens")
}

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/mlp_fsdp.json")
        .to_string_lossy()
        .into_owned()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn hardware_options_reach_the_report() {
    let dump = example();
    let base = json(&["cost", &dump, "--json"]);
    assert_eq!(base["hardware"]["gpu"], "ampere");
    assert_eq!(base["hardware"]["gpus_per_node"], 8);
    assert_eq!(base["hardware"]["nvlink"], true);
    let hw = json(&[
        "cost",
        &dump,
        "--json",
        "--gpu",
        "Blackwell",
        "--gpus-per-node",
        "1",
        "--no-nvlink",
        "--inter-bw",
        "7.5",
        "--dram-bw",
        "1000",
        "--tflops",
        "bfloat16=10",
        "--tflops",
        "torch.float32=2",
        "--tf32",
        "--efficiency",
        "0.5",
    ])["hardware"]
        .clone();
    assert_eq!(hw["gpu"], "blackwell");
    assert_eq!(hw["gpus_per_node"], 1);
    assert_eq!(hw["nvlink"], false);
    // Without NVLink and without an override, torch's model takes PCIe's 24 GB/s.
    assert_eq!(hw["intra_bw"], 24.0);
    assert_eq!(hw["inter_bw"], 7.5);
    assert_eq!(hw["dram_bw"], 1000.0);
    assert_eq!(hw["peak_tflops"]["torch.bfloat16"], 10.0);
    assert_eq!(hw["peak_tflops"]["torch.float32"], 2.0);
    assert_eq!(hw["tf32"], true);
    assert_eq!(hw["compute_efficiency"], 0.5);

    // With one GPU per node the group of 2 spans two nodes: slower collectives.
    let split = json(&["cost", &dump, "--json", "--gpus-per-node", "1"]);
    let comm = |v: &serde_json::Value| v["summary"]["unbucketed"]["comm_us"].as_f64().unwrap();
    assert!(comm(&split) > comm(&base));
}

#[test]
fn usage_errors_exit_2_and_failures_exit_1() {
    let dump = example();
    for bad in [
        &["--gpu", "kepler"][..],
        &["--gpus-per-node", "0"],
        &["--intra-bw", "0"],
        &["--inter-bw", "nan"],
        &["--dram-bw", "-3"],
        &["--tflops", "bfloat16"],
        &["--tflops", "complex42=1"],
        &["--tflops", "bfloat16=-1"],
        &["--efficiency", "2"],
        &["--no-such-option"],
    ] {
        let mut args = vec!["cost", dump.as_str()];
        args.extend_from_slice(bad);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out.stderr));
        assert!(!out.stderr.is_empty());
    }
    let out = run(&["cost", "/no/such/dump.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/no/such/dump.json"));
    let args = std::env::temp_dir().join(format!("commlens-cost-args-{}.json", std::process::id()));
    std::fs::write(&args, "[1]").unwrap();
    let out = run(&["cost", &dump, "--args", args.to_str().unwrap()]);
    let _ = std::fs::remove_file(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("expected a JSON object"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["cost", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    for option in [
        "--gpu",
        "--gpus-per-node",
        "--no-nvlink",
        "--intra-bw",
        "--inter-bw",
        "--json",
    ] {
        assert!(text(&out.stdout).contains(option), "{option}");
    }
}

#[test]
fn text_is_the_summary_and_the_most_exposed() {
    let out = run(&["cost", &example(), "--gpu", "hopper"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    for line in ["step", "compute", "communication", "exposed communication"] {
        assert!(stdout.lines().any(|l| l.starts_with(line)), "{line}");
    }
    assert!(stdout.contains("Most exposed collectives, as it is:"));
    assert!(stdout.contains("Most exposed buckets or collectives, planned:"));
}

/// `--tags roles` plans an untagged graph as `commlens plan --tags roles` does; without it the
/// plan is empty and the note says why.
#[test]
fn tags_roles_plans_an_untagged_graph_like_plan_does() {
    let dump = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/identity/fsdp_tp_untagged.json")
        .to_string_lossy()
        .into_owned();
    let plan = json(&["plan", &dump, "--tags", "roles"]);
    let cost = json(&["cost", &dump, "--tags", "roles", "--json"]);
    let ids = |v: &serde_json::Value, key: &str| -> Vec<String> {
        v["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[key].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!ids(&plan, "bucket_id").is_empty());
    assert_eq!(ids(&cost, "bucket_id"), ids(&plan, "bucket_id"));

    let out = run(&["cost", &dump, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let untagged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(untagged["buckets"].as_array().unwrap().is_empty());
    assert!(
        text(&out.stderr).contains("--tags roles"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["cost", &dump, "--tags", "roles"]);
    assert!(text(&out.stdout).starts_with("tags derived from semantic roles"));
    let out = run(&["cost", &dump, "--tags", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}
