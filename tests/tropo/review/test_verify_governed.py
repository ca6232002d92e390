"""``vivary verify --governed`` side by side with the suite's ``ozone verify --governed``
(vivary-ozone 0.3.2): generated requests around real compiled capsules and receipts, valid,
mutated and malformed, give byte-identical stdout and the same exit status, and the
generator reaches every reason code ours can give. Requests carrying a workspace graph are
compared wherever ours can answer (every shape rule, binding and bound); the deliberate
differences (docs/review.md) are listed in DIFFERENCES and asserted, never skipped."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support import governed as b
from tests.support.console import run
from tests.support.sealed import ACCENTED, CAPSULE, GATE, edit, resealed_receipt, sealed, seeded_observation
from tests.support.tropo_parity import side_by_side
from tropo.canonical import deterministic_id, fingerprint
from tropo.governed.capsule_graph import GRAPH_CHECK, compile_capsule
from tropo.governed.receipt import build_receipt
from tropo.governed.request import refusal
from tropo.governed.workspace_graph import project, topology_fingerprint

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-core): -m "not slow" leaves it out

DRIVER = Path(__file__).with_name("verify_driver.py")
JSON = dict[str, Any]
T = b.T0


def request(capsule: JSON | None = None, receipt: Any = ..., **fields: Any) -> JSON:
    capsule = CAPSULE if capsule is None else capsule
    doc: JSON = {
        "schema": "vivary.ozone-verification-request/v0",
        "workspace": {"fingerprint": capsule["workspace"]["fingerprint"]},
        "verified_at": b.iso(T + timedelta(seconds=90)),
        "capsule": capsule,
        "receipt": b.receipt(capsule) if receipt is ... else receipt,
        "gate": GATE,
    }
    if receipt is None:
        del doc["receipt"]
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not ...}


def _valid() -> dict[str, Any]:
    conflict = sealed(b.with_conflict(b.capsule()))
    unknown = sealed(b.with_unknown(b.capsule()))
    rec = b.receipt(CAPSULE)
    return {
        "sufficient": request(),
        "failed_check": request(receipt=b.receipt(CAPSULE, outcomes=("failed",))),
        "skipped_check": request(receipt=b.receipt(CAPSULE, outcomes=("skipped",))),
        "worst_of_two": request(receipt=b.receipt(CAPSULE, outcomes=("passed", "failed"))),
        "no_checks_run": request(receipt=b.receipt(CAPSULE, outcomes=())),
        "no_receipt": request(receipt=None),
        "no_receipt_name_only_gate": request(receipt=None, gate={"name": "merge"}),
        "no_receipt_claims_gate": request(receipt=None, gate={"name": "m", "require_claims_verified": True}),
        "gate_name_only": request(gate={"name": "merge"}),
        "gate_other_check": request(gate={"name": "m", "required_checks": ["lint"]}),
        "gate_null_constraints": request(gate={"name": "m", "required_checks": None,
                                               "max_unresolved_conflicts": None}),
        "conflict_over_limit": request(conflict, gate={"name": "m", "max_unresolved_conflicts": 0}),
        "conflict_at_limit": request(conflict, gate={"name": "m", "max_unresolved_conflicts": 1}),
        "conflict_fraction": request(conflict, gate={"name": "m", "max_unresolved_conflicts": 0.5}),
        "unknown_over_limit": request(unknown, gate={"name": "m", "max_unresolved_unknowns": 0}),
        "unknown_negative_limit": request(unknown, gate={"name": "m", "max_unresolved_unknowns": -1}),
        "tampered_receipt": request(receipt=edit(rec, "fingerprint", "sha256:" + "0" * 64)),
        "forged_receipt_id": request(receipt=edit(rec, "receipt_id", "receipt_0000000000000000")),
        "receipt_runtime_edited": request(receipt=edit(rec, "runtime.harness", "other")),
        "receipt_model_resealed": request(receipt=resealed_receipt(rec, "runtime.model", "m-1")),
        "receipt_verified_at_edge": request(verified_at=b.iso(T + timedelta(seconds=300))),
        "offset_timestamp": request(verified_at=(T + timedelta(seconds=90)).isoformat()),
        "windows_scope_folds_case": request(sealed(compile_capsule(
            b.RECORDS, question="What is the next safe loop step?", root="c:/Repo", observed_at=T,
            required_checks=[{**GRAPH_CHECK, "cwd": "c:/repo"}])), receipt=None, gate={"name": "merge"}),
    }


def _refused() -> dict[str, Any]:
    rec = b.receipt(CAPSULE)
    over_budget = sealed(b.capsule(max_claims=2))
    budget_cut = sealed(edit(CAPSULE, "budget.max_claims", 3))
    duplicate = copy.deepcopy(CAPSULE)
    duplicate["claims"].append(copy.deepcopy(duplicate["claims"][0]))
    outside = copy.deepcopy(CAPSULE)
    for checks in (outside["required_checks"], outside["task"]["required_checks"]):
        checks[0]["cwd"] = "/elsewhere"
    wide_scope = edit(CAPSULE, "task.scope", [b.ROOT, *(f"/{i:04d}" + "a" * 1000 for i in range(999))])
    return {
        "unknown_field": request(extra=1),
        "wrong_schema": request(schema="vivary.ozone-verification-request/v1"),
        "decision_schema": request(schema="vivary.strato-decision-request/v0"),
        "workspace_extra_key": request(workspace={"fingerprint": "x", "path": "/"}),
        "workspace_blank": request(workspace={"fingerprint": "  "}),
        "workspace_mismatch": request(workspace={"fingerprint": "sha256:other"}),
        "verified_at_naive": request(verified_at="2026-07-26T12:01:30"),
        "verified_at_garbage": request(verified_at="yesterday"),
        "verified_before_observed": request(verified_at=b.iso(T - timedelta(seconds=1))),
        "stale_capsule": request(verified_at=b.iso(T + timedelta(seconds=301))),
        "stale_receipt_too": request(verified_at=b.iso(T + timedelta(seconds=900))),
        "receipt_before_capsule": request(receipt=b.receipt(CAPSULE, created_at=T - timedelta(seconds=5))),
        "receipt_from_future": request(receipt=b.receipt(CAPSULE, created_at=T + timedelta(seconds=120))),
        "receipt_created_at_garbage": request(receipt=edit(rec, "created_at", "soon")),
        "receipt_unknown_field": request(receipt=edit(rec, "signature", "x")),
        "receipt_missing_field": request(receipt=edit(rec, "provenance", ...)),
        "receipt_null": request(receipt=None) | {"receipt": None},
        "receipt_claims_lie": request(receipt=resealed_receipt(rec, "claims_verified", [])),
        "receipt_unauthorized_check": request(receipt=resealed_receipt(rec, "checks.0.command", "true")),
        "receipt_other_capsule": request(receipt=b.receipt(sealed(b.capsule(question="Who owns gates?")))),
        "capsule_unknown_field": request(edit(CAPSULE, "notes", "x"), receipt=rec),
        "capsule_not_object": request(receipt=None) | {"capsule": ["capsule"]},
        "capsule_missing": {k: v for k, v in request().items() if k != "capsule"},
        "capsule_tampered": request(edit(CAPSULE, "claims.0.selection_reason", "trust me"), receipt=rec),
        "capsule_refingerprinted_wrong_id": request(b.seal(CAPSULE) | {"capsule_id": "capsule_0"}, receipt=rec),
        "capsule_claim_budget": request(budget_cut, receipt=b.receipt(budget_cut)),
        "capsule_duplicate_claim": request(b.seal(duplicate), receipt=None),
        "capsule_no_topology": request(sealed(b.capsule(), repair_topology_fingerprint=...), receipt=None),
        "capsule_long_topology": request(sealed(b.capsule(), repair_topology_fingerprint="t" * 127),
                                         receipt=None),
        "capsule_undeclared_checks": request(b.seal(edit(CAPSULE, "task.required_checks", ...)), receipt=None),
        "capsule_over_budget_omission": request(over_budget, receipt=b.receipt(over_budget)),
        "capsule_check_outside_scope": request(b.seal(outside), receipt=None),
        "capsule_content_bound": request(sealed(b.capsule(), content_fingerprint="sha256:c"), receipt=None),
        "capsule_no_observed_at": request(sealed(b.capsule(), observed_at=...), receipt=None),
        "capsule_scope_work_unbounded": request(b.seal(wide_scope), receipt=None),
        "gate_missing": {k: v for k, v in request().items() if k != "gate"},
        "gate_blank_name": request(gate={"name": " "}),
        "gate_not_object": request(gate="merge"),
        "gate_unknown_field": request(gate={**GATE, "waive": True}),
        "gate_checks_not_list": request(gate={"name": "m", "required_checks": "tropo-check"}),
        "gate_checks_not_strings": request(gate={"name": "m", "required_checks": [1]}),
        "gate_flag_not_bool": request(gate={"name": "m", "require_claims_verified": "yes"}),
        "gate_limit_bool": request(gate={"name": "m", "max_unresolved_conflicts": True}),
        "gate_limit_string": request(gate={"name": "m", "max_unresolved_unknowns": "0"}),
        "everything_wrong": {"schema": 1, "workspace": [], "capsule": {}, "gate": {}, "receipt": {}},
        "empty_object": {},
    }


def _checkout(cid: str, path: str | None = None, **facts: Any) -> JSON:
    known = {name: {"status": "known", "value": value} for name, value in facts.items()}
    return {"id": cid, "kind": "checkout", "path": path or f"{b.ROOT}/{cid}",
            "facts": {"is_git_repository": {"status": "known", "value": True}, **known}}


def _of(checkout: str, repository: str = "repository_a") -> JSON:
    return {"id": f"edge_{checkout}", "kind": "checkout_of", "from": checkout, "to": repository}


def graph(checkouts: int = 2, **fields: Any) -> JSON:
    """A workspace graph of the capsule's workspace and instant: one repository and its
    checkouts, each of the same origin."""
    origin = [{"name": "origin", "fetch_url": "https://example.test/a.git"}]
    nodes = [_checkout(f"checkout_{i}", remotes=origin, head_revision="abc") for i in range(checkouts)]
    doc: JSON = {
        "schema": "vivary.workspace-graph/v0",
        "workspace_fingerprint": CAPSULE["workspace"]["fingerprint"],
        "observed_at": CAPSULE["workspace"]["observed_at"],
        "allowlist": [b.ROOT],
        "nodes": [{"id": "repository_a", "kind": "repository"}, *nodes],
        "edges": [_of(node["id"]) for node in nodes],
        "conflicts": [],
        "unknowns": [],
    }
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not ...}


def _conflict(*sides: str, **fields: Any) -> JSON:
    return {"id": "conflict_1", "kind": "divergent_checkouts", "repository": "repository_a",
            "sides": [{"checkout": c, "path": f"{b.ROOT}/{c}"} for c in sides], **fields}


def _divergent(repositories: int) -> JSON:
    """Repositories of two checkouts each, every pair in conflict."""
    nodes, edges, conflicts = [], [], []
    for r in range(repositories):
        pair = [{"id": f"c{r}_{i}", "kind": "checkout", "path": f"{b.ROOT}/c{r}_{i}", "facts": {}} for i in (0, 1)]
        nodes += [{"id": f"repository_{r}", "kind": "repository"}, *pair]
        edges += [_of(node["id"], f"repository_{r}") for node in pair]
        conflicts.append({"id": f"conflict_{r}", "kind": "divergent_checkouts", "repository": f"repository_{r}",
                          "sides": [{"checkout": node["id"], "path": node["path"]} for node in pair]})
    return graph(0, nodes=nodes, edges=edges, conflicts=conflicts)


def _with_nodes(*nodes: JSON, edges: list[JSON] | None = None) -> JSON:
    base = graph(0)
    return graph(0, nodes=[*base["nodes"], *nodes], edges=edges if edges is not None else [])


def _graphs() -> dict[str, Any]:
    """Requests whose graph the suite refuses, or stops reading, before it would re-project
    it: every shape rule, both bindings, every bound."""
    g = graph()
    many = [_checkout(f"checkout_{i}", head_revision="abc") for i in range(301)]
    plain = [{"id": f"c{r}_{i}", "kind": "checkout", "path": f"{b.ROOT}/c{r}_{i}", "facts": {}}
             for r in range(2) for i in range(300)]
    shared = [_checkout(f"checkout_{i}", remotes=[{"name": "origin", "fetch_url": "u"}]) for i in range(46)]
    over_budget = sealed(b.capsule(max_claims=3))
    subjects = [{"id": s, "kind": "checkout", "path": f"{b.ROOT}/{s}", "facts": {}}
                for s in ("loop-policy", "gates", "next-step")]
    crowd = subjects + [{"id": f"x_{i}", "kind": "checkout", "path": f"{b.ROOT}/x_{i}", "facts": {}}
                        for i in range(298)]
    cut = over_budget["omissions"][0]
    huge = sealed(over_budget | {"omissions": [{**cut, "omitted_count": 2**53 // 12 + 1,
                                                "omitted": (cut["omitted"] * 16)[:16], "truncated": True}]})
    wide = sealed(edit(CAPSULE, "task.scope", [b.ROOT, *(f"/r{i:03d}" for i in range(99))]))
    dirty = [{"state": "M", "path": f"f{i}"} for i in range(1001)]
    cases: dict[str, Any] = {
        "graph_list": [], "graph_string": "graph", "graph_null": None, "graph_number": 7,
        "graph_empty": {}, "graph_wrong_schema": graph(schema="vivary.workspace-graph/v1"),
        "graph_no_schema": graph(schema=...), "graph_no_fingerprint": graph(workspace_fingerprint=...),
        "graph_blank_fingerprint": graph(workspace_fingerprint=" "), "graph_number_fingerprint": graph(
            workspace_fingerprint=1), "graph_no_observed_at": graph(observed_at=...),
        "graph_observed_garbage": graph(observed_at="noon"),
        "graph_observed_naive": graph(observed_at="2026-07-26T12:00:00"),
        "graph_nodes_object": graph(nodes={}), "graph_edges_missing": graph(edges=...),
        "graph_conflicts_string": graph(conflicts="none"), "graph_unknowns_null": graph(unknowns=None),
        "graph_too_many_nodes": graph(nodes=[{"id": f"n{i}", "kind": "file"} for i in range(1001)]),
        "graph_too_many_edges": graph(edges=[{"kind": "link"}] * 1001),
        "graph_too_many_conflicts": _divergent(301),
        "graph_too_many_unknowns": graph(unknowns=[{}] * 1001),
        "graph_unknown_not_object": graph(unknowns=["gone"]),
        "graph_unknown_blank_path": graph(unknowns=[{"path": ""}]),
        "graph_unknown_number_subject": graph(unknowns=[{"subject_path": 3}]),
        "graph_node_not_object": graph(nodes=[*g["nodes"], "node"]),
        "graph_node_blank_id": _with_nodes({"id": " ", "kind": "file"}),
        "graph_node_long_id": _with_nodes({"id": "n" * 127, "kind": "file"}),
        "graph_node_escaped_id": _with_nodes({"id": '"' * 64, "kind": "file"}),
        "graph_node_duplicate_id": graph(nodes=[*g["nodes"], g["nodes"][1]]),
        "graph_node_blank_kind": _with_nodes({"id": "n", "kind": ""}),
        "graph_node_facts_list": _with_nodes({"id": "n", "kind": "file", "facts": []}),
        "graph_checkout_no_path": _with_nodes({"id": "c", "kind": "checkout", "facts": {}}),
        "graph_checkout_blank_path": _with_nodes({"id": "c", "kind": "checkout", "path": " ", "facts": {}}),
        "graph_edge_not_object": graph(edges=[*g["edges"], 1]),
        "graph_edge_from_nothing": graph(edges=[*g["edges"], _of("checkout_9")]),
        "graph_edge_to_checkout": graph(edges=[_of("checkout_0", "checkout_1")]),
        "graph_edge_uncollatable": _with_nodes(_checkout("checkout_\u2603"), edges=[_of("checkout_\u2603")]),
        "graph_checkout_two_repositories": graph(
            nodes=[*g["nodes"], {"id": "repository_b", "kind": "repository"}],
            edges=[*g["edges"], _of("checkout_0", "repository_b")]),
        "graph_conflict_not_object": graph(conflicts=[[]]),
        "graph_conflict_wrong_kind": graph(conflicts=[_conflict("checkout_0", "checkout_1", kind="drift")]),
        "graph_conflict_duplicate_id": graph(conflicts=[_conflict("checkout_0", "checkout_1")] * 2),
        "graph_conflict_no_repository": graph(conflicts=[_conflict("checkout_0", "checkout_1",
                                                                   repository="repository_z")]),
        "graph_conflict_sides_object": graph(conflicts=[_conflict(sides={})]),
        "graph_conflict_side_path": graph(conflicts=[_conflict("checkout_0", "checkout_1") | {
            "sides": [{"checkout": "checkout_0", "path": "/else"}, {"checkout": "checkout_1",
                                                                  "path": f"{b.ROOT}/checkout_1"}]}]),
        "graph_conflict_one_side": graph(conflicts=[_conflict("checkout_0")]),
        "graph_conflict_partial": graph(3, conflicts=[_conflict("checkout_0", "checkout_1")]),
        "graph_conflict_repeated_side": graph(conflicts=[_conflict("checkout_0", "checkout_1", "checkout_1")]),
        "graph_checkout_no_facts": _with_nodes({"id": "c", "kind": "checkout", "path": "/c"}),
        "graph_git_flag_string": _with_nodes({"id": "c", "kind": "checkout", "path": "/c",
                                              "facts": {"is_git_repository": "yes"}}),
        "graph_remotes_text": _with_nodes(_checkout("c") | {"facts": {
            "is_git_repository": {"value": True}, "remotes": {"status": "known", "value": "origin"}}}),
        "graph_other_workspace": graph(workspace_fingerprint="sha256:other"),
        "graph_invalid_workspace_too": request(workspace={"fingerprint": ""}, graph=g),
        "graph_capsule_unsafe": request(sealed(b.capsule(), repair_topology_fingerprint=...), receipt=None,
                                        graph=graph(observed_at="2020-01-01T00:00:00Z")),
        "graph_capsule_tampered": request(edit(CAPSULE, "claims.0.selection_reason", "trust me"),
                                          graph=graph(observed_at=b.iso(T, z=False))),
        "graph_other_instant": graph(observed_at=b.iso(T + timedelta(seconds=1))),
        "graph_same_instant_other_text": graph(observed_at=b.iso(T, z=False)),
        "graph_content_required": request(bound := sealed(b.capsule(), content_fingerprint="sha256:c"),
                                          receipt=None, graph=graph(workspace_fingerprint=bound["workspace"][
                                              "fingerprint"])),
        "graph_checkouts_unbounded": _with_nodes(*many),
        "graph_refusals_unbounded": request(wide, receipt=None, graph=graph(
            workspace_fingerprint=wide["workspace"]["fingerprint"], refusals=[{"path": "/x"}] * 1001)),
        "graph_worktree_root_number": _with_nodes(_checkout("c", worktree_root=5)),
        "graph_estimate_unbounded": request(huge, receipt=None, graph=graph(
            workspace_fingerprint=huge["workspace"]["fingerprint"])),
        "graph_pair_scans_unbounded": graph(
            nodes=[{"id": "repository_0", "kind": "repository"}, {"id": "repository_1", "kind": "repository"},
                   *plain], edges=[_of(n["id"], f"repository_{n['id'][1]}") for n in plain]),
        "graph_route_proposals_unbounded": request(over_budget, receipt=None, graph=graph(
            workspace_fingerprint=over_budget["workspace"]["fingerprint"],
            nodes=[{"id": "repository_a", "kind": "repository"}, *crowd], edges=[_of(n["id"]) for n in crowd])),
        "graph_dirty_entries_text": _with_nodes({"id": "c", "kind": "checkout", "path": "/c", "facts": {
            "dirty_entries": {"status": "known", "value": "M f"}}}),
        "graph_dirty_entries_many": _with_nodes({"id": "c", "kind": "checkout", "path": "/c", "facts": {
            "dirty_entries": {"status": "known", "value": dirty}}}),
        "graph_neighbors_unbounded": _with_nodes(*shared, edges=[_of(n["id"]) for n in shared]),
        "graph_path_work_unbounded": _with_nodes({"id": "c", "kind": "checkout", "path": "/" + "p" * 9_999,
                                                  "facts": {"dirty_entries": {"status": "known",
                                                                              "value": dirty[:1000]}}}),
    }
    return {name: value if isinstance(value, dict) and "schema" in value and "capsule" in value
            else request(graph=value) for name, value in cases.items()}


def _observed(name: str, head: str = "abc", root: str = b.ROOT, **facts: Any) -> JSON:
    known = {"is_git_repository": True, "head_revision": head, **facts}
    return {"path": f"{root}/{name}", "facts": {k: {"status": "known", "value": v} for k, v in known.items()}}


ORIGIN = [{"name": "origin", "fetch_url": "https://example.test/a.git"}]


def projected(*checkouts: JSON, **fields: Any) -> JSON:
    """The canonical graph of these observed checkouts, at the capsule's instant."""
    graph = project({"observed_at": CAPSULE["workspace"]["observed_at"], "allowlist": [b.ROOT, "/other"],
                     "checkouts": list(checkouts), "refusals": fields.pop("refusals", [])})
    graph.update(fields)
    return {k: v for k, v in graph.items() if v is not ...}


def bound_to(graph: JSON, capsule: JSON | None = None, **workspace: Any) -> JSON:
    """A request whose capsule is bound to the graph: its workspace, instant and topology."""
    capsule = copy.deepcopy(CAPSULE if capsule is None else capsule)
    capsule["workspace"].update({"fingerprint": graph["workspace_fingerprint"],
                                 "repair_topology_fingerprint": topology_fingerprint(graph), **workspace})
    return request(b.seal(capsule), receipt=None, graph=graph)


def _without(doc: JSON, field: str) -> JSON:
    return {k: v for k, v in doc.items() if k != field}


def _divergence(capsule: JSON, graph: JSON, **changes: Any) -> JSON:
    """The capsule handing the graph's conflicts to review (changed as asked)."""
    conflicts = [{**conflict, "decision": "review_required", **changes} for conflict in graph["conflicts"]]
    return b.seal(capsule | {"conflicts": conflicts})


def _canonical() -> dict[str, Any]:
    """Requests bound to a projected graph: each part of the projection bent, the
    capsule's conflicts and topology against the graph's."""
    two = projected(_observed("a", remotes=ORIGIN), _observed("b", remotes=ORIGIN))
    split = projected(_observed("a", remotes=ORIGIN), _observed("b", "def", remotes=ORIGIN))
    away = projected(_observed("a", root="/other", remotes=ORIGIN), _observed("b", "def", root="/other",
                                                                             remotes=ORIGIN))
    refused = projected(_observed("a"), refusals=[{"path": p, "status": "refused", "reason": "outside_allowlist"}
                                                   for p in ("/etc", "/Etc")])
    unknown = projected(_observed("a", head_ref={"kind": "branch", "name": "main"})
                        | {"facts": {"is_git_repository": {"status": "known", "value": True},
                                     "head_revision": {"status": "unknown", "reason": "no_head"}}})
    relabelled = copy.deepcopy(two)
    relabelled["nodes"] = [n | {"label": "x"} if n["kind"] == "checkout" else n for n in two["nodes"]]
    forged = projected(_observed("a")) | {"workspace_fingerprint": "sha256:forged"}
    neighbor = copy.deepcopy(two)
    for edge in neighbor["edges"]:
        if edge["kind"] == "neighbor_of":
            edge.update({"from": edge["to"], "to": edge["from"],
                         "id": deterministic_id("edge", {"kind": "neighbor_of", "from": edge["to"],
                                                         "to": edge["from"]})})
    many = projected(*many_checkouts(150))
    roots = [b.ROOT, *(f"/r{i:03d}" for i in range(299))]
    scoped = b.seal(edit(CAPSULE, "task.scope", roots))
    return {
        "canonical_hand_made": request(graph=graph()),
        "canonical_relabelled": bound_to(relabelled),
        "canonical_edge_dropped": bound_to(two | {"edges": two["edges"][1:]}),
        "canonical_node_added": bound_to(two | {"nodes": [*two["nodes"], {"id": "revision_x", "kind": "revision",
                                                                          "sha": "x"}]}),
        "canonical_edge_id_forged": bound_to(edit(two, "edges.0.id", "edge_0000000000000000")),
        "canonical_no_allowlist": bound_to(_without(two, "allowlist")),
        "canonical_allowlist_not_normalized": bound_to(two | {"allowlist": [f"{b.ROOT}/", "/other"]}),
        "canonical_extra_field": bound_to(two | {"note": "x"}),
        "canonical_refusals_reordered": bound_to(refused | {"refusals": refused["refusals"][::-1]}),
        "canonical_refusal_relative": bound_to(projected(_observed("a")) | {"refusals": [
            {"path": "rel", "status": "refused", "reason": "resolved_outside_allowlist"}]}),
        "canonical_unknown_dropped": bound_to(unknown | {"unknowns": []}),
        "canonical_unknown_added": bound_to(two | {"unknowns": [{"checkout": "c", "path": "/workspace/a",
                                                                 "fact": "x", "reason": "y"}]}),
        "canonical_omission_added": bound_to(two | {"omissions": [{"kind": "neighbor_of_pairs_capped"}]}),
        "canonical_conflict_dropped": bound_to(split | {"conflicts": []}),
        "canonical_sides_reordered": bound_to(edit(split, "conflicts.0.sides", split["conflicts"][0]["sides"][::-1])),
        "canonical_fingerprint_forged": bound_to(forged),
        "canonical_topology_unbound": bound_to(two, repair_topology_fingerprint="topology_1"),
        "canonical_neighbor_reversed_topology_unbound": bound_to(neighbor, repair_topology_fingerprint="t"),
        "canonical_no_refusals_topology_unbound": bound_to(_without(two, "refusals"),
                                                           repair_topology_fingerprint="t"),
        "conflict_not_in_capsule": bound_to(split),
        "conflict_in_capsule_topology_unbound": bound_to(split, _divergence(CAPSULE, split),
                                                         repair_topology_fingerprint="t"),
        "conflict_in_capsule_changed": bound_to(split, _divergence(CAPSULE, split, question="Which?")),
        "conflict_out_of_scope_topology_unbound": bound_to(away, repair_topology_fingerprint="t"),
        "conflict_scope_comparisons_unbounded": bound_to(many, scoped),
        "conflict_scope_comparisons_bounded": bound_to(projected(*many_checkouts(149)), scoped,
                                                       repair_topology_fingerprint="t"),
    }


def many_checkouts(repositories: int) -> list[JSON]:
    return [_observed(f"c{i}_{j}", root="/other", head="abc" if j else "def", git_common_dir=f"/other/c{i}/.git")
            for i in range(repositories) for j in (0, 1)]


MATCH = {"path": "docs/a.md", "line": 3, "excerpt": "loop step", "term": "loop", "evidence": {"command": "git grep"}}


def _searched(name: str = "a", **fields: Any) -> JSON:
    record: JSON = {"raw_path": f"{b.ROOT}/{name}/", "path": f"{b.ROOT}/{name}", "status": "observed",
                    "head_revision": "abc", "privacy_fingerprint": "sha256:p", "matches": [MATCH], "omissions": []}
    record.update(fields)
    return {k: v for k, v in record.items() if v is not ...}


def content(**fields: Any) -> JSON:
    """A complete workspace-content artifact: one searched checkout with one match."""
    doc: JSON = {"schema": "vivary.workspace-content/v0", "observed_at": b.iso(T), "terms": ["loop", "step"],
                 "allowlist": [b.ROOT], "checkouts": [_searched()], "refusals": []}
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not ...}


def _refused_root(path: str, reason: str = "outside_allowlist", **fields: Any) -> JSON:
    return {"raw_path": path, "path": path, "status": "refused", "reason": reason, **fields}


def _contents() -> dict[str, Any]:
    """Requests carrying content, beside a capsule bound to content and one that is not:
    the three empty forms, complete artifacts, each record rule broken, every bound."""
    bound = sealed(b.capsule(), content_fingerprint="sha256:c")
    unknown = {"raw_path": f"{b.ROOT}/u", "path": f"{b.ROOT}/u", "status": "unknown", "reason": "grep_unavailable",
               "matches": [], "omissions": [], "evidence": {"command": "git grep"}}
    lines = {"kind": "content_lines_truncated", "path": "docs/a.md", "omitted_count": 2, "reason": "cap"}
    files = {"kind": "content_files_truncated", "omitted_count": 2, "total_files_matched": 5, "reason": "cap"}
    private = {"kind": "privacy_matches_excluded", "omitted_count": 1, "reason": "ignored",
               "evidence": {"command": "git check-ignore"}}
    plain = {"content_null": None, "content_empty": {}, "content_no_checkouts": {"checkouts": []},
             "content_artifact_of_nothing": content(checkouts=[]), "content_unbound_capsule": content()}
    cases: dict[str, Any] = {
        "content_bound_valid": content(), "content_bound_empty": {},
        "content_bound_artifact_of_nothing": content(checkouts=[]),
        "content_list": [], "content_string": "content", "content_missing_terms": content(terms=...),
        "content_extra_field": content(note="x"), "content_wrong_schema": content(schema="vivary.content/v0"),
        "content_observed_naive": content(observed_at="2026-07-26T12:00:00"),
        "content_observed_garbage": content(observed_at="later"), "content_terms_text": content(terms="loop"),
        "content_term_empty": content(terms=["loop", ""]), "content_allowlist_empty": content(allowlist=[]),
        "content_allowlist_relative": content(allowlist=["workspace"]),
        "content_checkouts_object": content(checkouts={}), "content_refusals_null": content(refusals=None),
        "content_checkout_not_object": content(checkouts=["a"]),
        "content_checkout_raw_path_other": content(checkouts=[_searched(raw_path=f"{b.ROOT}/b")]),
        "content_checkout_relative": content(checkouts=[_searched(raw_path="a", path="a")]),
        "content_checkout_outside": content(checkouts=[_searched()], allowlist=["/elsewhere"]),
        "content_checkout_status_other": content(checkouts=[_searched(status="searched")]),
        "content_checkout_extra_field": content(checkouts=[_searched(note="x")]),
        "content_checkout_blank_head": content(checkouts=[_searched(head_revision="")]),
        "content_checkout_no_head": content(checkouts=[_searched(head_revision=None)]),
        "content_checkout_no_terms": content(terms=[], checkouts=[_searched(matches=[])]),
        "content_checkout_no_question_terms": content(terms=[], checkouts=[_searched(
            privacy_fingerprint=..., reason="no_question_terms", head_revision=None, matches=[])]),
        "content_checkout_no_question_terms_but_terms": content(checkouts=[_searched(
            privacy_fingerprint=..., reason="no_question_terms", head_revision=None, matches=[])]),
        "content_match_absolute": content(checkouts=[_searched(matches=[{**MATCH, "path": "/etc/passwd"}])]),
        "content_match_line_zero": content(checkouts=[_searched(matches=[{**MATCH, "line": 0}])]),
        "content_match_line_bool": content(checkouts=[_searched(matches=[{**MATCH, "line": True}])]),
        "content_match_other_term": content(checkouts=[_searched(matches=[{**MATCH, "term": "gate"}])]),
        "content_match_evidence_extra": content(checkouts=[_searched(matches=[
            {**MATCH, "evidence": {"command": "git grep", "exit": 0}}])]),
        "content_match_excerpt_number": content(checkouts=[_searched(matches=[{**MATCH, "excerpt": 1}])]),
        "content_omissions_valid": content(checkouts=[_searched(omissions=[lines, files, private])]),
        "content_lines_omission_zero": content(checkouts=[_searched(omissions=[{**lines, "omitted_count": 0}])]),
        "content_files_omission_total_short": content(checkouts=[_searched(omissions=[
            {**files, "total_files_matched": 1}])]),
        "content_omission_other_kind": content(checkouts=[_searched(omissions=[{**private, "kind": "gone"}])]),
        "content_unknown_checkout": content(checkouts=[_searched(), unknown]),
        "content_unknown_checkout_matches": content(checkouts=[{**unknown, "matches": [MATCH]}]),
        "content_refused_outside": content(refusals=[_refused_root("/elsewhere")]),
        "content_refused_outside_but_inside": content(refusals=[_refused_root(f"{b.ROOT}/z")]),
        "content_refused_resolved_outside": content(refusals=[_refused_root(f"{b.ROOT}/z",
                                                                            "resolved_outside_allowlist")]),
        "content_refused_status_other": content(refusals=[_refused_root("/elsewhere", status="skipped")]),
        "content_refused_raw_path_other": content(refusals=[_refused_root("/elsewhere", raw_path="/other")]),
        "content_checkout_twice": content(checkouts=[_searched(), _searched()]),
        "content_checkout_refused_too": content(refusals=[_refused_root(f"{b.ROOT}/a")]),
        "content_match_twice": content(checkouts=[_searched(matches=[MATCH, {**MATCH, "excerpt": "again"}])]),
        "content_too_many_sources": content(checkouts=[], refusals=[{}] * 10_001),
        "content_path_comparisons_unbounded": content(refusals=[{}] * 1001, allowlist=["/a"] * 1000),
        "content_prefix_work_unbounded": content(checkouts=[_searched(path="/" + "p" * 999, matches=[{}] * 1001)]),
    }
    requests = {name: request(receipt=None, content=value) for name, value in plain.items()}
    requests.update({name: request(bound, receipt=None, content=value) for name, value in cases.items()})
    requests["content_beside_bad_graph"] = request(bound, receipt=None, content=[], graph=graph(
        workspace_fingerprint=bound["workspace"]["fingerprint"]))
    requests["content_beside_no_capsule"] = request(receipt=None, content=[]) | {"capsule": "none"}
    return requests


def _texts() -> dict[str, str]:
    """Malformed bytes: what a JSON serializer would never write."""
    valid = json.dumps(request())
    return {
        "array": "[]",
        "string": '"request"',
        "number": "3",
        "null": "null",
        "not_json": "{schema:",
        "empty": "",
        "trailing_garbage": valid + "}",
        "bom": "\ufeff" + valid,
        "nan": valid[:-1] + ',"nan":NaN}',
        "infinity_gate": json.dumps(request(gate={"name": "m", "max_unresolved_conflicts": 1}))
        .replace('"max_unresolved_conflicts": 1', '"max_unresolved_conflicts": Infinity'),
        "overflowing_number": valid[:-1] + ',"n":1e400}',
        "unsafe_integer": valid[:-1] + f',"n":{2**53}}}',
        "unsafe_integer_in_capsule": valid.replace('"max_claims": 24', f'"max_claims": {2**60}'),
        "deep_nesting": "[" * 100_000 + "]" * 100_000,
        "nested_in_claim_evidence": json.dumps(request(deep := b.seal(edit(
            CAPSULE, "claims.0.evidence", [json.loads("[" * 340 + "]" * 340)])), receipt=b.receipt(deep))),
        "oversized_string": json.dumps(request(gate={"name": "m" * 10_000_001})),
        "oversized_escapes": json.dumps(request(extra="\u0001" * 1_700_000)),
    }


#: Deliberate differences: ours refuses where the suite reads something.
DIFFERENCES = {
    # A duplicate key is refused; the suite lets the last one win (a reviewer and the
    # verifier could read different requests).
    "duplicate_gate_key": (json.dumps(request(gate={"name": "m"}))[:-1] + ', "gate": ' + json.dumps(GATE) + "}",
                           refusal(["invalid_request_document"])),
}

#: What the suite observed and compiled, for a graph and capsule it verifies with proposals.
SUITE_SPEC = {
    "observation": {
        "observed_at": b.iso(T), "allowlist": [b.ROOT], "refusals": [],
        "checkouts": [{"path": f"{b.ROOT}/{name}", "facts": {
            "is_git_repository": {"status": "known", "value": True},
            "head_revision": {"status": "known", "value": "abc"},
            "remotes": {"status": "known", "value": [{"name": "origin", "fetch_url": "https://example.test/a.git"}]},
        }} for name in ("a", "b")],
    },
    "task": {"question": "What is the head revision?", "scope": [b.ROOT]},
    "budget": {"max_claims": 2},
}


#: Every reason code our verification can give, and so the generator must reach.
CODES = {
    # refusals
    "invalid_json_value", "unknown_request_shape", "unknown_field:extra", "invalid_schema",
    "invalid_workspace", "workspace_mismatch", "invalid_verified_at", "unknown_capsule_field:notes",
    "invalid_capsule", "repair_work_unbounded", "invalid_repair_capsule", "duplicate_claim_id",
    "capsule_claim_budget_exceeded", "capsule_fingerprint_mismatch",
    "graph_required_for_compiler_omissions", "graph_required_for_effective_checks",
    "content_context_required", "graph_required_for_content_context", "invalid_capsule_observed_at",
    "capsule_observed_after_verification", "stale_capsule", "invalid_gate", "unknown_gate_field:waive",
    "unknown_receipt_field:signature", "invalid_receipt", "invalid_receipt_created_at",
    "receipt_precedes_capsule", "receipt_from_future", "stale_receipt", "request_work_unbounded",
    "invalid_request_document", "request_too_deeply_nested", "invalid_repair_graph",
    "repair_graph_workspace_mismatch", "repair_graph_context_mismatch", "repair_estimate_unbounded",
    "invalid_content_context", "repair_graph_conflicts_mismatch", "repair_graph_topology_unbound",
    # receipt and gate verdicts
    "missing_receipt", "fingerprint_mismatch", "receipt_id_mismatch", "receipt_invalid",
    "receipt_missing_for_required_checks", "receipt_missing_for_claims_verification",
    "required_check_missing", "required_check_failed", "claims_not_fully_verified",
    "unresolved_conflicts_exceed_limit", "unresolved_unknowns_exceed_limit",
}


def _cases(tmp: Path) -> dict[str, tuple[str, list[str]]]:
    texts = {name: json.dumps(doc) for name, doc in {**_valid(), **_refused(), **_graphs(), **_contents(), **_canonical()}.items()}
    texts.update(_texts())
    cases = {}
    for index, (name, text) in enumerate(sorted(texts.items())):
        path = tmp / f"{name}.json"
        path.write_bytes(text.encode("utf-8"))
        flags = ["--json", "--strict"] if index % 2 else ["--json"]
        cases[name] = (text, ["verify", str(path), "--governed", *flags])
    bad = tmp / "latin1.json"
    bad.write_bytes(json.dumps(request(extra="\u00e9")).encode("latin-1"))
    cases["not_utf8"] = ("", ["verify", str(bad), "--governed", "--json"])
    cases["no_such_file"] = ("", ["verify", str(tmp / "absent.json"), "--governed", "--json"])
    return cases


def upstream_python(ozone: Path) -> Path:
    return ozone.parent / "python"


def _task(r: random.Random, checkouts: list[JSON]) -> JSON:
    task: JSON = {"question": r.choice(["What is the head revision?", "Is zed on main?", "What of a is current?",
                                         "Which remotes does example use?", "x"])}
    if r.random() < 0.6:
        task["scope"] = [r.choice([b.ROOT, f"{b.ROOT}/a", f"{b.ROOT}/B"])]
    if r.random() < 0.25:
        task["filters"] = [r.choice([{"field": "fact", "equals": "head_revision"}, {"field": "branch", "includes": "ma"},
                                     {"field": "path", "includes": "a"}])]
    if r.random() < 0.2 and checkouts:
        task["required_checks"] = [{"name": "unit", "command": "pytest", "cwd": checkouts[0]["path"]}]
    return task


def _specs() -> list[JSON]:
    """Observed workspaces (markers, dirty files, remotes, divergent heads) and tasks over
    them, for the suite to project and compile."""

    r = random.Random(1818)
    specs = []
    for index in range(60):
        observation = seeded_observation(r, index * 10)
        observation["observed_at"] = CAPSULE["workspace"]["observed_at"]
        for checkout in observation["checkouts"]:
            if r.random() < 0.15 and "head_revision" in checkout["facts"]:
                checkout["facts"]["head_revision"].pop("evidence", None)
            if r.random() < 0.3:
                markers = r.choice([["tropo.toml"], ["tropo.toml", "AGENTS.md", "STRATO.md"], ["pyproject.toml"]])
                checkout["facts"]["workspace_markers"] = {"status": "known", "value": markers,
                                                          "evidence": {"command": "ls"}}
        task = _task(r, observation["checkouts"])
        specs.append({"observation": observation, "task": task, "budget": {"max_claims": r.choice([0, 1, 3, 24])}})
    # Two checkouts saying the same, one citing evidence the other does not: an owner.
    owned = copy.deepcopy(SUITE_SPEC)
    owned["observation"]["checkouts"][0]["facts"]["head_revision"]["evidence"] = {"command": "git rev-parse HEAD"}
    # Three of one repository's claims kept under budget pressure: route through an index.
    return [*specs, owned | {"budget": {"max_claims": 24}}, SUITE_SPEC | {"budget": {"max_claims": 3}},
            *_accented_specs(), *_content_specs()]


def _content_specs() -> list[JSON]:
    """Workspaces searched for terms: content bound to the graph's revision and privacy
    policy or not, matches on question terms and others, in collatable and uncollatable
    paths and excerpts, several to a checkout, with omissions, an incomplete search and a
    refused root, for capsules compiled with that content."""
    r = random.Random(1811)
    paths = ["docs/a.md", "src/b.py", "r\u00e9sum\u00e9.md", "\u4e2d.md", "Z.md", "docs/\u00e6.md"]
    excerpts = ["loop step", "caf\u00e9 loop", "\U0001f600 step", "gate", "Loop"]
    specs = []
    for _ in range(72):
        names = r.sample(["a", "b", "caf\u00e9", "Zed"], r.randint(1, 3))
        checkouts, searched = [], []
        for name in names:
            facts: JSON = {"content_privacy_fingerprint": "sha256:p"} if r.random() < 0.85 else {}
            if r.random() < 0.3:
                facts["remotes"] = ORIGIN
            checkouts.append(_observed(name, head=r.choice(["abc", "def"]), **facts))
            if r.random() < 0.15:
                continue
            head = checkouts[-1]["facts"]["head_revision"]["value"] if r.random() < 0.8 else "fff"
            found = {(r.choice(paths), r.randint(1, 9), r.choice(["loop", "step", "gate"]))
                     for _ in range(r.choice([0, 1, 2, 4, 7]))}
            matches = [{"path": p, "line": line, "excerpt": r.choice(excerpts), "term": term,
                        "evidence": {"command": "git grep"}} for p, line, term in sorted(found)]
            omissions = [r.choice([{"kind": "content_lines_truncated", "path": "docs/a.md", "omitted_count": 2,
                                    "reason": "cap"},
                                   {"kind": "content_files_truncated", "omitted_count": 2,
                                    "total_files_matched": 5, "reason": "cap"}])] if r.random() < 0.2 else []
            searched.append(_searched(name, head_revision=head, matches=matches, omissions=omissions,
                                      privacy_fingerprint="sha256:p" if r.random() < 0.85 else "sha256:q"))
        if r.random() < 0.15:
            searched.append({"raw_path": f"{b.ROOT}/u", "path": f"{b.ROOT}/u", "status": "unknown",
                             "reason": "grep_unavailable", "matches": [], "omissions": [],
                             "evidence": {"command": "git grep"}})
        refusals = [_refused_root("/elsewhere")] if r.random() < 0.15 else []
        observation = {"observed_at": CAPSULE["workspace"]["observed_at"], "allowlist": [b.ROOT],
                       "refusals": [], "checkouts": checkouts}
        task: JSON = {"question": r.choice(["Which loop step is current?", "Where is the gate loop?",
                                            "What is the head revision?", "step"])}
        if r.random() < 0.3:
            task["scope"] = [r.choice([b.ROOT, f"{b.ROOT}/a"])]
        if r.random() < 0.15:
            task["filters"] = [r.choice([{"field": "fact", "equals": "content_match"},
                                         {"field": "path", "includes": "a"}])]
        searched_content = content(terms=["gate", "loop", "step"], checkouts=searched, refusals=refusals)
        specs.append({"observation": observation, "task": task, "budget": {"max_claims": r.choice([1, 2, 5, 24])},
                      "content": searched_content})
    return specs


def _accented_specs() -> list[JSON]:
    """Workspaces of accented (and some uncollatable) checkout names, most with more than
    ten dirty files of accented names, so claim texts cut their listing with `…`."""

    r = random.Random(1810)
    files = ["r\u00e9sum\u00e9.md", "notes.md", "\u00dcber.txt", "a\u2026", "Z.md", "\u00e6.md"]
    specs = []
    for _ in range(24):
        names = r.sample(ACCENTED, r.randint(1, 4))
        checkouts = []
        for name in names:
            dirty = [{"state": r.choice(["M", "??", "A"]), "path": f"{r.choice(files)}{j}"}
                     for j in range(r.choice([0, 3, 11, 14, 25]))]
            facts: JSON = {"remotes": ORIGIN} if r.random() < 0.5 else {}
            if dirty and r.random() < 0.15:
                dirty[0]["path"] = "\u4e2d.md"  # past the domain: its claim is left out
            if dirty:
                facts.update(dirty_entries=dirty, is_dirty=True)
            checkouts.append(_observed(name, head=r.choice(["abc", "def"]), **facts))
        observation = {"observed_at": CAPSULE["workspace"]["observed_at"], "allowlist": [b.ROOT],
                       "refusals": [], "checkouts": checkouts}
        task = _task(r, checkouts) if r.random() < 0.3 else {
            "question": r.choice(["Which worktree files are dirty?", "What of caf\u00e9 is dirty?"])}
        specs.append({"observation": observation, "task": task, "budget": {"max_claims": r.choice([1, 3, 24, 24])}})
    return specs


def _compiled_requests(python: Path) -> dict[str, JSON]:
    """Requests around capsules the suite compiled from its own graphs: verified with
    repair proposals, with receipts, and with the capsule or graph bent so the suite finds
    the capsule is not the graph's."""
    proc = subprocess.run([str(python), str(DRIVER.with_name("suite_capsule.py"))], input=json.dumps(_specs()),
                          capture_output=True, text=True, check=True, timeout=600)
    requests: dict[str, JSON] = {}
    for index, compiled in enumerate(json.loads(proc.stdout)):
        if "error" in compiled:
            continue
        graph, capsule = compiled["graph"], compiled["capsule"]
        accented = any(not n["path"].isascii() for n in graph["nodes"] if n["kind"] == "checkout")
        cut = any("\u2026" in claim["claim"] for claim in capsule["claims"])
        kind = "content" if "content" in compiled else "cut" if cut else "accented" if accented else "compiled"
        name = f"{kind}_{index:02d}"
        extra = {"content": compiled["content"]} if "content" in compiled else {}
        requests[name] = request(capsule, receipt=None, gate={"name": "merge"}, graph=graph, **extra)
        if capsule["required_checks"]:
            checks = [{"name": c["name"], "command": c["command"], "outcome": "passed"}
                      for c in capsule["required_checks"]]
            receipt = build_receipt(capsule, runtime={"actor": "agent:example"}, checks=checks,
                                    created_at=T + timedelta(seconds=60))
            requests[f"{name}_receipt"] = request(capsule, receipt=receipt, graph=graph, **extra,
                                                  gate={"name": "merge", "require_claims_verified": True})
        if index % 3 == 0 and capsule["claims"]:
            bent = b.seal(edit(capsule, "claims.0.selection_reason", "because"))
            requests[f"{name}_claim_reworded"] = request(bent, receipt=None, gate={"name": "m"}, graph=graph, **extra)
        if index % 3 == 1:
            bent = b.seal(edit(capsule, "budget.max_claims", capsule["budget"]["max_claims"] + 1))
            requests[f"{name}_budget_raised"] = request(bent, receipt=None, gate={"name": "m"}, graph=graph, **extra)
        if index % 3 == 2:
            bent = b.seal(edit(capsule, "task.question", "What is the next step?"))
            requests[f"{name}_question_changed"] = request(bent, receipt=None, gate={"name": "m"}, graph=graph, **extra)
    return requests


def _drive(python: Path | str, runs: list[JSON]) -> list[JSON]:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(runs),
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: list[JSON] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[JSON, JSON]]:
    from tests.support.requirements import upstream_bin

    ozone = upstream_bin("ozone")
    if ozone is None:
        from tests.support.requirements import missing

        missing("upstream ozone not installed: run `make upstream` to compare")
    tmp = tmp_path_factory.mktemp("verify")
    cases = _cases(tmp)
    for index, (name, doc) in enumerate(_compiled_requests(upstream_python(ozone)).items()):
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(doc))
        cases[name] = ("", ["verify", str(path), "--governed", "--json", *(["--strict"] if index % 3 == 0 else [])])
    runs: list[JSON] = [{"argv": argv} for _, argv in cases.values()]
    runs += [{"argv": ["verify", "-", "--governed", "--json"], "stdin": text}
             for text, _ in list(cases.values())[:5]]
    names = [*cases, *(f"stdin:{name}" for name in list(cases)[:5])]
    ours, theirs = side_by_side(lambda: _drive(sys.executable, runs),
                                lambda: _drive(ozone.parent / "python", runs))
    return dict(zip(names, zip(ours, theirs, strict=True), strict=True))


def test_generated_requests_match_the_suite(compared: dict[str, tuple[JSON, JSON]]) -> None:
    assert len(compared) >= 50
    for name, (ours, theirs) in compared.items():
        assert (ours["code"], ours["stdout"]) == (theirs["code"], theirs["stdout"]), name


def test_every_outcome_and_exit_status_is_reached(compared: dict[str, tuple[JSON, JSON]]) -> None:
    outcomes = {(json.loads(ours["stdout"])["outcome"], ours["code"]) for ours, _ in compared.values()}
    assert {("sufficient", 0), ("insufficient", 0), ("insufficient", 1), ("refused", 2)} <= outcomes


def test_compiled_requests_reach_every_repair(compared: dict[str, tuple[JSON, JSON]]) -> None:
    reached = set()
    for ours, _ in compared.values():
        proposal = json.loads(ours["stdout"]).get("repair_proposal") or {}
        reached.update(p["kind"] for p in proposal.get("proposals", []))
        reached.update(p["ownership"]["basis"] for p in proposal.get("proposals", []) if "ownership" in p)
        reached.update("withheld" for _ in proposal.get("withheld", []))
    assert {"open_first", "split", "deduplicate", "route_through_index", "withheld",
            "more_evidence_citations", "tie_no_preference"} <= reached


def test_content_bound_capsules_are_verified_as_the_suite_does(compared: dict[str, tuple[JSON, JSON]]) -> None:
    """Capsules compiled with content beside their graph are recompiled with it: at least
    50 such requests identical to the suite's answers above, verified rather than refused, and
bent ones found not to be what the graph and content compile to."""
    outcomes = {name: json.loads(ours["stdout"])["outcome"] for name, (ours, _) in compared.items()
                if name.startswith("content_") and name[len("content_"):].isdigit()}
    assert len(outcomes) >= 50
    assert sum(outcome != "refused" for outcome in outcomes.values()) >= 50
    bent = [json.loads(ours["stdout"]) for name, (ours, _) in compared.items()
            if name.startswith("content_") and name.endswith(("_reworded", "_raised", "_changed"))]
    assert sum("repair_graph_context_mismatch" in answer["reason_codes"] for answer in bent) >= 20


def test_accented_workspaces_are_verified_as_the_suite_does(compared: dict[str, tuple[JSON, JSON]]) -> None:
    """Capsules over accented paths and dirty listings cut with `…` are verified (with
    proposals), not refused; identical to the suite's answers above."""
    outcomes = {name: json.loads(ours["stdout"])["outcome"] for name, (ours, _) in compared.items()
                if name.split("_")[0] in ("accented", "cut") and name.count("_") == 1}
    assert len(outcomes) >= 20
    assert sum(outcome != "refused" for outcome in outcomes.values()) >= 20
    assert sum(name.startswith("cut_") and outcome != "refused" for name, outcome in outcomes.items()) >= 5


def test_the_generator_reaches_every_reason_code(compared: dict[str, tuple[JSON, JSON]]) -> None:
    seen: set[str] = set()
    for ours, _ in compared.values():
        result = json.loads(ours["stdout"])
        seen.update(result["reason_codes"])
        for verdict in ("receipt_verdict", "gate_verdict"):
            seen.update((result[verdict] or {}).get("reason_codes", []))
    assert CODES - seen == set()
    assert seen - CODES == set()  # a code we give but do not list is an untested code


def test_deliberate_differences_are_what_docs_say(upstream: Callable[[str], Path], tmp_path: Path) -> None:
    runs = []
    for name, (text, _) in DIFFERENCES.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        runs.append({"argv": ["verify", str(path), "--governed", "--json"]})
    ours, theirs = side_by_side(lambda: _drive(sys.executable, runs),
                                lambda: _drive(upstream("ozone").parent / "python", runs))
    for (name, (_, expected)), mine, suite in zip(DIFFERENCES.items(), ours, theirs, strict=True):
        assert (mine["code"], json.loads(mine["stdout"])) == (2, expected), name
        assert mine["stdout"] != suite["stdout"], f"{name} is no longer a difference: drop it"


def test_a_refusal_record_list_that_is_a_number_is_refused(upstream: Callable[[str], Path], tmp_path: Path) -> None:
    """A graph's `refusals` given as a number: the suite's bound check iterates it and
    crashes (a traceback, exit 1); we refuse the graph as not canonical."""
    path = tmp_path / "request.json"
    path.write_text(json.dumps(bound_to(projected(_observed("a")) | {"refusals": 1})))
    args = ("verify", str(path), "--governed", "--json")
    code, out, _ = _ours("tropo", *args)
    assert (code, json.loads(out)) == (2, refusal(["invalid_repair_graph"]))
    code, out, err = _cli(upstream("ozone"), *args)
    assert (code, out) == (1, "") and err.rstrip().endswith("TypeError: 'int' object is not iterable")


def _suite_compiled(upstream: Callable[[str], Path], spec: JSON) -> JSON:
    proc = subprocess.run([str(upstream("ozone").parent / "python"), str(DRIVER.with_name("suite_capsule.py"))],
                          input=json.dumps(spec), capture_output=True, text=True, check=True, timeout=120)
    compiled: JSON = json.loads(proc.stdout)
    return compiled


def test_a_graph_of_accented_paths_is_verified_as_the_suite_does(upstream: Callable[[str], Path],
                                                                  tmp_path: Path) -> None:
    """Two checkouts whose paths the suite orders by its pinned table (accented letters):
    both find this capsule is not the graph's."""
    spec = {"observation": {"observed_at": CAPSULE["workspace"]["observed_at"], "allowlist": [b.ROOT],
                            "refusals": [], "checkouts": [_observed("caf\u00e9"), _observed("na\u00efve")]}}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(bound_to(_suite_compiled(upstream, spec)["graph"])))
    run = [{"argv": ["verify", str(path), "--governed", "--json"]}]
    [mine], [suite] = side_by_side(lambda: _drive(sys.executable, run),
                                   lambda: _drive(upstream("ozone").parent / "python", run))
    assert (mine["code"], mine["stdout"]) == (suite["code"], suite["stdout"])
    assert (suite["code"], json.loads(suite["stdout"])) == (2, refusal(["repair_graph_context_mismatch"]))


@pytest.mark.parametrize("size", [45, 46, 301])
def test_a_repository_of_many_checkouts_is_answered_as_the_suite_does(size: int, upstream: Callable[[str], Path],
                                                                       tmp_path: Path) -> None:
    """The suite caps neighbour pairs past 300 checkouts of one repository, but only ever
    inside a re-projection, and it re-projects only a graph whose projected pairs (each
    group capped so) stay within 1,000 edges: from 46 checkouts on (C(46, 2) = 1,035) both
    refuse the work as unbounded first, 301 (the cap engaged) included, the graph's own
    edges aside. Most checkouts lie outside the capsule's scope, so its 300-checkout bound
    does not answer first."""
    checkouts = [_observed(f"c{i:03d}", remotes=ORIGIN) for i in range(min(size, 40))]
    checkouts += [_observed(f"d{i:03d}", root="/other", remotes=ORIGIN) for i in range(size - len(checkouts))]
    nodes = [node for one in checkouts for node in projected(one)["nodes"] if node["kind"] == "checkout"]
    path = tmp_path / "request.json"
    path.write_text(json.dumps(bound_to(projected(*checkouts[:2]) | {"nodes": nodes, "edges": [], "conflicts": []})))
    run = [{"argv": ["verify", str(path), "--governed", "--json"]}]
    [mine], [suite] = side_by_side(lambda: _drive(sys.executable, run),
                                   lambda: _drive(upstream("ozone").parent / "python", run))
    assert (mine["code"], mine["stdout"]) == (suite["code"], suite["stdout"])
    expected = ["invalid_repair_graph"] if size == 45 else ["repair_work_unbounded"]
    assert json.loads(suite["stdout"])["reason_codes"] == expected


@pytest.mark.parametrize(("matches", "path", "scope", "code"), [
    (9_998, "docs/a.md", None, "repair_graph_context_mismatch"),
    (9_999, "docs/a.md", None, "repair_work_unbounded"),  # the content's candidate work
    (4_000, "d" * 100 + "/a.md", ["/x", "/elsewhere/" + "s" * 100], "repair_work_unbounded"),  # its scope work
])
def test_content_past_the_compilers_bounds_is_answered_as_the_suite_does(
        matches: int, path: str, scope: list[str] | None, code: str, upstream: Callable[[str], Path],
        tmp_path: Path) -> None:
    """A capsule bound to content whose matches (beside the graph's own claims) pass the
    compiler's 10,000 candidates, or whose records cost too much to place in scope."""
    spec = {"observation": {"observed_at": CAPSULE["workspace"]["observed_at"], "allowlist": [b.ROOT],
                            "refusals": [], "checkouts": [_observed("a", content_privacy_fingerprint="sha256:p")]},
            "task": {"question": "Which loop step?", "scope": [b.ROOT]}, "budget": {"max_claims": 3},
            "content": content()}
    compiled = _suite_compiled(upstream, spec)
    searched = copy.deepcopy(compiled["content"])
    searched["checkouts"][0]["matches"] = [{**MATCH, "path": path, "line": 1 + i}
                                           for i in range(matches)]
    capsule = copy.deepcopy(compiled["capsule"])
    capsule["task"]["scope"] += scope or []
    capsule["workspace"]["content_fingerprint"] = fingerprint(searched)
    path_out = tmp_path / "request.json"
    path_out.write_text(json.dumps(request(b.seal(capsule), receipt=None, gate={"name": "merge"},
                                           graph=compiled["graph"], content=searched)))
    run = [{"argv": ["verify", str(path_out), "--governed", "--json"]}]
    [mine], [suite] = side_by_side(lambda: _drive(sys.executable, run),
                                   lambda: _drive(upstream("ozone").parent / "python", run))
    assert (mine["code"], mine["stdout"]) == (suite["code"], suite["stdout"])
    assert json.loads(suite["stdout"])["reason_codes"] == [code]


def test_a_graph_the_suite_verifies_gets_its_proposals(upstream: Callable[[str], Path], tmp_path: Path) -> None:
    """A capsule the suite compiled from its own graph: the same repair proposals, byte
    for byte (open-first, split and deduplicate all proposed)."""
    compiled = _suite_compiled(upstream, SUITE_SPEC)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request(compiled["capsule"], receipt=None, gate={"name": "merge"},
                                       graph=compiled["graph"])))
    run = [{"argv": ["verify", str(path), "--governed", "--json"]}]
    [mine], [suite] = side_by_side(lambda: _drive(sys.executable, run),
                                   lambda: _drive(upstream("ozone").parent / "python", run))
    assert (mine["code"], mine["stdout"]) == (suite["code"], suite["stdout"])
    answer = json.loads(mine["stdout"])
    assert (mine["code"], answer["outcome"]) == (0, "insufficient")
    kinds = [proposal["kind"] for proposal in answer["repair_proposal"]["proposals"]]
    assert kinds == ["open_first", "open_first", "split", "deduplicate"]


def _cli(exe: Path | str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    proc = subprocess.run([str(exe), *args], input=stdin, capture_output=True, text=True, check=False,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _ours(front: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Our console script `front` in process (tests.support.console.run), answered as `_cli`."""
    proc = run(front, *args, input=stdin)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("name", ["sufficient", "failed_check", "no_receipt", "gate_unknown_field"])
def test_tropo_verify_text_is_the_suites_but_for_the_program_name(
        name: str, tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({**_valid(), **_refused()}[name]))
    for flags in ([], ["--strict"]):
        code, out, err = _ours("tropo", "verify", str(path), "--governed", *flags)
        suite = _cli(upstream("ozone"), "verify", str(path), "--governed", *flags)
        assert (code, out.replace("tropo verify: ", "ozone verify: ")) == suite[:2]
        assert err == ""


def test_tropo_verify_refusals_are_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request()))
    code, out, err = _ours("tropo", "verify", str(path))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "--governed" in err
    code, out, err = _ours("tropo", "verify", "--governed")
    assert (code, out) == (2, "") and err.count("\n") == 1
    code, out, err = _ours("tropo", "verify", "-", "--governed", "--json", stdin='{"a": 1, "a": 2}')
    assert (code, json.loads(out)) == (2, refusal(["invalid_request_document"]))
    assert err == "tropo verify: invalid request document: duplicate key 'a'\n"
    code, out, err = _ours("tropo", "verify", "--help")
    assert code == 0 and "Examples:" in out


@pytest.mark.parametrize("front", ["tropo", "vivary"])
def test_a_receipt_is_never_appended_to_the_request(front: str, tmp_path: Path,
                                                    upstream: Callable[[str], Path]) -> None:
    path = tmp_path / "request.json"
    text = json.dumps(request())
    path.write_text(text)
    alias = tmp_path / "alias.json"
    alias.symlink_to(path)
    for args, stdin in (([str(path), "--receipt", str(path)], ""),
                        ([str(path), f"--receipt={alias}"], ""),
                        (["-", "--receipt", str(tmp_path / "log.jsonl")], text)):
        code, out, err = _ours(front, "verify", *args, "--governed", "--json", stdin=stdin)
        suite = _cli(upstream("ozone"), "verify", *args, "--governed", "--json", stdin=stdin)
        assert (code, out) == (2, "") == suite[:2], args
        assert err == f"{front}: receipt: receipt path must not identify the request document\n"
    assert path.read_text() == text and not (tmp_path / "log.jsonl").exists()
    code, out, _ = _ours(front, "verify", str(path), "--help", "--receipt", str(path))
    assert code == 0 and "REQUEST" in out and path.read_text() == text
    log = tmp_path / "runs.jsonl"
    code, out, _ = _ours(front, "verify", str(path), "--governed", "--json", "--receipt", str(log))
    assert code == 0 and json.loads(log.read_text())["command"] == "verify"


@pytest.mark.parametrize("levels", [329, 330, 331, 332])
def test_nesting_is_refused_from_the_suites_depth(levels: int, tmp_path: Path,
                                                  upstream: Callable[[str], Path]) -> None:
    """The suite's limit is its recursion limit, so it moves with the caller's stack; ours is
    a fixed rule (MAX_DEPTH), equal to the suite's as a command."""
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request())[:-1] + ', "extra": ' + "[" * levels + "]" * levels + "}")
    args = ("verify", str(path), "--governed", "--json")
    mine = _ours("tropo", *args)
    suite = _cli(upstream("ozone"), *args)
    assert mine[:2] == suite[:2]
    assert ("request_too_deeply_nested" in mine[1]) == (levels >= 331)
