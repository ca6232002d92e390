"""Stratum's wire contract, end to end: the real `strato mcp` through the MCP SDK's stdio
client, every tool of the reference driven into every response variant it can reach,
each answer, each error and each audit/poll event checked against
:mod:`strato.mcp.contract` (no undeclared key, status the variant's name). What is not
reached is listed with its reason; a tool of the reference that is not served yet is
listed as pending, so the lists shrink as it lands (and this test says when they must)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

from strato.mcp import contract
from tests.support.approvals import approve_agents
from tests.support.flows import Workspace, make_workspace
from tests.support.guard import make_key, ssh_sign
from tests.support.mcp import GATE_SPEC, Session, run_server
from tests.support.repos import commit_all, write_files
from tests.support.requirements import missing
from tests.support.specs import consumer_fanout_spec, review_spec

# tools of the reference another branch is building: not served yet
PENDING: set[str] = set()
# driven into each variant, against the same contract module, by tests/strato/mcp/test_agent_runs.py
# and tests/strato/mcp/test_bg_flow.py
DRIVEN_ELSEWHERE = {
    "stratum_agent_run", "stratum_agent_poll", "stratum_cancel_agent_run",
    "stratum_flow_run_bg", "stratum_flow_bg_poll", "stratum_flow_cancel_bg",
}
# (tool, status) no request can reach, and why
UNREACHABLE = {
    (
        "stratum_revert",
        "running",
    ): "`running` is a run with nothing to hand out while an engine fanout is in flight; a "
    "checkpoint is never taken then (commit refuses), a restore re-advances a state that was "
    "already advanced (it starts no fanout), and consumer items out with a client and not "
    "returned are entries of `ready`, so a restored run is `ready` or has ended",
}
# event kinds this scenario does not produce: sandbox_policy comes only from an engine
# fanout call whose agent takes a {sandbox} (checked against the contract in
# tests/strato/runs/test_codex_sandbox.py)
NOT_PRODUCED = {"sandbox_policy"}


CHAIN = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${c.output}", contract: R}
    budget: {dispatches: 2}
    steps:
      - {id: a, do: "a", out: R}
      - {id: b, after: [a], do: "b", out: R}
      - {id: c, after: [b], do: "c", out: R}
"""

PARALLEL_OVER_BUDGET = CHAIN.replace("after: [a], ", "").replace("dispatches: 2", "dispatches: 1")

ROUTE = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${done.output}", contract: R}
    steps:
      - {id: big, do: "big job", out: R, attempts: 1, on_fail: cheap}
      - id: cheap
        do: "cheap job"
        out: R
        attempts: 1
        ensure:
          - judged: {statement: "the number is fine", stakes: cheap}
      - {id: done, after: [cheap], set: {n: "1"}, out: R}
"""

WHEN = """
version: 1
contracts:
  N: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${total.output}", contract: N}
    steps:
      - {id: count, do: "count", out: N}
      - {id: big, after: [count], when: "result.count.n > 10", do: "big", out: N}
      - {id: total, after: [count, big], set: {n: "result.count.n + 1"}, out: N}
"""

SET_ONLY = """
version: 1
contracts:
  N: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${one.output}", contract: N}
    steps:
      - id: one
        set: {n: "1"}
        out: N
        ENSURE
"""

CONSUMER = consumer_fanout_spec("any", when="\"item != 'skip'\"")

ENGINE = """
version: 1
contracts:
  Draft: {text: string}
  Edit: {file: string}
  Sum: {count: integer}
flows:
  entry: main
  main:
    input: {files: "string[]"}
    output: {from: "${count.output}", contract: Sum}
    steps:
      BEFORE
      - id: edit
        AFTER
        fanout:
          over: "${input.files}"
          concurrency: 1
          isolation: worktree
          require: all
          merge: sequential
          steps:
            - do: "Edit ${item}"
              out: Edit
              ensure:
                - file_exists: "${item}"
      - id: count
        after: [edit]
        set: {count: "len(result.edit)"}
        out: Sum
"""


def _engine(before: str = "") -> str:
    steps = {
        "": ("", ""),
        "draft": ('- {id: draft, do: "Draft it", out: Draft}', "after: [draft]"),
        "gate": (
            '- {id: draft, do: "Draft it", out: Draft}\n      - id: review\n        after: [draft]\n'
            "        gate: {on_approve: null, on_revise: null, on_kill: null}",
            "after: [review]",
        ),
    }[before]
    return ENGINE.replace("BEFORE", steps[0]).replace("AFTER", steps[1])


POLICY: dict[str, Any] = {
    "resource_id": "release:1",
    "graph": {"draft": ["review"], "review": ["released", "draft"]},
    "initial": "draft",
    "terminal": ["released"],
    "edge_predicates": {
        "draft->review": [{"id": "notes", "statement": 'server_file_exists("NOTES.md")'}],
        "review->released": [{"id": "tests", "statement": 'server_file_exists("PASSED")'}],
    },
}

DRAFT = {"output": {"text": "v1"}}


class Wire:
    """A session whose every answer, error and event is checked against the contract,
    and which remembers the variants and event kinds it saw."""

    def __init__(self, session: Session) -> None:
        self.s = session
        self.seen: dict[str, set[str]] = defaultdict(set)
        self.kinds: set[str] = set()

    async def ok(self, tool: str, args: dict[str, Any], status: str) -> dict[str, Any]:
        doc = await self.s.ok(tool, args)
        assert contract.answer_violations(tool, doc) == [], (tool, args, doc)
        assert doc["status"] == status, (tool, args, doc)
        self.seen[tool].add(status)
        if tool in ("stratum_audit", "stratum_flow_poll"):
            for event in doc["events"]:
                assert contract.event_violations(event) == [], event
                self.kinds.add(event["type"])
        return doc

    async def error(self, tool: str, args: Any, error_type: str) -> tuple[str, dict[str, Any]]:
        message, doc = await self.s.error(tool, args)
        assert doc is not None and contract.error_violations(tool, doc) == [], (tool, args, doc)
        assert doc["error_type"] == error_type, (tool, args, doc)
        if contract.TOOLS[tool].variant("error") is not None:
            self.seen[tool].add("error")
        return message, doc

    async def plan(self, spec: str, status: str, **inputs: Any) -> dict[str, Any]:
        return await self.ok("stratum_plan", {"spec": spec, "input": inputs}, status)

    async def done(self, run: str, step: str, result: dict[str, Any], status: str) -> dict[str, Any]:
        return await self.ok("stratum_step_done", {"runId": run, "stepId": step, "result": result}, status)

    async def gate(self, run: str, decision: str, status: str) -> dict[str, Any]:
        args = {"runId": run, "stepId": "review", "decision": decision}
        return await self.ok("stratum_gate_resolve", args, status)

    async def ended(self, run: str, status: str) -> None:
        """An ended run through resume, audit and poll."""
        for tool in ("stratum_resume", "stratum_audit", "stratum_flow_poll"):
            await self.ok(tool, {"runId": run}, status)


def _workspace(tmp_path: Path) -> Workspace:
    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed (signed guard overrides)")
    ws = make_workspace(tmp_path)
    ws.agents(
        [
            {"match": "Judge whether", "replies": [{"json": {"holds": False, "reason": "too small"}}]},
            {"match": "Edit a.txt", "replies": [{"write": {"a.txt": "a\n"}, "json": {"file": "a.txt"}}]},
            {"match": "Edit slow.txt", "replies": [{"sleep": 50, "json": {"file": "slow.txt"}}]},
        ],
        judge=True,
    )
    with (ws.root / ".vivary" / "agents.toml").open("a") as toml:
        toml.write('\n[gates]\nmcp = "resolve"\n')
    approve_agents(ws.root)
    write_files(
        ws.root,
        {
            "tasks/001-setup.md": "# Set up\n\n## Acceptance criteria\n- [ ] file setup.txt exists\n",
            "tasks/002-build.md": "# Build [P]\n\nBuild it.\n",
            "empty/.keep": "",
        },
    )
    commit_all(ws.root, "workspace")
    return ws


def test_every_tool_answers_every_variant_it_can_reach_inside_the_contract(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    key = make_key(tmp_path)
    seen: dict[str, set[str]] = {}
    kinds: set[str] = set()

    async def scenario(session: Session) -> None:
        w = Wire(session)
        await flows(w)
        await checkpoints(w)
        await fanouts(w, ws.root)
        await in_flight(w, ws)
        await validation(w, ws.root)
        await guard(w, ws, key)
        seen.update(w.seen)
        kinds.update(w.kinds)

    run_server(ws.root, scenario)

    served = set(contract.TOOLS) - PENDING - DRIVEN_ELSEWHERE
    want = {t: set(contract.TOOLS[t].statuses) - {s for (u, s) in UNREACHABLE if u == t} for t in served}
    assert seen == want
    assert kinds == set(contract.EVENTS) - NOT_PRODUCED


async def flows(w: Wire) -> None:
    """RUNSTATE from plan, step_done, resume and gate_resolve, in each variant."""
    plan = await w.plan(review_spec(), "ready", topic="bees")
    run = plan["runId"]
    assert [r["id"] for r in plan["ready"]] == ["draft"] and plan["ledger"] == {"spent": {"dispatches": 1}}
    await w.ok("stratum_resume", {"runId": run}, "ready")
    await w.ok("stratum_resume", {"runId": run}, "ready")  # it has not moved since: said once
    events = (await w.ok("stratum_audit", {"runId": run}, "running"))["events"]
    assert [e["type"] for e in events] == ["planned", "carry_updated", "ready", "resumed"] and events[-1] == {
        "at": events[-1]["at"], "type": "resumed"
    }
    at_gate = await w.done(run, "draft", DRAFT, "ready")
    [gate] = at_gate["ready"]
    assert (gate["id"], gate["kind"]) == ("review", "gate") and "gateToken" in gate
    again = await w.gate(run, "revise", "ready")
    assert [r["id"] for r in again["ready"]] == ["draft"]
    await w.done(run, "draft", DRAFT, "ready")
    polish = await w.gate(run, "approve", "ready")
    assert [r["id"] for r in polish["ready"]] == ["polish"]
    done = await w.done(run, "polish", {"output": {"text": "v2"}, "usage": {"usd": 0.5}}, "completed")
    assert done["output"] == {"text": "v2"} and done["ledger"]["spent"]["usd"] == 0.5
    await w.ended(run, "completed")

    last = await w.plan(GATE_SPEC, "ready", topic="flies")  # its gate is the last step
    await w.done(last["runId"], "work", {"output": {"text": "t", "score": 0.9}}, "ready")
    await w.gate(last["runId"], "approve", "completed")

    killed = await w.plan(review_spec(), "ready", topic="wasps")
    await w.done(killed["runId"], "draft", DRAFT, "ready")
    dead = await w.gate(killed["runId"], "kill", "failed")
    assert dead["failure"]["reason"] == "gate review killed flow"
    await w.ended(killed["runId"], "failed")

    tight = await w.plan(review_spec("budget: {dispatches: 1}"), "ready", topic="ants")
    assert tight["ledger"] == {"spent": {"dispatches": 1}, "budget": {"dispatches": 1}}
    await w.done(tight["runId"], "draft", DRAFT, "ready")
    over = await w.gate(tight["runId"], "approve", "budget_exhausted")
    assert over["failure"] == {"attempt": 0, "reason": "flow budget exhausted (dispatches)"}
    await w.ended(tight["runId"], "budget_exhausted")

    chain = await w.plan(CHAIN, "ready")
    await w.done(chain["runId"], "a", {"output": {"n": 1}}, "ready")
    await w.done(chain["runId"], "b", {"output": {"n": 2}}, "budget_exhausted")
    await w.plan(PARALLEL_OVER_BUDGET, "budget_exhausted")
    await w.plan(SET_ONLY.replace("ENSURE", ""), "completed")
    failed = await w.plan(SET_ONLY.replace("ENSURE", 'ensure: [{expr: "result.n > 5"}]'), "failed")
    assert failed["failure"]["reason"].startswith("ensure")

    routed = await w.plan(ROUTE, "ready")
    await w.done(routed["runId"], "big", {"failure": "too big"}, "ready")
    judged = await w.done(routed["runId"], "cheap", {"output": {"n": 2}}, "failed")
    assert "judged false" in judged["failure"]["reason"]
    events = (await w.ok("stratum_audit", {"runId": routed["runId"]}, "failed"))["events"]
    [verdict] = [e for e in events if e["type"] == "judged"]
    assert verdict["detail"]["holds"] is False and verdict["detail"]["model"] == "judge"

    skipped = await w.plan(WHEN, "ready")
    total = await w.done(skipped["runId"], "count", {"output": {"n": 1}}, "completed")
    assert total["output"] == {"n": 2}
    events = (await w.ok("stratum_flow_poll", {"runId": skipped["runId"]}, "completed"))["events"]
    assert next(e for e in events if e["type"] == "skipped")["stepId"] == "big"

    cancelled = await w.plan(CHAIN, "ready")
    doc = await w.s.ok("strato_flow_cancel", {"runId": cancelled["runId"], "reason": "enough"})
    assert doc["status"] == "cancelled"
    poll = await w.ok("stratum_flow_poll", {"runId": cancelled["runId"]}, "failed")
    assert poll["failure"] == {"attempt": 0, "reason": "cancelled: enough"}
    [gone] = [e for e in poll["events"] if e["type"] == "flow_cancelled"]
    assert gone["detail"] == {"by": "cli", "reason": "enough", "burned": {"steps": ["a"], "items": 0}}


async def checkpoints(w: Wire) -> None:
    """commit and revert in each variant, the error with the labels that exist."""
    plan = await w.plan(review_spec(), "ready", topic="moths")
    run = plan["runId"]
    start = await w.ok("stratum_commit", {"flow_id": run, "label": "start"}, "committed")
    assert (start["step_number"], start["current_step_id"], start["checkpoints"]) == (0, "draft", ["start"])
    await w.done(run, "draft", DRAFT, "ready")
    gate = await w.ok("stratum_commit", {"flow_id": run, "label": "at-gate"}, "committed")
    assert (gate["step_number"], gate["current_step_id"]) == (1, "review")
    await w.gate(run, "approve", "ready")
    back = await w.ok("stratum_revert", {"flow_id": run, "label": "at-gate"}, "ready")
    assert back["reverted_to"] == "at-gate" and back["ready"][0]["kind"] == "gate"
    _, nope = await w.error("stratum_revert", {"flow_id": run, "label": "nowhere"}, "checkpoint_not_found")
    assert nope["available"] == ["at-gate", "start"]
    await w.error("stratum_commit", {"flow_id": "no-such-run", "label": "x"}, "run_not_found")
    await w.error("stratum_commit", {"flow_id": run, "label": "a..b"}, "invalid_label")
    await w.error("stratum_revert", {"flow_id": "no-such-run", "label": "x"}, "run_not_found")

    await w.gate(run, "approve", "ready")
    await w.done(run, "polish", {"output": {"text": "end"}}, "completed")
    await w.ok("stratum_commit", {"flow_id": run, "label": "end"}, "committed")
    await w.ok("stratum_revert", {"flow_id": run, "label": "end"}, "completed")
    events = (await w.ok("stratum_audit", {"runId": run}, "completed"))["events"]
    reverts = [e["detail"] for e in events if e["type"] == "checkpoint_reverted"]
    assert [r["label"] for r in reverts] == ["at-gate", "end"]
    assert reverts[0]["receiptsAtRevert"] == 1 and set(reverts[0]["stepsRestored"]) == {
        "draft",
        "review",
        "polish",
    }

    for spec, status, step, result in [
        (SET_ONLY.replace("ENSURE", 'ensure: [{expr: "result.n > 5"}]'), "failed", None, None),
        (CHAIN, "budget_exhausted", "b", {"output": {"n": 2}}),
    ]:
        ended = await w.plan(spec, "failed" if step is None else "ready")
        if step is not None:
            await w.done(ended["runId"], "a", {"output": {"n": 1}}, "ready")
            await w.done(ended["runId"], step, result or {}, status)
        await w.ok("stratum_commit", {"flow_id": ended["runId"], "label": "ended"}, "committed")
        await w.ok("stratum_revert", {"flow_id": ended["runId"], "label": "ended"}, status)

    # paging: the whole history from 0, nothing new at nextCursor, a bad cursor refused
    whole = await w.ok("stratum_audit", {"runId": run}, "completed")
    first = await w.ok("stratum_flow_poll", {"runId": run, "cursor": 0}, "completed")
    assert first["events"] == whole["events"] and first["nextCursor"] == len(whole["events"])
    tail = await w.ok("stratum_flow_poll", {"runId": run, "cursor": 3}, "completed")
    assert tail["events"] == whole["events"][3:] and tail["nextCursor"] == first["nextCursor"]
    empty = await w.ok("stratum_flow_poll", {"runId": run, "cursor": first["nextCursor"]}, "completed")
    assert empty["events"] == [] and empty["nextCursor"] == first["nextCursor"]
    for cursor in (-1, first["nextCursor"] + 1):
        message, _ = await w.error("stratum_flow_poll", {"runId": run, "cursor": cursor}, "invalid_cursor")
        assert f"0..{first['nextCursor']}" in message


async def fanouts(w: Wire, root: Path) -> None:
    """A consumer fanout's items, an engine fanout in flight (`running`) and merged."""
    plan = await w.plan(CONSUMER, "ready", topics=["bees", "skip"])
    run = plan["runId"]
    assert [r["id"] for r in plan["ready"]] == ["each/0", "each/1"]
    await w.done(run, "each/1", {"output": {"text": "skipped"}}, "ready")
    await w.done(run, "each/0", {"output": {"text": "about bees"}}, "ready")
    await w.done(run, "each/0", {"output": {"score": 0.1}}, "ready")
    await w.done(run, "each/0", {"output": {"score": 0.9}}, "completed")
    events = (await w.ok("stratum_audit", {"runId": run}, "completed"))["events"]
    results = [e["detail"] for e in events if e["type"] == "fanout_attempt_result"]
    assert [(r["itemIndex"], r["stage"], r["attempt"], r["success"]) for r in results] == [
        (1, 0, 1, True),
        (0, 0, 1, True),
        (0, 1, 1, False),
        (0, 1, 2, True),
    ]
    assert [e["detail"] for e in events if e["type"] == "fanout_item_skipped"] == [
        {"itemIndex": 1, "stage": 1}
    ]
    handed = [e["detail"] for e in events if e["type"] == "fanout_item_dispatched"]
    assert [(d["itemIndex"], d["stage"], d["attempt"]) for d in handed] == [(0, 0, 1), (1, 0, 1), (0, 1, 1), (0, 1, 2)]
    debits = [e["detail"] for e in events if e["type"] == "fanout_ledger_debit"]
    assert debits == [{"itemIndex": i, "amount": {"dispatches": 1}, "source": "dispatch"} for i in (0, 1, 0, 0)]
    kinds = [e["type"] for e in events if e["type"].startswith("fanout_")]
    assert kinds[:3] == ["fanout_item_ready", "fanout_ledger_debit", "fanout_item_dispatched"]

    flying = await w.plan(_engine(), "running", files=["a.txt"])
    await w.ok("stratum_audit", {"runId": flying["runId"]}, "running")
    await w.ok("stratum_flow_poll", {"runId": flying["runId"]}, "running")
    merged = await w.ok("stratum_resume", {"runId": flying["runId"]}, "completed")
    assert merged["output"] == {"count": 1} and (root / "a.txt").read_text() == "a\n"
    events = (await w.ok("stratum_audit", {"runId": flying["runId"]}, "completed"))["events"]
    assert [e["detail"] for e in events if e["type"] == "fanout_merge"] == [{"itemIndex": 0, "success": True}]
    # resumed, then the item's call as a consumer item's: made ready, its dispatch reserved and
    # started before the agent ran, its usage debited and its result recorded after
    kinds = [e["type"] for e in events if e["type"] in ("resumed", "usage_debit") or "fanout_" in e["type"]]
    assert kinds == ["resumed", "fanout_item_ready", "fanout_ledger_debit", "fanout_item_dispatched",
                     "usage_debit", "fanout_ledger_debit", "fanout_attempt_result", "fanout_merge"]
    ready, reserved, started, _, spent, result, _ = (e for e in events if e["type"] in kinds[1:])
    assert ready["detail"] == {"itemIndex": 0} and ready["at"] == reserved["at"]
    assert result["detail"] == {"itemIndex": 0, "stage": 0, "attempt": 1, "success": True}
    assert reserved["detail"] == {"itemIndex": 0, "amount": {"dispatches": 1}, "source": "dispatch"}
    assert started["detail"] == {"itemIndex": 0, "stage": 0, "attempt": 1} and started["stepId"] == "edit"
    assert spent["detail"]["source"] == "engine" and spent["detail"]["itemIndex"] == 0
    assert reserved["at"] <= started["at"] <= spent["at"]

    after_step = await w.plan(_engine("draft"), "ready", files=["a.txt"])
    await w.done(after_step["runId"], "draft", DRAFT, "running")
    after_gate = await w.plan(_engine("gate"), "ready", files=["a.txt"])
    await w.done(after_gate["runId"], "draft", DRAFT, "ready")
    await w.gate(after_gate["runId"], "approve", "running")


async def in_flight(w: Wire, ws: Workspace) -> None:
    """A background run whose runner is in an engine fanout: `stratum_resume` wakes the
    runner it has (none: it holds the run) and answers `running`; it never runs the
    item a second time."""
    started = await w.s.ok("stratum_flow_run_bg", {"spec": _engine(), "input": {"files": ["slow.txt"]}})
    run = started["runId"]
    for _ in range(3600):  # the bound only keeps a broken runner from hanging the suite
        if any("Edit slow.txt" in p for p in ws.prompts()):
            break
        await anyio.sleep(0.05)
    else:
        raise AssertionError("the runner never started the item's agent")
    doc = await w.ok("stratum_resume", {"runId": run}, "running")
    assert doc["ledger"]["spent"]["dispatches"] == 1
    assert sum("Edit slow.txt" in p for p in ws.prompts()) == 1
    assert await w.s.ok("stratum_flow_cancel_bg", {"runId": run}) == {"status": "cancelled"}
    events = (await w.ok("stratum_flow_poll", {"runId": run}, "failed"))["events"]
    kinds = [e["type"] for e in events]
    assert kinds.index("fanout_item_dispatched") < kinds.index("resumed") < kinds.index("flow_cancelled")


async def validation(w: Wire, root: Path) -> None:
    await w.ok("stratum_validate", {"spec": review_spec()}, "valid")
    await w.ok("stratum_validate", {"spec": {"version": 1, "flows": {}}}, "invalid")
    bad = await w.ok("stratum_validate", {"spec": 5}, "invalid")
    assert bad["errors"][0]["code"] == "spec_not_an_object"

    compiled = await w.ok("stratum_compile_speckit", {"tasks_dir": "tasks", "flow_name": "build"}, "ok")
    assert compiled["flow_name"] == "build" and [s["id"] for s in compiled["steps"]] == [
        "t001_setup",
        "t002_build",
    ]
    assert (await w.ok("stratum_validate", {"spec": compiled["yaml"]}, "valid")) == {"status": "valid"}
    await w.error("stratum_compile_speckit", {"tasks_dir": "empty"}, "no_tasks")
    await w.error("stratum_compile_speckit", {"tasks_dir": "nowhere"}, "directory_not_found")
    outside = root.parent / "outside-tasks"
    outside.mkdir()
    (outside / "001-x.md").write_text("# X\n")
    for where in ("../outside-tasks", str(outside)):
        await w.error("stratum_compile_speckit", {"tasks_dir": where}, "invalid_tasks_dir")


async def guard(w: Wire, ws: Workspace, key: Any) -> None:
    """The five guard tools in each variant; override and migrate on a person's signature."""
    write_files(ws.root, {".vivary/guard/allowed_signers": key.signers_line("alice@example.com")})
    commit_all(ws.root, "trust alice")
    rid = {"resource_id": "release:1"}
    await w.ok("stratum_guard_register", POLICY, "registered")
    await w.ok("stratum_guard_register", POLICY, "exists")
    await w.error(
        "stratum_guard_register", {**POLICY, "resource_id": "other", "initial": "nowhere"}, "invalid_policy"
    )
    move = {**rid, "from_state": "draft", "to_state": "review", "artifacts": {}, "idempotency_key": "k1"}
    await w.ok("stratum_guard_transition", {**move, "idempotency_key": None}, "refused")
    (ws.root / "NOTES.md").write_text("notes\n")
    applied = await w.ok("stratum_guard_transition", move, "applied")
    assert applied["current_state"] == "review"
    await w.ok("stratum_guard_transition", move, "replayed")
    await w.error("stratum_guard_transition", {**move, "idempotency_key": "k2"}, "stale_from_state")

    ask = {**rid, "from_state": "review", "to_state": "released", "rationale": "release it"}
    signed = await w.s.ok("strato_guard_authorize", {"kind": "override", **ask})
    armor = ssh_sign(key, signed["namespace"], signed["payload"].encode(), ws.plan_file.parent)
    await w.error(
        "stratum_guard_override", {**ask, "override_token": "not a signature"}, "override_unavailable"
    )
    deviation = await w.ok("stratum_guard_override", {**ask, "override_token": armor}, "deviation")
    assert (deviation["current_state"], deviation["rationale"]) == ("released", "release it")

    new: dict[str, Any] = {
        "new_graph": {**POLICY["graph"], "released": ["draft"]},
        "new_edge_predicates": {},
        "new_terminal": [],
    }
    ask = {**rid, **new, "rationale": "reopen"}
    signed = await w.s.ok("strato_guard_authorize", {"kind": "migrate", **ask})
    armor = ssh_sign(key, signed["namespace"], signed["payload"].encode(), ws.plan_file.parent)
    await w.error(
        "stratum_guard_migrate", {**ask, "override_token": armor.replace("A", "B", 1)}, "override_unavailable"
    )
    migrated = await w.ok("stratum_guard_migrate", {**ask, "override_token": armor}, "migrated")
    assert migrated["graph_version"] == 2 and migrated["rationale"] == "reopen"

    history = await w.ok("stratum_guard_history", rid, "success")
    assert history["current_state"] == "released" and history["graph_version"] == 2
    await w.error("stratum_guard_history", {"resource_id": "release:9"}, "guard_not_found")


BAD_REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    ("stratum_plan", {"spec": {}, "input": {}, "runId": "mine"}, "runId: undeclared key"),
    ("stratum_plan", {"spec": {}}, "input: missing"),
    (
        "stratum_plan",
        {"spec": {}, "input": {}, "workspaceRoot": 3},
        "workspaceRoot: expected string, got number",
    ),
    ("stratum_step_done", {"runId": "r", "stepId": "s", "result": {"output": 1, "extra": 2}}, "result.extra"),
    ("stratum_step_done", {"runId": "r", "stepId": "s", "result": {"failure": None}}, "result.failure"),
    (
        "stratum_step_done",
        {"runId": "r", "stepId": "s", "result": {"telemetry": {"model": "m"}}},
        "durationMs",
    ),
    ("stratum_gate_resolve", {"runId": "r", "stepId": "s"}, "decision: missing"),
    ("stratum_commit", {"flow_id": 1, "label": "x"}, "flow_id: expected string"),
    ("stratum_flow_poll", {"runId": "r", "cursor": "0"}, "cursor: expected number"),
    ("stratum_flow_poll", {"runId": "r", "cursor": 1.5}, "cursor"),
    ("stratum_audit", {}, "runId: missing"),
    ("stratum_compile_speckit", {"tasks_dir": "tasks", "flow": "x"}, "flow: undeclared key"),
    (
        "stratum_guard_override",
        {"resource_id": "r", "from_state": "a", "to_state": "b", "rationale": "x", "authorization": "sig"},
        "authorization: undeclared key",
    ),
    ("stratum_guard_history", {"resource_id": "r", "extra": True}, "extra: undeclared key"),
    ("stratum_validate", {}, "spec: missing"),
]


def test_a_request_outside_the_contract_is_a_clean_error_that_changes_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)

    async def scenario(session: Session) -> None:
        for tool, arguments, says in BAD_REQUESTS:
            message, doc = await session.error(tool, arguments)
            assert message.startswith(f"invalid arguments for {tool}: ") and says in message, message
            assert doc == {"status": "error", "error_type": "invalid_arguments", "message": message}

    run_server(ws.root, scenario)
    assert json.loads(ws.strato("flow", "list", "--json").stdout) == {"runs": []}


def test_unknown_runs_are_errors_of_the_contracts_error_shape(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)

    async def scenario(session: Session) -> None:
        w = Wire(session)
        for tool, args in [
            ("stratum_resume", {"runId": "ghost"}),
            ("stratum_audit", {"runId": "ghost"}),
            ("stratum_flow_poll", {"runId": "ghost", "cursor": 0}),
            ("stratum_step_done", {"runId": "ghost", "stepId": "a", "result": {}}),
            ("stratum_gate_resolve", {"runId": "ghost", "stepId": "a", "decision": "approve"}),
            ("stratum_commit", {"flow_id": "ghost", "label": "x"}),
        ]:
            message, _ = await w.error(tool, args, "run_not_found")
            assert message == "no run 'ghost'"
        run = (await w.plan(CHAIN, "ready"))["runId"]
        await w.error("stratum_step_done", {"runId": run, "stepId": "b", "result": {}}, "step_not_ready")
        await w.error("stratum_step_done", {"runId": run, "stepId": "nope", "result": {}}, "unknown_step")
        await w.error(
            "stratum_gate_resolve", {"runId": run, "stepId": "a", "decision": "approve"}, "gate_not_allowed_over_mcp"
        )
        await w.error("stratum_plan", {"spec": "version: 1\n", "input": {}}, "spec_invalid")
        await w.error("stratum_plan", {"spec": 7, "input": {}}, "spec_invalid")
        await w.error(
            "stratum_plan", {"spec": CHAIN, "input": {}, "workspaceRoot": "/"}, "invalid_workspace_root"
        )

    run_server(ws.root, scenario)


def test_pending_tools_are_not_served_yet_and_the_rest_are() -> None:
    """When a pending tool lands, move it out of PENDING (and drive it above)."""
    from strato.mcp.dispatch import TOOLS

    assert set(contract.TOOLS) >= PENDING and set(TOOLS) >= DRIVEN_ELSEWHERE
    assert PENDING & set(TOOLS) == set(), f"served now, drive them: {sorted(PENDING & set(TOOLS))}"
    assert set(contract.TOOLS) - PENDING <= set(TOOLS)
    for name in set(contract.TOOLS) - PENDING:  # the listed schema names the contract's keys
        schema = TOOLS[name].input_schema()
        request = contract.TOOLS[name].request.keys()
        assert set(schema.get("properties", {})) <= set(request), name
