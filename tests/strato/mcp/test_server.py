"""The server as an MCP host sees it: a real `strato mcp` process over stdio. Each tool's
document is compared with what the matching CLI command prints with --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from strato.mcp import contract
from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.governed import request as decision_request
from tests.support.mcp import GATE_SPEC, Session, run_server
from tests.support.repos import commit_all, git


def cli(*args: str) -> tuple[int, Any]:
    """Run a console command of this distribution in process; (exit code, its JSON stdout)."""
    proc = console.run(*args)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None


def run_refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/vivary/").split()


def test_lists_every_tool_with_a_strict_schema(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        tools = {t.name: t for t in (await s.raw.list_tools()).tools}
        assert {
            "stratum_plan", "stratum_resume", "stratum_step_done", "stratum_gate_resolve",
            "strato_gates", "stratum_commit", "stratum_revert", "strato_flow_cancel",
            "stratum_audit", "stratum_flow_poll", "strato_runs", "strato_run_show", "stratum_validate",
            "stratum_compile_speckit", "stratum_guard_register", "stratum_guard_transition",
            "stratum_guard_history", "strato_guard_verify", "strato_decide", "tropo_check", "tropo_graph",
            "tropo_blast", "strato_step_done", "strato_gate_resolve",
        } <= set(tools)
        done = tools["stratum_step_done"]
        assert done.input_schema["type"] == "object"
        assert set(done.input_schema["required"]) == {"runId", "stepId", "result"}
        assert done.input_schema["additionalProperties"] is False
        assert set(tools["strato_step_done"].input_schema["required"]) == {"runId", "stepId", "dispatchToken", "result"}
        assert all(t.description for t in tools.values())
        stratum = {n for n in tools if n.startswith("stratum_")}
        # Stratum's README tool, and the usage report the issue names (no shape in the
        # surface file: ours is in docs/mcp.md), are the only stratum_ tools outside a
        # contract (the reference's, or the seed's for the tools only the seed names)
        assert stratum - set(contract.CONTRACTS) == {"stratum_distill", "stratum_usage_report"}
        assert set(contract.SEED_TOOLS) <= stratum
        for name, held in contract.CONTRACTS.items():  # every key a client may send, and only those
            schema = tools[name].input_schema
            keys = held.request.keys()
            assert set(schema["properties"]) == set(keys), name
            assert set(schema.get("required", [])) == {k for k, f in keys.items() if not f.optional}, name
            assert schema["additionalProperties"] is False, name
        guard = tools["stratum_guard_transition"].input_schema
        assert guard["properties"]["modified_files"] == {"anyOf": [{"type": "array"}, {"type": "null"}]}
        assert guard["properties"]["artifacts"] == {"type": "object"}
        flow = tools["stratum_agent_run"].input_schema["properties"]["flow"]
        assert (set(flow["properties"]), flow["required"]) == ({"runId", "stepId", "itemIndex"}, ["runId"])

    run_server(workspace, scenario, stdio=True)


def test_consumer_runs_a_flow_to_a_gate_and_through_it(workspace: Path) -> None:
    root = str(workspace)
    (workspace / ".vivary").mkdir()
    (workspace / ".vivary" / "agents.toml").write_text('[gates]\nmcp = "resolve"\n')
    commit_all(workspace, "gates over mcp")  # the policy in effect is the committed one
    approve_agents(workspace)  # and it widens what MCP may do only once the user approved it

    async def scenario(s: Session) -> None:
        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "git"}})
        assert plan["status"] == "ready" and plan["ledger"] == {"spent": {"dispatches": 1}}
        run_id = plan["runId"]
        (work,) = plan["ready"]
        assert work["id"] == "work" and "git" in work["do"]
        token = work["dispatchToken"]

        # a wrong token is refused and changes nothing
        head = (await s.ok("strato_run_show", {"runId": run_id}))["head"]
        message, doc = await s.error(
            "strato_step_done", {"runId": run_id, "stepId": "work", "dispatchToken": "nope", "result": {"output": {}}}
        )
        assert doc == {"status": "error", "error_type": "stale_token", "message": message}
        assert (await s.ok("strato_run_show", {"runId": run_id}))["head"] == head

        # a result that fails the ensure is retried with a fresh token
        low = {"output": {"text": "draft", "score": 0.2}}
        retry = await s.ok("strato_step_done", {"runId": run_id, "stepId": "work", "dispatchToken": token, "result": low})
        (again,) = retry["ready"]
        assert again["dispatchToken"] != token and again["attempt"] == 2
        good = {"output": {"text": "final", "score": 0.9}}
        at_gate = await s.ok("stratum_step_done", {"runId": run_id, "stepId": "work", "result": good})
        assert at_gate["status"] == "ready"
        [gate] = at_gate["ready"]
        assert (gate["id"], gate["kind"], gate["flow"]) == ("review", "gate", "reviewed")
        gate_token = gate["gateToken"]
        assert (await s.ok("strato_gates", {}))["gates"][0]["gateToken"] == gate_token

        # same document as the CLI's --json, computed by the same code
        shown = await s.ok("strato_run_show", {"runId": run_id})
        assert cli("strato", "flow", "show", run_id, "--root", root, "--json") == (0, shown)

        saved = await s.ok("stratum_commit", {"flow_id": run_id, "label": "at-gate"})
        assert saved == {
            "status": "committed", "flow_id": run_id, "label": "at-gate", "step_number": 1,
            "current_step_id": "review", "checkpoints": ["at-gate"],
        }

        # revise sends the work back; the old gate token is then stale
        revised = await s.ok(
            "strato_gate_resolve",
            {"runId": run_id, "stepId": "review", "decision": "revise", "gateToken": gate_token, "note": "more"},
        )
        (redo,) = revised["ready"]
        assert redo["id"] == "work"
        message, _ = await s.error(
            "strato_gate_resolve", {"runId": run_id, "stepId": "review", "decision": "approve", "gateToken": gate_token}
        )
        assert "gate" in message
        await s.ok("stratum_step_done", {"runId": run_id, "stepId": "work", "result": good})
        done = await s.ok("stratum_gate_resolve", {"runId": run_id, "stepId": "review", "decision": "approve"})
        assert done["status"] == "completed" and done["output"] == good["output"]

        audit = await s.ok("stratum_audit", {"runId": run_id})
        kinds = [e["type"] for e in audit["events"]]
        assert kinds.count("gate_resolved") == 2 and kinds[-1] == "completed"
        assert audit["events"][-1]["detail"] == {"output": good["output"]}
        full = cli("strato", "flow", "audit", run_id, "--root", root, "--json")[1]
        assert [e["type"] for e in full["events"] if e["type"] != "routed"] == kinds  # the CLI says more

        # back to the checkpoint: waiting at the gate again, with a rotated token
        back = await s.ok("stratum_revert", {"flow_id": run_id, "label": "at-gate"})
        assert back["status"] == "ready" and back["reverted_to"] == "at-gate"
        assert back["ready"][0]["gateToken"] != gate_token
        cancelled = await s.ok("strato_flow_cancel", {"runId": run_id, "reason": "enough"})
        assert cancelled["status"] == "cancelled" and cancelled["gates"] == []
        resumed = await s.ok("stratum_resume", {"runId": run_id})
        assert resumed["status"] == "failed" and resumed["failure"] == {"attempt": 0, "reason": "cancelled: enough"}
        runs = await s.ok("strato_runs", {})
        assert [(r["runId"], r["status"]) for r in runs["runs"]] == [(run_id, "cancelled")]

    run_server(workspace, scenario, stdio=True)
    refs = run_refs(workspace)
    assert len([r for r in refs if r.endswith("/head")]) == 1
    assert any(r.endswith("/checkpoints/at-gate") for r in refs)


def test_spec_as_object_and_validation(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        assert await s.ok("stratum_validate", {"spec": GATE_SPEC}) == {"status": "valid"}
        bad = await s.ok("stratum_validate", {"spec": {"version": 1, "flows": {}}})
        assert bad["status"] == "invalid" and bad["errors"][0]["code"]
        message, doc = await s.error("stratum_plan", {"spec": {"version": 1, "flows": {}}, "input": {}})
        assert message.startswith("invalid spec") and doc is not None and doc["error_type"] == "spec_invalid"
        as_object = yaml.safe_load(GATE_SPEC)
        assert await s.ok("stratum_validate", {"spec": as_object}) == {"status": "valid"}
        plan = await s.ok("stratum_plan", {"spec": as_object, "input": {"topic": "objects"}, "workspaceRoot": "."})
        assert [r["do"] for r in plan["ready"]] == ["Write about objects"]

    run_server(workspace, scenario, stdio=True)


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

    run_server(workspace, scenario, stdio=True)


def test_guard_register_transition_history_verify(workspace: Path) -> None:
    policy = {
        "resource_id": "release:1",
        "graph": {"draft": ["done"]},
        "initial": "draft",
        "terminal": ["done"],
        "edge_predicates": {"draft->done": [{"id": "ok", "statement": 'server_file_exists("OK")'}]},
    }
    move = {"resource_id": "release:1", "from_state": "draft", "to_state": "done", "artifacts": {}}

    async def scenario(s: Session) -> None:
        registered = await s.ok("stratum_guard_register", policy)
        assert registered["status"] == "registered" and set(registered) == {"status", "guard_id", "checksum"}
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
        assert message == "invalid arguments for stratum_guard_transition: colour: undeclared key"
        assert doc == {"status": "error", "error_type": "invalid_arguments", "message": message}
        message, doc = await s.error("strato_guard_upgrade", {"resource_id": "release:1", "colour": "red"})
        assert message.startswith("invalid_request") and doc is not None and doc["status"] == "error"
        message, _ = await s.error("stratum_guard_register", {**policy, "resource_id": "other", "workspace_root": "/"})
        assert "outside the workspace" in message

    run_server(workspace, scenario, stdio=True)
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

    run_server(workspace, scenario, stdio=True)


def test_bad_input_is_a_one_line_tool_error_and_changes_nothing(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        message, _ = await s.error("stratum_nonsense", {})
        assert "unknown tool" in message
        cases = [
            ("stratum_step_done", {"runId": 7, "stepId": "w", "result": {}}, "runId"),
            ("stratum_step_done", {"runId": "r", "stepId": "w", "dispatchToken": "t", "result": {}}, "dispatchToken"),
            ("strato_step_done", {"runId": "r", "stepId": "w", "result": {}}, "dispatchToken"),
            ("stratum_plan", {"spec": GATE_SPEC, "inputs": {}}, "inputs"),
            ("stratum_plan", {"spec": GATE_SPEC, "input": {}, "runId": "mine"}, "runId"),
            ("stratum_gate_resolve", {"runId": "r", "stepId": "s", "decision": "approve", "rationale": 7}, "rationale"),
            ("stratum_gate_resolve", {"runId": "r", "stepId": "s", "decision": "approve", "note": "n"}, "note"),
            ("tropo_blast", {"id": "core", "depth": 0}, "depth"),
            ("tropo_check", {"lenient": "yes"}, "lenient"),
        ]
        for name, arguments, field in cases:
            message, _ = await s.error(name, arguments)
            assert message.startswith(f"invalid arguments for {name}: {field}"), message
        message, doc = await s.error("stratum_resume", {"runId": "missing"})
        assert doc is not None and doc["error_type"] == "run_not_found"
        message, doc = await s.error("stratum_plan", {"spec": GATE_SPEC, "input": "topic=git"})
        assert doc is not None and doc["error_type"] == "INPUT_CONTRACT_INVALID"
        assert await s.ok("strato_runs", {}) == {"runs": []}

    run_server(workspace, scenario, stdio=True)
    assert run_refs(workspace) == []
