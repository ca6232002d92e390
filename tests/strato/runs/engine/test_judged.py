"""A `judged` ensure passes only when the judge, a real subprocess named by
`.vivary/agents.toml` `[judge]`, answers `holds: true`. Every other answer (false, a
string, a number, no `holds`, no JSON, nothing at all, a crash, and a non-zero exit even
after printing `holds: true`) fails the step closed."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from strato.flow.refs import Scope
from strato.flow.spec import DoStep
from strato.flow.validate import load_spec
from strato.runs.engine.checks import Judge, check
from tests.support.approvals import approve_agents
from tests.support.flows import Workspace, make_workspace
from tests.support.specs import JUDGED


def _with_judge(tmp_path: Path, stdout: str, exit_code: int = 0) -> Workspace:
    """A workspace whose writer answers {"text": "hello"} and whose judge is a script
    printing `stdout` (and logging that it was asked)."""
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "write", "replies": [{"json": {"text": "hello"}}]}])
    judge = tmp_path / "judge.py"
    judge.write_text(
        textwrap.dedent(
            f"""
            import sys
            with open({str(tmp_path / "judge.log")!r}, "a") as log:
                log.write(sys.argv[1].replace("\\n", " ") + "\\n")
            sys.stdout.write({stdout!r})
            sys.exit({exit_code})
            """
        )
    )
    argv = json.dumps([sys.executable, str(judge), "{prompt}"])
    config = ws.root / ".vivary" / "agents.toml"
    config.write_text(config.read_text() + f"[judge]\nargv = {argv}\ntimeout_s = 60\n")
    approve_agents(ws.root)
    return ws


def _run(ws: Workspace, tmp_path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    runs = ws.runs()
    run_id = runs.plan(JUDGED, {}).snap.run_id
    state = runs.drive(run_id).state
    judged = [e["detail"] for e in runs.audit(run_id)["events"] if e["type"] == "judged"]
    asked = (tmp_path / "judge.log").read_text().splitlines()
    assert len(asked) == 1 and "the text is polite" in asked[0] and "hello" in asked[0]
    return state, judged


def test_without_a_judge_a_judged_ensure_fails_closed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "write", "replies": [{"json": {"text": "hello"}}]}])
    runs = ws.runs()
    state = runs.drive(runs.plan(JUDGED, {}).snap.run_id).state
    assert state["status"] == "failed"
    assert "no judge configured" in state["failure"]["reason"]


def test_a_judge_that_says_holds_true_passes_the_step(tmp_path: Path) -> None:
    ws = _with_judge(tmp_path, json.dumps({"holds": True, "reason": "it is polite"}))
    state, judged = _run(ws, tmp_path)
    assert state["status"] == "completed"
    said = {"statement": "the text is polite", "holds": True, "reason": "it is polite", "stakes": "cheap"}
    # the judge agent as .vivary/agents.toml names it, and what it reported spending (nothing)
    assert judged == [{**said, "model": "judge", "usage": {"tokens": 0, "usd": 0}}]


def test_a_judge_that_says_holds_false_fails_the_step(tmp_path: Path) -> None:
    ws = _with_judge(tmp_path, json.dumps({"holds": False, "reason": "it is rude"}))
    state, judged = _run(ws, tmp_path)
    assert state["status"] == "failed"
    failure = state["failure"]
    assert isinstance(failure, dict)
    assert "judged false: the text is polite (it is rude)" in str(failure["reason"])
    assert [j["holds"] for j in judged] == [False]


@pytest.mark.parametrize(
    "answer",
    [
        {"holds": "true", "reason": "a string is not a verdict"},
        {"holds": 1, "reason": "a number is not a verdict"},
        {"holds": [True], "reason": "a list is not a verdict"},
        {"holds": None, "reason": "null is not a verdict"},
        {"holds": {"value": True}},
    ],
    ids=["string", "one", "list", "null", "object"],
)
def test_a_judge_whose_holds_is_not_a_boolean_fails_the_step(
    tmp_path: Path, answer: dict[str, object]
) -> None:
    ws = _with_judge(tmp_path, json.dumps(answer))
    state, judged = _run(ws, tmp_path)
    assert state["status"] == "failed"
    assert [j["holds"] for j in judged] == [False]


@pytest.mark.parametrize(
    ("stdout", "exit_code"),
    [
        (json.dumps({"reason": "I would rather not say"}), 0),
        ("", 0),
        ("it looks polite to me", 0),
        ("", 3),
        (json.dumps({"holds": True, "reason": "fine"}), 1),
    ],
    ids=["no holds key", "no output", "no json", "crash", "holds true, then exit 1"],
)
def test_a_judge_that_gives_no_verdict_fails_the_step(tmp_path: Path, stdout: str, exit_code: int) -> None:
    ws = _with_judge(tmp_path, stdout, exit_code)
    state, judged = _run(ws, tmp_path)
    assert state["status"] == "failed"
    assert [j["holds"] for j in judged] == [False]


def _answering(answer: Mapping[str, Any] | Exception) -> Judge:
    def judge(statement: str, stakes: str, output: Any) -> Mapping[str, Any]:
        if isinstance(answer, Exception):
            raise answer
        return answer

    return judge


@pytest.mark.parametrize(
    "answer",
    [{}, {"reason": "no verdict"}, {"holds": "true"}, {"holds": 1}, {"holds": False}, RuntimeError("down")],
    ids=["empty", "no holds", "string", "one", "false", "raises"],
)
def test_any_judge_the_engine_is_given_must_say_exactly_true(answer: Mapping[str, Any] | Exception) -> None:
    """The engine's own rule, for judges other than the `[judge]` runner (which already
    normalises its answer): only `holds: true` holds."""
    spec, _ = load_spec(JUDGED)
    assert spec is not None
    step = spec.flow_map["main"].typed_steps[0]
    assert isinstance(step, DoStep)
    args = (spec, "A", step.ensure, {"text": "hello"}, {}, Scope(input={}), None)
    verdict = check(*args, _answering(answer))
    assert verdict.reason is not None and "judged false: the text is polite" in verdict.reason
    assert [j["holds"] for j in verdict.judged] == [False]
    assert check(*args, _answering({"holds": True})).reason is None
