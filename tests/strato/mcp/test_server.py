"""The server as an MCP host sees it: a real `strato mcp` process over stdio. Each tool's
document is compared with what the matching CLI command prints with --json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import git
from tests.strato.decide.builders import request as decision_request
from tests.strato.mcp.conftest import GATE_SPEC, Session, run_server


def cli(*args: str) -> tuple[int, Any]:
    """Run a console command of this distribution; (exit code, its JSON stdout)."""
    module = "tropo" if args[0] == "tropo" else "strato.cli"
    proc = subprocess.run([sys.executable, "-m", module, *args[1:]], capture_output=True, text=True, check=False)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None


def run_refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/vivary/").split()


def test_lists_every_tool_with_a_strict_schema(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        tools = {t.name: t for t in (await s.raw.list_tools()).tools}
        assert {
            "stratum_plan", "stratum_resume", "stratum_step_done", "stratum_gate_resolve",
            "strato_gates", "stratum_commit", "stratum_revert", "stratum_flow_cancel",
            "stratum_audit", "strato_runs", "strato_run_show", "stratum_validate",
            "stratum_guard_register", "stratum_guard_transition", "stratum_guard_history",
            "strato_guard_verify", "strato_decide", "tropo_check", "tropo_graph", "tropo_blast",
        } <= set(tools)
        done = tools["stratum_step_done"]
        assert done.input_schema["type"] == "object"
        assert set(done.input_schema["required"]) == {"runId", "stepId", "dispatchToken", "result"}
        assert done.input_schema["additionalProperties"] is False
        assert all(t.description for t in tools.values())

    run_server(workspace, scenario)


def test_consumer_runs_a_flow_to_a_gate_and_through_it(workspace: Path) -> None:
    root = str(workspace)
    (workspace / ".vivary").mkdir()
    (workspace / ".vivary" / "agents.toml").write_text('[gates]\nmcp = "resolve"\n')

    async def scenario(s: Session) -> None:
        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "git"}, "runId": "r1"})
        assert plan["status"] == "running" and plan["runId"] == "r1"
        assert plan["events"][0]["type"] == "planned"
        (work,) = plan["ready"]
        assert work["id"] == "work" and "git" in work["do"]
        token = work["dispatchToken"]

        # a wrong token is refused and changes nothing
        head = plan["head"]
        message, doc = await s.error(
            "stratum_step_done",
            {"runId": "r1", "stepId": "work", "dispatchToken": "nope", "result": {"output": {}}},
        )
        assert doc is not None and doc["ok"] is False and doc["error"] == message
        assert (await s.ok("stratum_resume", {"runId": "r1"}))["head"] == head

        # a result that fails the ensure is retried with a fresh token
        low = {"output": {"text": "draft", "score": 0.2}}
        retry = await s.ok("stratum_step_done", {"runId": "r1", "stepId": "work", "dispatchToken": token, "result": low})
        (again,) = retry["ready"]
        assert again["dispatchToken"] != token and again["attempt"] == 2
        good = {"output": {"text": "final", "score": 0.9}}
        at_gate = await s.ok(
            "stratum_step_done", {"runId": "r1", "stepId": "work", "dispatchToken": again["dispatchToken"], "result": good}
        )
        assert at_gate["ready"] == [] and [g["stepId"] for g in at_gate["gates"]] == ["review"]
        gate_token = at_gate["gates"][0]["gateToken"]
        assert (await s.ok("strato_gates", {}))["gates"][0]["gateToken"] == gate_token

        # same document as the CLI's --json, computed by the same code
        shown = await s.ok("strato_run_show", {"runId": "r1"})
        assert cli("strato", "flow", "show", "r1", "--root", root, "--json") == (0, shown)

        saved = await s.ok("stratum_commit", {"flow_id": "r1", "label": "at-gate"})
        assert saved["checkpoints"] == ["at-gate"]

        # revise sends the work back; the old gate token is then stale
        revised = await s.ok(
            "stratum_gate_resolve", {"runId": "r1", "stepId": "review", "decision": "revise", "gateToken": gate_token, "note": "more"}
        )
        (redo,) = revised["ready"]
        assert redo["id"] == "work"
        message, _ = await s.error(
            "stratum_gate_resolve", {"runId": "r1", "stepId": "review", "decision": "approve", "gateToken": gate_token}
        )
        assert "gate" in message
        second = await s.ok(
            "stratum_step_done", {"runId": "r1", "stepId": "work", "dispatchToken": redo["dispatchToken"], "result": good}
        )
        done = await s.ok(
            "stratum_gate_resolve",
            {"runId": "r1", "stepId": "review", "decision": "approve", "gateToken": second["gates"][0]["gateToken"]},
        )
        assert done["status"] == "completed" and done["output"] == good["output"]

        audit = await s.ok("stratum_audit", {"runId": "r1"})
        kinds = [e["type"] for e in audit["events"]]
        assert kinds.count("gate_resolved") == 2 and kinds[-1] == "completed"
        assert cli("strato", "flow", "audit", "r1", "--root", root, "--json") == (0, audit)

        # back to the checkpoint: waiting at the gate again, with a rotated token
        back = await s.ok("stratum_revert", {"flow_id": "r1", "label": "at-gate"})
        assert back["status"] == "running" and back["gates"][0]["gateToken"] != gate_token
        cancelled = await s.ok("stratum_flow_cancel", {"runId": "r1", "reason": "enough"})
        assert cancelled["status"] == "cancelled" and cancelled["gates"] == []
        runs = await s.ok("strato_runs", {})
        assert [(r["runId"], r["status"]) for r in runs["runs"]] == [("r1", "cancelled")]

    run_server(workspace, scenario)
    assert "refs/vivary/runs/r1/head" in run_refs(workspace)
    assert "refs/vivary/runs/r1/checkpoints/at-gate" in run_refs(workspace)


def test_spec_as_object_and_validation(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        assert await s.ok("stratum_validate", {"spec": GATE_SPEC}) == {"valid": True}
        bad = await s.ok("stratum_validate", {"spec": {"version": 1, "flows": {}}})
        assert bad["valid"] is False and bad["errors"][0]["code"]
        message, doc = await s.error("stratum_plan", {"spec": {"version": 1, "flows": {}}})
        assert message.startswith("invalid spec") and doc is not None and doc["code"] == "spec_invalid"
        as_object = yaml.safe_load(GATE_SPEC)
        assert await s.ok("stratum_validate", {"spec": as_object}) == {"valid": True}
        plan = await s.ok("stratum_plan", {"spec": as_object, "input": {"topic": "objects"}})
        assert [r["do"] for r in plan["ready"]] == ["Write about objects"]

    run_server(workspace, scenario)


def test_graph_check_graph_and_blast(workspace: Path) -> None:
    root = str(workspace)
    (workspace / "modules" / "broken.md").write_text("---\ndepends_on: [nowhere]\n---\n# Broken\n")

    async def scenario(s: Session) -> None:
        checked = await s.ok("tropo_check", {})
        assert checked["checked"] == 4 and checked["errors"] == 1
        assert checked["findings"][0]["code"] == "W220"
        assert cli("tropo", "check", "--root", root, "--json") == (1, checked)
        lenient = await s.ok("tropo_check", {"lenient": True})
        assert lenient["errors"] == 0 and lenient["warnings"] == 1
        committed = await s.ok("tropo_check", {"rev": "HEAD"})
        assert committed["checked"] == 3 and committed["errors"] == 0
        only = await s.ok("tropo_check", {"paths": ["modules/api.md"]})
        assert only["checked"] == 1

        graph = await s.ok("tropo_graph", {"rev": "HEAD"})
        assert graph["counts"] == {"nodes": 3, "edges": 2, "broken": 0}

        blast = await s.ok("tropo_blast", {"id": "core"})
        assert [(i["id"], i["distance"]) for i in blast["impacted"]] == [("api", 1), ("web", 2)]
        assert cli("tropo", "blast", "core", "--root", root, "--json") == (0, blast)
        assert [i["id"] for i in (await s.ok("tropo_blast", {"id": "core", "depth": 1}))["impacted"]] == ["api"]

        message, _ = await s.error("tropo_blast", {"id": "ghost"})
        assert message.startswith("no document with id 'ghost'")
        for escape in ("../outside", "/etc"):
            message, _ = await s.error("tropo_check", {"paths": [escape]})
            assert "relative to the workspace" in message
        message, _ = await s.error("tropo_graph", {"rev": "no-such-rev"})
        assert "no-such-rev" in message

    run_server(workspace, scenario)


def test_guard_register_transition_history_verify(workspace: Path) -> None:
    policy = {
        "resource_id": "release:1",
        "graph": {"draft": ["done"]},
        "initial": "draft",
        "terminal": ["done"],
        "edge_predicates": {"draft->done": [{"id": "ok", "statement": 'server_file_exists("OK")'}]},
    }
    move = {"resource_id": "release:1", "from_state": "draft", "to_state": "done"}

    async def scenario(s: Session) -> None:
        registered = await s.ok("stratum_guard_register", policy)
        assert registered["status"] == "registered"
        refused = await s.ok("stratum_guard_transition", move)
        assert refused["status"] == "refused"
        (workspace / "OK").write_text("yes\n")
        applied = await s.ok("stratum_guard_transition", move)
        assert applied["status"] == "applied"
        history = await s.ok("stratum_guard_history", {"resource_id": "release:1"})
        assert history["current_state"] == "done" and len(history["ledger"]) >= 2
        verified = await s.ok("strato_guard_verify", {})
        assert verified["ok"] is True and verified["resources"] == 1

        message, doc = await s.error("stratum_guard_transition", {**move, "colour": "red"})
        assert message.startswith("invalid_request") and doc is not None and doc["status"] == "error"
        message, _ = await s.error("stratum_guard_register", {**policy, "resource_id": "other", "workspace_root": "/"})
        assert "outside the workspace" in message

    run_server(workspace, scenario)
    assert git(workspace, "notes", "--ref", "refs/notes/vivary/guard", "list").strip()


def test_decide_matches_the_cli(workspace: Path, tmp_path: Path) -> None:
    req = decision_request()
    path = tmp_path / "request.json"
    path.write_text(json.dumps(req))

    async def scenario(s: Session) -> None:
        decision = await s.ok("strato_decide", {"request": req})
        assert decision["schema"] == "vivary.strato-decision/v0"
        assert cli("strato", "decide", "--governed", "--json", str(path)) == (0, decision)
        message, doc = await s.error("strato_decide", {"request": {**req, "authority_class": "emperor"}})
        assert message.startswith("request refused: ")
        assert doc is not None and doc["schema"] == "vivary.strato-decision-refusal/v0"

    run_server(workspace, scenario)


def test_bad_input_is_a_one_line_tool_error_and_changes_nothing(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        message, _ = await s.error("stratum_nonsense", {})
        assert "unknown tool" in message
        cases = [
            ("stratum_step_done", {"runId": 7, "stepId": "w", "dispatchToken": "t", "result": {}}, "runId"),
            ("stratum_step_done", {"runId": "r", "stepId": "w", "result": {}}, "dispatchToken"),
            ("stratum_plan", {"spec": GATE_SPEC, "input": "topic=git"}, "input"),
            ("stratum_plan", {"spec": GATE_SPEC, "inputs": {}}, "inputs"),
            ("stratum_gate_resolve", {"runId": "r", "stepId": "s", "decision": "maybe", "gateToken": "t"}, "decision"),
            ("tropo_blast", {"id": "core", "depth": 0}, "depth"),
            ("tropo_check", {"lenient": "yes"}, "lenient"),
        ]
        for name, arguments, field in cases:
            message, _ = await s.error(name, arguments)
            assert message.startswith(f"invalid arguments for {name}: {field}"), message
        message, doc = await s.error("stratum_resume", {"runId": "missing"})
        assert doc is not None and doc["code"] == "run_not_found"
        message, doc = await s.error("stratum_plan", {"spec": GATE_SPEC, "input": {}, "runId": "bad id!"})
        assert doc is not None and doc["code"] == "invalid_run_id"
        assert await s.ok("strato_runs", {}) == {"runs": []}

    run_server(workspace, scenario)
    assert run_refs(workspace) == []
