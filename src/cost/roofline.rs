//! Compute time from a roofline, as Inductor's overlap scheduler estimates an aten node
//! (`estimate_roofline_runtime_ms` in `torch/_inductor/fx_passes/overlap_scheduling.py`, with
//! `get_compute_time`, `flops_to_ns`, `get_transfer_time` and `get_num_bytes` of
//! `torch/utils/_runtime_estimation.py`): the larger of
//!
//! * compute: `(flops / 2) / (efficiency * peak)`, torch's MAC-based formula with
//!   `efficiency = 0.75`, at the peak of the dtype of the node's first output tensor (0 when
//!   the op has no FLOP formula or the dtype has no peak);
//! * memory: the bytes of every tensor argument and every output tensor (a broadcast
//!   dimension counted once) over the DRAM bandwidth.
//!
//! The presets are the dense datasheet figures torch's own table gives
//! (`torch/_inductor/analysis/device_info.py` through `datasheet_tops`, which halves entries
//! quoted with 2:4 sparsity), one representative part per generation; Volta is not in torch's
//! table and comes from NVIDIA's V100 datasheet. Every number can be overridden.

use super::comm::GpuGeneration;

/// The dtype key of float32 matmuls run in TF32 (`"torch.tf32"` in torch's table).
pub const TF32: &str = "torch.tf32";

/// Peak dense TFLOP/s per dtype, DRAM bandwidth, and the compute efficiency.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    /// Dense peak TFLOP/s by `str(dtype)` (and [`TF32`]). A dtype without an entry runs at
    /// no modelled rate: its nodes cost their memory time only (torch: peak 0 → 0 ns).
    pub peak_tflops: Vec<(String, f64)>,
    /// DRAM bandwidth in GB/s.
    pub dram_gbps: f64,
    /// The fraction of peak reached (torch's `flops_to_ns` uses 0.75).
    pub efficiency: f64,
    /// float32 ops at the TF32 rate (torch: `torch.backends.cuda.matmul.fp32_precision == "tf32"`).
    pub tf32: bool,
}

/// One generation's preset: the part it stands for, where its numbers come from, and the numbers.
pub struct Preset {
    pub gpu: GpuGeneration,
    pub part: &'static str,
    pub source: &'static str,
    pub peak_tflops: &'static [(&'static str, f64)],
    pub dram_gbps: f64,
}

pub const PRESETS: [Preset; 4] = [
    Preset {
        gpu: GpuGeneration::Volta,
        part: "NVIDIA V100 SXM2",
        source: "NVIDIA Tesla V100 datasheet (not in torch's device table): FP64 7.8, FP32 15.7, \
                 Tensor Core FP16 125 TFLOP/s, HBM2 900 GB/s; no TF32 or BF16 units, so both \
                 take the FP32 rate",
        peak_tflops: &[
            ("torch.float64", 7.8),
            ("torch.float32", 15.7),
            (TF32, 15.7),
            ("torch.bfloat16", 15.7),
            ("torch.float16", 125.0),
        ],
        dram_gbps: 900.0,
    },
    Preset {
        gpu: GpuGeneration::Ampere,
        part: "NVIDIA A100",
        source: "torch/_inductor/analysis/device_info.py \"NVIDIA A100\" (A100 datasheet)",
        peak_tflops: &[
            ("torch.float64", 19.5),
            ("torch.float32", 19.5),
            (TF32, 156.0),
            ("torch.bfloat16", 312.5),
            ("torch.float16", 312.5),
            ("torch.int8", 624.0),
        ],
        dram_gbps: 2039.0,
    },
    Preset {
        gpu: GpuGeneration::Hopper,
        part: "NVIDIA H100",
        source: "torch/_inductor/analysis/device_info.py \"NVIDIA H100\" (H100 datasheet, \
                 quoted with sparsity; datasheet_tops halves every entry, FP32/FP64 included, \
                 and the table has no float8_e4m3fn entry)",
        peak_tflops: &[
            ("torch.float64", 33.5),
            ("torch.float32", 33.5),
            (TF32, 494.5),
            ("torch.bfloat16", 989.5),
            ("torch.float16", 989.5),
            ("torch.float8_e4m3fnuz", 1979.0),
            ("torch.float8_e5m2", 1979.0),
            ("torch.float8_e5m2fnuz", 1979.0),
            ("torch.float8_e8m0fnu", 1979.0),
            ("torch.int8", 1979.0),
        ],
        dram_gbps: 3350.0,
    },
    Preset {
        gpu: GpuGeneration::Blackwell,
        part: "NVIDIA B200",
        source:
            "torch/_inductor/analysis/device_info.py \"NVIDIA B200\" (HGX B200 datasheet, dense)",
        peak_tflops: &[
            ("torch.float64", 37.0),
            ("torch.float32", 75.0),
            (TF32, 1125.0),
            ("torch.bfloat16", 2250.0),
            ("torch.float16", 2250.0),
            ("torch.float8_e4m3fn", 4500.0),
            ("torch.float8_e4m3fnuz", 4500.0),
            ("torch.float8_e5m2", 4500.0),
            ("torch.float8_e5m2fnuz", 4500.0),
            ("torch.float8_e8m0fnu", 4500.0),
            ("torch.int8", 4500.0),
        ],
        dram_gbps: 7700.0,
    },
];

/// `flops_to_ns`'s fraction of peak.
pub const TORCH_EFFICIENCY: f64 = 0.75;

impl Preset {
    pub fn of(gpu: GpuGeneration) -> &'static Preset {
        match gpu {
            GpuGeneration::Volta => &PRESETS[0],
            GpuGeneration::Ampere => &PRESETS[1],
            GpuGeneration::Hopper => &PRESETS[2],
            GpuGeneration::Blackwell => &PRESETS[3],
        }
    }
}

impl Roofline {
    pub fn preset(gpu: GpuGeneration) -> Roofline {
        let preset = Preset::of(gpu);
        Roofline {
            peak_tflops: preset
                .peak_tflops
                .iter()
                .map(|(dtype, tflops)| (dtype.to_string(), *tflops))
                .collect(),
            dram_gbps: preset.dram_gbps,
            efficiency: TORCH_EFFICIENCY,
            tf32: false,
        }
    }

    /// Sets (or adds) the peak of `dtype` (`"torch.bfloat16"`, `"bfloat16"` or `"tf32"`).
    pub fn set_peak(&mut self, dtype: &str, tflops: f64) {
        let key = if dtype.starts_with("torch.") {
            dtype.to_string()
        } else {
            format!("torch.{dtype}")
        };
        match self.peak_tflops.iter_mut().find(|(d, _)| *d == key) {
            Some(entry) => entry.1 = tflops,
            None => self.peak_tflops.push((key, tflops)),
        }
    }

    /// The peak TFLOP/s the roofline uses for ops whose output has `dtype` (0 if none).
    pub fn peak(&self, dtype: &str) -> f64 {
        let key = if self.tf32 && dtype == "torch.float32" {
            TF32
        } else {
            dtype
        };
        self.peak_tflops
            .iter()
            .find(|(d, _)| d == key)
            .map_or(0.0, |(_, t)| *t)
    }

    /// `flops_to_ns(flops, dtype)`: `(flops / 2) / (efficiency * peak) * 1e9` (0 without a peak).
    pub fn compute_ns(&self, flops: u64, peak_tflops: f64) -> f64 {
        let peak = peak_tflops * 1e12;
        if peak == 0.0 || !peak.is_finite() {
            return 0.0;
        }
        let macs = flops as f64 / 2.0;
        macs / (self.efficiency * peak) * 1e9
    }

    /// `get_transfer_time`: bytes over GB/s, in ns (0 without a bandwidth).
    pub fn transfer_ns(&self, bytes: u64) -> f64 {
        if self.dram_gbps > 0.0 && self.dram_gbps.is_finite() {
            bytes as f64 / self.dram_gbps
        } else {
            0.0
        }
    }

    /// `estimate_roofline_runtime_ms` in microseconds.
    pub fn node_us(&self, flops: u64, dtype: Option<&str>, bytes: u64) -> f64 {
        let compute = match dtype {
            Some(dtype) if flops > 0 => self.compute_ns(flops, self.peak(dtype)),
            _ => 0.0,
        };
        let us = f64::max(compute, self.transfer_ns(bytes)) / 1e3;
        if us.is_finite() && us > 0.0 {
            us
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roofline_is_the_larger_side() {
        let r = Roofline::preset(GpuGeneration::Hopper);
        // 2 GFLOP at 989.5 TF/s * 0.75, as MACs: 1e9 / (0.75 * 989.5e12) s.
        let t = r.node_us(2_000_000_000, Some("torch.bfloat16"), 0);
        assert!((t - 1e9 / (0.75 * 989.5e12) * 1e6).abs() < 1e-12);
        // Memory-bound: 3350 bytes at 3350 GB/s is 1 ns.
        assert_eq!(r.node_us(0, Some("torch.bfloat16"), 3350), 1e-3);
        // No peak for the dtype: memory time only.
        assert_eq!(r.node_us(1 << 40, Some("torch.int64"), 3350), 1e-3);
    }

    #[test]
    fn overrides_and_tf32() {
        let mut r = Roofline::preset(GpuGeneration::Ampere);
        assert_eq!(r.peak("torch.float32"), 19.5);
        r.tf32 = true;
        assert_eq!(r.peak("torch.float32"), 156.0);
        r.set_peak("tf32", 100.0);
        r.set_peak("float8_e4m3fn", 7.0);
        assert_eq!(r.peak("torch.float32"), 100.0);
        assert_eq!(r.peak("torch.float8_e4m3fn"), 7.0);
    }

    #[test]
    fn every_generation_has_a_preset() {
        for gpu in GpuGeneration::ALL {
            let preset = Preset::of(gpu);
            assert_eq!(preset.gpu, gpu);
            assert!(preset.dram_gbps > 0.0);
            assert!(Roofline::preset(gpu).peak("torch.bfloat16") > 0.0);
        }
    }
}
