"""TORCH_TRACE logs against the exporter, on a fresh real run.

``tests/fixtures/tracelog/make_fixtures.py`` compiles tiny SimpleFSDP-style DTensor models
(FSDP, HSDP, activation checkpointing, Inductor's own bucketing, bf16 with dynamic sizes and
``annotate`` identities) under the fake process group, with ``TORCH_TRACE`` set and the
exporter's Inductor hook (``commlens_dump.install(stage="lowered")``) on the same compiles. Every
post-grad graph of the log, read by ``commlens``, must have the exporter's nodes, targets,
arguments and shapes, and ``commlens roles LOG --graph K --json`` must equal ``roles`` on the
exporter's dump of graph K, collective by collective.
"""

import gzip
import json
import sys

import pytest

from support import REPO, run_cli

FIXTURES = REPO / "tests" / "fixtures" / "tracelog"
sys.path.insert(0, str(FIXTURES))

import make_fixtures  # noqa: E402

PAYLOAD_KEY = "distributed.comm_semantics"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A fresh run: the complete log (no record left out) and the exporter's dumps."""
    out = tmp_path_factory.mktemp("tracelog")
    manifest = make_fixtures.generate(out, keep_all_records=True)
    return out, manifest


def load(path):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def exported(log, k, tmp_path):
    out = tmp_path / f"graph_{k}.json"
    run_cli("graphs", log, "--graph", str(k), "--export", out)
    return load(out)


def test_the_log_holds_every_graph_the_exporter_dumped(fresh):
    out, manifest = fresh
    listing = json.loads(run_cli("graphs", out / manifest["log"], "--json").stdout)
    assert listing["format"] == "commlens.graphs"
    assert len(listing["graphs"]) == len(manifest["graphs"]) == 2 * len(make_fixtures.SCENARIOS)
    kinds = [g["kind"] for g in listing["graphs"]]
    assert kinds == ["forward", "backward"] * len(make_fixtures.SCENARIOS)
    # The committed fixture is what this run gives (graphs, sizes, collectives).
    committed = json.loads(run_cli("graphs", FIXTURES / "simple_fsdp.log.gz", "--json").stdout)
    shape = lambda graphs: [(g["kind"], g["nodes"], g["collectives"]) for g in graphs]  # noqa: E731
    assert shape(committed["graphs"]) == shape(listing["graphs"]), "re-run make_fixtures.py"


def test_nodes_targets_arguments_and_shapes_match_the_exporter(fresh, tmp_path):
    out, manifest = fresh
    log = out / manifest["log"]
    compared = 0
    for graph in manifest["graphs"]:
        k, scenario = graph["graph"], graph["scenario"]
        got = exported(log, k, tmp_path)
        want = load(out / graph["dump"])
        assert [n["name"] for n in got["nodes"]] == [n["name"] for n in want["nodes"]], (k, scenario)
        for a, b in zip(got["nodes"], want["nodes"]):
            where = f"graph {k} ({scenario}) {b['name']}"
            assert (a["op"], a["target"], a["args"], a["kwargs"]) == (b["op"], b["target"], b["args"], b["kwargs"]), where
            val = a["meta"].get("val")
            if val is not None:
                assert val == b["meta"].get("val"), where
                compared += 1
            else:
                # Not printed: a tuple's value (its getitems carry theirs), an opaque object's,
                # the output's.
                assert b["op"] == "output" or not isinstance(b["meta"].get("val"), dict) \
                    or "repr" in b["meta"]["val"], where
            if b["op"] != "placeholder":
                for key in ("autograd_backward", "recompute", "ac_graph_id"):
                    assert a["meta"].get(key) == b["meta"].get(key), (where, key)
    assert compared > 100


def roles(path, *args):
    return json.loads(run_cli("roles", path, *args, "--json").stdout)


def test_roles_of_the_log_equal_roles_of_the_exporter_dumps(fresh, tmp_path):
    out, manifest = fresh
    log = out / manifest["log"]
    collectives = 0
    for graph in manifest["graphs"]:
        k, scenario = graph["graph"], graph["scenario"]
        dump_path = out / graph["dump"]
        annotated = scenario == "fsdp_annotated"
        if annotated:
            # PyTorch prints annotations cut at 40 characters: compare with the dump without them.
            doc = load(dump_path)
            for node in doc["nodes"]:
                node["meta"].get("custom", {}).pop(PAYLOAD_KEY, None)
            dump_path = tmp_path / f"stripped_{k}.json"
            dump_path.write_text(json.dumps(doc))
        got, want = roles(log, "--graph", str(k)), roles(dump_path)
        assert len(got["collectives"]) == len(want["collectives"]) > 0, (k, scenario)
        for a, b in zip(got["collectives"], want["collectives"]):
            # meta["from_node"] is not in the log.
            assert a["provenance"] is None
            a["provenance"] = b["provenance"]
            assert a == b, (k, scenario)
            collectives += 1
        assert got["coverage"] == want["coverage"], (k, scenario)
        if annotated:
            assert got["diagnostics"] and all(d["rule"] == "payload.truncated" for d in got["diagnostics"])
            assert roles(out / graph["dump"])["coverage"]["explicit"] > 0 or k % 2 == 1
        else:
            assert got["diagnostics"] == want["diagnostics"], (k, scenario)
    assert collectives >= 20


def test_lowered_stage_validates_its_argument():
    import commlens_dump
    with pytest.raises(ValueError, match="stage must be one of"):
        commlens_dump.install("x", stage="later")

