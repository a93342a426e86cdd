"""Trace real models (joint forward + backward, PyTorch AOTAutograd, CPU), shard and tag them
with the demo FSDP pass on the fake process group, and write graph dumps."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
from torch import fx, nn

from . import __version__
from .export import dump
from .fsdp import FSDPResult, apply_fsdp
from .models import GPT2, MLP, ConvNet, FrozenMLP, Llama, MoE

__all__ = ["Example", "init_fake_process_group", "trace_joint", "build_example", "write_demo", "MODELS"]


def init_fake_process_group(world_size: int) -> None:
    """Initialise the fake process group (no GPU, no network) once per process."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)


def trace_joint(model: nn.Module, args: tuple) -> fx.GraphModule:
    """Joint forward+backward graph of ``model(*args)`` (a scalar loss), as AOTAutograd traces it."""
    from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
    with contextlib.ExitStack() as stack:
        joint = aot_export_joint_with_descriptors(stack, model, args)
        gm = joint.graph_module
    # meta["seq_nr"] comes from a process-global autograd counter; rebase it so that the
    # same model gives the same graph whatever was traced before in the process.
    seq = [node.meta["seq_nr"] for node in gm.graph.nodes if isinstance(node.meta.get("seq_nr"), int)]
    base = min((nr for nr in seq if nr >= 0), default=0)
    for node in gm.graph.nodes:
        if isinstance(node.meta.get("seq_nr"), int) and node.meta["seq_nr"] >= 0:
            node.meta["seq_nr"] -= base
    return gm


@dataclass
class Example:
    """A traced, sharded and tagged graph plus everything the dump records with it."""

    name: str
    gm: fx.GraphModule
    model: nn.Module
    group_ranks: dict
    planner: dict
    source: dict
    fsdp: FSDPResult
    extra: dict = field(default_factory=dict)

    def dump(self, path: str) -> str:
        return dump(self.gm, path, group_ranks=self.group_ranks, model=self.model, planner=self.planner,
                    source=self.source, state_fqns=self.fsdp.state_fqns)


def _mlp(dtype):
    model = MLP()
    return model, (torch.randn(2, 8, dtype=dtype),), {}


def _frozen_mlp(dtype):
    model = FrozenMLP()
    return model, (torch.randint(0, 16, (2, 3)),), {}


def _llama(dtype, **kwargs):
    config = {"vocab": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden": 64, "seq": 8}
    config.update(kwargs)
    model = Llama(**config)
    tokens = torch.randint(0, config["vocab"], (2, config["seq"]))
    targets = torch.randint(0, config["vocab"], (2, config["seq"]))
    return model, (tokens, targets), config


def _gpt2(dtype, **kwargs):
    config = {"vocab": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "seq": 8}
    config.update(kwargs)
    model = GPT2(**config)
    tokens = torch.randint(0, config["vocab"], (2, config["seq"]))
    targets = torch.randint(0, config["vocab"], (2, config["seq"]))
    return model, (tokens, targets), config


def _convnet(dtype, **kwargs):
    config = {"channels": 8, "classes": 10}
    config.update(kwargs)
    model = ConvNet(**config)
    return model, (torch.randn(2, 3, 16, 16, dtype=dtype), torch.randint(0, config["classes"], (2,))), config


def _moe(dtype, **kwargs):
    config = {"vocab": 32, "dim": 16, "hidden": 32, "local_experts": 2, "ep_group": "ep", "ep_degree": 2}
    config.update(kwargs)
    model = MoE(**config)
    tokens = torch.randint(0, config["vocab"], (2, 8))
    return model, (tokens, torch.randint(0, config["vocab"], (2, 8))), config


MODELS: dict = {"mlp": _mlp, "frozen_mlp": _frozen_mlp, "llama": _llama, "gpt2": _gpt2, "convnet": _convnet,
                "moe": _moe}

_PLANNER_DEFAULTS = {
    "mlp": {"module_bucket_plans": None, "block_module_types": None},
    "frozen_mlp": {"module_bucket_plans": None, "block_module_types": None},
    "llama": {"module_bucket_plans": ["tok_embeddings", ["norm", "output"]],
              "block_module_types": ["TransformerBlock"]},
    "gpt2": {"module_bucket_plans": None, "block_module_types": ["GPT2Block"]},
    "convnet": {"module_bucket_plans": None, "block_module_types": None},
    "moe": {"module_bucket_plans": None, "block_module_types": None},
}


def build_example(model_name: str, *, degree: int = 2, reshard: bool = True,
                  param_dtype: Optional[torch.dtype] = None, model_dtype: Optional[torch.dtype] = None,
                  replicas: int = 1, group: str = "fsdp", seed: int = 0, name: Optional[str] = None,
                  **model_kwargs: Any) -> Example:
    """Trace ``model_name`` (``mlp``, ``frozen_mlp``, ``llama``) and apply the FSDP pass.

    ``replicas > 1`` makes an HSDP graph: gradients are reduce-scattered on ``group`` and then
    all-reduced on ``dp_replicate``.
    """
    init_fake_process_group(degree * replicas)
    torch.manual_seed(seed)
    dtype = model_dtype or torch.float32
    model, args, config = MODELS[model_name](dtype, **model_kwargs)
    if model_dtype is not None:
        model = model.to(model_dtype)
    frozen = {fqn for fqn, param in model.named_parameters() if not param.requires_grad}
    gm = trace_joint(model, args)
    hsdp = replicas > 1
    result = apply_fsdp(gm, degree=degree, group=group, reshard=reshard, param_dtype=param_dtype, frozen=frozen,
                        replicate_group="dp_replicate" if hsdp else None,
                        replicate_degree=replicas if hsdp else None)
    group_ranks = {group: list(range(degree))}
    if hsdp:
        group_ranks["dp_replicate"] = [replica * degree for replica in range(replicas)]
    if "ep_group" in config:
        group_ranks[config["ep_group"]] = list(range(config["ep_degree"]))
    planner = dict(_PLANNER_DEFAULTS[model_name])
    planner.update({"policy": None, "pp_degree": 1, "dp_mode": "hsdp" if hsdp else "fsdp"})
    source = {"producer": f"commlens-dump {__version__} demo", "torch": torch.__version__,
              "model": model_name, "model_kwargs": config,
              "tagger": "commlens_dump.fsdp (hyper_parallel FSDP pass tags)",
              "world_size": degree * replicas, "rank": 0, "fsdp_degree": degree, "reshard": reshard,
              "param_dtype": str(param_dtype) if param_dtype else None,
              "model_dtype": str(model_dtype) if model_dtype else None,
              "process_group": "fake"}
    if hsdp:
        source["replicas"] = replicas
    return Example(name or model_name, gm, model, group_ranks, planner, source, result)


DEMO_FILES: dict = {
    "mlp_fsdp.json": lambda: build_example("mlp", degree=2, name="mlp_fsdp"),
    "llama_fsdp.json.gz": lambda: build_example("llama", degree=4, name="llama_fsdp"),
}


def write_demo(out_dir: str, *, only: Optional[list] = None,
               log: Callable[[str], None] = lambda line: None) -> list:
    """Write the app's built-in examples into ``out_dir``; returns the written paths."""
    paths = []
    for file_name, build in DEMO_FILES.items():
        if only and file_name not in only:
            continue
        example = build()
        path = example.dump(os.path.join(out_dir, file_name))
        log(f"wrote {path} ({len(example.gm.graph.nodes)} nodes, {os.path.getsize(path)} bytes)")
        paths.append(path)
    return paths
