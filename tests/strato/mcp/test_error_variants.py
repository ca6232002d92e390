"""Every refusal of every tool is a JSON document, never text alone: a `stratum_` tool's
is its contract's `error` variant (the reference's, or the seed's), with the extra keys
that variant declares (`available` for a checkpoint that does not exist); an extra's is
`{ok: false, error, code}`. Driven through the real `strato mcp` and the SDK's stdio
client: each tool the server lists gets a request no tool accepts, and each tool that can
refuse a well-formed request gets one it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.mcp import contract
from tests.support.mcp import GATE_SPEC, GRAPH_FILES, Session, run_server
from tests.support.repos import commit_all, write_files

RUN = "RUN"  # replaced by a real run at a gate, with a checkpoint `saved`

# tool -> a well-formed request it refuses, and the error_type (or code) it refuses with
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "stratum_plan": ({"spec": "version: 1\n", "input": {}}, "spec_invalid"),
    "stratum_flow_run_bg": ({"spec": 7, "input": {}}, "spec_invalid"),
    "stratum_step_done": ({"runId": "ghost", "stepId": "a", "result": {}}, "run_not_found"),
    "strato_step_done": ({"runId": "ghost", "stepId": "a", "dispatchToken": "t", "result": {}}, "run_not_found"),
    "stratum_resume": ({"runId": "ghost"}, "run_not_found"),
    "stratum_audit": ({"runId": "ghost"}, "run_not_found"),
    "stratum_flow_poll": ({"runId": RUN, "cursor": 99}, "invalid_cursor"),
    "stratum_flow_bg_poll": ({"runId": "ghost"}, "run_not_found"),
    "stratum_flow_cancel_bg": ({"runId": "ghost"}, "run_not_found"),
    "stratum_flow_cancel": ({"runId": "ghost"}, "run_not_found"),
    "strato_flow_cancel": ({"runId": "ghost"}, "run_not_found"),
    "strato_run_show": ({"runId": "ghost"}, "run_not_found"),
    "stratum_gate_resolve": ({"runId": RUN, "stepId": "review", "decision": "approve"}, "gate_not_allowed_over_mcp"),
    "strato_gate_resolve": (
        {"runId": RUN, "stepId": "review", "decision": "approve", "gateToken": "t"}, "gate_not_allowed_over_mcp"
    ),
    "stratum_commit": ({"flow_id": "ghost", "label": "x"}, "run_not_found"),
    "stratum_revert": ({"flow_id": RUN, "label": "nope"}, "checkpoint_not_found"),
    "stratum_compile_speckit": ({"tasks_dir": "/"}, "invalid_tasks_dir"),
    "stratum_usage_report": ({"runId": "ghost", "dispatchId": "d", "usage": {}}, "run_not_found"),
    "stratum_agent_run": ({"agent": "nobody", "prompt": "p", "cwd": "."}, "agent_unavailable"),
    "stratum_judge": ({"statement": "s", "output": 1}, "no_judge"),
    "stratum_guard_register": (
        {"resource_id": "r", "graph": {"a": []}, "edge_predicates": {}, "initial": "nowhere"}, "invalid_policy"
    ),
    "stratum_guard_transition": (
        {"resource_id": "ghost", "from_state": "a", "to_state": "b", "artifacts": {}}, "guard_not_found"
    ),
    "stratum_guard_override": (
        {"resource_id": "ghost", "from_state": "a", "to_state": "b", "override_token": "x", "rationale": "r"},
        "guard_not_found",
    ),
    "stratum_guard_migrate": (
        {"resource_id": "ghost", "new_graph": {}, "new_edge_predicates": {}, "override_token": "x", "rationale": "r"},
        "guard_not_found",
    ),
    "stratum_guard_history": ({"resource_id": "ghost"}, "guard_not_found"),
    "stratum_guard_upgrade": ({"resource_id": "ghost", "new_graph": {}, "rationale": "r"}, "guard_not_found"),
    "strato_guard_upgrade": ({"resource_id": "ghost", "new_graph": {}, "rationale": "r"}, "guard_not_found"),
    "stratum_guard_apply_upgrade": ({"resource_id": "ghost", "descriptor_id": "d"}, "upgrade_descriptor_unavailable"),
    "strato_guard_apply_upgrade": ({"resource_id": "ghost", "descriptor_id": "d"}, "upgrade_descriptor_unavailable"),
    "strato_guard_authorize": (
        {"resource_id": "ghost", "kind": "override", "from_state": "a", "to_state": "b", "rationale": "r"},
        "guard_not_found",
    ),
    "strato_guard_verify": ({"since": ["no-such-rev"]}, "invalid_revision"),
    "strato_decide": ({"request": {}}, "vivary.strato-decision-refusal/v0"),
    "stratum_distill": ({"workspace_root": "/"}, "invalid_workspace_root"),
    "strato_heartbeat_show": ({"id": "../x"}, "error"),
    "tropo_check": ({"rev": "no-such-rev"}, "invalid_revision"),
    "tropo_graph": ({"rev": "no-such-rev"}, "invalid_revision"),
    "tropo_blast": ({"id": "ghost"}, "unknown_node"),
}
# every well-formed request of these is answered, in one of the tool's own variants
ANSWERED = {
    "stratum_validate": "an invalid spec is its `invalid` answer",
    "stratum_agent_poll": "an unknown run is its `not_found` answer",
    "stratum_cancel_agent_run": "an unknown run is its `not_found` answer",
    "strato_gates": "takes no arguments",
    "strato_runs": "takes no arguments",
    "strato_heartbeat_status": "takes no arguments",
    "strato_lanes": "`check` either way is answered",
}


def _check(tool: str, doc: dict[str, Any] | None, code: str) -> None:
    assert doc is not None, f"{tool}: an error without a document"
    if tool in contract.CONTRACTS or tool in ("strato_step_done", "strato_gate_resolve"):
        shaped = {"strato_step_done": "stratum_step_done", "strato_gate_resolve": "stratum_gate_resolve"}
        assert contract.error_violations(shaped.get(tool, tool), doc) == [], (tool, doc)
        assert (doc["status"], doc["error_type"]) == ("error", code), (tool, doc)
    else:
        found = doc.get("code") or doc.get("error_type") or doc.get("schema")  # a governed refusal's own
        assert doc.get("ok") is False or doc.get("status") == "error" or "reason_codes" in doc, (tool, doc)
        assert found == code, (tool, doc)


def test_every_refusal_of_every_tool_is_a_json_error_document(repo_dir: Path) -> None:
    write_files(repo_dir, {**GRAPH_FILES, "README.md": "# ws\n"})
    commit_all(repo_dir, "workspace")

    async def scenario(s: Session) -> None:
        names = {t.name for t in (await s.raw.list_tools()).tools}
        assert set(REFUSED) | set(ANSWERED) == names, "every tool is driven into a refusal or said why not"
        for name in sorted(names):
            _, doc = await s.error(name, {"__nonsense__": 1})
            _check(name, doc, "invalid_arguments")
        _, doc = await s.error("stratum_nonsense", {})
        assert doc == {"ok": False, "error": doc and doc["error"], "code": "unknown_tool"}

        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "git"}})
        run = plan["runId"]
        good = {"output": {"text": "final", "score": 0.9}}
        await s.ok("stratum_step_done", {"runId": run, "stepId": "work", "result": good})
        await s.ok("stratum_commit", {"flow_id": run, "label": "saved"})
        for name, (args, code) in sorted(REFUSED.items()):
            given = {k: run if v == RUN else v for k, v in args.items()}
            _, doc = await s.error(name, given)
            _check(name, doc, code)
            if name == "stratum_revert":  # the variant's extra key: what does exist
                assert doc is not None and doc["available"] == ["saved"]

    run_server(repo_dir, scenario)
