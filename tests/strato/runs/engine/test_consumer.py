"""Fanouts with `dispatch: consumer`: items handed to an outside agent through
`strato flow next/done`, each with its own token, `concurrency` at a time, through
their stages, retried, then settled by `require`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from tests.support.flows import make_workspace
from tests.support.specs import consumer_fanout_spec


def _spec(require: str = "all") -> str:
    return consumer_fanout_spec(require)


def _ready(runs: Runs, run_id: str) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in runs.engine(runs.load(run_id)).ready()}


def _done(runs: Runs, run_id: str, item: str, output: Any) -> Any:
    entry = _ready(runs, run_id)[item]
    return runs.done(run_id, item, entry["dispatchToken"], {"output": output}).snap


def test_items_go_out_concurrency_at_a_time_through_their_stages(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    run_id = runs.plan(_spec(), {"topics": ["bees", "ants", "owls"]}).snap.run_id
    ready = _ready(runs, run_id)
    assert sorted(ready) == ["each/0", "each/1"]  # concurrency 2
    first = ready["each/0"]
    assert first["do"] == "Draft bees" and first["stage"] == 0 and first["isFinalStage"] is False
    assert first["itemIndex"] == 0 and first["item"] == "bees" and first["contract"] == {"text": "string"}
    assert ready["each/0"]["dispatchToken"] != ready["each/1"]["dispatchToken"]
    _done(runs, run_id, "each/0", {"text": "buzz"})
    ready = _ready(runs, run_id)
    # item 0 moved to its second stage with ${prev}; a slot stayed taken, so item 2 waits
    assert ready["each/0"]["do"] == "Score buzz" and ready["each/0"]["isFinalStage"] is True
    assert sorted(ready) == ["each/0", "each/1"]
    _done(runs, run_id, "each/0", {"score": 0.9})
    assert sorted(_ready(runs, run_id)) == ["each/1", "each/2"]
    for i, topic in ((1, "ants"), (2, "owls")):
        _done(runs, run_id, f"each/{i}", {"text": topic})
        snap = _done(runs, run_id, f"each/{i}", {"score": 0.7})
    assert snap.state["status"] == "completed"
    assert snap.state["output"] == {"n": 3}
    assert snap.state["scope"]["steps"]["each"]["output"] == [{"score": 0.9}, {"score": 0.7}, {"score": 0.7}]
    assert snap.state["flowSpent"]["dispatches"] == 6
    assert ws.prompts() == []  # the engine never called an agent


def test_a_failing_ensure_retries_then_the_item_fails_and_require_decides(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    run_id = runs.plan(_spec("any"), {"topics": ["bees", "ants"]}).snap.run_id
    _done(runs, run_id, "each/0", {"text": "buzz"})
    _done(runs, run_id, "each/0", {"score": 0.1})
    retry = _ready(runs, run_id)["each/0"]
    assert retry["attempt"] == 2 and "result.score >= 0.5" in retry["previousFailure"]["reason"]
    _done(runs, run_id, "each/0", {"score": 0.2})
    items = runs.load(run_id).state["scope"]["steps"]["each"]["fanout"]["items"]
    assert items[0]["status"] == "failed" and items[0]["failure"].startswith("stage 1: ")
    _done(runs, run_id, "each/1", {"text": "march"})
    snap = _done(runs, run_id, "each/1", {"score": 0.6})
    assert snap.state["status"] == "completed"
    assert snap.state["scope"]["steps"]["each"]["output"] == [None, {"score": 0.6}]


def test_require_all_not_met_fails_the_step(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(_spec(), {"topics": ["bees"]}).snap.run_id
    entry = _ready(runs, run_id)["each/0"]
    snap = runs.done(run_id, "each/0", entry["dispatchToken"], {"failure": "cannot"}).snap
    retry = _ready(runs, run_id)["each/0"]
    snap = runs.done(run_id, "each/0", retry["dispatchToken"], {"failure": "still cannot"}).snap
    assert snap.state["status"] == "failed"
    assert snap.state["failure"]["reason"] == "fanout require all not met (0/1 succeeded)"


def test_stale_forged_and_unknown_item_results_change_nothing(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(_spec(), {"topics": ["bees", "ants", "owls"]}).snap.run_id
    token = _ready(runs, run_id)["each/0"]["dispatchToken"]
    head = runs.load(run_id).head
    for item, tok, code in [
        ("each/0", "forged", "stale_token"),
        ("each/2", token, "step_not_ready"),  # not handed out yet
        ("each/9", token, "step_not_ready"),
        ("total/0", token, "step_not_ready"),
    ]:
        with pytest.raises(Refused) as info:
            runs.done(run_id, item, tok, {"output": {"text": "x"}})
        assert info.value.code == code
    assert runs.load(run_id).head == head
    runs.done(run_id, "each/0", token, {"output": {"text": "x"}})
    with pytest.raises(Refused) as info:  # the same token again: it moved on to stage 1
        runs.done(run_id, "each/0", token, {"output": {"score": 1}})
    assert info.value.code == "stale_token"


def test_consumer_items_over_the_cli_and_strato_run_leaves_them_alone(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(_spec())
    code, view = ws.strato_json("run", str(spec), "--input-json", json.dumps({"topics": ["bees"]}), "--id", "c1")
    assert code == 0 and view["status"] == "running" and [e["id"] for e in view["ready"]] == ["each/0"]
    assert ws.prompts() == []
    for output in ({"text": "buzz"}, {"score": 0.8}):
        _, nxt = ws.strato_json("flow", "next", "c1")
        [entry] = nxt["ready"]
        code, view = ws.strato_json(
            "flow", "done", "c1", entry["id"], "--token", entry["dispatchToken"], "--result",
            json.dumps({"output": output}),
        )
        assert code == 0
    assert view["status"] == "completed" and view["output"] == {"n": 1}


def test_revert_rotates_item_tokens_and_cancel_drops_them(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(_spec(), {"topics": ["bees", "ants"]}).snap.run_id
    runs.commit(run_id, "out")  # items are out: a consumer fanout may be checkpointed
    old = _ready(runs, run_id)["each/0"]["dispatchToken"]
    _done(runs, run_id, "each/0", {"text": "buzz"})
    runs.revert(run_id, "out")
    ready = _ready(runs, run_id)
    assert ready["each/0"]["stage"] == 0 and ready["each/0"]["dispatchToken"] != old
    with pytest.raises(Refused) as info:
        runs.done(run_id, "each/0", old, {"output": {"text": "late"}})
    assert info.value.code == "stale_token"
    token = ready["each/1"]["dispatchToken"]
    runs.cancel(run_id)
    with pytest.raises(Refused) as info:
        runs.done(run_id, "each/1", token, {"output": {"text": "late"}})
    assert info.value.code == "run_not_running"


def test_item_usage_settles_into_the_fanout_budget(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    spec = _spec().replace("      - id: each\n", "      - id: each\n        budget: {tokens: 100}\n")
    run_id = runs.plan(spec, {"topics": ["bees", "ants"]}).snap.run_id
    entry = _ready(runs, run_id)["each/0"]
    result = {"output": {"text": "buzz"}, "usage": {"tokens": 150}}
    snap = runs.done(run_id, "each/0", entry["dispatchToken"], result).snap
    each = snap.state["scope"]["steps"]["each"]
    assert each["status"] == "failed" and each["failure"]["reason"] == "task budget exhausted (tokens)"
    assert snap.state["status"] == "failed" and snap.state["flowSpent"]["tokens"] == 150
    assert runs.engine(snap).ready() == []
