"""Test support: locate ../shared and the Rust CLI; load the reference planner with the helper
definitions of ``shared/spec/planner-helpers.md``, evaluated on real ``fx`` nodes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Optional

import torch
from torch import fx

from commlens_dump.export import canonical_target, is_alias
from commlens_dump.fsdp import _free_tensor_storage

PYTHON_DIR = Path(__file__).resolve().parents[1]
REPO = PYTHON_DIR.parent


def shared_dir() -> Path:
    """``$COMMLENS_SHARED``, else ``<repo>/../shared``; missing is an error, never a skip."""
    path = Path(os.environ.get("COMMLENS_SHARED") or REPO.parent / "shared")
    if not (path / "seeds" / "planner_reference.py").is_file():
        raise RuntimeError(f"shared/ not found at {path} (set COMMLENS_SHARED)")
    return path


def example_key(build: dict) -> str:
    """The ``example`` fixture's cache key for ``build_example(**build)``: tests that trace the
    same model share one trace."""
    return json.dumps({k: str(v) for k, v in sorted(build.items())})


def cli_path() -> Path:
    return Path(os.environ.get("COMMLENS_BIN") or REPO / "target" / "debug" / "commlens")


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    binary = cli_path()
    if not binary.is_file():
        raise RuntimeError(f"commlens CLI not found at {binary}: run `cargo build -p commlens-cli` "
                           "or set COMMLENS_BIN")
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"commlens {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-4000:]}")
    return proc


# ----------------------------------------------------------------------------- helpers
# planner-helpers.md, on real fx nodes. "Op X" matches the packet and any overload of it.

_COLLECTIVES = {"all_gather_into_tensor", "all_gather_into_tensor_out", "all_gather_into_tensor_coalesced",
                "reduce_scatter_tensor", "reduce_scatter_tensor_out", "reduce_scatter_tensor_coalesced",
                "all_reduce", "all_reduce_", "all_reduce_coalesced", "all_reduce_coalesced_",
                "all_to_all_single", "broadcast", "broadcast_"}
_LAYOUT_OPS = {"aten.view", "aten.reshape", "aten._unsafe_view", "aten.t", "aten.transpose", "aten.permute",
               "aten.contiguous", "aten.clone", "aten.flatten", "prims.convert_element_type", "aten._to_copy"}


def _packet_name(target) -> Optional[str]:
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return str(target)
    return None


def _node_packet(node: fx.Node) -> Optional[str]:
    if node.op != "call_function":
        return None
    return _packet_name(node.target)


def is_op(node, op) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and (
        node.target is op or (_packet_name(op) is not None and _node_packet(node) == _packet_name(op)))


def is_collective(node) -> bool:
    name = _node_packet(node)
    if name is None:
        return False
    namespace, _, op = name.partition(".")
    return namespace in ("_c10d_functional", "c10d_functional") and op in _COLLECTIVES


def _is_wait(node) -> bool:
    name = _node_packet(node)
    return name is not None and name.split(".", 1)[1] == "wait_tensor" and name.split(".")[0] in (
        "_c10d_functional", "c10d_functional")


def is_view(node) -> bool:
    return node.op == "call_function" and is_alias(node)


def is_barrier(node) -> bool:
    return (node.op == "call_function" and not is_collective(node) and not _is_wait(node)
            and bool(node.is_impure()))


def rs_layout_preparation(rs) -> set:
    chain, previous, current = set(), rs, rs.args[0] if rs.args else None
    while (isinstance(current, fx.Node) and current.op == "call_function"
           and len(current.users) == 1 and previous in current.users
           and _node_packet(current) in _LAYOUT_OPS):
        chain.add(current)
        previous = current
        current = next(iter(current.all_input_nodes), None)
    return chain


def _register_package() -> None:
    """Build ``refpkg.passes.{overlap.utils, parallel.fsdp_pass, planner}`` in ``sys.modules``."""
    if "refpkg.passes.overlap.utils" in sys.modules:
        return
    for name in ("refpkg", "refpkg.passes", "refpkg.passes.overlap", "refpkg.passes.parallel",
                 "refpkg.passes.planner"):
        module = types.ModuleType(name)
        module.__path__ = []  # a package
        sys.modules[name] = module
    utils = types.ModuleType("refpkg.passes.overlap.utils")
    utils.is_barrier, utils.is_collective, utils.is_op = is_barrier, is_collective, is_op
    utils.is_view, utils.rs_layout_preparation = is_view, rs_layout_preparation
    sys.modules[utils.__name__] = utils
    fsdp_pass = types.ModuleType("refpkg.passes.parallel.fsdp_pass")
    fsdp_pass._free_tensor_storage = _free_tensor_storage
    sys.modules[fsdp_pass.__name__] = fsdp_pass


_REFERENCE = None


def reference_planner():
    """The reference planner module (``shared/seeds/planner_reference.py``), loaded once."""
    global _REFERENCE
    if _REFERENCE is None:
        _register_package()
        path = shared_dir() / "seeds" / "planner_reference.py"
        name = "refpkg.passes.planner.bucket_planner"
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=None)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _REFERENCE = module
    return _REFERENCE


class _DumpModel(torch.nn.Module):
    """A module tree rebuilt from the dump's ``modules`` (same FQNs and order)."""


def _class_for(type_name: str, cache: dict) -> type:
    if type_name not in cache:
        short = type_name.rsplit(".", 1)[-1]
        cache[type_name] = type(short, (torch.nn.Module,), {"__module__": type_name.rpartition(".")[0] or "dump",
                                                            "__qualname__": short})
    return cache[type_name]


def reference_report(gm: fx.GraphModule, modules: list, args: dict) -> dict:
    """``BucketPlan.to_dict()`` as JSON for ``args`` (args.json semantics), or ``{"error": ...}``."""
    ref = reference_planner()
    try:
        policy = ref.BucketPolicy(**args["policy"]) if args.get("policy") is not None else None
        plans = args.get("module_bucket_plans")
        if args.get("block_module_types") is not None:
            classes, root = {}, None
            for record in modules:
                module = _class_for(record["type"], classes)()
                if record["fqn"] == "":
                    root = module
                else:
                    parent, _, leaf = record["fqn"].rpartition(".")
                    root.get_submodule(parent).add_module(leaf, module)
            wanted = tuple(cls for type_name, cls in classes.items()
                           if any(type_name == n or type_name.endswith("." + n) for n in args["block_module_types"]))
            plans = ref.build_module_bucket_plans(root, block_module_types=wanted, module_bucket_plans=plans or [])
        plan = ref.plan_fsdp_buckets(gm, group_ranks=args["group_ranks"], module_bucket_plans=plans, policy=policy,
                                     pp_degree=args.get("pp_degree", 1), dp_mode=args.get("dp_mode", "fsdp"))
    except ValueError as err:
        return {"error": "ValueError", "message": str(err)}
    return json.loads(json.dumps(plan.to_dict(), sort_keys=True, default=str))
