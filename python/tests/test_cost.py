"""``commlens cost`` against PyTorch's own estimators, called in-process on the same graphs.

* Collectives: ``estimate_fx_collective_size`` and the NCCL model
  (``estimate_nccl_collective_runtime_impl`` / ``estimate_nccl_collective_runtime_from_fx_node``
  of ``torch/_inductor/comm_analysis.py``) with the hardware torch reads from the machine pinned
  (GPU generation, GPUs per node, NVLink, the config bandwidth overrides), over a grid of sizes
  (1 KiB to 4 GiB), group sizes (2 to 256), collective ops and generations: bytes equal, times
  within 1e-6 relative.
* Compute: ``FlopCounterMode`` run on each node of real traced graphs (GPT-2, ConvNet, MoE with
  expert-parallel all-to-all, HSDP, an Inductor post-grad graph), and Inductor's roofline
  (``estimate_roofline_runtime_ms``) with the device's peak FLOP/s and bandwidth pinned.
"""

from __future__ import annotations

import contextlib
import json
import math
import operator

import pytest
import torch
from torch import fx

import commlens_dump
from support import example_key, run_cli

from torch._inductor import comm_analysis as ca
from torch._inductor.analysis.device_info import datasheet_dram_bw_gbs, datasheet_tops

GENERATIONS = {"volta": ca.NVIDIA_GPU_TYPE.VOLTA, "ampere": ca.NVIDIA_GPU_TYPE.AMPERE,
               "hopper": ca.NVIDIA_GPU_TYPE.HOPPER, "blackwell": ca.NVIDIA_GPU_TYPE.BLACKWELL}
# The part torch's device table knows for each generation (Volta has none).
DEVICE = {"ampere": "NVIDIA A100", "hopper": "NVIDIA H100", "blackwell": "NVIDIA B200"}
C10D = torch.ops._c10d_functional
REL = 1e-6


@contextlib.contextmanager
def pinned(gpu="ampere", gpus_per_node=8, nvlink=True, intra_bw=None, inter_bw=None, group_sizes=None,
           peaks=None, dram_bw=None):
    """Make torch's estimators see this hardware instead of the machine's."""
    import torch.utils._runtime_estimation as rt
    mp = pytest.MonkeyPatch()
    mp.setattr(torch.cuda, "is_available", lambda: True)
    mp.setattr(torch.cuda, "device_count", lambda: gpus_per_node)
    mp.setattr(ca, "get_gpu_type", lambda: GENERATIONS[gpu])
    mp.setattr(ca, "_has_nvlink", lambda: nvlink)
    if group_sizes is not None:
        import torch.distributed.distributed_c10d as c10d
        original = c10d._get_group_size_by_name
        mp.setattr(c10d, "_get_group_size_by_name",
                   lambda name: group_sizes[name] if name in group_sizes else original(name))
    if peaks is not None:
        mp.setattr(rt, "get_device_tflops", lambda dtype, device=None: peaks.get(str(dtype), 0.0))
        mp.setattr(rt, "get_device_dram_gbps", lambda device=None: dram_bw)
    try:
        with torch._inductor.config.patch(intra_node_bw=intra_bw, inter_node_bw=inter_bw):
            yield
    finally:
        mp.undo()


def cli_args(layout: dict) -> list:
    args = ["--gpu", layout["gpu"], "--gpus-per-node", str(layout.get("gpus_per_node", 8))]
    if not layout.get("nvlink", True):
        args.append("--no-nvlink")
    if layout.get("intra_bw") is not None:
        args += ["--intra-bw", str(layout["intra_bw"])]
    if layout.get("inter_bw") is not None:
        args += ["--inter-bw", str(layout["inter_bw"])]
    return args


def cost_json(dump_path, tmp_path, layout, group_ranks=None) -> dict:
    extra = []
    if group_ranks is not None:
        args = tmp_path / "cost_args.json"
        args.write_text(json.dumps({"group_ranks": group_ranks}))
        extra = ["--args", str(args)]
    proc = run_cli("cost", str(dump_path), "--json", *cli_args(layout), *extra)
    report = json.loads(proc.stdout)
    assert report["format"] == "commlens.cost" and report["version"] == 1
    return report


def close(actual: float, expected: float) -> bool:
    return math.isclose(actual, expected, rel_tol=REL, abs_tol=1e-12)


# ----------------------------------------------------------------------------- the grid

SIZES = [1 << e for e in range(10, 33, 2)] + [1000, 3 * (1 << 20) + 4, 123_456_789 * 4]
GROUPS = [2, 3, 4, 7, 8, 9, 12, 16, 24, 32, 64, 100, 128, 256]
LAYOUTS = [
    {"gpus_per_node": 8},
    {"gpus_per_node": 4},
    {"gpus_per_node": 8, "nvlink": False},
    {"gpus_per_node": 2, "intra_bw": 100, "inter_bw": 10},
]


def _meta(numel: int, dtype=torch.float32) -> torch.Tensor:
    return torch.empty(numel, dtype=dtype, device="meta")


def grid_graph():
    """One graph with a collective per (op, size, group size): inputs and outputs as meta tensors
    of the sizes the collective has on a rank."""
    graph = fx.Graph()
    cases = []  # (node name, group size)
    counter = [0]

    def tensor_input(numel, dtype=torch.float32):
        counter[0] += 1
        node = graph.placeholder(f"x{counter[0]}")
        node.meta["val"] = _meta(numel, dtype)
        return node

    def add(target, args, val, group, kwargs=None):
        node = graph.call_function(target, tuple(args), kwargs or {})
        node.meta["val"] = val
        wait_arg = node
        if isinstance(val, (list, tuple)):
            wait_arg = graph.call_function(operator.getitem, (node, 0))
            wait_arg.meta["val"] = val[0]
        wait = graph.call_function(C10D.wait_tensor.default, (wait_arg,))
        wait.meta["val"] = val[0] if isinstance(val, (list, tuple)) else val
        cases.append((node.name, group))

    for size in SIZES:
        numel = size // 4
        for g in GROUPS:
            name = f"g{g}"
            x = tensor_input(numel)
            add(C10D.all_gather_into_tensor.default, (x, g, name), _meta(numel * g), g)
            y = tensor_input(numel * g)
            add(C10D.reduce_scatter_tensor.default, (y, "sum", g, name), _meta(numel), g)
            add(C10D.all_reduce.default, (x, "sum", name), _meta(numel), g)
            add(C10D.all_to_all_single.default, (x, [numel // g] * g, [numel // g] * g, name), _meta(numel), g)
    # The other forms, on fewer sizes: coalesced, out=, in place, bf16, and ops the model
    # cannot time (broadcast) or that only some versions can (p2p).
    for size in [1 << 10, 1 << 20, 3 << 25, 1 << 32]:
        numel = size // 4
        for g in [2, 8, 16, 256]:
            name = f"g{g}"
            a, b = tensor_input(numel), tensor_input(numel // 2 + 1, torch.bfloat16)
            add(C10D.all_gather_into_tensor_coalesced.default, ([a, b], g, name),
                [_meta(numel * g), _meta((numel // 2 + 1) * g, torch.bfloat16)], g)
            add(C10D.reduce_scatter_tensor_coalesced.default, ([a, a], "avg", g, name),
                [_meta(numel // g), _meta(numel // g)], g)
            add(C10D.all_reduce_coalesced.default, ([a, b], "sum", name), [_meta(numel), _meta(numel // 2 + 1)], g)
            out = tensor_input(numel * g)
            add(C10D.all_gather_into_tensor_out.default, (a, g, name), _meta(numel * g), g, {"out": out})
            add(C10D.all_reduce_.default, (b, "sum", name), _meta(numel // 2 + 1, torch.bfloat16), g)
            add(C10D.broadcast.default, (a, 0, name), _meta(numel), g)
            add(C10D.isend.default, (a, 1, 0, name), _meta(numel), g)
    graph.output(None)
    return graph, cases


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    graph, cases = grid_graph()
    gm = fx.GraphModule(torch.nn.Module(), graph)
    group_ranks = {f"g{g}": list(range(g)) for g in GROUPS}
    path = commlens_dump.dump(gm, tmp_path_factory.mktemp("grid") / "grid.json.gz", group_ranks=group_ranks)
    return gm, cases, path, group_ranks


def test_collective_bytes_and_times_equal_torch_over_the_grid(grid, tmp_path):
    gm, cases, path, group_ranks = grid
    nodes = {node.name: node for node in gm.graph.nodes}
    sizes = {name: g for name, g in cases}
    group_sizes = {name: len(ranks) for name, ranks in group_ranks.items()}
    torch_bytes = {name: ca.estimate_fx_collective_size(nodes[name]) for name in sizes}
    colls = {name: ca.get_collective_type_from_kernel_name(nodes[name].target.name()) for name in sizes}
    assert max(torch_bytes.values()) > 4 << 30 and min(torch_bytes.values()) <= 2048
    checked = 0
    for gpu in GENERATIONS:
        for layout in LAYOUTS:
            layout = {"gpu": gpu, **layout}
            report = cost_json(path, tmp_path, layout)
            rows = {row["node"]: row for row in report["collectives"]}
            assert set(rows) == set(sizes), "every collective is reported, and nothing else"
            knobs = {k: layout.get(k) for k in ("gpus_per_node", "nvlink", "intra_bw", "inter_bw")}
            knobs["gpus_per_node"] = knobs["gpus_per_node"] or 8
            knobs["nvlink"] = knobs["nvlink"] is not False
            with pinned(gpu, group_sizes=group_sizes, **knobs):
                for name, g in cases:
                    row = rows[name]
                    assert row["bytes"] == torch_bytes[name], (name, row, torch_bytes[name])
                    assert row["group_size"] == g
                    assert row["coll"] == colls[name].name.lower()
                    expected_ms = ca.estimate_nccl_collective_runtime_impl(torch_bytes[name], g, colls[name])
                    assert close(row["us"] / 1e3, expected_ms), (layout, name, row, expected_ms)
                    # The choice the time came from, for the report's `algo`.
                    if expected_ms > 0:
                        t, algo, proto = ca._nccl_best_algo_time(torch_bytes[name], g, colls[name])
                        want = f"{ca.NCCL_ALGO(algo).name.title()}/{ca.NCCL_PROTO(proto).name.replace('SIMPLE', 'Simple')}"
                        assert row["algo"] == want, (name, row, want)
                    else:
                        assert row["algo"] is None, row
                    checked += 1
            # The same through torch's entry point for fx nodes, on one layout per generation.
            if layout["gpus_per_node"] == 8 and layout.get("nvlink", True):
                with pinned(gpu, group_sizes=group_sizes):
                    for name, _ in cases[::7]:
                        ms = ca.estimate_nccl_collective_runtime_from_fx_node(nodes[name], use_nccl_estimator=False)
                        assert close(rows[name]["us"] / 1e3, ms), (name, rows[name], ms)
    assert checked == len(cases) * len(GENERATIONS) * len(LAYOUTS)


def test_grid_exercises_every_algorithm_and_protocol(grid, tmp_path):
    """Guard against a vacuous grid: the model's choices it covers, and times that differ."""
    _, _, path, _ = grid
    seen = set()
    for gpu in GENERATIONS:
        report = cost_json(path, tmp_path, {"gpu": gpu})
        seen |= {row["algo"] for row in report["collectives"]}
    assert {"Ring/LL", "Ring/LL128", "Ring/Simple", "Tree/LL", "Tree/Simple", None} <= seen


# ----------------------------------------------------------------------------- real graphs

def _compute_expectations(graph: fx.Graph, group_sizes: dict, gpu: str):
    """torch's numbers for every node: collective bytes and times, FLOPs, roofline times."""
    from torch._guards import detect_fake_mode
    from torch._inductor.fx_passes.overlap_scheduling import estimate_roofline_runtime_ms
    from torch._inductor.fx_utils import get_fake_args_kwargs
    from torch.utils.flop_counter import FlopCounterMode

    device = DEVICE.get(gpu, "NVIDIA A100")
    peaks = {str(d): datasheet_tops(d, False, device) or 0.0
             for d in (torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.int8)}
    dram = datasheet_dram_bw_gbs(device)
    expected = {"collectives": {}, "flops": {}, "roofline_ms": {}, "peaks": peaks, "dram": dram}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, torch._ops.OpOverloadPacket):
            # A packet (as the FSDP pass inserts) is its default overload, which torch's
            # estimators require.
            target = target.default
        namespace = getattr(target, "namespace", None)
        if namespace in ("_c10d_functional", "_c10d_functional_autograd") and "wait" not in target.name():
            saved, node.target = node.target, target
            try:
                with pinned(gpu, group_sizes=group_sizes):
                    expected["collectives"][node.name] = (
                        ca.estimate_fx_collective_size(node),
                        ca.estimate_nccl_collective_runtime_from_fx_node(node, use_nccl_estimator=False),
                        ca.get_collective_type_from_kernel_name(target.name()).name.lower())
            finally:
                node.target = saved
            continue
        if namespace == "_c10d_functional":
            continue  # waits
        ok, args, kwargs = get_fake_args_kwargs(node)
        assert ok, node.format_node()
        fake_mode = detect_fake_mode((args, kwargs))
        with fake_mode or contextlib.nullcontext(), FlopCounterMode(display=False) as counter:
            target(*args, **kwargs)
        expected["flops"][node.name] = counter.get_total_flops()
        with pinned(gpu, peaks=peaks, dram_bw=dram):
            expected["roofline_ms"][node.name] = estimate_roofline_runtime_ms(node)
    return expected


def _check_against_torch(report: dict, expected: dict, name: str) -> None:
    rows = {row["node"]: row for row in report["collectives"]}
    assert set(rows) == set(expected["collectives"]), name
    for node, (size, ms, coll) in expected["collectives"].items():
        row = rows[node]
        assert row["bytes"] == size, (name, node, row, size)
        assert row["coll"] == coll, (name, node, row)
        assert close(row["us"] / 1e3, ms), (name, node, row, ms)
    compute = {row["node"]: row for row in report["compute"]}
    assert set(compute) <= set(expected["flops"]), name
    for node, flops in expected["flops"].items():
        row = compute.get(node)
        if row is None:
            # Views and getitem launch no kernel and are not costed; FlopCounterMode counts 0.
            assert flops == 0, (name, node, flops)
            continue
        assert row["flops"] == flops, (name, node, row, flops)
        assert close(row["us"] / 1e3, expected["roofline_ms"][node]), (name, node, row, expected["roofline_ms"][node])
    assert sum(expected["flops"].values()) > 0, name


# model, build kwargs; the HSDP case all-reduces gradients across replicas.
REAL = {
    "gpt2": dict(model_name="gpt2", degree=2),
    "convnet": dict(model_name="convnet", degree=2),
    "moe": dict(model_name="moe", degree=2),
    "hsdp": dict(model_name="mlp", degree=2, replicas=2),
    "llama_bf16": dict(model_name="llama", degree=2, param_dtype=torch.bfloat16, n_layers=1),
}


@pytest.mark.parametrize("case", sorted(REAL))
def test_real_graphs_node_by_node(case, example, tmp_path):
    build = REAL[case]
    ex = example(example_key(build), **build)
    path = ex.dump(str(tmp_path / f"{case}.json"))
    group_sizes = {group: len(ranks) for group, ranks in ex.group_ranks.items()}
    gpu = {"gpt2": "hopper", "convnet": "ampere", "moe": "blackwell", "hsdp": "hopper",
           "llama_bf16": "hopper"}[case]
    expected = _compute_expectations(ex.gm.graph, group_sizes, gpu)
    report = cost_json(path, tmp_path, {"gpu": gpu}, group_ranks=ex.group_ranks)
    _check_against_torch(report, expected, case)
    kinds = {row["coll"] for row in report["collectives"]}
    assert {"all_gather", "reduce_scatter"} <= kinds
    if case == "hsdp":
        assert "all_reduce" in kinds
    if case == "moe":
        assert "all_to_all" in kinds


def test_whole_graph_flops_equal_flop_counter_mode(example, tmp_path):
    """FlopCounterMode over the whole GPT-2 training step (forward and backward, run on the fake
    process group) counts what the per-node rows add up to."""
    from torch._guards import detect_fake_mode
    from torch.utils.flop_counter import FlopCounterMode

    ex = example(example_key(REAL["gpt2"]), **REAL["gpt2"])
    path = ex.dump(str(tmp_path / "gpt2.json"))
    report = cost_json(path, tmp_path, {"gpu": "hopper"}, group_ranks=ex.group_ranks)
    inputs = [node.meta["val"] for node in ex.gm.graph.nodes if node.op == "placeholder"]
    with detect_fake_mode(inputs), FlopCounterMode(display=False) as counter:
        fx.Interpreter(ex.gm).run(*inputs)
    assert sum(row["flops"] for row in report["compute"]) == counter.get_total_flops() > 0


def test_inductor_post_grad_graph(tmp_path):
    """A graph as Inductor's post-grad passes leave it (functional collectives on the fake process
    group, mm, convolution, CPU flash attention), checked inside Inductor's own custom pass."""
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    import torch.nn.functional as F
    import torch._inductor.config as config
    from torch._inductor.custom_graph_pass import CustomGraphPass
    from commlens_dump.demo import init_fake_process_group

    init_fake_process_group(4)
    world = dist.group.WORLD
    group_ranks = {world.group_name: list(range(dist.get_world_size()))}
    captured = {}

    class Stop(Exception):
        pass

    class Capture(CustomGraphPass):
        def __call__(self, graph):
            captured["path"] = commlens_dump.dump(graph, tmp_path / "post_grad.json", group_ranks=group_ranks)
            captured["expected"] = _compute_expectations(
                graph, {name: len(r) for name, r in group_ranks.items()}, "hopper")
            raise Stop()  # stop before code generation: nothing to compile

        def uuid(self):
            return "commlens-test-capture"

    def step(x, w, conv_w, q, k, v):
        y = funcol.all_gather_tensor(x, 0, world)
        h = funcol.all_reduce(torch.relu(y @ w), "sum", world)
        img = F.conv2d(h.reshape(1, 4, -1, 8), conv_w, padding=1)
        att = F.scaled_dot_product_attention(q, k, v)
        return funcol.reduce_scatter_tensor(h, "sum", 0, world), img.sum() + att.sum()

    saved = (config.post_grad_custom_post_pass, config.fx_graph_cache)
    try:
        config.post_grad_custom_post_pass, config.fx_graph_cache = Capture(), False
        torch._dynamo.reset()
        with pytest.raises(Exception, match="Stop"):
            torch.compile(step)(torch.randn(4, 8), torch.randn(8, 8), torch.randn(4, 4, 3, 3),
                                torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))
    finally:
        config.post_grad_custom_post_pass, config.fx_graph_cache = saved
        torch._dynamo.reset()
    report = cost_json(captured["path"], tmp_path, {"gpu": "hopper"})
    _check_against_torch(report, captured["expected"], "inductor")
    assert {row["coll"] for row in report["collectives"]} == {"all_gather", "all_reduce", "reduce_scatter"}
    targets = {row["target"] for row in report["compute"] if row["flops"]}
    assert {"aten.mm.default", "aten.convolution.default",
            "aten._scaled_dot_product_flash_attention_for_cpu.default"} <= targets


# ----------------------------------------------------------------------------- presets, plan, CLI

def test_roofline_presets_are_torchs_datasheet(tmp_path):
    """The ampere/hopper/blackwell presets are what torch's device table gives (dense)."""
    dump = REPO_EXAMPLE
    for gpu, device in DEVICE.items():
        hardware = cost_json(dump, tmp_path, {"gpu": gpu})["hardware"]
        assert hardware["dram_bw"] == datasheet_dram_bw_gbs(device)
        peaks = hardware["peak_tflops"]
        for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.int8,
                      torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz,
                      torch.float8_e8m0fnu):
            assert peaks.get(str(dtype)) == datasheet_tops(dtype, False, device), (gpu, dtype)
        assert peaks["torch.tf32"] == datasheet_tops(torch.float32, True, device)
        assert hardware["compute_efficiency"] == 0.75


def test_overrides_reach_the_model(tmp_path):
    base = cost_json(REPO_EXAMPLE, tmp_path, {"gpu": "hopper"})
    proc = run_cli("cost", REPO_EXAMPLE, "--json", "--gpu", "hopper", "--dram-bw", "100", "--tflops",
                   "float32=1", "--efficiency", "0.5", "--intra-bw", "10")
    changed = json.loads(proc.stdout)
    hw = changed["hardware"]
    assert hw["dram_bw"] == 100 and hw["peak_tflops"]["torch.float32"] == 1 and hw["compute_efficiency"] == 0.5
    assert hw["intra_bw"] == 10
    assert changed["summary"]["unbucketed"]["compute_us"] > base["summary"]["unbucketed"]["compute_us"]
    assert changed["summary"]["unbucketed"]["comm_us"] > base["summary"]["unbucketed"]["comm_us"]
    for bad in (["--gpu", "kepler"], ["--gpus-per-node", "0"], ["--intra-bw", "-1"], ["--tflops", "foo=1"],
                ["--efficiency", "1.5"]):
        proc = run_cli("cost", REPO_EXAMPLE, *bad, check=False)
        assert proc.returncode == 2, (bad, proc.stderr)


def test_planned_buckets_cost_their_members_together(example, tmp_path):
    """A planned bucket's bytes are its members' bytes together and its time is torch's model at
    that size; the planned step beats the unbucketed one on this latency-bound graph."""
    from support import reference_report

    build = dict(model_name="llama", degree=4)
    ex = example(example_key(build), **build)
    path = ex.dump(str(tmp_path / "llama.json"))
    args = {"group_ranks": ex.group_ranks, "block_module_types": ["TransformerBlock"],
            "module_bucket_plans": ["tok_embeddings", ["norm", "output"]]}
    args_path = tmp_path / "args.json"
    args_path.write_text(json.dumps(args))
    report = json.loads(run_cli("cost", path, "--json", "--gpu", "hopper", "--args", args_path).stdout)
    modules = json.loads(open(path).read())["modules"]
    plan = reference_report(ex.gm, modules, {"policy": None, "pp_degree": 1, "dp_mode": "fsdp", **args})
    by_id = {bucket["bucket_id"]: bucket for bucket in plan["buckets"]}
    assert [row["bucket_id"] for row in report["buckets"]] == [b["bucket_id"] for b in plan["buckets"]]
    assert any(len(b["members"]) > 1 for b in plan["buckets"])
    launch_of = {}
    for node in ex.gm.graph.nodes:
        if node.meta.get("comm_type") in ("fsdp_all_gather", "fsdp_all_gather_backward", "fsdp_reduce_scatter"):
            launch_of[(node.meta["comm_type"], node.meta["param_name"])] = node
    with pinned("hopper", group_sizes={g: len(r) for g, r in ex.group_ranks.items()}):
        for row in report["buckets"]:
            bucket = by_id[row["bucket_id"]]
            members = [launch_of[(m["kind"], m["param_name"])] for m in bucket["members"]]
            size = sum(ca.estimate_fx_collective_size(m) for m in members)
            assert row["bytes"] == size
            # The FSDP pass calls the op packet; torch names its default overload.
            coll = ca.get_collective_type_from_kernel_name(members[0].target.default.name())
            ms = ca.estimate_nccl_collective_runtime_impl(size, len(bucket["members"][0]["ranks"]), coll)
            assert close(row["us"] / 1e3, ms), (row, ms)
    summary = report["summary"]
    for variant in ("unbucketed", "planned"):
        s = summary[variant]
        assert math.isclose(s["step_us"], s["compute_us"] + s["exposed_comm_us"], rel_tol=1e-9)
        assert s["comm_us"] > 0
    assert summary["planned"]["comm_us"] < summary["unbucketed"]["comm_us"]
    assert summary["planned"]["exposed_comm_us"] < summary["unbucketed"]["exposed_comm_us"]


def test_text_output_names_the_model_and_the_most_exposed(tmp_path):
    proc = run_cli("cost", REPO_EXAMPLE, "--gpu", "blackwell", "--gpus-per-node", "1")
    text = proc.stdout
    assert "blackwell (NVIDIA B200), 1 GPUs per node" in text
    assert "comm_analysis.py" in text and "exposed communication" in text
    assert "Most exposed collectives, as it is:" in text and "Most exposed buckets or collectives, planned:" in text
    proc = run_cli("cost", str(tmp_path / "missing.json"), check=False)
    assert proc.returncode == 1 and "missing.json" in proc.stderr


from support import REPO  # noqa: E402

REPO_EXAMPLE = str(REPO / "examples" / "mlp_fsdp.json")
