"""Command line: ``python -m commlens_dump {demo,dump} ...``."""

from __future__ import annotations

import argparse
import json
import sys


def _demo(args: argparse.Namespace) -> int:
    from .demo import write_demo
    write_demo(args.out, only=args.only or None, log=lambda line: print(line, file=sys.stderr))
    return 0


def _load_module(path: str):
    import torch
    from torch import fx
    if path.endswith(".pt2"):
        program = torch.export.load(path)
        return program.graph_module
    obj = torch.load(path, weights_only=False)  # a pickled fx.GraphModule: only load files you trust
    if isinstance(obj, fx.GraphModule):
        return obj
    raise SystemExit(f"{path}: expected a pickled torch.fx.GraphModule or a torch.export .pt2 file, "
                     f"got {type(obj).__name__}")


def _dump(args: argparse.Namespace) -> int:
    from .export import dump
    gm = _load_module(args.module)
    group_ranks = json.loads(args.group_ranks) if args.group_ranks else None
    planner = json.loads(args.planner) if args.planner else None
    source = {"producer": "commlens-dump cli", "module_file": args.module}
    dump(gm, args.out, group_ranks=group_ranks, planner=planner, source=source,
         with_stack_trace=args.with_stack_trace)
    print(f"wrote {args.out} ({len(gm.graph.nodes)} nodes)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commlens_dump",
                                     description="Write torch.fx graphs as commlens graph dumps.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="trace the demo models (MLP, Llama-style transformer) with FSDP "
                                       "collectives on the fake process group and write example dumps")
    demo.add_argument("--out", default="examples", help="output directory (default: examples)")
    demo.add_argument("--only", action="append", help="write only this file (repeatable)")
    demo.set_defaults(run=_demo)
    one = sub.add_parser("dump", help="dump a saved module: a torch.export .pt2 file or a pickled GraphModule")
    one.add_argument("module")
    one.add_argument("out", help="output path (.json or .json.gz)")
    one.add_argument("--group-ranks", help='JSON, e.g. \'{"fsdp": [0, 1]}\'')
    one.add_argument("--planner", help="JSON object of default planner arguments")
    one.add_argument("--with-stack-trace", action="store_true")
    one.set_defaults(run=_dump)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
