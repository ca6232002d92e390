"""Budgets (usd, tokens, ms, dispatches) at flow, step and subflow level, driven by
real agent subprocesses that report their cost the way the Claude CLI does, and by
consumer-mode results that report usage themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strato.runs.engine.state import Refused
from tests.support.flows import Workspace, event_types, make_workspace, reply


def costly(output: dict[str, Any], usd: float = 0.0, tokens: int = 0) -> dict[str, Any]:
    """A reply in the Claude CLI's envelope: the answer plus what it cost."""
    return reply(
        {
            "type": "result",
            "result": json.dumps(output),
            "total_cost_usd": usd,
            "usage": {"input_tokens": tokens, "output_tokens": 0},
        }
    )


CHAIN = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${c.output}", contract: R}
    budget: {BUDGET}
    steps:
      - id: a
        do: "step a"
        out: R
      - id: b
        after: [a]
        do: "step b"
        out: R
      - id: c
        after: [b]
        do: "step c"
        out: R
"""


def chain(budget: str) -> str:
    return CHAIN.replace("{BUDGET}", budget)


def _ws(tmp_path: Path, usd: float = 0.0, tokens: int = 0) -> Workspace:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "step", "replies": [costly({"n": 1}, usd, tokens)]}])
    return ws


@pytest.mark.parametrize(
    ("budget", "usd", "tokens", "key"),
    [("{usd: 1.0}", 0.6, 0, "usd"), ("{tokens: 250}", 0.0, 200, "tokens")],
)
def test_flow_budget_is_exhausted_mid_run_by_reported_usage(
    tmp_path: Path, budget: str, usd: float, tokens: int, key: str
) -> None:
    ws = _ws(tmp_path, usd, tokens)
    code, view = ws.strato_json("run", str(_write(tmp_path, chain(budget))), "--id", "r1")
    assert code == 1
    assert view["status"] == "budget_exhausted"
    assert view["failure"]["reason"] == f"flow budget exhausted ({key})"
    assert view["ready"] == [] and view["gates"] == []
    # a's spend left room for b (reserve checks spent <= limit); b's settle went over,
    # so c was never dispatched
    assert len(ws.prompts()) == 2
    spent = view["flowSpent"]
    assert spent["dispatches"] == 2 and spent[key] == pytest.approx(2 * (usd or tokens))
    audit = ws.runs().audit("r1")
    exhausted = [e for e in audit["events"] if e["type"] == "budget_exhausted"]
    assert [e["stepId"] for e in exhausted] == ["b"]
    assert audit["steps"]["c"]["status"] == "pending"
    # the run is over: nothing can be reported into it any more
    with pytest.raises(Refused) as info:
        ws.runs().done("r1", "c", "any", {"output": {"n": 1}})
    assert info.value.code == "run_not_running"


def test_flow_ms_budget_counts_agent_wall_time(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    # every agent call is a Python subprocess: it takes well over one millisecond
    code, view = ws.strato_json("run", str(_write(tmp_path, chain("{ms: 1}"))))
    assert code == 1 and view["status"] == "budget_exhausted"
    assert view["failure"]["reason"] == "flow budget exhausted (ms)"
    assert len(ws.prompts()) == 1 and view["flowSpent"]["ms"] > 1


def test_a_run_within_budget_completes_and_reports_its_spend(tmp_path: Path) -> None:
    ws = _ws(tmp_path, usd=0.25, tokens=10)
    code, view = ws.strato_json("run", str(_write(tmp_path, chain("{usd: 1.0, tokens: 30, dispatches: 3}"))))
    assert code == 0 and view["status"] == "completed"
    assert view["flowSpent"]["usd"] == pytest.approx(0.75)
    assert view["flowSpent"]["tokens"] == 30 and view["flowSpent"]["dispatches"] == 3


STEP_BUDGET = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${done.output}", contract: R}
    steps:
      - id: big
        do: "big job"
        out: R
        attempts: 3
        budget: {tokens: 100}
        on_fail: cheap
      - id: cheap
        do: "cheap job"
        out: R
      - id: done
        after: [cheap]
        set: {n: "1"}
        out: R
"""


def test_step_budget_breach_fails_the_step_without_retry_and_routes_on_fail(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents(
        [
            {"match": "big job", "replies": [costly({"n": 1}, tokens=150)]},
            {"match": "cheap job", "replies": [costly({"n": 2}, tokens=5)]},
        ]
    )
    runs = ws.runs()
    run_id = runs.plan(STEP_BUDGET, {}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    steps = snap.state["scope"]["steps"]
    assert steps["big"]["status"] == "failed"
    assert steps["big"]["failure"]["reason"] == "task budget exhausted (tokens)"
    assert steps["big"]["spent"] == {"dispatches": 1, "tokens": 150, "ms": steps["big"]["spent"]["ms"]}
    # attempts: 3, but a budget breach is terminal for the step: one call only
    assert [p.split("\n")[0] for p in ws.prompts()] == ["big job", "cheap job"]
    assert snap.state["flowSpent"]["tokens"] == 155


def test_step_dispatch_budget_bounds_retries(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    wrong = [reply({"n": "not a number"}), reply({"n": "still not"}), reply({"n": 3})]
    ws.agents([{"match": "big job", "replies": wrong}, {"match": "cheap", "replies": [reply({"n": 2})]}])
    spec = STEP_BUDGET.replace("budget: {tokens: 100}", "budget: {dispatches: 2}")
    runs = ws.runs()
    run_id = runs.plan(spec, {}).snap.run_id
    snap = runs.drive(run_id)
    big = snap.state["scope"]["steps"]["big"]
    assert big["status"] == "failed" and big["spent"]["dispatches"] == 2
    assert big["failure"]["reason"] == "task budget exhausted (dispatches)"
    assert sum(p.startswith("big job") for p in ws.prompts()) == 2
    assert snap.state["status"] == "completed"


SUBFLOW = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${after.output}", contract: R}
    steps:
      - id: child
        run: inner
        with: {}
        budget: {BUDGET}
        on_fail: fallback
      - id: fallback
        do: "fallback job"
        out: R
      - id: after
        after: [fallback]
        set: {n: "7"}
        out: R
  inner:
    input: {}
    output: {from: "${two.output}", contract: R}
    steps:
      - id: one
        do: "inner one"
        out: R
      - id: two
        after: [one]
        do: "inner two"
        out: R
"""


@pytest.mark.parametrize(("budget", "key", "calls"), [("{ms: 1}", "ms", 1), ("{usd: 0.5}", "usd", 2)])
def test_subflow_budget_breach_fails_the_run_step_and_routes(
    tmp_path: Path, budget: str, key: str, calls: int
) -> None:
    ws = make_workspace(tmp_path)
    ws.agents(
        [
            {"match": "inner", "replies": [costly({"n": 1}, usd=0.3)]},
            {"match": "fallback", "replies": [costly({"n": 2}, usd=0.01)]},
        ]
    )
    runs = ws.runs()
    run_id = runs.plan(SUBFLOW.replace("{BUDGET}", budget), {}).snap.run_id
    snap = runs.drive(run_id)
    steps = snap.state["scope"]["steps"]
    assert steps["child"]["status"] == "failed"
    assert steps["child"]["failure"]["reason"] == f"subflow budget exhausted ({key})"
    assert sum(p.startswith("inner") for p in ws.prompts()) == calls
    # the failed subflow hands out nothing any more, and the run went on via on_fail
    assert snap.state["status"] == "completed" and snap.state["output"] == {"n": 7}
    assert runs.engine(snap).ready() == []
    assert steps["child"]["sub"].get("done") is True


PARALLEL = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: R}
    budget: {usd: 1}
    steps:
      - id: a
        do: "a"
        out: R
      - id: b
        do: "b"
        out: R
"""


def test_consumer_usage_over_budget_exhausts_the_run_and_stales_other_tokens(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    code, view = ws.strato_json("flow", "plan", str(_write(tmp_path, PARALLEL)), "--id", "p")
    assert code == 0 and [e["id"] for e in view["ready"]] == ["a", "b"]
    tokens = {e["id"]: e["dispatchToken"] for e in view["ready"]}
    result = json.dumps({"output": {"n": 1}, "usage": {"usd": 1.5, "tokens": 9}})
    code, view = ws.strato_json("flow", "done", "p", "a", "--token", tokens["a"], "--result", result)
    assert code == 1 and view["status"] == "budget_exhausted"
    assert view["failure"]["reason"] == "flow budget exhausted (usd)"
    assert view["ready"] == []
    assert view["flowSpent"] == {"dispatches": 2, "tokens": 9, "usd": 1.5}
    before = ws.runs().load("p").head
    code, view = ws.strato_json("flow", "done", "p", "b", "--token", tokens["b"], "--result", result)
    assert code == 1 and view["error"]["code"] == "run_not_running"
    assert ws.runs().load("p").head == before
    assert "budget_exhausted" in event_types(ws.runs().audit("p")["events"])


FANOUT = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {xs: "integer[]"}
    output: {from: "${each.output[0]}", contract: R}
    budget: {usd: 1.0}
    steps:
      - id: each
        fanout:
          over: "${input.xs}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "item ${item}"
              out: R
"""


def test_fanout_items_stop_being_dispatched_once_the_flow_budget_is_spent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "item", "replies": [costly({"n": 1}, usd=0.4)]}])
    runs = ws.runs()
    run_id = runs.plan(FANOUT, {"xs": [1, 2, 3, 4, 5]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "budget_exhausted"
    assert snap.state["failure"]["reason"] == "flow budget exhausted (usd)"
    # 0.4 + 0.4 = 0.8 leaves room for a third call (1.2 > 1.0); the fourth is refused
    assert len(ws.prompts()) == 3
    assert snap.state["flowSpent"]["usd"] == pytest.approx(1.2)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_an_engine_fanout_over_its_own_budget_fails_the_step_and_routes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([
        {"match": "item", "replies": [costly({"n": 1}, tokens=60)]},
        {"match": "plan b", "replies": [costly({"n": 9})]},
    ])
    spec = FANOUT.replace("    budget: {usd: 1.0}\n", "").replace(
        "      - id: each\n", "      - id: each\n        budget: {tokens: 100}\n        on_fail: fallback\n"
    ).replace('output: {from: "${each.output[0]}", contract: R}', 'output: {from: "${fallback.output}", contract: R}')
    spec += '      - id: fallback\n        do: "plan b"\n        out: R\n'
    runs = ws.runs()
    run_id = runs.plan(spec, {"xs": [1, 2, 3, 4]}).snap.run_id
    snap = runs.drive(run_id)
    each = snap.state["scope"]["steps"]["each"]
    assert each["status"] == "failed" and each["failure"]["reason"] == "task budget exhausted (tokens)"
    # 60 + 60 > 100: the third item is refused before its agent call; every ledger
    # (not only the flow's) was charged with the items' usage
    assert sum(p.startswith("item") for p in ws.prompts()) == 2
    assert each["spent"]["tokens"] == 120 and each["spent"]["dispatches"] == 2
    assert snap.state["flowSpent"]["tokens"] == 120
    assert snap.state["status"] == "completed" and snap.state["output"] == {"n": 9}
