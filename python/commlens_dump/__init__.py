"""commlens-dump: write torch.fx graphs as commlens graph dumps (graph-dump v1)."""

__version__ = "0.1.0"

from .export import FORMAT, VERSION, dump, dumps, graph_to_dict, load  # noqa: E402

__all__ = ["__version__", "FORMAT", "VERSION", "dump", "dumps", "graph_to_dict", "load", "DumpPass", "install",
           "uninstall"]


def __getattr__(name):  # lazy: importing the package does not import Inductor
    if name in ("DumpPass", "install", "uninstall"):
        from . import inductor
        return getattr(inductor, name)
    raise AttributeError(name)
