"""Requests past the bounds of strato.runs.engine.bounds against the real `strato mcp`: each gets
one error answer in the tool's error shape and the run is left as it was. Through the
SDK's stdio client where the SDK can send the request at all, and as raw JSON-RPC lines
for the ones it cannot (nested far past any JSON parser's recursion limit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from strato.mcp.contract import error_violations
from strato.runs.engine import bounds
from tests.support.mcp import GATE_SPEC, Session, Wire, run_server


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


async def _refused(s: Session, tool: str, arguments: dict[str, Any], code: str) -> None:
    message, doc = await s.error(tool, arguments)
    assert doc is not None and doc["error_type"] == code, message
    if tool.startswith("stratum_"):
        assert error_violations(tool, doc) == [], doc


def test_a_result_too_deep_or_too_large_is_refused_and_changes_nothing(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        with anyio.fail_after(240):  # a hang is a loud failure
            plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "t"}})
            run = {"runId": plan["runId"], "stepId": "work"}
            before = await s.ok("stratum_audit", {"runId": plan["runId"]})
            # 2 levels (the arguments, the result) above the output: 62 more is the most
            for result, code in (
                ({"output": nested(240)}, "too_deep"),  # the attack: too deep for the SDK's own parser
                ({"output": nested(bounds.MAX_DEPTH - 1)}, "too_deep"),
                ({"output": {"text": "x" * (2 * bounds.MAX_RESULT_BYTES), "score": 1}}, "too_large"),
                ({"output": {"text": "x" * (bounds.MAX_RESULT_BYTES - 10), "score": 1}, "usage": {"usd": 0.1}}, "too_large"),
            ):
                await _refused(s, "stratum_step_done", {**run, "result": result}, code)
            token = plan["ready"][0]["dispatchToken"]
            await _refused(s, "strato_step_done", {**run, "dispatchToken": token, "result": {"output": nested(240)}}, "too_deep")
            await _refused(s, "stratum_plan", {"spec": GATE_SPEC, "input": {"deep": nested(70)}}, "too_deep")
            after = await s.ok("stratum_audit", {"runId": plan["runId"]})
            assert after == before
            within = {"text": "ok", "score": 0.9, "deep": nested(bounds.MAX_DEPTH - 5)}
            done = await s.ok("stratum_step_done", {**run, "result": {"output": within}})
            assert done["status"] == "ready"  # taken, and checked against the contract as usual

    run_server(workspace, scenario)


def _call(id_: int, name: str, arguments: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}'


def test_requests_past_every_parsers_recursion_limit_are_answered_and_the_server_lives(
    workspace: Path,
) -> None:
    wire = Wire(workspace)
    try:
        wire.handshake()
        for id_, levels in ((2, 1_500), (3, 200_000)):  # past Python's json, and far past it
            deep = "[" * levels + "]" * levels
            wire.send(_call(id_, "stratum_step_done", f'{{"runId":"r","stepId":"s","result":{{"output":{deep}}}}}'))
            answer = wire.answer()
            assert answer["id"] == id_ and answer["result"]["isError"] is True, answer
            doc = answer["result"]["structuredContent"]
            assert doc["error_type"] == "too_deep" and error_violations("stratum_step_done", doc) == []
        wire.send(_call(4, "stratum_validate", json.dumps({"spec": GATE_SPEC})))
        answer = wire.answer()
        assert answer["id"] == 4 and answer["result"]["structuredContent"]["status"] == "valid"
    finally:
        err = wire.close()
    assert "Traceback" not in err, err


def test_a_lone_carriage_return_does_not_split_a_request(workspace: Path) -> None:
    """JSON allows `\\r` between tokens, and a client or proxy frames requests by `\\n`: a
    line holding one request is one request, never two (a second call smuggled behind a
    `\\r` would run unseen)."""
    wire = Wire(workspace)
    try:
        wire.handshake()
        smuggled = _call(3, "stratum_validate", json.dumps({"spec": "version: 2"}))
        wire.send(_call(2, "stratum_validate", json.dumps({"spec": GATE_SPEC}))[:-1] + f',"x":\r{smuggled}\r}}')
        answer = wire.answer()
        assert answer["id"] == 2 and answer["result"]["structuredContent"]["status"] == "valid", answer
        wire.send(_call(4, "stratum_validate", json.dumps({"spec": GATE_SPEC})))
        assert wire.answer()["id"] == 4  # nothing answered for a smuggled id 3 in between
    finally:
        err = wire.close()
    assert "Traceback" not in err, err
