"""commlens on graphs stock PyTorch produces, judged by torch itself, collective by collective.

* Structural verdicts: the ``heuristic`` of every collective in ``commlens roles --json`` equals
  what torch 2.15's own predicates say of the same ``fx`` node, called in-process:
  ``fx_passes/fsdp.py: is_fsdp_all_gather``, ``is_fsdp_reduce_scatter_wait`` (on the
  reduce-scatter's waits) and the all-reduce group rule of ``identify_fsdp_groups``.
* Every collective torch put in the graph is listed (functional, functional autograd, c10d).
* Phase in ``make_fx`` joint graphs comes from the gradient seed.
* Inductor's real bucketing and reduce-scatter dedup passes: identities by the RFC's rules, and
  ``audit`` loses nothing a pass merely rewrote.
* ``plan --tags roles`` on untagged graphs equals the reference planner run in-process on the
  same graph with the same derived tags, and finds real buckets.
"""

from __future__ import annotations

import json
import operator

import pytest
import torch
from torch import fx

import torch_zoo as zoo
from commlens_dump.export import graph_to_dict
from support import reference_report, run_cli

from torch_zoo import ROLE_AG, ROLE_AR, ROLE_RS, inductor_verdicts, torch_collectives


def roles_of(doc: dict, tmp_path, name: str) -> dict:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return json.loads(run_cli("roles", path, "--json").stdout)


def assert_verdicts_equal(roles: dict, verdicts: dict, collectives: set) -> None:
    listed = {c["node"]: c for c in roles["collectives"]}
    missing = collectives - set(listed)
    assert not missing, f"collectives torch put in the graph that commlens does not list: {sorted(missing)}"
    mismatches = []
    for name, entry in listed.items():
        ours = entry["heuristic"]["role"] if entry["heuristic"] else None
        theirs = verdicts.get(name)
        if ours != theirs:
            mismatches.append(f"{name} ({entry['op']}): commlens {ours}, torch {theirs}")
    assert not mismatches, "structural verdicts differ from torch's:\n" + "\n".join(mismatches)


def check(gm: fx.GraphModule, tmp_path, name: str, **dump_kwargs) -> dict:
    roles = roles_of(graph_to_dict(gm, **dump_kwargs), tmp_path, name)
    assert_verdicts_equal(roles, inductor_verdicts(gm), torch_collectives(gm))
    return roles


# ----------------------------------------------------------------------------- graphs (cached)

_GRAPHS: dict = {}


def cached(key, build):
    if key not in _GRAPHS:
        _GRAPHS[key] = build()
    return _GRAPHS[key]


def joint(key):
    builders = {
        "gpt2_ckpt": lambda: zoo.gpt2(checkpoint=True),
        "convnet": zoo.convnet,
        "moe": zoo.moe,
        "hsdp": zoo.hsdp,
        "tp_fsdp": zoo.tp_fsdp,
        "tp_fsdp_annotated": lambda: zoo.tp_fsdp(annotate=True),
    }

    def build():
        model, args = builders[key]()
        return zoo.aot_joint(model, args), model
    return cached(("joint", key), build)


JOINT = ["gpt2_ckpt", "convnet", "moe", "hsdp", "tp_fsdp", "tp_fsdp_annotated"]


@pytest.mark.parametrize("key", JOINT)
def test_joint_graph_verdicts_equal_inductor(key, tmp_path):
    gm, model = joint(key)
    roles = check(gm, tmp_path, key, model=model)
    assert roles["collectives"], "the graph has collectives"


def test_tp_group_counts_as_fsdp_as_inductor_says(tmp_path):
    """A TP weight all-gather has one placeholder ancestor: Inductor calls it FSDP and so counts
    the TP group as an FSDP group, bucketing its all-reduce as FSDP. commlens shows that
    verdict, beside the explicit role when there is one."""
    gm, model = joint("tp_fsdp_annotated")
    roles = check(gm, tmp_path, "tp_annotated", model=model)
    by_op = {}
    for c in roles["collectives"]:
        by_op.setdefault(c["transport"], []).append(c)
    tp_gathers = [c for c in by_op["all_gather"] if c["role"] == "tp.weight_gather"]
    assert tp_gathers and all(c["source"] == "explicit" for c in tp_gathers)
    assert all(c["heuristic"]["role"] == ROLE_AG for c in tp_gathers)
    tp_reduce = [c for c in by_op["all_reduce"] if c["group"] == tp_gathers[0]["group"]]
    assert tp_reduce and tp_reduce[0]["heuristic"]["role"] == ROLE_AR
    codes = {d["code"] for d in roles["diagnostics"]}
    assert "heuristic_mismatch" in codes


def test_make_fx_joint_verdicts_and_phase_from_the_gradient_seed(tmp_path):
    model, args = zoo.gpt2()
    gm = zoo.make_fx_joint(model, args)
    assert not any(n.meta.get("autograd_backward") for n in gm.graph.nodes)
    roles = check(gm, tmp_path, "gpt2_make_fx", model=model)
    rs = [c for c in roles["collectives"] if c["transport"] == "reduce_scatter"]
    ag = [c for c in roles["collectives"] if c["transport"] == "all_gather"]
    assert rs and ag
    assert all(c["phase"] == "backward" and c["phase_evidence"]["rule"] == "gradient_seed" for c in rs)
    assert "ones_like" in rs[0]["phase_evidence"]["evidence"]
    assert all(c["phase"] == "forward" for c in ag)


def test_rs_whose_wait_feeds_unused_unary_nodes(tmp_path):
    """wait → abs → sum, never used: Inductor's fsdp.py calls the reduce-scatter FSDP."""
    zoo.init()
    g = zoo.group((0, 1))

    def f(x):
        w = zoo.c10d.wait_tensor(zoo.c10d.reduce_scatter_tensor(x, "sum", 2, g))
        w.abs().sum()
        return x * 2

    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(f)(torch.randn(4, 4))
    # make_fx drops dead code only when asked; keep the unused chain as Inductor would see it.
    assert any(n.target == torch.ops.aten.abs.default for n in gm.graph.nodes)
    roles = check(gm, tmp_path, "rs_unused")
    (rs,) = [c for c in roles["collectives"] if c["transport"] == "reduce_scatter"]
    assert rs["heuristic"]["role"] == ROLE_RS and rs["role"] == ROLE_RS and rs["source"] == "inferred"


def test_coalesced_gathers_get_no_verdict(tmp_path):
    zoo.init()
    g = zoo.group((0, 1))

    def f(a, b):
        outs = zoo.c10d.all_gather_into_tensor_coalesced([a, b], 2, g)
        return [zoo.c10d.wait_tensor(o) for o in outs]

    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(f)(torch.randn(2, 4), torch.randn(2, 4))
    roles = check(gm, tmp_path, "coalesced")
    (c,) = roles["collectives"]
    assert c["heuristic"] is None and c["role"] is None


# ----------------------------------------------------------------------------- c10d ops

def test_fsdp2_eager_c10d_collectives_are_listed(tmp_path):
    from commlens_dump.models import MLP
    torch.manual_seed(0)
    model = MLP(8, 8, 4)
    gm = zoo.fsdp2_make_fx(model, (torch.randn(2, 8),))
    doc = graph_to_dict(gm)
    assert doc.get("script_objects"), "the exporter records the process-group objects"
    roles = roles_of(doc, tmp_path, "fsdp2")
    assert_verdicts_equal(roles, inductor_verdicts(gm), torch_collectives(gm))
    c10d = [c for c in roles["collectives"] if c["api"] == "c10d"]
    ops = {c["op"] for c in c10d}
    assert {"_allgather_base_", "_reduce_scatter_base_"} <= ops, ops
    world = torch.distributed.group.WORLD.group_name
    for c in c10d:
        assert c["group"] == world, c
        assert c["waits"], f"{c['node']} has a completion node"
        assert c["role"] is None and c["heuristic"] is None
    phases = {c["op"]: set() for c in c10d}
    for c in c10d:
        phases[c["op"]].add(c["phase"])
    assert phases["_reduce_scatter_base_"] == {"backward"}
    assert "forward" in phases["_allgather_base_"]
    assert doc["group_ranks"][world] == list(range(zoo.WORLD))


def test_ddp_style_all_reduce_is_listed(tmp_path):
    from commlens_dump.models import MLP
    torch.manual_seed(0)
    gm = zoo.ddp_style_make_fx(MLP(8, 8, 4), (torch.randn(2, 8),))
    roles = roles_of(graph_to_dict(gm), tmp_path, "ddp")
    assert_verdicts_equal(roles, inductor_verdicts(gm), torch_collectives(gm))
    reduces = [c for c in roles["collectives"] if c["op"] == "allreduce_"]
    assert len(reduces) == 4
    assert all(c["transport"] == "all_reduce" and c["phase"] == "backward" for c in reduces)


# ----------------------------------------------------------------------------- Inductor

def compiled(key):
    def build():
        if key == "tiny_lm":
            model, args = zoo.tiny_lm()
            return zoo.inductor(model, args, passes=zoo.INDUCTOR_PASSES), model
        if key == "tp_mixed":
            model, args = zoo.tp_mixed()
            return zoo.inductor(model, args, passes=("bucket_ag",)), model
        raise KeyError(key)
    return cached(("inductor", key), build)


def audit_stages(tmp_path, before: dict, after: dict, name: str) -> dict:
    b, a = tmp_path / f"{name}.before.json", tmp_path / f"{name}.after.json"
    b.write_text(json.dumps(before))
    a.write_text(json.dumps(after))
    return json.loads(run_cli("audit", b, a, "--json").stdout)


@pytest.mark.parametrize("key", ["tiny_lm", "tp_mixed"])
def test_inductor_post_grad_verdicts_equal_inductor(key, tmp_path):
    """On Inductor's post-grad graphs, before and after each of its FSDP passes."""
    captured, model = compiled(key)
    assert captured["before"], "Inductor compiled graphs"
    for stage, records in captured.items():
        for i, record in enumerate(records):
            roles = roles_of(record["dump"], tmp_path, f"{key}_{stage}_{i}")
            assert_verdicts_equal(roles, record["verdicts"], record["collectives"])


def test_inductor_dedup_is_recognised(tmp_path):
    """dedup_fsdp_reduce_scatter rewrites add(wait(RS a), wait(RS b)) into RS(add(a, b)) and
    leaves no provenance: audit recognises the rewrite and applies the dedup rule."""
    captured, model = compiled("tiny_lm")
    found = False
    for i, (before, after) in enumerate(zip(captured["before"], captured["dedup"])):
        rs = lambda doc: [n for n in doc["nodes"] if n["target"].startswith("_c10d_functional.reduce_scatter")]
        if len(rs(after["dump"])) >= len(rs(before["dump"])):
            continue
        found = True
        audit = audit_stages(tmp_path, before["dump"], after["dump"], f"dedup{i}")
        assert not [e for e in audit["entries"] if e["status"] == "lost"]
        dedup = [e for e in audit["entries"] if e["rule"] == "dedup"]
        assert len(dedup) == 2 and all(e["status"] == "combined" for e in dedup), audit["entries"]
        assert len({tuple(e["into"]) for e in dedup}) == 1, "both went into one reduce-scatter"
        (new_rs,) = dedup[0]["into"]
        after_entry = next(c for c in audit["after_collectives"] if c["node"] == new_rs)
        assert after_entry["provenance"]["key"] == "dedup_rewrite"
        # Inductor calls the new reduce-scatter FSDP (its wait now reaches the output alone).
        assert after_entry["heuristic"]["role"] == ROLE_RS == after_entry["role"]
    assert found, "the dedup pass rewrote a reduce-scatter pair"


def test_inductor_bucketing_combines_and_loses_nothing(tmp_path):
    """After Inductor's FSDP bucketing, the members of each bucket are combined by the bucketing
    rule; nothing is lost."""
    captured, model = compiled("tiny_lm")
    chain = [("dedup", "bucket_rs"), ("bucket_rs", "bucket_ag")]
    combined = 0
    for before_stage, after_stage in chain:
        for i, (before, after) in enumerate(zip(captured[before_stage], captured[after_stage])):
            audit = audit_stages(tmp_path, before["dump"], after["dump"], f"{after_stage}{i}")
            assert not [e for e in audit["entries"] if e["status"] == "lost"], audit["entries"]
            for e in audit["entries"]:
                if e["status"] == "combined":
                    combined += 1
                    assert e["rule"] == "bucketing" and e["after"]["role"] == e["before"]["role"], e
    assert combined >= 4, "Inductor bucketed gathers and reduce-scatters"


def test_inductor_mixed_bucket_from_custom_sources(tmp_path):
    """Inductor buckets a tp.sequence_gather with a tp.weight_gather and copies the first
    member's custom: roles alone applies the bucketing rule to bucketing_custom_sources."""
    captured, model = compiled("tp_mixed")
    before, after = captured["before"][0]["dump"], captured["bucket_ag"][0]["dump"]
    roles_before = roles_of(before, tmp_path, "tp_mixed_before")
    gathers = [c for c in roles_before["collectives"] if c["transport"] == "all_gather"]
    assert {c["role"] for c in gathers} == {"tp.sequence_gather", "tp.weight_gather"}, "annotations survive compile"
    roles = roles_of(after, tmp_path, "tp_mixed_after")
    bucketed = [c for c in roles["collectives"] if c["provenance"] and len(c["provenance"]["members"]) >= 2]
    assert len(bucketed) == 1, "Inductor bucketed the two gathers"
    bucket = bucketed[0]
    assert bucket["role"] is None and bucket["rule"] == "bucketing"
    codes = {d["code"] for d in roles["diagnostics"] if bucket["node"] in d["nodes"]}
    assert {"mixed_role_bucket", "copied_custom_untrustworthy"} <= codes, codes


def test_context_change_is_explained(tmp_path):
    """After Inductor buckets the TP gathers, the TP group no longer counts as FSDP: the
    all-reduce keeps its node but loses its inferred role, and audit says why instead of
    calling it lost."""
    captured, model = compiled("tp_mixed")
    before, after = captured["before"][0]["dump"], captured["bucket_ag"][0]["dump"]
    stripped = []
    for doc in (before, after):
        doc = json.loads(json.dumps(doc))
        for node in doc["nodes"]:
            node["meta"].pop("custom", None)
            if "bucketing_custom_sources" in node["meta"]:
                node["meta"]["bucketing_custom_sources"] = []
        stripped.append(doc)
    audit = audit_stages(tmp_path, stripped[0], stripped[1], "tp_context")
    changed = [e for e in audit["entries"] if e["status"] == "context_changed"]
    assert len(changed) == 1, audit["entries"]
    assert changed[0]["before"]["role"] == ROLE_AR and changed[0]["after"]["role"] is None
    messages = [d["message"] for d in audit["diagnostics"] if d["code"] == "identity_changed"]
    assert any("combined into" in m for m in messages), messages
    assert not [e for e in audit["entries"] if e["status"] == "lost"]


# ----------------------------------------------------------------------------- plan --tags roles

def apply_derived_tags(gm: fx.GraphModule, derived: list) -> None:
    """The tags `commlens plan --tags roles` derived, written onto the fx graph as the FSDP pass
    would write them (the reference then plans it)."""
    by_name = {n.name: n for n in gm.graph.nodes}
    for tag in derived:
        node = by_name[tag["node"]]
        node.meta["comm_type"] = tag["comm_type"]
        if tag["comm_group"] is not None:
            node.meta["comm_group"] = tag["comm_group"]
        node.meta["param_name"] = tag["param_name"]
        node.meta["state_idx"] = tag["state_idx"]
        node.meta["autograd_backward"] = tag["phase"] == "backward"
        source = node.args[0]
        if isinstance(source, fx.Node) and "val" in source.meta and "val" in node.meta:
            out = node.meta["val"]
            node.meta["fsdp_bucket_spec"] = {"input_shape": list(source.meta["val"].shape),
                                             "output_shape": list(out.shape), "dtype": out.dtype,
                                             "device": str(out.device)}


@pytest.mark.parametrize("key", ["gpt2_ckpt", "convnet", "moe", "hsdp"])
def test_plan_tags_roles_equals_the_reference_on_the_derived_tags(key, tmp_path):
    gm, model = joint(key)
    doc = graph_to_dict(gm, model=model)
    path = tmp_path / f"{key}.json"
    path.write_text(json.dumps(doc))
    plain = run_cli("plan", path, "--format", "text").stdout
    assert "0 tagged collectives" in plain and "--tags roles" in plain
    report = json.loads(run_cli("plan", path, "--tags", "roles").stdout)
    assert report["tags"] == "roles"
    derived = report.pop("derived_tags")
    report.pop("tags")
    assert derived and report["summary"]["buckets"] > 0, report["summary"]
    tagged = __import__("copy").deepcopy(gm)
    apply_derived_tags(tagged, derived)
    args = {"group_ranks": doc["group_ranks"], "module_bucket_plans": None, "block_module_types": None,
            "policy": None, "pp_degree": 1, "dp_mode": "fsdp"}
    expected = reference_report(tagged, doc.get("modules", []), args)
    assert report == expected


def test_plan_tags_roles_groups_weight_and_bias(tmp_path):
    """With recovered FQNs, the default parent-module scopes put a weight and its bias in one
    bucket, as for tagged graphs."""
    gm, model = joint("gpt2_ckpt")
    path = tmp_path / "gpt2.json"
    path.write_text(json.dumps(graph_to_dict(gm, model=model)))
    report = json.loads(run_cli("plan", path, "--tags", "roles").stdout)
    sources = {t["param_name_source"] for t in report["derived_tags"]}
    assert "bare_name" not in sources, sources
    names = {t["param_name"] for t in report["derived_tags"]}
    assert "h.0.qkv.weight" in names and "h.0.qkv.bias" in names, sorted(names)
    multi = [b for b in report["buckets"] if len(b["members"]) >= 2]
    assert any({m["param_name"] for m in b["members"]} >= {"h.0.qkv.weight", "h.0.qkv.bias"} for b in multi)


def test_plan_tags_roles_on_inductor_graphs(tmp_path):
    captured, model = compiled("tiny_lm")
    for i, record in enumerate(captured["before"]):
        doc = record["dump"]
        path = tmp_path / f"g{i}.json"
        path.write_text(json.dumps(doc))
        report = json.loads(run_cli("plan", path, "--tags", "roles").stdout)
        assert report["summary"]["buckets"] > 0
        sources = {t["param_name_source"] for t in report["derived_tags"]}
        assert sources == {"nn_module_stack"}, sources
        text = run_cli("plan", path, "--tags", "roles", "--format", "text").stdout
        assert "tags derived from semantic roles" in text
