"""Small real PyTorch graphs of the kinds commlens users open, traced on the fake process group.

Nothing here is tagged by an FSDP pass: these are what stock PyTorch produces.

* ``simple_fsdp(model, groups)``: SimpleFSDP-style sharding (as torchtitan's SimpleFSDP does it):
  each parameter becomes its dim-0 shard behind an ``nn.utils.parametrize`` parametrization whose
  forward all-gathers it with a functional collective and whose backward reduce-scatters the
  gradient (and, for HSDP, all-reduces it on the replicate group).
* models: GPT-2 (tiny, tied embeddings optional, activation checkpointing optional), a ConvNet,
  an MoE layer with all-to-all token routing on an expert-parallel group, a TP+FSDP block whose
  tensor-parallel weight all-gather runs on a ``tp`` group next to a row-parallel all-reduce.
* traces: ``aot_joint`` (AOTAutograd's joint graph with descriptors and autograd metadata),
  ``make_fx_joint`` (``make_fx`` of forward + ``torch.autograd.grad``: no autograd metadata),
  ``inductor`` (the post-grad graphs ``torch.compile`` produces, captured by the exporter's pass,
  optionally before/after Inductor's own FSDP bucketing and reduce-scatter dedup passes),
  ``fsdp2_make_fx`` (FSDP2's eager ``fully_shard`` under ``make_fx``: non-functional c10d ops),
  ``ddp_style_make_fx`` (gradients all-reduced with ``dist.all_reduce``, as DDP does).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from typing import Callable, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch import fx, nn

from commlens_dump.demo import init_fake_process_group, trace_joint

WORLD = 8
c10d = torch.ops._c10d_functional


def init() -> None:
    init_fake_process_group(WORLD)


@functools.lru_cache(maxsize=None)
def group(ranks: tuple) -> str:
    """The name of the process group of ``ranks`` (created once)."""
    init()
    if tuple(ranks) == tuple(range(dist.get_world_size())):
        return dist.group.WORLD.group_name
    return dist.new_group(list(ranks)).group_name


def group_size(name: str) -> int:
    from torch.distributed.distributed_c10d import _resolve_process_group
    return _resolve_process_group(name).size()


# ----------------------------------------------------------------------------- SimpleFSDP

class _Gather(torch.autograd.Function):
    """All-gather a parameter shard along dim 0; the backward reduce-scatters the gradient
    (then, for HSDP, all-reduces it across replicas)."""

    @staticmethod
    def forward(ctx, shard, shard_group, size, replicate_group):
        ctx.shard_group, ctx.size, ctx.replicate_group = shard_group, size, replicate_group
        return c10d.wait_tensor(c10d.all_gather_into_tensor(shard.contiguous(), size, shard_group))

    @staticmethod
    def backward(ctx, grad):
        out = c10d.wait_tensor(c10d.reduce_scatter_tensor(grad.contiguous(), "avg", ctx.size, ctx.shard_group))
        if ctx.replicate_group is not None:
            out = c10d.wait_tensor(c10d.all_reduce(out, "avg", ctx.replicate_group))
        return out, None, None, None


class ReplicateComputation(nn.Module):
    """The parametrization SimpleFSDP registers: shard → full parameter."""

    def __init__(self, shard_group: str, replicate_group: Optional[str] = None):
        super().__init__()
        self.shard_group, self.replicate_group = shard_group, replicate_group
        self.size = group_size(shard_group)

    def forward(self, shard):
        return _Gather.apply(shard, self.shard_group, self.size, self.replicate_group)


def simple_fsdp(model: nn.Module, shard_group: str, replicate_group: Optional[str] = None,
                skip: Callable[[str], bool] = lambda fqn: False) -> nn.Module:
    """Shard every parameter (dim 0) of ``model`` over ``shard_group``, SimpleFSDP style."""
    degree = group_size(shard_group)
    for module_fqn, module in list(model.named_modules()):
        for name, param in list(module.named_parameters(recurse=False)):
            fqn = f"{module_fqn}.{name}" if module_fqn else name
            if skip(fqn) or param.shape[0] % degree:
                continue
            shard = nn.Parameter(param.detach().chunk(degree, dim=0)[0].clone(), requires_grad=param.requires_grad)
            setattr(module, name, shard)
            parametrize.register_parametrization(module, name, ReplicateComputation(shard_group, replicate_group),
                                                 unsafe=True)
    return model


# ----------------------------------------------------------------------------- models

class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT2(nn.Module):
    """A tiny GPT-2: token and position embeddings, blocks, final norm, LM head."""

    def __init__(self, vocab=32, dim=16, heads=2, layers=2, seq=8, tied=False, checkpoint=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(seq, dim)
        self.h = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.tied, self.checkpoint = tied, checkpoint

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight) if self.tied else self.lm_head(x)
        return logits.float().logsumexp(-1).mean()


class TinyLM(nn.Module):
    """Embedding, an MLP and an output head tied to the embedding (so the embedding's gradient
    is the sum of two reduce-scatters: what Inductor's dedup pass rewrites). Small enough that
    ``torch.compile`` on CPU stays quick."""

    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.fc1, self.fc2 = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, idx):
        x = self.fc2(F.relu(self.fc1(self.wte(idx))))
        return F.linear(x, self.wte.weight).logsumexp(-1).mean()


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(4, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.c2(F.relu(self.c1(x))))
        return self.head(x.mean((2, 3))).sum()


class MoE(nn.Module):
    """A token-routed MoE layer: tokens go to their expert's rank with an all-to-all on the
    expert-parallel group and come back with another (``all_to_all_single_autograd``)."""

    def __init__(self, dim=8, experts=2, ep_group: str = ""):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.w1 = nn.Linear(dim, 2 * dim)
        self.w2 = nn.Linear(2 * dim, dim)
        self.ep_group, self.ep_size = ep_group, group_size(ep_group)

    def forward(self, x):
        from torch.distributed._functional_collectives import all_to_all_single_autograd
        gate = self.router(x).softmax(-1).max(-1).values.unsqueeze(-1)
        size = self.ep_size
        splits = [x.shape[0] // size] * size
        routed = all_to_all_single_autograd(x * gate, splits, splits, self.ep_group)
        y = self.w2(F.relu(self.w1(routed)))
        back = all_to_all_single_autograd(y, splits, splits, self.ep_group)
        return back.sum()


class _TpWeightGather(torch.autograd.Function):
    """A tensor-parallel weight all-gather (sequence-parallel style): one placeholder ancestor,
    like an FSDP gather, but on the ``tp`` group."""

    @staticmethod
    def forward(ctx, shard, tp_group, size):
        ctx.tp_group, ctx.size = tp_group, size
        return c10d.wait_tensor(c10d.all_gather_into_tensor(shard.contiguous(), size, tp_group))

    @staticmethod
    def backward(ctx, grad):
        return c10d.wait_tensor(c10d.reduce_scatter_tensor(grad.contiguous(), "sum", ctx.size, ctx.tp_group)), \
            None, None


class TpFsdpBlock(nn.Module):
    """FSDP-sharded layers plus a tensor-parallel projection: its weight shard is all-gathered on
    ``tp`` and its partial output all-reduced on ``tp`` (row-parallel)."""

    def __init__(self, dim=8, tp_group: str = "", annotate: bool = False):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.tp_size = group_size(tp_group)
        self.tp_shard = nn.Parameter(torch.randn(dim // self.tp_size, dim))
        self.tp_group, self.annotate = tp_group, annotate

    def forward(self, x):
        h = F.relu(self.inp(x))
        ctx = (torch.fx.traceback.annotate({"distributed.comm_semantics": {
            "version": 1, "role": "tp.weight_gather", "source": "explicit", "producer": "tp"}})
            if self.annotate else contextlib.nullcontext())
        with ctx:
            w = _TpWeightGather.apply(self.tp_shard, self.tp_group, self.tp_size)
        partial = h @ w.t()
        return c10d.wait_tensor(c10d.all_reduce(partial, "sum", self.tp_group)).sum()


# ----------------------------------------------------------------------------- torch's verdicts

ROLE_AG, ROLE_RS, ROLE_AR = "fsdp.param_unshard", "fsdp.grad_reduce_shard", "fsdp.grad_replicate_reduce"


def inductor_verdicts(gm: fx.GraphModule) -> dict:
    """torch's structural FSDP verdict of every collective start its predicates test, called
    in-process: ``fx_passes/fsdp.py``'s ``is_fsdp_all_gather``, ``is_fsdp_reduce_scatter_wait``
    on the reduce-scatter's waits, and the all-reduce group rule of ``identify_fsdp_groups``."""
    from torch._inductor.fx_passes import bucketing as B
    from torch._inductor.fx_passes import fsdp as F
    fsdp_groups, _ = F.identify_fsdp_groups(gm)
    verdicts = {}
    for node in gm.graph.nodes:
        if B.is_all_gather_into_tensor(node):
            verdicts[node.name] = ROLE_AG if F.is_fsdp_all_gather(node) else None
        elif B.is_reduce_scatter_tensor(node):
            waits = [w for w in node.users if B.is_wait_tensor(w) and w.args[0] is node]
            verdicts[node.name] = ROLE_RS if any(F.is_fsdp_reduce_scatter_wait(w) for w in waits) else None
        elif B.is_all_reduce_tensor(node):
            verdicts[node.name] = ROLE_AR if F._get_group_name(node) in fsdp_groups else None
    return verdicts


def torch_collectives(gm: fx.GraphModule) -> set:
    """Every collective start torch put in the graph (by op namespace)."""
    names = set()
    for node in gm.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if target.namespace in ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional", "c10d"):
            if target._opname not in ("wait_tensor", "wait_tensors", "_wrap_tensor_autograd"):
                names.add(node.name)
    return names


# ----------------------------------------------------------------------------- traces

def aot_joint(model: nn.Module, args: tuple) -> fx.GraphModule:
    """AOTAutograd's joint forward+backward graph (descriptors, ``autograd_backward``)."""
    return trace_joint(model, args)


def make_fx_joint(model: nn.Module, args: tuple) -> fx.GraphModule:
    """``make_fx`` of forward + ``torch.autograd.grad``: a joint graph with no autograd metadata."""
    from torch.fx.experimental.proxy_tensor import make_fx
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}

    def step(params, *inputs):
        loss = torch.func.functional_call(model, params, inputs)
        return torch.autograd.grad(loss, list(params.values()))

    return make_fx(step)(params, *args)


INDUCTOR_PASSES = ("dedup", "bucket_rs", "bucket_ag")


def inductor(model: nn.Module, args: tuple, *, passes: tuple = ()) -> dict:
    """The post-grad graphs ``torch.compile`` makes of a training step, captured by a post-grad
    custom pass (as the exporter's Inductor hook is), then run through Inductor's own FSDP passes
    in Inductor's order (``post_grad_passes``): wait dedup, then ``dedup`` =
    ``dedup_fsdp_reduce_scatter``, ``bucket_rs`` = ``bucket_fsdp_reduce_scatter``, ``bucket_ag``
    = ``bucket_fsdp_all_gather`` (those named in ``passes``), with the topological sort Inductor
    does after bucketing.

    Returns ``{stage: [graph record per compiled graph]}`` for the stages ``before`` and each pass
    run; a record is ``{"dump": dict, "verdicts": torch's verdicts, "collectives": set}``.
    """
    import torch._inductor.config as config
    from torch._inductor.fx_passes import fsdp as inductor_fsdp
    from torch._inductor.fx_passes.bucketing import deduplicate_wait_tensors
    from torch._inductor.pattern_matcher import stable_topological_sort

    from commlens_dump.export import graph_to_dict

    stages = ("before",) + tuple(p for p in INDUCTOR_PASSES if p in passes)
    captured = {stage: [] for stage in stages}

    def record(stage: str, graph: fx.Graph) -> None:
        captured[stage].append({"dump": graph_to_dict(graph, model=model),
                                "verdicts": inductor_verdicts(graph.owning_module),
                                "collectives": torch_collectives(graph.owning_module)})

    def capture(graph: fx.Graph) -> None:
        record("before", graph)
        gm = graph.owning_module
        if not passes:
            return
        deduplicate_wait_tensors(gm.graph)
        for stage in stages[1:]:
            if stage == "dedup":
                inductor_fsdp.dedup_fsdp_reduce_scatter(gm)
            elif stage == "bucket_rs":
                inductor_fsdp.bucket_fsdp_reduce_scatter(gm, lambda _: 1000.0)
                stable_topological_sort(gm.graph)
            elif stage == "bucket_ag":
                inductor_fsdp.bucket_fsdp_all_gather(gm, lambda _: 1000.0)
                stable_topological_sort(gm.graph)
            gm.graph.lint()
            record(stage, graph)

    torch._dynamo.reset()
    with config.patch({"post_grad_custom_post_pass": capture, "fx_graph_cache": False}):
        compiled = torch.compile(model)
        loss = compiled(*args)
        loss.backward()
    return captured


def fsdp2_make_fx(model: nn.Module, args: tuple, shard_group_ranks: tuple = (0, 1)) -> fx.GraphModule:
    """FSDP2 (``fully_shard``) in eager, traced with ``make_fx``: ``c10d._allgather_base_`` and
    ``c10d._reduce_scatter_base_`` with process-group objects and ``Work`` handles."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.fx.experimental.proxy_tensor import make_fx
    init()
    mesh = init_device_mesh("cpu", (WORLD,))
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)

    def step(*inputs):
        model(*inputs).backward()
        return [p.grad for p in model.parameters()]

    return make_fx(step)(*args)


def ddp_style_make_fx(model: nn.Module, args: tuple) -> fx.GraphModule:
    """A DDP-style step under ``make_fx``: gradients all-reduced with ``dist.all_reduce``
    (``c10d.allreduce_``). DDP itself cannot be traced by ``make_fx`` (its reducer hooks run in
    C++), so the step does what its reducer does."""
    from torch.fx.experimental.proxy_tensor import make_fx
    init()
    params = {name: p for name, p in model.named_parameters()}

    def step(params, *inputs):
        loss = torch.func.functional_call(model, params, inputs)
        grads = torch.autograd.grad(loss, list(params.values()))
        for g in grads:
            dist.all_reduce(g)
        return grads

    return make_fx(step)(params, *args)


# ----------------------------------------------------------------------------- the zoo

def gpt2(**kwargs) -> tuple:
    init()
    torch.manual_seed(0)
    model = simple_fsdp(GPT2(**kwargs), group((0, 1)))
    return model, (torch.randint(0, 32, (2, 8)),)


def tiny_lm() -> tuple:
    init()
    torch.manual_seed(0)
    return simple_fsdp(TinyLM(), group((0, 1))), (torch.randint(0, 32, (2, 8)),)


def convnet() -> tuple:
    init()
    torch.manual_seed(0)
    return simple_fsdp(ConvNet(), group((0, 1))), (torch.randn(2, 4, 6, 6),)


def moe() -> tuple:
    init()
    torch.manual_seed(0)
    model = MoE(ep_group=group((0, 1)))
    return simple_fsdp(model, group((0, 2))), (torch.randn(4, 8),)


def hsdp() -> tuple:
    """Shard on ranks (0, 1), replicate across (0, 2): gather and reduce-scatter on the shard
    group, then all-reduce on the replicate group."""
    init()
    torch.manual_seed(0)
    from commlens_dump.models import MLP
    return simple_fsdp(MLP(8, 8, 4), group((0, 1)), replicate_group=group((0, 2))), (torch.randn(2, 8),)


class TpMixed(nn.Module):
    """A sequence-parallel input gather and a TP weight gather on the same ``tp`` group, next to
    each other (so Inductor's FSDP bucketing, whose filter both pass, buckets them), then a
    row-parallel all-reduce on ``tp``; the gathers are annotated with their TP roles."""

    def __init__(self, dim=8, tp_group: str = ""):
        super().__init__()
        self.size = group_size(tp_group)
        self.w = nn.Parameter(torch.randn(dim // self.size, dim))
        self.tp_group = tp_group

    def forward(self, x):
        size = self.size

        def gather(t, role):
            with torch.fx.traceback.annotate({"distributed.comm_semantics": {
                    "version": 1, "role": role, "source": "explicit", "producer": "tp"}}):
                return _TpWeightGather.apply(t, self.tp_group, size)
        full_x = gather(x, "tp.sequence_gather")
        full_w = gather(self.w, "tp.weight_gather")
        partial = full_x @ full_w.t()
        return c10d.wait_tensor(c10d.all_reduce(partial, "sum", self.tp_group)).sum() / size


def tp_mixed() -> tuple:
    init()
    torch.manual_seed(0)
    return TpMixed(tp_group=group((0, 4))), (torch.randn(2, 8, requires_grad=True),)


def tp_fsdp(annotate: bool = False) -> tuple:
    init()
    torch.manual_seed(0)
    block = TpFsdpBlock(tp_group=group((0, 4)), annotate=annotate)
    return simple_fsdp(block, group((0, 1)), skip=lambda fqn: fqn == "tp_shard"), (torch.randn(2, 8),)
