"""Guard operations on real repositories: register, transition, replay, upgrade,
history, and each refusal the reference names."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from strato.guard import engine, layout, signedops, store
from strato.guard.errors import GuardError
from tests.support.guard import POLICY, Workspace, approve_file, approve_policy
from tests.support.repos import git

RID = "compose:FEAT-1"


def register(ws: Workspace, **changes: Any) -> dict[str, Any]:
    """Register POLICY with ``changes``; edge_predicates given are merged over POLICY's."""
    req = {"resource_id": RID, **copy.deepcopy(POLICY)}
    req["edge_predicates"].update(changes.pop("edge_predicates", {}))
    return engine.register(ws.repo, {**req, **changes})


def move(ws: Workspace, src: str, dst: str, **extra: Any) -> dict[str, Any]:
    return engine.transition(
        ws.repo, {"resource_id": RID, "from_state": src, "to_state": dst, **extra}
    )


def refused(error_type: str, fn: Any, *args: Any, **kwargs: Any) -> GuardError:
    with pytest.raises(GuardError) as info:
        fn(*args, **kwargs)
    assert info.value.error_type == error_type, info.value.message
    return info.value


def pred(statement: str, kind: str = "deterministic") -> list[dict[str, str]]:
    return [{"id": "p", "type": kind, "statement": statement}]


def two_state(ws: Workspace, rid: str, forth: str, back: str | None = None) -> None:
    """Register a -> b (predicate ``forth``) and b -> a (predicate ``back``)."""
    preds = {"a->b": pred(forth), **({"b->a": pred(back)} if back else {})}
    graph = {"a": ["b"], "b": ["a"]}
    out = engine.register(
        ws.repo, {"resource_id": rid, "graph": graph, "initial": "a", "edge_predicates": preds}
    )
    assert out["status"] == "registered"


def step(ws: Workspace, rid: str, src: str, dst: str) -> str:
    req = {"resource_id": rid, "from_state": src, "to_state": dst}
    return str(engine.transition(ws.repo, req)["status"])


def notes_tip(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", "-q", "--verify", store.REF, check=False).strip()


def test_register_is_idempotent_and_refuses_another_policy(ws: Workspace) -> None:
    first = register(ws)
    assert first["status"] == "registered"
    assert first["guard_id"] == store.guard_id(RID)
    tip = notes_tip(ws)
    assert register(ws)["status"] == "exists"
    assert notes_tip(ws) == tip  # nothing written
    refused("guard_already_registered", register, ws, terminal=["released", "draft"])
    assert notes_tip(ws) == tip
    # the note on the anchor is the marker git itself can show; the lines are entry blobs
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    shown = git(ws.root, "notes", "--ref=vivary/guard", "show", anchor)
    assert shown.encode() == layout.marker(anchor)
    text = git(ws.root, "show", f"{store.REF}:{layout.LEDGERS}/{anchor}/00/00/00")
    assert text.startswith('{"entry_digest":"') and '"kind":"register"' in text


def test_transition_refused_then_applied_with_evidence(ws: Workspace) -> None:
    register(ws)
    no = move(ws, "draft", "review")
    assert no["status"] == "refused"
    assert no["current_state"] == "draft"
    assert no["verdict"]["meta"]["guard_evidence"][0]["evidence"] == "NOTES.md missing"
    (ws.root / "NOTES.md").write_text("notes\n")
    yes = move(ws, "draft", "review")
    assert yes["status"] == "applied" and yes["current_state"] == "review"
    assert yes["prev_digest"] == no["entry_digest"]
    hist = engine.history(ws.repo, {"resource_id": RID})
    assert hist["current_state"] == "review"
    assert [e["outcome"] for e in hist["ledger"]] == ["registered", "refused", "applied"]
    head = git(ws.root, "rev-parse", "HEAD").strip()
    assert all(e["git_head"] == head for e in hist["ledger"])


def test_stale_and_illegal_moves_change_nothing(ws: Workspace) -> None:
    register(ws)
    tip = notes_tip(ws)
    refused("stale_from_state", move, ws, "review", "released")
    refused("illegal_edge", move, ws, "draft", "released")
    refused("invalid_state_name", move, ws, "draft", "../x")
    refused("guard_not_found", step, ws, "nope", "a", "b")
    assert notes_tip(ws) == tip


def test_idempotency_replays_and_conflicts(ws: Workspace) -> None:
    register(ws)
    (ws.root / "NOTES.md").write_text("n\n")
    first = move(ws, "draft", "review", idempotency_key="k1", artifacts={"pr": "7"})
    again = move(ws, "draft", "review", idempotency_key="k1", artifacts={"pr": "7"})
    assert again["status"] == "replayed"
    assert again["ledger_ref"] == first["ledger_ref"] and again["verdict"] == first["verdict"]
    refused(
        "idempotency_conflict",
        move,
        ws,
        "draft",
        "review",
        idempotency_key="k1",
        artifacts={"pr": "8"},
    )
    assert len(engine.history(ws.repo, {"resource_id": RID})["ledger"]) == 2


def test_request_shape_is_checked(ws: Workspace) -> None:
    register(ws)
    bad = [
        {"resource_id": RID, "from_state": "draft", "to_state": "review", "force": True},
        {"resource_id": RID, "from_state": "draft", "to_state": "review", "override_token": "x"},
        {"resource_id": RID, "from_state": "draft"},
        {"resource_id": RID, "from_state": "draft", "to_state": "review", "artifacts": {"a": 1}},
    ]
    for req in bad:
        refused("invalid_request", engine.transition, ws.repo, req)


@pytest.mark.parametrize("rid", ["..", ".", "a/../b", "x\0y", "a" * 2000, "", "line\nbreak"])
def test_hostile_resource_ids_are_refused(ws: Workspace, rid: str) -> None:
    refused("invalid_resource_id", engine.register, ws.repo, {**POLICY, "resource_id": rid})
    assert notes_tip(ws) == ""


def test_policy_validation(ws: Workspace) -> None:
    refused(
        "paranoid_edge_needs_trusted_evidence",
        register,
        ws,
        stakes={"draft->review": "paranoid"},
        edge_predicates={"draft->review": pred("looks good", "judged")},
    )
    refused(
        "evidence_parse_error",
        register,
        ws,
        edge_predicates={"draft->review": pred("__import__('os').system('x')")},
    )
    refused(
        "evidence_parse_error", register, ws, edge_predicates={"draft->review": pred("x", "magic")}
    )
    refused(
        "command_execution_disabled",
        register,
        ws,
        edge_predicates={"draft->review": pred('command_exit_zero(["true"])')},
    )
    refused("invalid_policy", register, ws, initial="nowhere")
    refused("invalid_workspace_root", register, ws, workspace_root="relative/dir")
    assert notes_tip(ws) == ""


def test_judged_predicates_fail_closed_without_a_judge(ws: Workspace) -> None:
    register(ws, edge_predicates={"draft->review": pred("tidy", "judged")})
    out = move(ws, "draft", "review")
    assert out["status"] == "refused"
    assert "no verifier available" in out["verdict"]["meta"]["guard_evidence"][0]["evidence"]


def test_judged_predicate_goes_through_the_configured_judge(ws: Workspace) -> None:
    script = ws.root / "judge.sh"
    ws.commit(
        {
            "judge.sh": '#!/bin/sh\necho thinking\necho \'{"met": true, "evidence": "fine"}\'\n',
            ".vivary/agents.toml": f'[judge]\nargv = ["sh", "{script}", "{{prompt}}"]\n',
        }
    )
    approve_file(ws, ".vivary/agents.toml")
    register(ws, edge_predicates={"draft->review": pred("tidy", "judged")})
    out = move(ws, "draft", "review")
    assert out["status"] == "applied"
    assert out["verdict"]["meta"]["source"] == "judge"


def test_git_commit_exists_uses_the_object_store(ws: Workspace) -> None:
    sha = git(ws.root, "rev-parse", "HEAD").strip()
    register(
        ws,
        edge_predicates={
            "draft->review": pred(f'git_commit_exists("{sha}")'),
            "review->draft": pred('git_commit_exists("HEAD~0")'),
        },
    )
    assert move(ws, "draft", "review")["status"] == "applied"
    # revision expressions are not commit ids
    assert move(ws, "review", "draft")["status"] == "refused"


def test_server_file_exists_is_jailed(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    (ws.root / "link").symlink_to(outside)
    (ws.root / "dir").mkdir()
    for rel in ("../outside.txt", str(outside), "link", "dir", "README.md\\x00"):
        two_state(ws, f"jail:{rel}", f'server_file_exists("{rel}")')
        assert step(ws, f"jail:{rel}", "a", "b") == "refused", rel


def test_command_predicate_is_opt_in_and_killed_with_its_group(ws: Workspace) -> None:
    ws.commit({".vivary/guard/config.toml": "allow_commands = true\ncommand_timeout_s = 1\n"})
    pidfile = ws.root / "child.pid"
    hang = f"sleep 300 & echo $! > {pidfile}; wait"
    register(
        ws,
        edge_predicates={
            "draft->review": pred('command_exit_zero(["sh", "-c", "exit 0"])'),
            "review->draft": pred(f'command_exit_zero(["sh", "-c", "{hang}"])'),
        },
    )
    approve_policy(ws, RID)
    assert move(ws, "draft", "review")["status"] == "applied"
    out = move(ws, "review", "draft")
    assert out["status"] == "refused"
    assert "timed out" in out["verdict"]["meta"]["guard_evidence"][0]["evidence"]
    child = int(pidfile.read_text())
    # the grandchild was in the killed process group: it is gone (or a zombie being reaped)
    try:
        os.kill(child, 0)
    except ProcessLookupError:
        return
    assert Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"


def test_command_predicate_refused_when_config_is_only_in_the_working_tree(ws: Workspace) -> None:
    (ws.root / ".vivary/guard").mkdir(parents=True)
    (ws.root / ".vivary/guard/config.toml").write_text("allow_commands = true\n")
    refused(
        "command_execution_disabled",
        register,
        ws,
        edge_predicates={"draft->review": pred('command_exit_zero(["true"])')},
    )


def test_verdict_receipt_clean(ws: Workspace) -> None:
    register(ws)
    (ws.root / "NOTES.md").write_text("n\n")
    receipt = move(ws, "draft", "review")["ledger_ref"]
    zeros = "0" * 64
    two_state(
        ws, "other", f'verdict_receipt_clean("{receipt}")', f'verdict_receipt_clean("{zeros}")'
    )
    assert step(ws, "other", "a", "b") == "applied"
    assert step(ws, "other", "b", "a") == "refused"


def upgrade(ws: Workspace, graph: dict[str, list[str]], **extra: Any) -> dict[str, Any]:
    req = {
        "resource_id": RID,
        "new_graph": graph,
        "new_edge_predicates": copy.deepcopy(POLICY["edge_predicates"]),
        "new_terminal": ["released"],
        "new_stakes": dict(POLICY["stakes"]),
        "rationale": "grow",
        **extra,
    }
    return signedops.upgrade(ws.repo, req)


def test_upgrade_is_additive_only(ws: Workspace) -> None:
    register(ws)
    same = upgrade(ws, POLICY["graph"])
    assert same["status"] == "unchanged" and same["graph_version"] == 1
    grown = upgrade(ws, {**POLICY["graph"], "draft": ["review", "parked"], "parked": []})
    assert grown["status"] == "migrated" and grown["graph_version"] == 2
    hist = engine.history(ws.repo, {"resource_id": RID})
    assert hist["graph_version"] == 2 and hist["ledger"][-1]["resolved_by"] == "agent"
    now = {**POLICY["graph"], "draft": ["review", "parked"], "parked": []}
    refusals = [
        {"draft": ["review", "parked"]},  # review's edges removed
        {**now, "draft": ["review", "parked", "released"]},  # a new edge to an old state
        {**now, "released": ["gone"]},  # a new edge leaving a terminal state
    ]
    for graph in refusals:
        refused("incompatible_policy_upgrade", upgrade, ws, graph)
    refused("incompatible_policy_upgrade", upgrade, ws, now, new_stakes={})
    refused("incompatible_policy_upgrade", upgrade, ws, now, new_terminal=["released", "parked"])
    assert engine.history(ws.repo, {"resource_id": RID})["graph_version"] == 2
