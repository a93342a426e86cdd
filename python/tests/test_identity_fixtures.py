"""The committed identity fixtures are exactly what make_fixtures.py writes, and the CLI reads them."""

import json
import subprocess
import sys

from support import REPO, run_cli

FIXTURES = REPO / "tests" / "fixtures" / "identity"
NAMES = ["fsdp_tp_untagged.json", "fsdp_tp_annotated.json", "fsdp_tp_annotated_raw.json", "hsdp_all_reduce.json"]


def test_fixtures_reproduce_byte_for_byte(tmp_path):
    proc = subprocess.run([sys.executable, str(FIXTURES / "make_fixtures.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in NAMES:
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), f"{name} differs: re-run the script"


def test_fixture_contents(tmp_path):
    untagged = json.loads((FIXTURES / "fsdp_tp_untagged.json").read_text())
    annotated = json.loads((FIXTURES / "fsdp_tp_annotated.json").read_text())
    assert len(untagged["nodes"]) < 200 and len(annotated["nodes"]) < 200
    assert not any("custom" in n["meta"] or "comm_type" in n["meta"] for n in untagged["nodes"])
    roles = {n["name"]: n["meta"]["custom"]["distributed.comm_semantics"]["role"]
             for n in annotated["nodes"] if "distributed.comm_semantics" in n["meta"].get("custom", {})}
    groups = {n["name"]: n["args"][-1] for n in annotated["nodes"] if "c10d" in n["target"] and "wait" not in n["target"]}
    assert sorted((groups[name], roles[name]) for name in groups) == [
        ("fsdp", "fsdp.grad_reduce_shard"), ("fsdp", "fsdp.param_unshard"), ("tp", "tp.weight_gather")]
    for name in NAMES:
        args = tmp_path / "args.json"
        doc = json.loads((FIXTURES / name).read_text())
        args.write_text(json.dumps({"group_ranks": doc["group_ranks"], "module_bucket_plans": None,
                                    "block_module_types": None, "policy": None, "pp_degree": 1, "dp_mode": "fsdp"}))
        run_cli("plan", FIXTURES / name, "--args", args)
