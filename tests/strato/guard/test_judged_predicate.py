"""A guard ``judged`` predicate holds only when the configured judge says ``"met": true``.

The judge is a real script run through ``.vivary/agents.toml`` ``[judge] argv``, the move
goes through ``strato guard transition`` as a subprocess. A judge that says no, answers
something other than a boolean, prints nothing or fails must refuse the move: the guard
fails closed on every answer but an explicit yes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strato.agents import trust
from tests.support.guard import Workspace, approve_file, out, run

RID = "judged:1"
STATEMENT = "the release notes read well"
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}


def _with_judge(ws: Workspace, script: str, toml: str = "", *, approve: bool = True) -> Path:
    """Commit a judge that records its prompt in ``prompt.txt`` and then runs ``script``;
    the user approves ``.vivary/agents.toml`` unless ``approve`` is false."""
    judge = ws.root / "judge.sh"
    seen = ws.tmp / "prompt.txt"
    ws.commit(
        {
            "judge.sh": f'#!/bin/sh\nprintf "%s" "$1" > "{seen}"\n{script}\n',
            ".vivary/agents.toml": f'[judge]\nargv = ["sh", "{judge}", "{{prompt}}"]\n{toml}',
        },
        "a judge",
    )
    if approve:
        approve_file(ws, ".vivary/agents.toml")
    policy = {
        "resource_id": RID,
        "graph": {"draft": ["review"], "review": []},
        "initial": "draft",
        "terminal": ["review"],
        "edge_predicates": {
            "draft->review": [{"id": "prose", "type": "judged", "statement": STATEMENT}]
        },
    }
    assert run(ws, "register", stdin=policy).returncode == 0
    return seen


def _say(obj: object) -> str:
    return f"echo '{json.dumps(obj)}'"


@pytest.mark.parametrize(
    ("name", "script"),
    [
        ("says no", _say({"met": False, "evidence": "typos everywhere"})),
        ("met is a string", _say({"met": "true"})),
        ("met is a number", _say({"met": 1})),
        ("met is null", _say({"met": None})),
        ("no met key", _say({"holds": True})),
        ("prints nothing", "true"),
        ("prints prose", "echo 'looks fine to me'"),
        ("says yes but fails", _say({"met": True}) + "\nexit 3"),
        ("a list, not an object", "echo '[true]'"),
    ],
)
def test_a_judge_that_does_not_say_yes_refuses_the_move(
    ws: Workspace, name: str, script: str
) -> None:
    seen = _with_judge(ws, script)
    proc = run(ws, "transition", "--json", stdin=MOVE)
    answer = out(proc)
    assert proc.returncode == 1 and answer["status"] == "refused", (name, answer)
    (evidence,) = answer["verdict"]["meta"]["guard_evidence"]
    assert evidence["met"] is False and answer["verdict"]["met"] is False
    assert STATEMENT in seen.read_text()  # the judge was asked, and about this statement
    hist = out(run(ws, "history", stdin={"resource_id": RID}))
    assert hist["current_state"] == "draft"
    assert [e["outcome"] for e in hist["ledger"]] == ["registered", "refused"]


def test_a_judge_that_says_yes_moves_with_its_evidence(ws: Workspace) -> None:
    seen = _with_judge(ws, "echo thinking\n" + _say({"met": True, "evidence": "reads well"}))
    proc = run(ws, "transition", "--json", stdin=MOVE)
    answer = out(proc)
    assert proc.returncode == 0 and answer["status"] == "applied", answer
    assert answer["verdict"]["meta"]["guard_evidence"][0]["evidence"] == "reads well"
    assert STATEMENT in seen.read_text()


def test_a_judge_that_never_answers_is_killed_and_refuses(ws: Workspace) -> None:
    _with_judge(ws, "sleep 600\n" + _say({"met": True}), toml="timeout_s = 1\n")
    answer = out(run(ws, "transition", "--json", stdin=MOVE))
    assert answer["status"] == "refused"
    (evidence,) = answer["verdict"]["meta"]["guard_evidence"]
    assert evidence["met"] is False and "timed out" in evidence["evidence"], evidence


def test_a_judge_committed_but_not_approved_never_runs(ws: Workspace) -> None:
    """A branch that commits its own ``[judge]`` does not choose the program that runs:
    the move is refused before the judge starts, naming the file and how to approve it."""
    seen = _with_judge(ws, _say({"met": True}), approve=False)
    proc = run(ws, "transition", "--json", stdin=MOVE)
    assert proc.returncode == 1 and out(proc)["error_type"] == "judge_untrusted", proc.stdout
    (line,) = proc.stderr.splitlines()
    assert ".vivary/agents.toml" in line and "vivary trust" in line
    assert not seen.exists()
    assert [e["outcome"] for e in out(run(ws, "history", stdin={"resource_id": RID}))["ledger"]] == [
        "registered"
    ]


def test_the_users_own_judge_answers_not_the_branchs(ws: Workspace) -> None:
    """``$XDG_CONFIG_HOME/vivary/agents.toml`` is the user's own file: its judge answers,
    and the unapproved one the branch committed (which would say no) never runs."""
    seen = _with_judge(ws, _say({"met": False}), approve=False)
    mine = ws.tmp / "mine.sh"
    mine.write_text(_say({"met": True, "evidence": "mine"}) + "\n")
    config = trust.config_dir() / "agents.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[judge]\nargv = ["sh", "{mine}", "{{prompt}}"]\n')
    answer = out(run(ws, "transition", "--json", stdin=MOVE))
    assert answer["status"] == "applied", answer
    assert answer["verdict"]["meta"]["guard_evidence"][0]["evidence"] == "mine"
    assert not seen.exists()
