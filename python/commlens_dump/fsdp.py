"""An FSDP graph pass for the demo: shards parameters of a traced joint (forward + backward)
graph and inserts and tags FSDP collectives the way hyper_parallel's FSDP pass does.

* each trainable parameter placeholder becomes its dim-0 shard and is tagged
  (``state_idx``, ``param_name``, ``fsdp_degree``, ``is_param``, ``fsdp_sharded``, ``fsdp_ag_node``);
* forward: ``_c10d_functional.all_gather_into_tensor(param, degree, group)`` + ``wait_tensor``,
  tagged ``comm_type="fsdp_all_gather"`` with ``comm_group``, ``param_name``, ``state_idx`` and
  ``fsdp_bucket_spec``; with resharding it is issued just before the first forward use and the
  gathered storage is released after the last forward use by ``_free_tensor_storage(wait)``
  (``fsdp_reshard_free``);
* backward (resharding): a second gather before the first backward use
  (``fsdp_all_gather_backward``, ``autograd_backward=True``), forward views of the parameter
  recomputed from it, and a free after the last backward use (``fsdp_reshard_free_backward``);
* gradients: ``reduce_scatter_tensor(grad, "avg", degree, group)`` + ``wait_tensor``
  (``fsdp_reduce_scatter``) whose wait feeds the graph output; for HSDP an
  ``all_reduce(wait, "avg", replicate_group)`` (``dp_all_reduce``) follows;
* mixed precision (``param_dtype``): the shard is cast before the gather and the gathered
  tensor cast back after the wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import fx
from torch._guards import detect_fake_mode

__all__ = ["apply_fsdp", "FSDPResult", "_free_tensor_storage", "FREE_MODULE"]

FREE_MODULE = "hyper_parallel.compile.passes.parallel.fsdp_pass"

c10d = torch.ops._c10d_functional


class _FreeTensorStorage:
    """Stand-in for hyper_parallel's ``fsdp_pass._free_tensor_storage``: releases the storage
    of an all-gathered parameter in place. Its module/name match the original, and it prints as
    ``<function _free_tensor_storage>`` (no address), so graph signatures are reproducible."""

    def __init__(self) -> None:
        self.__module__ = FREE_MODULE
        self.__name__ = "_free_tensor_storage"
        self.__qualname__ = "_free_tensor_storage"

    def __call__(self, tensor: torch.Tensor) -> None:
        if isinstance(tensor, torch.Tensor) and not isinstance(tensor, torch._subclasses.FakeTensor):
            tensor.untyped_storage().resize_(0)
        return None

    def __repr__(self) -> str:
        return "<function _free_tensor_storage>"

    __str__ = __repr__

    def __reduce__(self):  # pickles as the singleton
        return (_get_free, ())


def _get_free() -> "_FreeTensorStorage":
    return _free_tensor_storage


_free_tensor_storage = _FreeTensorStorage()
# Mutates its argument: never dead-code-eliminated, and node.is_impure() is True.
torch.fx.node.has_side_effect(_free_tensor_storage)


@dataclass
class FSDPResult:
    """What the pass did: state FQNs in input order and the parameters it sharded."""

    state_fqns: list
    sharded: list = field(default_factory=list)
    unused: list = field(default_factory=list)
    frozen: list = field(default_factory=list)


def _is_backward(node: fx.Node) -> bool:
    return bool(node.meta.get("autograd_backward")) or node.meta.get("partitioner_tag") == "is_backward"


def _is_view(node: fx.Node) -> bool:
    from .export import is_alias
    return node.op == "call_function" and is_alias(node)


def _tensor_meta(val: torch.Tensor):
    from torch.fx.passes.shape_prop import _extract_tensor_metadata
    return _extract_tensor_metadata(val)


class _Pass:
    def __init__(self, gm: fx.GraphModule, *, degree: int, group: str, reshard: bool,
                 param_dtype: Optional[torch.dtype], frozen: set, replicate_group: Optional[str],
                 replicate_degree: Optional[int], reduce_op: str):
        self.gm, self.graph = gm, gm.graph
        self.degree, self.group, self.reshard = degree, group, reshard
        self.param_dtype, self.frozen = param_dtype, frozen
        self.replicate_group, self.replicate_degree = replicate_group, replicate_degree
        self.reduce_op = reduce_op
        vals = [node.meta.get("val") for node in self.graph.nodes if node.op == "placeholder"]
        self.fake_mode = detect_fake_mode(vals)
        if self.fake_mode is None:
            raise ValueError("the graph's placeholders carry no fake tensors (meta['val']); trace it first")

    # ---------------------------------------------------------------- helpers
    def _fake(self, fn, *args):
        with self.fake_mode:
            return fn(*args)

    def _node(self, target, args, meta: dict, val) -> fx.Node:
        node = self.graph.call_function(target, args)
        node.meta.update(meta)
        node.meta["val"] = val
        return node

    def _spec(self, input_shape, output_shape, dtype, device) -> dict:
        return {"input_shape": list(input_shape), "output_shape": list(output_shape),
                "dtype": dtype, "device": str(device)}

    def _gather(self, ph: fx.Node, fqn: str, state_idx: int, full_val, backward: bool):
        """Insert (cast) -> all_gather -> wait (-> cast back) at the current insert point."""
        shard_val = ph.meta["val"]
        inp, inp_val = ph, shard_val
        comm_dtype = self.param_dtype or shard_val.dtype
        if comm_dtype != shard_val.dtype:
            cast = torch.ops.prims.convert_element_type.default
            inp_val = self._fake(cast, shard_val, comm_dtype)
            inp = self._node(cast, (ph, comm_dtype), {"autograd_backward": True} if backward else {}, inp_val)
        ag_val = self._fake(c10d.all_gather_into_tensor, inp_val, self.degree, self.group)
        meta = {"comm_type": "fsdp_all_gather_backward" if backward else "fsdp_all_gather",
                "comm_group": self.group, "param_node": ph.name, "param_name": fqn}
        if backward:
            meta.update({"fsdp_degree": self.degree, "autograd_backward": True, "state_idx": state_idx})
        else:
            meta.update({"state_idx": state_idx, "fsdp_degree": self.degree})
        ag = self._node(c10d.all_gather_into_tensor, (inp, self.degree, self.group), meta, ag_val)
        ag.meta["fsdp_bucket_spec"] = self._spec(shard_val.shape, ag_val.shape, comm_dtype, shard_val.device)
        wait_meta = {"wait_for": ag.name}
        if backward:
            wait_meta["autograd_backward"] = True
        wait = self._node(c10d.wait_tensor, (ag,), wait_meta, self._fake(c10d.wait_tensor, ag_val))
        out = wait
        if comm_dtype != shard_val.dtype:
            cast = torch.ops.prims.convert_element_type.default
            out = self._node(cast, (wait, shard_val.dtype), {"autograd_backward": True} if backward else {},
                             self._fake(cast, wait.meta["val"], shard_val.dtype))
        return ag, wait, out

    def _last_consumer(self, wait: fx.Node, out: fx.Node) -> Optional[fx.Node]:
        """Latest real consumer of the gathered value, looking through views (and the cast back)."""
        seen, stack, consumers = {wait}, [wait], []
        while stack:
            for user in stack.pop().users:
                if user in seen:
                    continue
                if _is_view(user) or (user is out and out is not wait):
                    seen.add(user)
                    stack.append(user)
                else:
                    consumers.append(user)
        # fx nodes compare by their place in the graph, which fx keeps as nodes are inserted:
        # numbering the graph again for every parameter made the pass quadratic (500 Llama
        # layers took six minutes).
        return max(consumers) if consumers else None

    def _free(self, wait: fx.Node, out: fx.Node, fqn: str, backward: bool) -> None:
        last = self._last_consumer(wait, out)
        if last is None or last.op == "output":
            return
        with self.graph.inserting_after(last):
            free = self.graph.call_function(_free_tensor_storage, (wait,))
        free.meta["comm_type"] = "fsdp_reshard_free_backward" if backward else "fsdp_reshard_free"
        free.meta["param_name"] = fqn
        if backward:
            free.meta["autograd_backward"] = True

    # ---------------------------------------------------------------- the pass
    def run(self) -> FSDPResult:
        graph = self.graph
        placeholders = [node for node in graph.nodes if node.op == "placeholder"]
        state = []  # (placeholder, fqn, is_param)
        for ph in placeholders:
            desc = ph.meta.get("desc")
            kind = type(desc).__name__
            if kind in ("ParamAOTInput", "BufferAOTInput"):
                state.append((ph, desc.target, kind == "ParamAOTInput"))
        result = FSDPResult(state_fqns=[fqn for _, fqn, _ in state])

        output = next(node for node in graph.nodes if node.op == "output")
        outputs = list(output.args[0])
        grad_slot = {}
        for index, desc in enumerate(output.meta.get("desc") or []):
            grad_of = getattr(desc, "grad_of", None)
            if type(desc).__name__ == "GradAOTOutput" and type(grad_of).__name__ == "ParamAOTInput":
                grad_slot[grad_of.target] = index

        first_compute = next(node for node in graph.nodes if node.op != "placeholder")
        gathered = []  # (ph, fqn, state_idx, full_val)
        for state_idx, (ph, fqn, is_param) in enumerate(state):
            if not is_param or fqn in self.frozen:
                if is_param:
                    result.frozen.append(fqn)
                continue
            full_val = ph.meta["val"]
            users = [user for user in ph.users if user.op != "output"]
            if self.reshard and not users:
                ph.meta.update({"state_idx": state_idx, "param_name": fqn, "fsdp_degree": self.degree,
                                "is_param": True})
                result.unused.append(fqn)
                continue
            if full_val.dim() == 0 or full_val.shape[0] % self.degree:
                raise ValueError(f"parameter {fqn} of shape {tuple(full_val.shape)} cannot be sharded "
                                 f"along dim 0 over {self.degree} ranks")
            shard = (full_val.shape[0] // self.degree, *full_val.shape[1:])
            shard_val = self._fake(lambda: torch.empty(shard, dtype=full_val.dtype, device=full_val.device))
            ph.meta["val"] = shard_val
            if "tensor_meta" in ph.meta:
                ph.meta["tensor_meta"] = _tensor_meta(shard_val)
            ph.meta.update({"state_idx": state_idx, "param_name": fqn, "fsdp_degree": self.degree,
                            "is_param": True, "fsdp_sharded": True})
            gathered.append((ph, fqn, state_idx, full_val))
            result.sharded.append(fqn)

        plans = self._forward_gathers(gathered) if self.reshard else []
        if not self.reshard:
            for ph, fqn, state_idx, full_val in gathered:
                users = [user for user in ph.users]
                with graph.inserting_before(first_compute):
                    ag, wait, out = self._gather(ph, fqn, state_idx, full_val, backward=False)
                ph.meta["fsdp_ag_node"] = ag.name
                for user in users:
                    user.replace_input_with(ph, out)

        # Gradients: reduce-scatter (then all-reduce across replicas for HSDP) into the output.
        for ph, fqn, state_idx, full_val in gathered:
            slot = grad_slot.get(fqn)
            grad = outputs[slot] if slot is not None else None
            if not isinstance(grad, fx.Node):
                continue
            grad_val = grad.meta["val"]
            with graph.inserting_before(output):
                rs_val = self._fake(c10d.reduce_scatter_tensor, grad_val, self.reduce_op, self.degree, self.group)
                rs = self._node(c10d.reduce_scatter_tensor, (grad, self.reduce_op, self.degree, self.group),
                                {"comm_type": "fsdp_reduce_scatter", "comm_group": self.group,
                                 "fsdp_degree": self.degree, "param_name": fqn, "state_idx": state_idx}, rs_val)
                rs.meta["fsdp_bucket_spec"] = self._spec(grad_val.shape, rs_val.shape, grad_val.dtype, grad_val.device)
                rs.meta["autograd_backward"] = True
                final = self._node(c10d.wait_tensor, (rs,), {"wait_for": rs.name, "autograd_backward": True},
                                   self._fake(c10d.wait_tensor, rs_val))
                if self.replicate_group is not None:
                    ar_val = self._fake(c10d.all_reduce, final.meta["val"], "avg", self.replicate_group)
                    ar = self._node(c10d.all_reduce, (final, "avg", self.replicate_group),
                                    {"comm_type": "dp_all_reduce", "comm_group": self.replicate_group,
                                     "dp_replicate_degree": self.replicate_degree, "autograd_backward": True},
                                    ar_val)
                    final = self._node(c10d.wait_tensor, (ar,), {"wait_for": ar.name, "autograd_backward": True},
                                       self._fake(c10d.wait_tensor, ar_val))
            outputs[slot] = final
        output.args = (tuple(outputs),)
        self._backward_gathers(plans)
        graph.lint()
        self.gm.recompile()
        return result

    def _forward_gathers(self, gathered) -> list:
        """Reshard, step 1: analyse every parameter's uses, then gather just in time for forward."""
        graph, plans = self.graph, []
        for ph, fqn, state_idx, full_val in gathered:
            # Forward views of the parameter (transitively), e.g. t(weight) saved for backward.
            views, stack, parent = [], [ph], {}
            while stack:
                node = stack.pop()
                for user in node.users:
                    if _is_view(user) and not _is_backward(user) and user not in parent:
                        views.append(user)
                        parent[user] = node
                        stack.append(user)
            views.sort()
            sources = [ph, *views]
            fwd_users = [user for user in ph.users if not _is_backward(user) and user.op != "output"]
            bwd_uses = [(user, src) for src in sources for user in list(src.users)
                        if _is_backward(user) and user.op != "output"]
            fwd = None
            if fwd_users:
                first = min(fwd_users)
                with graph.inserting_before(first):
                    ag, wait, out = self._gather(ph, fqn, state_idx, full_val, backward=False)
                for user in fwd_users:
                    user.replace_input_with(ph, out)
                ph.meta["fsdp_ag_node"] = ag.name
                fwd = (wait, out)
            plans.append((ph, fqn, state_idx, full_val, views, parent, bwd_uses, fwd))
        return plans

    def _backward_gathers(self, plans) -> None:
        """Reshard, step 2: re-gather before the first backward use; free after the last uses."""
        graph = self.graph
        for ph, fqn, state_idx, full_val, views, parent, bwd_uses, fwd in plans:
            if bwd_uses:
                first = min(user for user, _ in bwd_uses)
                with graph.inserting_before(first):
                    bag, bwait, bout = self._gather(ph, fqn, state_idx, full_val, backward=True)
                    # Recompute the needed forward views from the backward gather.
                    needed = set()
                    for _, src in bwd_uses:
                        while src is not ph and src not in needed:
                            needed.add(src)
                            src = parent[src]
                    clones = {ph: bout}
                    if fwd is not None:
                        clones[fwd[1]] = bout
                    for view in views:
                        if view not in needed:
                            continue
                        args = fx.map_arg(view.args, lambda arg: clones.get(arg, arg))
                        kwargs = fx.map_arg(view.kwargs, lambda arg: clones.get(arg, arg))
                        clone = graph.call_function(view.target, args, kwargs)
                        clone.meta["val"] = view.meta.get("val")
                        clone.meta["autograd_backward"] = True
                        clones[view] = clone
                for user, src in bwd_uses:
                    user.replace_input_with(src, clones[src])
                if fwd is None:
                    ph.meta["fsdp_ag_node"] = bag.name
                self._free(bwait, bout, fqn, backward=True)
            if fwd is not None:
                self._free(fwd[0], fwd[1], fqn, backward=False)


def apply_fsdp(gm: fx.GraphModule, *, degree: int, group: str = "fsdp", reshard: bool = True,
               param_dtype: Optional[torch.dtype] = None, frozen: Optional[set] = None,
               replicate_group: Optional[str] = None, replicate_degree: Optional[int] = None,
               reduce_op: str = "avg") -> FSDPResult:
    """Shard and tag a joint graph traced by ``aot_export_joint_with_descriptors`` (in place).

    Args:
        gm: joint forward+backward graph whose placeholders carry AOT input descriptors.
        degree: FSDP group size; dim 0 of every sharded parameter must divide by it.
        group: process-group name used by the collectives.
        reshard: free gathered parameters after forward and re-gather them in backward.
        param_dtype: communication/compute dtype for gathers (mixed precision), or None.
        frozen: FQNs of parameters that do not require grad (left unsharded and untagged).
        replicate_group, replicate_degree: HSDP replicate group for gradient all-reduces.
        reduce_op: reduce-scatter reduction (``"avg"`` or ``"sum"``).
    """
    if degree < 2:
        raise ValueError("degree must be at least 2")
    return _Pass(gm, degree=degree, group=group, reshard=reshard, param_dtype=param_dtype,
                 frozen=set(frozen or ()), replicate_group=replicate_group,
                 replicate_degree=replicate_degree, reduce_op=reduce_op).run()
