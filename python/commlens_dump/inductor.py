"""Dump every graph Inductor compiles, as a post-grad custom pass.

    import torch
    import commlens_dump
    commlens_dump.install("dumps/")          # sets torch._inductor.config.post_grad_custom_post_pass
    torch.compile(model)(inputs)             # writes dumps/graph_000.json, graph_001.json, ...

``install(..., stage="lowered")`` dumps instead the graph Inductor lowers, after all of its
post-grad passes (its own collective bucketing and reinplacing included): the graph that
``TORCH_TRACE`` logs as ``inductor_post_grad_graph``.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable, Mapping, Optional

import torch
from torch import fx

try:
    from torch._inductor.custom_graph_pass import CustomGraphPass
except ImportError:  # pragma: no cover - very old PyTorch
    CustomGraphPass = object  # type: ignore[assignment,misc]

from .export import dump

__all__ = ["DumpPass", "install", "uninstall"]


class DumpPass(CustomGraphPass):  # type: ignore[misc]
    """An Inductor post-grad custom pass that writes each graph it sees to ``out_dir``.

    It never changes the graph. ``then`` is an optional pass to run afterwards (for example the
    pass that was configured before), so dumping can be chained with an existing custom pass.
    The files are ``{prefix}_{n:03d}.json`` (``.json.gz`` with ``compress=True``), numbered in
    compile order per process (and per rank, when ``torch.distributed`` is initialised).
    """

    def __init__(self, out_dir: str, *, prefix: str = "graph", compress: bool = False,
                 group_ranks: Optional[Mapping] = None, model: Optional[torch.nn.Module] = None,
                 planner: Optional[Mapping] = None, with_stack_trace: bool = False,
                 then: Optional[Callable[[fx.Graph], Any]] = None):
        self.out_dir, self.prefix, self.compress = out_dir, prefix, compress
        self.group_ranks, self.model, self.planner = group_ranks, model, planner
        self.with_stack_trace, self.then = with_stack_trace, then
        self.paths: list = []

    def _rank(self) -> Optional[int]:
        try:
            import torch.distributed as dist
            return dist.get_rank() if dist.is_available() and dist.is_initialized() else None
        except Exception:  # pragma: no cover
            return None

    def __call__(self, graph: fx.Graph) -> None:
        rank = self._rank()
        index = len(self.paths)
        stem = f"{self.prefix}_{index:03d}" if rank is None else f"{self.prefix}_rank{rank}_{index:03d}"
        path = os.path.join(self.out_dir, stem + (".json.gz" if self.compress else ".json"))
        self.paths.append(path)
        source = {"producer": "commlens_dump.inductor post_grad_custom_post_pass", "torch": torch.__version__,
                  "graph_index": index}
        if rank is not None:
            source["rank"] = rank
        dump(graph, path, group_ranks=self.group_ranks, model=self.model, planner=self.planner,
             source=source, with_stack_trace=self.with_stack_trace)
        if self.then is not None:
            self.then(graph)

    def __deepcopy__(self, memo):
        # Inductor deep-copies its config per compilation; keep one pass (one counter, one
        # list of written paths) and do not copy the model.
        return self

    def uuid(self) -> Optional[Any]:
        # Part of Inductor's FX-graph cache key. A cache hit skips post-grad passes (and so
        # the dump); disable the cache (torch._inductor.config.fx_graph_cache = False) to dump
        # every compilation.
        then = getattr(self.then, "uuid", lambda: None)() if self.then is not None else None
        key = f"commlens_dump.DumpPass:{os.path.abspath(self.out_dir)}:{self.prefix}:{self.compress}:{then}"
        return hashlib.sha256(key.encode()).hexdigest()


_STAGES = ("post_grad_custom_post_pass", "lowered")
_lowered = {"pass": None, "original": None, "depth": 0}


def install(out_dir: str, *, disable_cache: bool = True, stage: str = "post_grad_custom_post_pass",
            **kwargs: Any) -> DumpPass:
    """Make Inductor dump every post-grad graph into ``out_dir``; returns the pass.

    ``stage="post_grad_custom_post_pass"`` (default) dumps where Inductor runs custom passes:
    an already configured ``post_grad_custom_post_pass`` keeps running after the dump.
    ``stage="lowered"`` dumps after all post-grad passes (bucketing, reinplacing, sorting), the
    graph Inductor lowers and ``TORCH_TRACE`` logs; it wraps Inductor's private
    ``compile_fx._recursive_post_grad_passes`` (``uninstall()`` unwraps it).
    With ``disable_cache`` (default) Inductor's FX graph cache is turned off so cached
    compilations are dumped too.
    """
    import torch._inductor.config as config
    if stage not in _STAGES:
        raise ValueError(f"stage must be one of {_STAGES}, got {stage!r}")
    if disable_cache:
        config.fx_graph_cache = False
    if stage == "lowered":
        from torch._inductor import compile_fx
        dump_pass = DumpPass(out_dir, **kwargs)
        if _lowered["original"] is None:
            original = compile_fx._recursive_post_grad_passes

            def passes_then_dump(gm, is_inference=False):
                # Subgraphs are run through this function too; only the top graph is logged.
                _lowered["depth"] += 1
                try:
                    original(gm, is_inference)
                finally:
                    _lowered["depth"] -= 1
                if _lowered["depth"] == 0 and _lowered["pass"] is not None:
                    _lowered["pass"](gm.graph)

            _lowered["original"] = original
            compile_fx._recursive_post_grad_passes = passes_then_dump
        _lowered["pass"] = dump_pass
        return dump_pass
    previous = config.post_grad_custom_post_pass
    if isinstance(previous, DumpPass):
        previous = previous.then
    dump_pass = DumpPass(out_dir, then=previous, **kwargs)
    config.post_grad_custom_post_pass = dump_pass
    return dump_pass


def uninstall() -> None:
    """Remove the passes ``install`` set (the custom pass's predecessor is put back)."""
    import torch._inductor.config as config
    if _lowered["original"] is not None:
        from torch._inductor import compile_fx
        compile_fx._recursive_post_grad_passes = _lowered["original"]
        _lowered["original"] = _lowered["pass"] = None
    if isinstance(config.post_grad_custom_post_pass, DumpPass):
        config.post_grad_custom_post_pass = config.post_grad_custom_post_pass.then
