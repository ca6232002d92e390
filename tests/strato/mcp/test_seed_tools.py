"""The tools Stratum's seed names beyond its surface file, through the real `strato mcp`
and the SDK's stdio client: `stratum_judge`, `stratum_guard_upgrade`,
`stratum_guard_apply_upgrade`, and `stratum_gate_resolve` with the seed's `gateToken`,
`rationale` and `resolved_by`. Every answer and every error is checked against the
seed's shape in :mod:`strato.mcp.contract`."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from strato.guard import authz, descriptors
from strato.mcp import contract
from tests.support.approvals import approve_agents
from tests.support.flows import make_workspace
from tests.support.guard import make_key, ssh_sign
from tests.support.mcp import GATE_SPEC, Session, run_server
from tests.support.repos import commit_all, write_files
from tests.support.requirements import missing


async def ok(s: Session, tool: str, args: dict[str, Any], status: str) -> dict[str, Any]:
    doc = await s.ok(tool, args)
    assert contract.answer_violations(tool, doc) == [], (tool, doc)
    assert doc["status"] == status, doc
    return doc


async def refused(s: Session, tool: str, args: Any, error_type: str) -> tuple[str, dict[str, Any]]:
    message, doc = await s.error(tool, args)
    assert doc is not None and contract.error_violations(tool, doc) == [], (tool, doc)
    assert (doc["status"], doc["error_type"]) == ("error", error_type), doc
    return message, doc


def test_stratum_judge_asks_the_trusted_judge_and_refuses_without_one(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Judge whether", "replies": [{"json": {"holds": True, "reason": "it is 3"}}]}], judge=True)

    async def judged(s: Session) -> None:
        args = {"statement": "the count is odd", "output": {"count": 3}, "stakes": "paranoid"}
        doc = await ok(s, "stratum_judge", args, "judged")
        assert (doc["holds"], doc["reason"], doc["stakes"], doc["model"]) == (True, "it is 3", "paranoid", "judge")
        assert doc["usage"] == {"tokens": 0, "usd": 0}
        await refused(s, "stratum_judge", {"statement": "s", "output": 1, "stakes": "huge"}, "invalid_arguments")

    run_server(ws.root, judged)
    assert any("the count is odd" in p and '{"count": 3}' in p for p in ws.prompts())

    (tmp_path / "bare").mkdir()
    bare = make_workspace(tmp_path / "bare")

    async def none(s: Session) -> None:
        message, _ = await refused(s, "stratum_judge", {"statement": "s", "output": 1}, "no_judge")
        assert "[judge]" in message

    run_server(bare.root, none)


POLICY: dict[str, Any] = {
    "resource_id": "release:1",
    "graph": {"draft": ["review"], "review": ["released", "draft"]},
    "initial": "draft",
    "terminal": ["released"],
    "edge_predicates": {"draft->review": [{"id": "notes", "statement": 'server_file_exists("NOTES.md")'}]},
}


def test_guard_upgrade_and_apply_upgrade_by_the_seeds_names(tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed (signed upgrade descriptors)")
    ws = make_workspace(tmp_path)
    key = make_key(tmp_path)
    write_files(ws.root, {".vivary/guard/allowed_signers": key.signers_line("alice@example.com")})
    commit_all(ws.root, "trust alice")
    grown = {
        "resource_id": "release:1",
        "new_graph": {**POLICY["graph"], "draft": ["review", "parked"], "parked": []},
        "new_edge_predicates": copy.deepcopy(POLICY["edge_predicates"]),
        "new_terminal": ["released"],
        "rationale": "park drafts",
    }

    async def upgrades(s: Session) -> None:
        await ok(s, "stratum_guard_register", POLICY, "registered")
        up = await ok(s, "stratum_guard_upgrade", grown, "migrated")
        assert up["graph_version"] == 2 and up["rationale"] == "park drafts" and up["ledger_ref"]
        again = await ok(s, "stratum_guard_upgrade", grown, "unchanged")
        assert again["checksum"] == up["checksum"] and "ledger_ref" not in again
        shrunk = {**grown, "new_graph": {"draft": ["review"], "review": []}}
        await refused(s, "stratum_guard_upgrade", shrunk, "incompatible_policy_upgrade")
        await refused(s, "stratum_guard_upgrade", {**grown, "override_token": "x"}, "invalid_arguments")
        # the twin keeps `strato guard upgrade`'s document
        assert (await s.ok("strato_guard_upgrade", grown))["status"] == "unchanged"
        apply = {"resource_id": "release:1", "descriptor_id": "narrow"}
        await refused(s, "stratum_guard_apply_upgrade", apply, "upgrade_descriptor_unavailable")

        to_policy = {"graph": {"draft": ["review"], "review": []}, "edge_predicates": {},
                     "terminal": ["review"], "stakes": {}}
        items = [{"id": "narrow", "rationale": "review ends it", "from_checksum": up["checksum"], "to_policy": to_policy}]
        data = json.dumps({"version": 1, "descriptors": items}, indent=2)
        armor = ssh_sign(key, authz.NS_DESCRIPTORS, data.encode(), tmp_path)
        write_files(ws.root, {descriptors.PATH: data, descriptors.SIG_PATH: armor})
        commit_all(ws.root, "a signed descriptor")
        applied = await ok(s, "stratum_guard_apply_upgrade", apply, "applied")
        assert applied["descriptor_id"] == "narrow" and applied["graph_version"] == 3
        await ok(s, "stratum_guard_apply_upgrade", apply, "unchanged")
        await refused(s, "stratum_guard_apply_upgrade", {**apply, "descriptor_id": "nope"},
                      "upgrade_descriptor_unavailable")
        history = await ok(s, "stratum_guard_history", {"resource_id": "release:1"}, "success")
        assert history["graph_version"] == 3

    run_server(ws.root, upgrades)


GUARDED_SPEC = GATE_SPEC.replace("entry: reviewed", "entry: guarded").replace("  reviewed:", "  guarded:")


def test_gate_resolve_takes_the_seeds_keys_and_the_person_policy_refuses_in_the_error_variant(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path)
    write_files(ws.root, {".vivary/agents.toml": '[gates]\nmcp = "resolve"\nperson = ["guarded"]\n'})
    commit_all(ws.root, "gates over mcp, but not the guarded flow's")
    approve_agents(ws.root)

    async def at_gate(s: Session, spec: str) -> tuple[str, dict[str, Any]]:
        plan = await ok(s, "stratum_plan", {"spec": spec, "input": {"topic": "git"}}, "ready")
        run = plan["runId"]
        good = {"output": {"text": "final", "score": 0.9}}
        state = await ok(s, "stratum_step_done", {"runId": run, "stepId": "work", "result": good}, "ready")
        [gate] = state["ready"]
        return run, gate

    async def scenario(s: Session) -> None:
        run, gate = await at_gate(s, GATE_SPEC)
        decide = {"runId": run, "stepId": "review", "decision": "approve"}
        message, _ = await refused(s, "stratum_gate_resolve", {**decide, "resolved_by": "human"}, "resolved_by_not_agent")
        assert "strato flow gate" in message
        await refused(s, "stratum_gate_resolve", {**decide, "gateToken": "not-the-token"}, "stale_token")
        done = {**decide, "gateToken": gate["gateToken"], "rationale": "reads well", "resolved_by": "agent"}
        await ok(s, "stratum_gate_resolve", done, "completed")
        audit = ws.strato("flow", "audit", run, "--json", check=True).stdout
        assert "reads well" in audit

        held, gate = await at_gate(s, GUARDED_SPEC)
        assert "gateToken" not in gate
        args = {"runId": held, "stepId": "review", "decision": "approve", "rationale": "ship it"}
        await refused(s, "stratum_gate_resolve", args, "gate_needs_person")
        await refused(s, "strato_gate_resolve", {**args, "gateToken": "t"} | {"rationale": None}, "invalid_arguments")

    run_server(ws.root, scenario)
