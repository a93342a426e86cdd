"""Write ``torch.fx`` graphs as commlens graph dumps (format ``commlens.graph``, version 1).

The exporter only reads the graph: it never adds, removes or edits nodes or metadata.
See ``graph-dump-v1.md`` for the format. Encoding rules, in short:

* node arguments: scalars as themselves, sequences as arrays, ``fx.Node`` as
  ``{"node": NAME}``, ``torch.dtype`` as ``{"dtype": ...}``, ``torch.device`` as
  ``{"device": ...}``, symbolic values as ``{"sym": ...}``, anything else as
  ``{"repr": str(value)}``;
* metadata: the same, plus dicts as objects, a ``torch.dtype`` as its plain string,
  tensors (real or fake) as ``{"tensor": {"shape", "dtype", "device"}}`` (plus ``"stride"``
  when a dimension is broadcast, i.e. has stride 0),
  ``nn_module_stack`` as ``{key: [path, type_name]}``; nothing is silently dropped
  (``stack_trace`` is left out unless ``with_stack_trace=True``).
"""

from __future__ import annotations

import enum
import gzip
import io
import json
import math
import operator
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import torch
from torch import fx

FORMAT = "commlens.graph"
VERSION = 1

__all__ = [
    "FORMAT", "VERSION", "dump", "dumps", "graph_to_dict", "canonical_target", "is_alias",
    "is_impure", "encode_arg", "encode_meta", "module_records", "state_fqns_from_graph",
    "script_objects_from_graph", "group_ranks_from_graph",
]

_MAX_DEPTH = 64


# --------------------------------------------------------------------------- targets

def _qualified_function_name(target: Any) -> Optional[str]:
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if isinstance(module, str) and module and isinstance(qualname, str) and qualname:
        return f"{module}.{qualname}"
    return None


def canonical_target(node: fx.Node) -> str:
    """Canonical target name of ``node`` as graph-dump v1 defines it."""
    target = node.target
    if node.op != "call_function":
        return str(target)
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        # str(packet) is "ns.op" (e.g. "_c10d_functional.reduce_scatter_tensor").
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"{getattr(target, 'namespace', 'higher_order')}.{target.name()}"
    name = _qualified_function_name(target)
    return name if name is not None else str(target)


def _schema_of(target: Any):
    if isinstance(target, torch._ops.OpOverload):
        return target._schema
    if isinstance(target, torch._ops.OpOverloadPacket):
        default = getattr(target, "default", None)
        if default is not None:
            return default._schema
        overloads = target.overloads()
        if overloads:
            return getattr(target, overloads[0])._schema
    return None


def is_alias(node: fx.Node) -> bool:
    """``operator.getitem``, or an op whose schema returns an alias of an input without writing it."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    try:
        schema = _schema_of(node.target)
    except Exception:  # pragma: no cover - exotic targets
        return False
    if schema is None:
        return False
    return any(ret.alias_info is not None and not ret.alias_info.is_write for ret in schema.returns)


def is_impure(node: fx.Node) -> bool:
    """``node.is_impure()`` of the running PyTorch (False when it cannot be decided)."""
    try:
        return bool(node.is_impure())
    except Exception:  # e.g. call_module on a bare Graph without an owning module
        return False


# --------------------------------------------------------------------------- values

_SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return {"repr": str(value)}  # "inf", "-inf", "nan"


def encode_arg(value: Any, _depth: int = 0) -> Any:
    """Encode one node argument (``args``/``kwargs`` element)."""
    if _depth > _MAX_DEPTH:
        return {"repr": str(value)}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, fx.Node):
        return {"node": value.name}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, _SYM_TYPES):
        return {"sym": str(value)}
    if isinstance(value, (list, tuple)):  # includes torch.Size and named tuples
        return [encode_arg(item, _depth + 1) for item in value]
    return {"repr": str(value)}


def _type_name(kind: Any) -> str:
    if isinstance(kind, type):
        return f"{kind.__module__}.{kind.__qualname__}"
    return str(kind)


def _encode_tensor(tensor: torch.Tensor) -> dict:
    try:
        shape = [encode_arg(dim) for dim in tensor.shape]
    except Exception:  # pragma: no cover - sparse/nested layouts without a static shape
        shape = {"repr": "unknown"}
    summary = {"shape": shape, "dtype": str(tensor.dtype), "device": str(tensor.device)}
    # A broadcast (stride-0) dimension is read once, not once per element: the cost model's
    # memory time needs to know (torch's get_num_bytes). Dense tensors, the common case, keep
    # the summary short.
    try:
        stride = tensor.stride()
    except Exception:  # sparse, nested, or no strides
        stride = None
    if stride is not None and any(type(s) is int and s == 0 for s in stride):
        summary["stride"] = [encode_arg(s) for s in stride]
    return {"tensor": summary}


def _encode_module_stack(stack: Any) -> Any:
    if not isinstance(stack, Mapping):
        return encode_meta(stack)
    out = {}
    for key, entry in stack.items():
        if isinstance(entry, (list, tuple)) and len(entry) == 2:
            path, kind = entry
            out[str(key)] = [path if isinstance(path, str) else str(path), _type_name(kind)]
        else:
            out[str(key)] = encode_meta(entry)
    return out


def encode_meta(value: Any, _depth: int = 0) -> Any:
    """Encode one metadata value; never raises, never drops a value."""
    if _depth > _MAX_DEPTH:
        return {"repr": str(value)}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, fx.Node):
        return {"node": value.name}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, _SYM_TYPES):
        return {"sym": str(value)}
    if isinstance(value, Mapping):
        return {str(key): encode_meta(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_meta(item, _depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [encode_meta(item, _depth + 1) for item in value]
        try:
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
        except Exception:  # pragma: no cover
            return items
    to_dict = getattr(value, "to_dict", None)
    if type(value).__name__ == "NodeSource" and callable(to_dict):
        # Provenance records (meta["from_node"]): keep their structure.
        try:
            return encode_meta(to_dict(), _depth + 1)
        except Exception:  # pragma: no cover
            pass
    return {"repr": str(value)}


def _encode_node_meta(meta: Mapping, with_stack_trace: bool) -> dict:
    out = {}
    for key, value in meta.items():
        key = str(key)
        if key == "stack_trace" and not with_stack_trace:
            continue
        if key in ("nn_module_stack", "fwd_nn_module_stack"):
            out[key] = _encode_module_stack(value)
        else:
            out[key] = encode_meta(value)
    return out


# --------------------------------------------------------------------------- graph

def _graph_of(obj: Union[fx.GraphModule, fx.Graph]) -> fx.Graph:
    if isinstance(obj, fx.GraphModule):
        return obj.graph
    if isinstance(obj, fx.Graph):
        return obj
    graph = getattr(obj, "graph", None)  # e.g. torch.export.ExportedProgram
    if isinstance(graph, fx.Graph):
        return graph
    raise TypeError(f"expected an fx.GraphModule or fx.Graph, got {type(obj).__name__}")


def node_record(node: fx.Node, *, with_stack_trace: bool = False) -> dict:
    """The dump record of one node."""
    return {
        "name": node.name,
        "op": node.op,
        "target": canonical_target(node),
        "args": [encode_arg(arg) for arg in node.args],
        "kwargs": {str(key): encode_arg(value) for key, value in node.kwargs.items()},
        "meta": _encode_node_meta(node.meta, with_stack_trace),
        "alias": is_alias(node),
        "impure": is_impure(node),
        "repr": {"target": str(node.target), "args": str(node.args), "kwargs": str(node.kwargs)},
    }


def module_records(model: torch.nn.Module) -> list:
    """``model.named_modules()`` as ``[{"fqn", "type"}]`` (root first, ``fqn`` ``""``)."""
    return [{"fqn": fqn, "type": _type_name(type(module))} for fqn, module in model.named_modules()]


def _state_target(desc: Any) -> Optional[str]:
    """The FQN an AOTAutograd input descriptor names, through subclass wrappers
    (``SubclassGetAttrAOTInput(base=ParamAOTInput(target=...), attr=...)``)."""
    for _ in range(8):
        if type(desc).__name__ in ("ParamAOTInput", "BufferAOTInput"):
            target = getattr(desc, "target", None)
            return target if isinstance(target, str) else None
        desc = getattr(desc, "base", None)
        if desc is None:
            return None
    return None


def state_fqns_from_graph(graph: fx.Graph) -> Optional[list]:
    """FQNs of parameter/buffer placeholders, from AOTAutograd input descriptors (``meta["desc"]``).

    A tensor subclass parameter (a DTensor) is several placeholders, one per inner tensor:
    only its ``_local_tensor`` (or an unwrapped parameter) counts, once."""
    fqns = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        desc = node.meta.get("desc")
        attr = getattr(desc, "attr", None)
        if attr is not None and attr != "_local_tensor":
            continue
        target = _state_target(desc)
        if target is not None:
            fqns.append(target)
    return fqns or None


def _owner(graph: fx.Graph) -> Optional[torch.nn.Module]:
    return getattr(graph, "owning_module", None)


def script_objects_from_graph(graph: fx.Graph) -> Optional[dict]:
    """What the graph's script-object attributes are (``get_attr`` of a c10d ``ProcessGroup``
    or ``ReduceOp``, as eager collectives leave in a ``make_fx`` trace), keyed by target:
    ``{"class": "ProcessGroup", "group_name", "group_size", "ranks"}`` or
    ``{"class": "ReduceOp", "op"}``. Lets a reader name a c10d collective's group."""
    owner = _owner(graph)
    if owner is None:
        return None
    out = {}
    for node in graph.nodes:
        if node.op != "get_attr" or not isinstance(node.target, str) or node.target in out:
            continue
        try:
            value = owner
            for part in node.target.split("."):
                value = getattr(value, part)
        except AttributeError:
            continue
        record = _script_object_record(value)
        if record is not None:
            out[node.target] = record
    return out or None


def _script_object_record(value: Any) -> Optional[dict]:
    if not isinstance(value, torch.ScriptObject):
        return None
    qualified = str(getattr(value, "_type", lambda: "")()) if hasattr(value, "_type") else ""
    try:
        import torch.distributed as dist
        group = dist.ProcessGroup.unbox(value)
        record = {"class": "ProcessGroup", "group_name": str(group.group_name), "group_size": int(group.size())}
        try:
            record["ranks"] = [int(rank) for rank in dist.get_process_group_ranks(group)]
        except Exception:  # pragma: no cover - a group this process is not part of
            pass
        return record
    except Exception:
        pass
    if "ReduceOp" in qualified or "ReduceOp" in repr(value):
        try:
            import torch.distributed as dist
            op = dist.ReduceOp.unbox(value)
            return {"class": "ReduceOp", "op": str(op.op).rsplit(".", 1)[-1]}
        except Exception:
            return {"class": "ReduceOp"}
    return None


_GROUP_ARG = {"all_gather_into_tensor": 2, "all_gather_into_tensor_out": 2, "all_gather_into_tensor_coalesced": 2,
              "reduce_scatter_tensor": 3, "reduce_scatter_tensor_out": 3, "reduce_scatter_tensor_coalesced": 3,
              "all_reduce": 2, "all_reduce_": 2, "all_reduce_coalesced": 2, "all_reduce_coalesced_": 2,
              "all_to_all_single": 3, "broadcast": 2, "broadcast_": 2}


def group_ranks_from_graph(graph: fx.Graph, script_objects: Optional[dict] = None) -> Optional[dict]:
    """``group_ranks`` of the process groups the graph's collectives name, resolved in the running
    ``torch.distributed`` (real or fake process group): functional collectives' ``group_name``
    arguments and c10d collectives' process-group objects. ``None`` when nothing resolves."""
    try:
        import torch.distributed as dist
        from torch.distributed.distributed_c10d import _resolve_process_group
        if not (dist.is_available() and dist.is_initialized()):
            return None
    except Exception:  # pragma: no cover
        return None
    names = []
    for node in graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if node.target.namespace not in ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional"):
            continue
        index = _GROUP_ARG.get(node.target._opname)
        group = node.kwargs.get("group_name", node.args[index] if index is not None and len(node.args) > index else None)
        if isinstance(group, str) and group not in names:
            names.append(group)
    out = {}
    for name in names:
        try:
            out[name] = [int(rank) for rank in dist.get_process_group_ranks(_resolve_process_group(name))]
        except Exception:
            continue
    for record in (script_objects or {}).values():
        if record.get("class") == "ProcessGroup" and "ranks" in record:
            out.setdefault(record["group_name"], record["ranks"])
    return out or None


def _json_value(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False, default=lambda v: encode_meta(v)))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} is not JSON-serialisable: {err}") from None


def _group_ranks(group_ranks: Optional[Mapping]) -> Optional[dict]:
    if group_ranks is None:
        return None
    return {str(group): [int(rank) for rank in ranks] for group, ranks in group_ranks.items()}


def _default_source() -> dict:
    from . import __version__
    return {"producer": f"commlens-dump {__version__}", "torch": torch.__version__}


def graph_to_dict(gm: Union[fx.GraphModule, fx.Graph], *, group_ranks: Optional[Mapping] = None,
                  model: Optional[torch.nn.Module] = None, planner: Optional[Mapping] = None,
                  source: Optional[Mapping] = None, with_stack_trace: bool = False,
                  state_fqns: Optional[Sequence[str]] = None) -> dict:
    """The dump as a JSON-ready ``dict`` (key order as written)."""
    graph = _graph_of(gm)
    doc: dict = {"format": FORMAT, "version": VERSION}
    doc["source"] = _json_value(dict(source) if source is not None else _default_source(), "source")
    objects = script_objects_from_graph(graph)
    ranks = _group_ranks(group_ranks) if group_ranks is not None else group_ranks_from_graph(graph, objects)
    if ranks is not None:
        doc["group_ranks"] = ranks
    if model is not None:
        doc["modules"] = module_records(model)
    fqns = list(state_fqns) if state_fqns is not None else state_fqns_from_graph(graph)
    if fqns is not None:
        doc["state_fqns"] = [str(fqn) for fqn in fqns]
    if planner is not None:
        doc["planner"] = _json_value(dict(planner), "planner")
    if objects is not None:
        doc["script_objects"] = objects
    doc["nodes"] = [node_record(node, with_stack_trace=with_stack_trace) for node in graph.nodes]
    return doc


def _serialise(doc: Mapping) -> str:
    """One top-level key per line and one node per line: readable diffs, compact values."""
    def enc(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    lines = []
    for key, value in doc.items():
        if key == "nodes":
            body = ",\n".join(enc(node) for node in value)
            lines.append(f"{enc(key)}: [\n{body}\n]" if body else f"{enc(key)}: []")
        else:
            lines.append(f"{enc(key)}: {enc(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def dumps(gm: Union[fx.GraphModule, fx.Graph], **kwargs: Any) -> str:
    """The dump as a string; same keyword arguments as :func:`dump`."""
    return _serialise(graph_to_dict(gm, **kwargs))


def dump(gm: Union[fx.GraphModule, fx.Graph], path: Union[str, os.PathLike], *,
         group_ranks: Optional[Mapping[str, Iterable[int]]] = None,
         model: Optional[torch.nn.Module] = None, planner: Optional[Mapping] = None,
         source: Optional[Mapping] = None, with_stack_trace: bool = False,
         state_fqns: Optional[Sequence[str]] = None) -> str:
    """Write ``gm`` (an ``fx.GraphModule`` or ``fx.Graph``) as a graph dump v1 at ``path``.

    Args:
        gm: the graph to record; it is only read.
        path: output file; gzip-compressed when it ends in ``.gz``. Parent directories are created.
        group_ranks: process-group name -> ordered global ranks (the planner's ``group_ranks``);
            by default the groups the graph's collectives name, resolved in the running
            ``torch.distributed`` (when it is initialised).
        model: the ``nn.Module`` the graph came from; its ``named_modules()`` become ``modules``.
        planner: default planner arguments recorded with the dump (``module_bucket_plans``,
            ``block_module_types``, ``policy``, ``pp_degree``, ``dp_mode``).
        source: free-form provenance; default ``{"producer": "commlens-dump X", "torch": V}``.
        with_stack_trace: keep ``meta["stack_trace"]`` (large; left out by default).
        state_fqns: FQNs of the graph's state inputs in input order; by default taken from
            AOTAutograd's parameter/buffer input descriptors when present.

    Returns:
        ``str(path)``.
    """
    text = dumps(gm, group_ranks=group_ranks, model=model, planner=planner, source=source,
                 with_stack_trace=with_stack_trace, state_fqns=state_fqns)
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    data = text.encode("utf-8")
    if path.endswith(".gz"):
        buffer = io.BytesIO()
        # mtime=0 and no embedded file name: identical graphs give identical bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
            handle.write(data)
        data = buffer.getvalue()
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def load(path: Union[str, os.PathLike]) -> dict:
    """Read a dump (plain or gzip, recognised by its magic bytes) back as a ``dict``."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))
