"""`stratum_usage_report` and the hand-out claims of `stratum_step_done` through the real
`strato mcp` server and the MCP SDK's stdio client."""

from __future__ import annotations

from pathlib import Path

from strato.mcp.contract import event_violations
from tests.support.mcp import GATE_SPEC, Session, run_server


def test_a_usage_report_is_debited_once_and_bad_reports_are_refused(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        tools = {t.name: t for t in (await s.raw.list_tools()).tools}
        schema = tools["stratum_usage_report"].input_schema
        assert set(schema["required"]) == {"runId", "dispatchId", "usage"}
        assert schema["additionalProperties"] is False
        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "git"}})
        run_id = plan["runId"]
        (work,) = plan["ready"]
        assert work["generation"] == 1 and work["contractDigest"].startswith("sha256:")
        report = {
            "runId": run_id,
            "dispatchId": work["dispatchId"],
            "usage": {"usd": 0.5, "tokens": 900},
            "telemetry": {"durationMs": 2300, "model": "gpt-5-codex", "effort": "medium"},
        }
        first = await s.ok("stratum_usage_report", report)
        assert first == {
            "status": "debited",
            "runId": run_id,
            "dispatchId": work["dispatchId"],
            "seq": 1,
            "ledger": {"spent": {"dispatches": 1, "usd": 0.5, "tokens": 900}},
            "runStatus": "running",
        }
        again = await s.ok("stratum_usage_report", report)
        assert again["status"] == "duplicate" and again["seq"] == 1
        assert again["ledger"] == first["ledger"]
        for bad, code in (
            ({**report, "telemetry": {"durationMs": -5, "model": "m"}}, "invalid_telemetry"),
            ({**report, "usage": {"usd": "lots"}}, "invalid_usage"),
            ({**report, "dispatchId": work["dispatchToken"]}, "unknown_dispatch"),
            ({**report, "runId": "nope"}, "run_not_found"),
        ):
            message, doc = await s.error("stratum_usage_report", bad)
            assert doc is not None and doc["code"] == code, message
        message, _ = await s.error("stratum_usage_report", {**report, "extra": 1})
        assert "extra" in message
        audit = await s.ok("stratum_audit", {"runId": run_id})
        debits = [ev for ev in audit["events"] if ev["type"] == "usage_debit"]
        assert len(debits) == 1 and debits[0]["detail"]["model"] == "gpt-5-codex"
        assert event_violations(debits[0]) == []
        assert audit["flowSpent"]["usd"] == 0.5

    run_server(workspace, scenario)


def test_step_done_refuses_a_result_for_an_earlier_hand_out(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "git"}})
        run_id = plan["runId"]
        (first,) = plan["ready"]
        low = {"output": {"text": "x", "score": 0.1}}  # fails its ensure: handed out again
        retry = await s.ok(
            "strato_step_done",
            {"runId": run_id, "stepId": "work", "dispatchToken": first["dispatchToken"], "result": low},
        )
        (second,) = retry["ready"]
        assert second["generation"] == 2
        good = {"output": {"text": "y", "score": 0.9}}
        base = {"runId": run_id, "stepId": "work", "dispatchToken": second["dispatchToken"], "result": good}
        for claim, code in (
            ({"generation": first["generation"]}, "stale_generation"),
            ({"revisionDigest": first["revisionDigest"]}, "stale_revision"),
            ({"contractDigest": "sha256:" + "1" * 64}, "contract_mismatch"),
        ):
            message, doc = await s.error("strato_step_done", {**base, **claim})
            assert doc is not None and doc["error_type"] == code, message
        claims = {k: second[k] for k in ("generation", "contractDigest", "revisionDigest")}
        done = await s.ok("strato_step_done", {**base, **claims})
        assert [e["id"] for e in done["ready"]] == ["review"]  # the gate waits next

    run_server(workspace, scenario)
