"""Round-trip details of the exporter, each dump also read by the Rust CLI."""

import gzip
import json
import math
import operator

import pytest
import torch
from torch import fx

import commlens_dump
from commlens_dump.export import dumps, load
from support import REPO, run_cli

c10d = torch.ops._c10d_functional
aten = torch.ops.aten


def cli_reads(path, tmp_path, group_ranks=None):
    """The Rust reader accepts the dump (``commlens plan`` parses and plans it)."""
    args = tmp_path / "reader_args.json"
    args.write_text(json.dumps({"group_ranks": group_ranks or {}, "module_bucket_plans": None,
                                "block_module_types": None, "policy": None, "pp_degree": 1, "dp_mode": "fsdp"}))
    return json.loads(run_cli("plan", path, "--args", args).stdout)


def nodes_by_name(doc):
    return {node["name"]: node for node in doc["nodes"]}


def _fake(shape, dtype=torch.float32):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        return torch.empty(shape, dtype=dtype)


def build_ops_graph():
    graph = fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = _fake((4, 8))
    packet = graph.call_function(c10d.all_gather_into_tensor, (x, 2, "fsdp"), name="all_gather_into_tensor")
    overload = graph.call_function(c10d.all_gather_into_tensor.default, (x, 2, "fsdp"), name="all_gather_into_tensor_1")
    wait = graph.call_function(c10d.wait_tensor.default, (overload,), name="wait_tensor")
    wait_packet = graph.call_function(c10d.wait_tensor, (packet,), name="wait_tensor_1")
    split = graph.call_function(aten.split.Tensor, (wait, 4), name="split")
    first = graph.call_function(operator.getitem, (split, 0))
    t = graph.call_function(aten.t.default, (first,), name="t")
    view = graph.call_function(aten.view.default, (t, [-1]), name="view")
    copy = graph.call_function(aten.copy_.default, (wait_packet, wait_packet), name="copy_")
    mm = graph.call_function(aten.mm.default, (t, first), name="mm")
    cast = graph.call_function(torch.ops.prims.convert_element_type.default, (mm, torch.bfloat16), name="convert_element_type")
    empty = graph.call_function(aten.empty.memory_format, ([2, 2],),
                                {"dtype": torch.float16, "device": torch.device("cpu"), "pin_memory": False}, name="empty")
    fill = graph.call_function(aten.fill.Scalar, (empty, float("inf")), name="fill")
    graph.output((view, copy, cast, fill))
    return fx.GraphModule(torch.nn.Module(), graph)


def test_targets_alias_impure_repr(tmp_path):
    gm = build_ops_graph()
    path = commlens_dump.dump(gm, tmp_path / "ops.json")
    doc = load(path)
    assert doc["format"] == "commlens.graph" and doc["version"] == 1
    nodes = nodes_by_name(doc)
    assert nodes["all_gather_into_tensor"]["target"] == "_c10d_functional.all_gather_into_tensor"
    assert nodes["all_gather_into_tensor_1"]["target"] == "_c10d_functional.all_gather_into_tensor.default"
    assert nodes["wait_tensor"]["target"] == "_c10d_functional.wait_tensor.default"
    assert nodes["wait_tensor_1"]["target"] == "_c10d_functional.wait_tensor"
    assert nodes["split"]["target"] == "aten.split.Tensor"
    assert nodes["getitem"]["target"] == "_operator.getitem"
    assert nodes["convert_element_type"]["target"] == "prims.convert_element_type.default"
    assert nodes["x"]["target"] == "x" and nodes["output"]["target"] == "output"
    # alias: getitem and non-writing alias annotations (split, t, view); not copy_, mm, wait.
    alias = {name for name, node in nodes.items() if node["alias"]}
    assert alias == {"split", "getitem", "t", "view"}
    # impure: placeholder/output, in-place copy_, waits (effectful in this PyTorch); not gathers.
    impure = {name for name, node in nodes.items() if node["impure"]}
    assert {"x", "output", "copy_"} <= impure
    assert not {"all_gather_into_tensor", "all_gather_into_tensor_1", "split", "t", "mm"} & impure
    assert impure == {n.name for n in gm.graph.nodes if n.is_impure()}
    # args: node refs, dtype, device, non-finite floats, nested lists.
    assert nodes["all_gather_into_tensor"]["args"] == [{"node": "x"}, 2, "fsdp"]
    assert nodes["convert_element_type"]["args"] == [{"node": "mm"}, {"dtype": "torch.bfloat16"}]
    assert nodes["empty"]["args"] == [[2, 2]]
    assert nodes["empty"]["kwargs"] == {"dtype": {"dtype": "torch.float16"}, "device": {"device": "cpu"},
                                        "pin_memory": False}
    assert nodes["fill"]["args"] == [{"node": "empty"}, {"repr": "inf"}]
    assert nodes["output"]["args"] == [[{"node": "view"}, {"node": "copy_"}, {"node": "convert_element_type"},
                                        {"node": "fill"}]]
    # repr: str(target), str(args), str(kwargs) verbatim.
    for node in gm.graph.nodes:
        assert nodes[node.name]["repr"] == {"target": str(node.target), "args": str(node.args),
                                            "kwargs": str(node.kwargs)}
    assert nodes["all_gather_into_tensor"]["repr"]["args"] == "(x, 2, 'fsdp')"
    assert nodes["x"]["meta"]["val"] == {"tensor": {"shape": [4, 8], "dtype": "torch.float32", "device": "cpu"}}
    cli_reads(path, tmp_path)


class Opaque:
    def __str__(self):
        return "Opaque<é>"


def test_metadata_encoding_and_unicode(tmp_path):
    graph = fx.Graph()
    w = graph.placeholder("wéight_λ")
    w.meta["val"] = _fake((2, 3), torch.bfloat16)
    out = graph.call_function(aten.neg.default, (w,), name="neg")
    out.meta.update({
        "val": (_fake((2,)), _fake((3,), torch.int64)),
        "comm_type": "fsdp_all_gather", "param_name": "blöck.wéight", "state_idx": 0,
        "fsdp_bucket_spec": {"input_shape": (2, 3), "output_shape": [4, 3], "dtype": torch.bfloat16,
                             "device": "cpu"},
        "floats": [1.5, float("inf"), float("-inf"), float("nan")],
        "device": torch.device("cpu"),
        "ref": w, "refs": {"src": w},
        "custom": {"distributed.comm_semantics": {"version": 1, "role": "fsdp.param_unshard",
                                                  "source": "explicit", "producer": "fsdp"}},
        "nn_module_stack": {"L__self___l1": ("l1", torch.nn.Linear), "blk": ("layers.0", "TransformerBlock")},
        "opaque": Opaque(), 3: "int key", "tags": {"b", "a"},
        "stack_trace": "File x.py, line 1",
    })
    graph.output(out)
    gm = fx.GraphModule(torch.nn.Module(), graph)
    path = commlens_dump.dump(gm, tmp_path / "meta.json")
    raw = open(path, "rb").read()
    assert "wéight_λ".encode() in raw  # UTF-8, not escaped
    doc = load(path)
    nodes = nodes_by_name(doc)
    name = next(n.name for n in gm.graph.nodes if n.op == "placeholder")
    assert name in nodes and nodes["neg"]["args"] == [{"node": name}]
    meta = nodes["neg"]["meta"]
    assert meta["val"] == [{"tensor": {"shape": [2], "dtype": "torch.float32", "device": "cpu"}},
                           {"tensor": {"shape": [3], "dtype": "torch.int64", "device": "cpu"}}]
    assert meta["fsdp_bucket_spec"] == {"input_shape": [2, 3], "output_shape": [4, 3], "dtype": "torch.bfloat16",
                                        "device": "cpu"}
    assert meta["floats"] == [1.5, {"repr": "inf"}, {"repr": "-inf"}, {"repr": "nan"}]
    assert meta["device"] == {"device": "cpu"}
    assert meta["ref"] == {"node": name} and meta["refs"] == {"src": {"node": name}}
    assert meta["custom"]["distributed.comm_semantics"]["role"] == "fsdp.param_unshard"
    assert meta["nn_module_stack"] == {"L__self___l1": ["l1", "torch.nn.modules.linear.Linear"],
                                       "blk": ["layers.0", "TransformerBlock"]}
    assert meta["opaque"] == {"repr": "Opaque<é>"} and meta["3"] == "int key" and meta["tags"] == ["a", "b"]
    assert meta["param_name"] == "blöck.wéight"
    assert "stack_trace" not in meta
    # Nothing dropped: every key except stack_trace is present.
    assert set(meta) == {str(k) for k in out.meta} - {"stack_trace"}
    with_trace = json.loads(dumps(gm, with_stack_trace=True))
    assert nodes_by_name(with_trace)["neg"]["meta"]["stack_trace"] == "File x.py, line 1"
    cli_reads(path, tmp_path)


def test_symbolic_shapes(tmp_path):
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w):
        return (x.view(x.shape[0] * x.shape[1]) * 2).sum() + w.sum()

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(3, 4), torch.randn(5))
    path = commlens_dump.dump(gm, tmp_path / "sym.json")
    doc = load(path)
    text = json.dumps(doc)
    assert '{"sym": "s' in text.replace('{"sym":"s', '{"sym": "s')
    x = doc["nodes"][0]
    assert x["meta"]["val"]["tensor"]["shape"][0] == {"sym": str(gm.graph.find_nodes(op="placeholder")[0].meta["val"].shape[0])}
    sym_args = [arg for node in doc["nodes"] for arg in node["args"]
                if isinstance(arg, list) for arg in arg if isinstance(arg, dict) and "sym" in arg]
    sym_nodes = [node for node in doc["nodes"] if isinstance(node["meta"].get("val"), dict)
                 and "sym" in node["meta"]["val"]]
    assert sym_nodes, "sym_size nodes carry symbolic values"
    assert all(node["target"].startswith("aten.sym_size") or node["target"].startswith("_operator")
               for node in sym_nodes)
    del sym_args
    cli_reads(path, tmp_path)


def test_dump_never_changes_the_graph(example, tmp_path):
    ex = example("llama-4", model_name="llama", degree=4)
    before_code = ex.gm.code
    before = [(n.name, n.op, n.target, n.args, n.kwargs, list(n.meta.items())) for n in ex.gm.graph.nodes]
    ex.dump(str(tmp_path / "a.json"))
    after = [(n.name, n.op, n.target, n.args, n.kwargs, list(n.meta.items())) for n in ex.gm.graph.nodes]
    assert ex.gm.code == before_code
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert b[:5] == a[:5]
        assert [k for k, _ in b[5]] == [k for k, _ in a[5]]
        assert all(vb is va for (_, vb), (_, va) in zip(b[5], a[5]))


def test_gzip_is_deterministic(example, tmp_path):
    ex = example("mlp-2", model_name="mlp", degree=2)
    first = ex.dump(str(tmp_path / "one.json.gz"))
    second = ex.dump(str(tmp_path / "two.json.gz"))
    plain = ex.dump(str(tmp_path / "plain.json"))
    data = open(first, "rb").read()
    assert data[:2] == b"\x1f\x8b" and data == open(second, "rb").read()
    assert gzip.decompress(data) == open(plain, "rb").read()
    assert load(first) == load(plain)
    cli_reads(first, tmp_path, ex.group_ranks)


def test_fsdp_tags_match_the_fsdp_pass(example, tmp_path):
    ex = example("mlp-2", model_name="mlp", degree=2)
    doc = load(ex.dump(str(tmp_path / "mlp.json")))
    nodes = doc["nodes"]
    free = [n for n in nodes if n["target"].endswith("._free_tensor_storage")]
    assert free and all(n["target"] == "hyper_parallel.compile.passes.parallel.fsdp_pass._free_tensor_storage"
                        and n["repr"]["target"] == "<function _free_tensor_storage>" and n["impure"]
                        for n in free)
    kinds = {n["meta"].get("comm_type") for n in nodes}
    assert {"fsdp_all_gather", "fsdp_all_gather_backward", "fsdp_reduce_scatter", "fsdp_reshard_free",
            "fsdp_reshard_free_backward"} <= kinds
    rs = [n for n in nodes if n["meta"].get("comm_type") == "fsdp_reduce_scatter"]
    assert all(n["args"][1:] == ["avg", 2, "fsdp"] and n["meta"]["autograd_backward"] is True for n in rs)
    ag = next(n for n in nodes if n["meta"].get("comm_type") == "fsdp_all_gather")
    assert ag["meta"]["fsdp_bucket_spec"] == {"input_shape": [4, 8], "output_shape": [8, 8],
                                              "dtype": "torch.float32", "device": "cpu"}
    assert doc["modules"][0] == {"fqn": "", "type": "commlens_dump.models.MLP"}
    assert doc["state_fqns"] == ["l1.weight", "l1.bias", "l2.weight", "l2.bias"]
    assert doc["group_ranks"] == {"fsdp": [0, 1]} and doc["planner"]["dp_mode"] == "fsdp"


def test_graph_runs_on_the_fake_process_group(example):
    """The sharded, tagged graph is a real program: it executes (CPU, fake process group)."""
    import torch.distributed as dist
    from torch._C._distributed_c10d import _register_process_group

    ex = example("mlp-2", model_name="mlp", degree=2)
    assert dist.is_initialized()
    _register_process_group("fsdp", dist.new_group([0, 1]))
    def zeros(prefix):
        return [torch.zeros(n.meta["val"].shape, dtype=n.meta["val"].dtype)
                for n in ex.gm.graph.nodes if n.op == "placeholder" and n.name.startswith(prefix)]
    outputs = ex.gm(zeros("primals"), zeros("tangents"))
    leaves = [tuple(t.shape) for t in torch.utils._pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    assert leaves == [(), (4, 8), (4,), (2, 8), (2,)]  # loss, then the reduce-scattered (sharded) gradients


def test_inductor_post_grad_pass(tmp_path):
    import torch._inductor.config as config
    from commlens_dump.inductor import DumpPass

    saved = (config.post_grad_custom_post_pass, config.fx_graph_cache)
    try:
        dump_pass = commlens_dump.install(str(tmp_path / "dumps"))
        assert isinstance(dump_pass, DumpPass)
        torch._dynamo.reset()
        compiled = torch.compile(lambda x, w: (x @ w).t())  # extern mm only: no C++ kernel to build
        compiled(torch.randn(4, 4), torch.randn(4, 4))
    finally:
        config.post_grad_custom_post_pass, config.fx_graph_cache = saved
        torch._dynamo.reset()
    assert dump_pass.paths, "no graph was dumped"
    doc = load(dump_pass.paths[0])
    assert any(node["target"] == "aten.mm.default" for node in doc["nodes"])
    cli_reads(dump_pass.paths[0], tmp_path)


def test_cli_dump_saved_module(tmp_path):
    from commlens_dump.__main__ import main

    gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    torch.save(gm, tmp_path / "module.pt")
    out = tmp_path / "module.json.gz"
    assert main(["dump", str(tmp_path / "module.pt"), str(out), "--group-ranks", '{"fsdp": [0, 1]}']) == 0
    doc = load(out)
    assert [n["op"] for n in doc["nodes"]][0] == "placeholder" and doc["group_ranks"] == {"fsdp": [0, 1]}
    cli_reads(out, tmp_path)


def test_committed_examples_are_reproducible(tmp_path):
    from commlens_dump.demo import write_demo

    written = write_demo(str(tmp_path))
    assert len(written) == 2
    for path in written:
        name = path.rsplit("/", 1)[-1]
        committed = REPO / "examples" / name
        assert committed.is_file(), f"examples/{name} missing: run python -m commlens_dump demo --out examples"
        assert open(path, "rb").read() == committed.read_bytes(), f"examples/{name} is stale"
        assert committed.stat().st_size < 1_000_000
        report = cli_reads(str(committed), tmp_path, load(committed)["group_ranks"])
        assert report["summary"]["tagged_collectives"] > 0
