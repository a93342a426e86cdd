//! `commlens cost DUMP [--args ARGS.json] [--tags dump|roles] [--gpu GEN] [--gpus-per-node N] [--no-nvlink]
//! [--intra-bw GB/s] [--inter-bw GB/s] [--dram-bw GB/s] [--tflops DTYPE=TF/s] [--tf32]
//! [--efficiency F] [--json]`: what the graph and its plan cost on given hardware, by torch's
//! own estimators (the library computes; this module reads the files and the options).

use crate::{keep_until_exit, read_file, read_input, write_output, write_output_with, CliError};
use commlens::cost::{GpuGeneration, Hardware, Network};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The graph dump (JSON, or gzip-compressed JSON), or a TORCH_TRACE log.
    #[arg(value_name = "DUMP")]
    dump: String,
    #[command(flatten)]
    choice: crate::GraphChoice,
    /// Planner arguments in the conformance `args.json` format, as for `commlens plan`
    /// (its `group_ranks` also give the process-group sizes).
    #[arg(long = "args", value_name = "ARGS.json")]
    args: Option<String>,
    /// Where the FSDP tags the plan rests on come from: `dump` (as written) or `roles`
    /// (derived from semantic roles, for graphs without tags), as for `commlens plan`.
    #[arg(long, value_name = "dump|roles", default_value = "dump", value_parser = crate::plan::tag_mode)]
    tags: commlens::TagMode,
    /// GPU generation: the NCCL model's tables and the roofline preset (torch assumes
    /// ampere when it sees no GPU).
    #[arg(long, value_name = "GEN", default_value = "ampere", value_parser = generation)]
    gpu: GpuGeneration,
    /// GPUs per node (torch: `torch.cuda.device_count()`, 8 without CUDA): a group larger
    /// than a node communicates over the network.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    gpus_per_node: u64,
    /// GPUs within a node talk over PCIe, not NVLink.
    #[arg(long)]
    no_nvlink: bool,
    /// Intra-node bandwidth in GB/s (torch: `torch._inductor.config.intra_node_bw`).
    #[arg(long, value_name = "GB/s", value_parser = positive)]
    intra_bw: Option<f64>,
    /// Inter-node bandwidth in GB/s (torch: `torch._inductor.config.inter_node_bw`).
    #[arg(long, value_name = "GB/s", value_parser = positive)]
    inter_bw: Option<f64>,
    /// DRAM bandwidth in GB/s for the roofline (default: the generation's preset).
    #[arg(long, value_name = "GB/s", value_parser = positive)]
    dram_bw: Option<f64>,
    /// Peak dense TFLOP/s of a dtype for the roofline, e.g. `bfloat16=989.5` or `tf32=494.5`
    /// (repeatable; default: the generation's preset).
    #[arg(long, value_name = "DTYPE=TF/s", value_parser = peak)]
    tflops: Vec<(String, f64)>,
    /// float32 ops run at the TF32 rate.
    #[arg(long)]
    tf32: bool,
    /// Fraction of peak FLOP/s reached (torch's roofline: 0.75).
    #[arg(long, value_name = "F", value_parser = fraction)]
    efficiency: Option<f64>,
    /// Write the stable JSON form (`"format": "commlens.cost"`) instead of text.
    #[arg(long)]
    json: bool,
}

fn generation(text: &str) -> Result<GpuGeneration, String> {
    GpuGeneration::parse(text).ok_or_else(|| {
        format!(
            "unknown GPU generation {text:?} (expected {})",
            commlens::cost::report::generations()
        )
    })
}

fn positive(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| format!("needs a positive number, got {text:?}"))
}

fn fraction(text: &str) -> Result<f64, String> {
    positive(text)
        .ok()
        .filter(|x| *x <= 1.0)
        .ok_or_else(|| format!("needs a number in (0, 1], got {text:?}"))
}

fn peak(text: &str) -> Result<(String, f64), String> {
    let (dtype, value) = text
        .split_once('=')
        .ok_or_else(|| format!("needs DTYPE=TF/s (e.g. bfloat16=989.5), got {text:?}"))?;
    let dtype = dtype.trim();
    let key = dtype.strip_prefix("torch.").unwrap_or(dtype);
    let known =
        key == "tf32" || commlens::value::TORCH_DTYPES.contains(&format!("torch.{key}").as_str());
    if !known {
        return Err(format!("unknown dtype {dtype:?} in {text:?}"));
    }
    let tflops = value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("needs a non-negative TF/s after '=', got {text:?}"))?;
    Ok((key.to_string(), tflops))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut hardware = Hardware::with_network(Network {
        gpu: args.gpu,
        gpus_per_node: args.gpus_per_node,
        nvlink: !args.no_nvlink,
        intra_node_bw: args.intra_bw,
        inter_node_bw: args.inter_bw,
    });
    if let Some(bw) = args.dram_bw {
        hardware.roofline.dram_gbps = bw;
    }
    for (dtype, tflops) in &args.tflops {
        hardware.roofline.set_peak(dtype, *tflops);
    }
    hardware.roofline.tf32 = args.tf32;
    if let Some(f) = args.efficiency {
        hardware.roofline.efficiency = f;
    }

    let dump = read_input(&args.dump)?;
    let args_bytes = args.args.as_deref().map(read_file).transpose()?;
    let costed = commlens::cost_report(
        dump,
        args.choice.graph,
        args_bytes.as_deref(),
        args.tags,
        hardware,
    )
    .map_err(|e| CliError::Failed(e.to_string()))?;
    let report = costed.report();
    if args.json {
        // The JSON keeps its fixed form; the note goes beside it, as `commlens plan` does.
        if let Some(note) = &report.note {
            eprintln!("{note}");
        }
        write_output_with(None, |w| report.write_json(w))?;
    } else {
        write_output(None, &report.to_text())?;
    }
    keep_until_exit(report);
    keep_until_exit(costed);
    Ok(ExitCode::SUCCESS)
}
