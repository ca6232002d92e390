"""Each dispatch records the estimated tokens of every context load it is given (tropo's
estimator), and `budget.context` refuses an oversized prompt before dispatch: nothing is
handed out, no dispatch is spent, and the refusal is the attempt's outcome."""

from __future__ import annotations

from pathlib import Path

from strato.flow.validate import load_spec
from strato.runs.engine.attempts import attempt_rows
from tests.support.flows import make_workspace
from tropo.review.retrieval import estimate_tokens

SPEC = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${w.output}", contract: A}
    FLOWBUDGET
    steps:
      - id: w
        do: "Write about ${input.topic}"
        out: A
        STEPBUDGET
"""


def _spec(flow: str = "", step: str = "") -> str:
    return SPEC.replace("FLOWBUDGET", flow).replace("STEPBUDGET", step)


def test_a_dispatch_records_each_context_load_in_estimated_tokens(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([])
    runs = ws.runs()
    outcome = runs.plan(_spec(step="budget: {context: 1000}"), {"topic": "bees"}, "r")
    [entry] = [e for e in outcome.events if e["type"] == "ready"]
    context = entry["detail"]["context"]
    assert context["loads"] == [
        {"kind": "task", "tokens": estimate_tokens("Write about bees")},
        {"kind": "contract", "tokens": estimate_tokens({"text": "string"})},
    ]
    assert context["tokens"] == sum(load["tokens"] for load in context["loads"])
    assert context["budget"] == {"context": 1000, "level": "task"}
    st = outcome.snap.state["scope"]["steps"]["w"]
    runs.done("r", "w", st["dispatchToken"], {"output": {"text": "buzz"}})
    [attempt] = runs.load("r").state["scope"]["steps"]["w"]["attempts"]
    assert attempt["context"] == context


def test_a_context_budget_refuses_an_oversized_prompt_before_dispatch(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([])
    runs = ws.runs()
    topic = "bees " * 200  # ~250 tokens of task
    outcome = runs.plan(_spec(flow="budget: {context: 100, dispatches: 5}"), {"topic": topic}, "big")
    state = outcome.snap.state
    assert state["status"] == "failed"
    assert "ready" not in [e["type"] for e in outcome.events]
    assert state["flowSpent"].get("dispatches", 0) == 0
    [attempt] = state["scope"]["steps"]["w"]["attempts"]
    assert attempt["outcome"] == "refused" and attempt["resolution"] == "gave up"
    assert attempt["reason"].startswith("flow context budget refused the dispatch: ~")
    assert attempt["context"]["tokens"] > 100
    [row] = attempt_rows(runs.audit("big")["events"])
    assert (row["outcome"], row["resolution"]) == ("refused", "gave up")
    small = runs.plan(_spec(flow="budget: {context: 100}"), {"topic": "bees"}, "small")
    assert small.snap.state["scope"]["steps"]["w"]["status"] == "ready"


def test_the_context_budget_is_an_extension_that_keeps_stratum_specs_valid() -> None:
    spec, errors = load_spec(_spec(step="budget: {usd: 1}"))
    assert spec is not None and not errors
    spec, errors = load_spec(_spec(step="budget: {context: 10}"))
    assert spec is not None and not errors
    spec, errors = load_spec(_spec(step="budget: {context: 0}"))
    assert spec is None and errors
    spec, errors = load_spec(_spec(step="budget: {context: \"10\"}"))
    assert spec is None and errors
