//! The analytical NCCL model of torch 2.15's `torch/_inductor/comm_analysis.py`, reproduced
//! exactly: `estimate_nccl_collective_runtime_impl` and everything it calls
//! (`_nccl_best_algo_time`, `_nccl_algo_time`, `detect_interconnect`, `get_intra_node_bw`,
//! `get_inter_node_bw`, `_log2i`), with its tables (adapted there from NCCL's `tuning.cc`).
//!
//! torch reads the hardware from the machine it runs on (`get_gpu_type()` from the device's
//! compute capability, `torch.cuda.device_count()` as GPUs per node, `_has_nvlink()` from
//! `nvidia-smi topo -m`) and two config overrides (`torch._inductor.config.intra_node_bw`,
//! `inter_node_bw`). Here they are the fields of [`Network`]. Every expression keeps torch's
//! operand order, so results agree with torch to the last bit or nearly (the Python tests
//! require 1e-6 relative).

/// `NCCL_COLL`: the collective type, from the op's name (`get_collective_type_from_kernel_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveType {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    /// Anything else (broadcast, ...): torch's model gives it no time.
    Unsupported,
    /// `isend`, `irecv`, `batch_p2p_ops`.
    P2P,
}

impl CollectiveType {
    /// `get_collective_type_from_kernel_name(name)`, on `"namespace::op"` as torch's
    /// `OpOverload.name()` spells it (substring tests, in torch's order).
    pub fn from_kernel_name(name: &str) -> CollectiveType {
        if name.contains("all_reduce") {
            CollectiveType::AllReduce
        } else if name.contains("all_gather") {
            CollectiveType::AllGather
        } else if name.contains("reduce_scatter") {
            CollectiveType::ReduceScatter
        } else if name.contains("all_to_all") || name.contains("alltoall") {
            CollectiveType::AllToAll
        } else if ["isend", "irecv", "batch_p2p"]
            .iter()
            .any(|p| name.contains(p))
        {
            CollectiveType::P2P
        } else {
            CollectiveType::Unsupported
        }
    }

    /// The name `commlens cost` reports (`NCCL_COLL` member, lower case).
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveType::AllReduce => "all_reduce",
            CollectiveType::AllGather => "all_gather",
            CollectiveType::ReduceScatter => "reduce_scatter",
            CollectiveType::AllToAll => "all_to_all",
            CollectiveType::Unsupported => "unsupported",
            CollectiveType::P2P => "p2p",
        }
    }
}

/// `NVIDIA_GPU_TYPE`: the GPU generation, which indexes every per-generation table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuGeneration {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
}

impl GpuGeneration {
    pub const ALL: [GpuGeneration; 4] = [
        GpuGeneration::Volta,
        GpuGeneration::Ampere,
        GpuGeneration::Hopper,
        GpuGeneration::Blackwell,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuGeneration::Volta => "volta",
            GpuGeneration::Ampere => "ampere",
            GpuGeneration::Hopper => "hopper",
            GpuGeneration::Blackwell => "blackwell",
        }
    }

    pub fn parse(text: &str) -> Option<GpuGeneration> {
        GpuGeneration::ALL
            .into_iter()
            .find(|g| g.as_str().eq_ignore_ascii_case(text))
    }

    /// `compCapIndex`: the row of the per-generation tables.
    fn index(self) -> usize {
        self as usize
    }

    /// `_GPU_NCHANNELS`.
    fn nchannels(self) -> f64 {
        match self {
            GpuGeneration::Volta => 2.0,
            GpuGeneration::Ampere => 8.0,
            GpuGeneration::Hopper => 16.0,
            GpuGeneration::Blackwell => 32.0,
        }
    }

    /// `_GPU_NVLINK_BW` (GB/s).
    fn nvlink_bw(self) -> f64 {
        match self {
            GpuGeneration::Volta => 120.0,
            GpuGeneration::Ampere => 240.0,
            GpuGeneration::Hopper => 370.0,
            GpuGeneration::Blackwell => 720.0,
        }
    }

    /// `_GPU_INTER_NODE_BW` (GB/s).
    fn inter_node_bw(self) -> f64 {
        match self {
            GpuGeneration::Volta => 12.0,
            GpuGeneration::Ampere => 25.0,
            GpuGeneration::Hopper => 50.0,
            GpuGeneration::Blackwell => 50.0,
        }
    }

    /// `_GPU_TO_INTER`: the network between nodes.
    fn inter_node_link(self) -> Interconnect {
        match self {
            GpuGeneration::Volta | GpuGeneration::Ampere => Interconnect::IbHdr,
            GpuGeneration::Hopper | GpuGeneration::Blackwell => Interconnect::IbNdr,
        }
    }
}

/// What torch reads from the machine and its config for the NCCL model.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    /// `get_gpu_type()`.
    pub gpu: GpuGeneration,
    /// `torch.cuda.device_count()` (8 when CUDA is unavailable). At least 1.
    pub gpus_per_node: u64,
    /// `_has_nvlink()`.
    pub nvlink: bool,
    /// `torch._inductor.config.intra_node_bw` (GB/s).
    pub intra_node_bw: Option<f64>,
    /// `torch._inductor.config.inter_node_bw` (GB/s).
    pub inter_node_bw: Option<f64>,
}

impl Default for Network {
    /// What torch assumes on a machine without a GPU: Ampere (`get_gpu_type`'s fallback),
    /// 8 GPUs per node, NVLink (`_has_nvlink` without CUDA), no overrides.
    fn default() -> Network {
        Network {
            gpu: GpuGeneration::Ampere,
            gpus_per_node: 8,
            nvlink: true,
            intra_node_bw: None,
            inter_node_bw: None,
        }
    }
}

impl Network {
    /// `get_intra_node_bw()`.
    pub fn intra_bw(&self) -> f64 {
        match self.intra_node_bw {
            Some(bw) => bw,
            None if !self.nvlink => PCIE_INTRA_NODE_BW,
            None => self.gpu.nvlink_bw(),
        }
    }

    /// `get_inter_node_bw()`.
    pub fn inter_bw(&self) -> f64 {
        self.inter_node_bw
            .unwrap_or_else(|| self.gpu.inter_node_bw())
    }

    /// `math.ceil(group_size / gpus_per_node)`.
    fn nodes(&self, group_size: u64) -> u64 {
        group_size.div_ceil(self.gpus_per_node.max(1))
    }

    /// `detect_interconnect(group_size)`.
    fn interconnect(&self, group_size: u64) -> Interconnect {
        if self.nodes(group_size) == 1 {
            if !self.nvlink {
                return Interconnect::Pcie;
            }
            return Interconnect::NvLink;
        }
        self.gpu.inter_node_link()
    }
}

/// `InterconnectType`, as far as the model distinguishes it (the NVLink generations differ
/// only in tables indexed by [`GpuGeneration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interconnect {
    NvLink,
    IbHdr,
    IbNdr,
    Pcie,
}

/// `_PCIE_INTRA_NODE_BW` (GB/s).
const PCIE_INTRA_NODE_BW: f64 = 24.0;

/// `NCCL_ALGO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    Tree = 0,
    Ring = 1,
}

/// `NCCL_PROTO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    LL = 0,
    LL128 = 1,
    Simple = 2,
}

/// `NCCL_HW`.
#[derive(Clone, Copy)]
enum Hw {
    NvLink = 0,
    Pci = 1,
    Net = 2,
}

/// The (algorithm, protocol) pair the model picked, written as NCCL's `NCCL_ALGO` and
/// `NCCL_PROTO` settings spell them (`Ring/LL128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AlgoProto {
    pub algo: Algo,
    pub proto: Proto,
}

impl AlgoProto {
    pub fn as_str(self) -> &'static str {
        match (self.algo, self.proto) {
            (Algo::Tree, Proto::LL) => "Tree/LL",
            (Algo::Tree, Proto::LL128) => "Tree/LL128",
            (Algo::Tree, Proto::Simple) => "Tree/Simple",
            (Algo::Ring, Proto::LL) => "Ring/LL",
            (Algo::Ring, Proto::LL128) => "Ring/LL128",
            (Algo::Ring, Proto::Simple) => "Ring/Simple",
        }
    }
}

// Tables of `comm_analysis.py` ("adapted from NCCL's src/graph/tuning.cc").

/// `baseLat[algo][proto]` (us).
const BASE_LAT: [[f64; 3]; 2] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4]];

/// `hwLat[hw][algo][proto]` (us).
const HW_LAT: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]],
    [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]],
];

/// `llMaxBws[compCapIndex][scaleIndex]`.
const LL_MAX_BWS: [[f64; 3]; 4] = [
    [39.0, 39.0, 20.4],
    [87.7, 22.5, 19.0],
    [141.0, 45.0, 35.0],
    [282.0, 90.0, 70.0],
];

/// `perChMaxRingLL128Bws[compCapIndex][scaleIndex]`.
const PER_CH_MAX_RING_LL128_BWS: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 36.7],
    [40.0, 40.0, 40.0],
];

/// `perChMaxTreeLL128Bws[compCapIndex][scaleIndex]`.
const PER_CH_MAX_TREE_LL128_BWS: [[f64; 3]; 4] = [
    [20.0, 20.0, 20.0],
    [20.0, 20.0, 20.0],
    [36.7, 36.7, 29.0],
    [55.6, 31.67, 20.0],
];

/// `perChMaxTreeBws[compCapIndex][scaleIndex]`.
const PER_CH_MAX_TREE_BWS: [[f64; 3]; 4] = [
    [26.5, 18.5, 10.0],
    [24.0, 23.6, 17.8],
    [38.7, 41.4, 36.0],
    [70.0, 42.8, 24.0],
];

/// `treeCorrectionFactor[proto][logSize]`, `logSize = log2(nBytes >> 6)`.
const TREE_CORRECTION_FACTOR: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9, 0.9,
    ],
];

/// `_log2i`: floor of log2, 0 for `n <= 0`.
fn log2i(n: u64) -> u32 {
    if n == 0 {
        0
    } else {
        63 - n.leading_zeros()
    }
}

/// `_nccl_algo_time`: estimated microseconds of one (algo, proto) pair, or `None` where torch
/// returns -1 (the pair is disabled here).
fn algo_time(
    bytes: u64,
    group_size: u64,
    coll: CollectiveType,
    algo: Algo,
    proto: Proto,
    net: &Network,
) -> Option<f64> {
    let n_nodes = net.nodes(group_size);
    let n_ranks = group_size;
    let cc = net.gpu.index();
    let index2 = if n_nodes <= 2 {
        n_nodes.saturating_sub(1) as usize
    } else {
        2
    };
    let bw_intra = net.intra_bw();
    let bw_inter = net.inter_bw();
    let n_channels = net.gpu.nchannels();
    let interconnect = net.interconnect(group_size);
    let is_ib = matches!(interconnect, Interconnect::IbNdr | Interconnect::IbHdr);

    if proto == Proto::LL128 && (n_nodes > 2 || (n_nodes > 1 && is_ib)) {
        return None;
    }

    let mut bw = if n_nodes == 1 {
        bw_intra
    } else if is_ib {
        bw_inter
    } else if n_nodes <= 2 {
        bw_intra
    } else {
        bw_inter
    };
    if is_ib && n_nodes > 1 {
        let nic_efficiency = 0.77 + 0.23 * f64::min(1.0, (n_nodes - 1) as f64 / 7.0);
        bw *= nic_efficiency;
        if n_nodes > 2 {
            let multi_rail = (bytes.max(50_000_000) as f64 / 50_000_000.0).powf(0.17);
            bw *= multi_rail;
        }
    }

    let mut bus_bw = bw;
    let index1 = if n_nodes == 1 { cc } else { 0 };
    let ll_max_bw = LL_MAX_BWS[index1][index2];
    match (algo, proto) {
        (Algo::Ring, Proto::LL) => bus_bw = f64::min(ll_max_bw, bus_bw * 0.5),
        (Algo::Ring, Proto::LL128) => {
            bus_bw = f64::min(
                bus_bw * (120.0 / 128.0),
                n_channels * PER_CH_MAX_RING_LL128_BWS[cc][index2],
            )
        }
        (Algo::Tree, Proto::LL) => bus_bw = f64::min(bus_bw * (1.0 / 3.8), ll_max_bw),
        (Algo::Tree, Proto::LL128) => {
            let factor = if n_nodes == 1 {
                7.0 / 9.0
            } else {
                120.0 / 128.0
            };
            bus_bw = f64::min(
                bus_bw * factor,
                n_channels * PER_CH_MAX_TREE_LL128_BWS[cc][index2],
            )
        }
        (Algo::Tree, Proto::Simple) => {
            if coll == CollectiveType::AllReduce {
                bus_bw = f64::min(bus_bw * 0.92, n_channels * PER_CH_MAX_TREE_BWS[cc][index2])
            }
        }
        (Algo::Ring, Proto::Simple) => {}
    }
    // `busBw <= 0` (and NaN, which Python's comparisons also let through to a NaN time that
    // `_nccl_best_algo_time` then ignores).
    if bus_bw.is_nan() || bus_bw <= 0.0 {
        return None;
    }

    let n_ranks_f = n_ranks as f64;
    let nsteps: u64 = match coll {
        CollectiveType::AllReduce | CollectiveType::AllToAll => {
            2u64.saturating_mul(n_ranks.saturating_sub(1))
        }
        CollectiveType::ReduceScatter | CollectiveType::AllGather => n_ranks.saturating_sub(1),
        CollectiveType::P2P => 1,
        CollectiveType::Unsupported => return None,
    };
    let mut bandwidth = if algo == Algo::Tree && coll == CollectiveType::AllReduce {
        bus_bw * 0.5
    } else if algo == Algo::Ring {
        bus_bw * (1.0 * n_ranks_f / nsteps as f64)
    } else {
        bus_bw * 0.5
    };
    if bandwidth.is_nan() || bandwidth <= 0.0 {
        return None;
    }

    let intra_hw = if interconnect == Interconnect::Pcie {
        Hw::Pci
    } else {
        Hw::NvLink
    };
    let (a, p) = (algo as usize, proto as usize);
    let mut lat = BASE_LAT[a][p];
    let mut intra_lat = HW_LAT[intra_hw as usize][a][p];
    let inter_lat = HW_LAT[Hw::Net as usize][a][p];
    let mut net_overhead = if n_nodes > 1 { 1.0 } else { 0.0 };
    if proto == Proto::Simple && n_nodes > 1 {
        net_overhead *= 3.0;
    }
    intra_lat = f64::max(intra_lat, net_overhead);

    match algo {
        Algo::Ring => {
            let n_inter_steps: i128 = if n_nodes == 1 {
                0
            } else if coll == CollectiveType::AllReduce {
                2 * (n_nodes as i128 - 1)
            } else {
                n_nodes as i128 - 1
            };
            // Python ints: `nsteps - nInterSteps` may be negative (P2P across nodes).
            lat += (nsteps as i128 - n_inter_steps) as f64 * intra_lat
                + n_inter_steps as f64 * inter_lat;
        }
        Algo::Tree => {
            if coll == CollectiveType::AllReduce {
                let per_node = (n_ranks / n_nodes.max(1)) as i128 - 1;
                lat += 2.0 * (per_node as f64 * intra_lat + log2i(n_nodes) as f64 * inter_lat);
            }
        }
    }

    if algo == Algo::Tree && coll == CollectiveType::AllReduce {
        let log_size = if bytes >= 64 { log2i(bytes >> 6) } else { 0 };
        if let Some(factor) = TREE_CORRECTION_FACTOR[p].get(log_size as usize) {
            bandwidth *= factor;
        }
    }

    Some(lat + bytes as f64 / (1000.0 * bandwidth))
}

/// What the model says of one collective: microseconds and the (algo, proto) it picked;
/// `algo` is `None` where torch's model returns 0 without picking one (a group of one rank,
/// an unsupported collective, or no enabled pair).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollectiveTime {
    pub us: f64,
    pub algo: Option<AlgoProto>,
}

/// `estimate_nccl_collective_runtime_impl(bytes, group_size, coll)`, in microseconds (torch
/// returns milliseconds: `us / 1000`), with `_nccl_best_algo_time`'s choice.
pub fn collective_time(
    bytes: u64,
    group_size: u64,
    coll: CollectiveType,
    net: &Network,
) -> CollectiveTime {
    let none = CollectiveTime {
        us: 0.0,
        algo: None,
    };
    if group_size <= 1 || coll == CollectiveType::Unsupported {
        return none;
    }
    let mut best: Option<(f64, AlgoProto)> = None;
    for algo in [Algo::Tree, Algo::Ring] {
        if algo == Algo::Tree && coll != CollectiveType::AllReduce {
            continue;
        }
        for proto in [Proto::LL, Proto::LL128, Proto::Simple] {
            let Some(t) = algo_time(bytes, group_size, coll, algo, proto, net) else {
                continue;
            };
            // `if 0 <= t < best_time`: the first of equal times wins; NaN never does.
            if t >= 0.0 && best.is_none_or(|(b, _)| t < b) {
                best = Some((t, AlgoProto { algo, proto }));
            }
        }
    }
    match best {
        Some((us, algo)) if us.is_finite() => CollectiveTime {
            us,
            algo: Some(algo),
        },
        _ => none,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_classify_as_torch_does() {
        use CollectiveType as C;
        for (name, want) in [
            ("_c10d_functional::all_reduce", C::AllReduce),
            ("_c10d_functional::all_reduce_coalesced_", C::AllReduce),
            ("_c10d_functional::all_gather_into_tensor_out", C::AllGather),
            (
                "_c10d_functional::reduce_scatter_tensor_coalesced",
                C::ReduceScatter,
            ),
            ("_c10d_functional::all_to_all_single", C::AllToAll),
            ("_dtensor::shard_dim_alltoall", C::AllToAll),
            ("_c10d_functional::isend", C::P2P),
            ("_c10d_functional::batch_p2p_ops", C::P2P),
            ("_c10d_functional::broadcast", C::Unsupported),
            ("c10d::allreduce_", C::Unsupported),
        ] {
            assert_eq!(C::from_kernel_name(name), want, "{name}");
        }
    }

    #[test]
    fn log2i_is_the_floor() {
        assert_eq!(
            [0, 1, 2, 3, 4, 1023, 1024].map(log2i),
            [0, 0, 1, 1, 2, 9, 10]
        );
        assert_eq!(log2i(u64::MAX), 63);
    }

    /// Properties of the model that follow from its formulas (the values themselves are
    /// checked against torch in `python/tests/test_cost.py`).
    #[test]
    fn model_shape() {
        let net = Network::default();
        let small = collective_time(1 << 10, 8, CollectiveType::AllGather, &net);
        let large = collective_time(1 << 30, 8, CollectiveType::AllGather, &net);
        assert!(small.us > 0.0 && large.us > small.us);
        assert_eq!(small.algo.map(|a| a.algo), Some(Algo::Ring));
        // One rank, or a collective the model does not know: no time, no choice.
        assert_eq!(
            collective_time(1 << 20, 1, CollectiveType::AllReduce, &net),
            CollectiveTime {
                us: 0.0,
                algo: None
            }
        );
        assert_eq!(
            collective_time(1 << 20, 8, CollectiveType::Unsupported, &net).algo,
            None
        );
        // Zero bandwidth disables every pair.
        let dead = Network {
            intra_node_bw: Some(0.0),
            ..Network::default()
        };
        assert_eq!(
            collective_time(1 << 20, 8, CollectiveType::AllReduce, &dead).algo,
            None
        );
        // Across nodes LL128 is off and the network is InfiniBand.
        let multi = collective_time(1 << 30, 64, CollectiveType::AllReduce, &net);
        assert_ne!(multi.algo.map(|a| a.proto), Some(Proto::LL128));
        assert!(multi.us > large.us);
        for g in [1, 7, 8, 9, 1 << 40] {
            for b in [0, 1, 63, 64, u64::MAX] {
                for c in [
                    CollectiveType::AllReduce,
                    CollectiveType::P2P,
                    CollectiveType::AllToAll,
                ] {
                    let t = collective_time(b, g, c, &net);
                    assert!(t.us.is_finite() && t.us >= 0.0);
                }
            }
        }
    }
}
