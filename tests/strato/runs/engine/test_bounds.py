"""The bounds on what enters a run (strato.runs.engine.bounds): a result, an input or CLI JSON
nested past 64 levels or larger than its byte bound is refused with one line and writes
nothing, from the service, the real `strato flow` CLI and engine mode alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.runs.engine import bounds
from strato.runs.engine.state import Refused
from tests.support.flows import DISPATCH_SPEC, make_workspace, planned, ready_entry, reply

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=60,
)


def nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


def _reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    return 1 + max(map(_reference_depth, value), default=0) if isinstance(value, list) else 0


@given(JSON)
def test_depth_is_the_nesting_of_arrays_and_objects(value: Any) -> None:
    assert bounds.depth(value) == _reference_depth(value)
    assert bounds.size(value) == len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@given(st.integers(min_value=0, max_value=3 * bounds.MAX_DEPTH))
def test_a_value_is_refused_exactly_past_the_depth_bound(levels: int) -> None:
    refusal = bounds.problem(nested(levels), "x", bounds.MAX_RESULT_BYTES)
    assert (refusal is not None) == (levels > bounds.MAX_DEPTH)
    assert refusal is None or refusal.code == "too_deep"


def test_text_deeper_than_pythons_parser_goes_is_refused_not_raised() -> None:
    with pytest.raises(Refused) as caught:
        bounds.loads("[" * 100_000 + "]" * 100_000, "--result")
    assert caught.value.code == "too_deep" and "64 levels" in str(caught.value)
    with pytest.raises(json.JSONDecodeError):
        bounds.loads("[1,", "--result")


def test_a_result_past_a_bound_is_refused_by_the_service_and_nothing_is_written(tmp_path: Path) -> None:
    _, runs = planned(tmp_path)
    entry = ready_entry(runs)
    head = runs.load("r1").head
    for result, code in (
        ({"output": nested(bounds.MAX_DEPTH)}, "too_deep"),
        ({"output": {"n": 1, "pad": "x" * bounds.MAX_RESULT_BYTES}}, "too_large"),
    ):
        with pytest.raises(Refused) as caught:
            runs.done("r1", "a", entry["dispatchToken"], result)
        assert caught.value.code == code
    with pytest.raises(Refused):
        runs.plan(DISPATCH_SPEC, {"deep": nested(bounds.MAX_DEPTH)}, "r2")
    assert runs.load("r1").head == head and "r2" not in runs.store.run_ids()
    ok = runs.done("r1", "a", entry["dispatchToken"], {"output": {"n": 1, "pad": nested(bounds.MAX_DEPTH - 2)}})
    assert ok.snap.head != head  # just within: taken


def test_the_cli_refuses_deep_or_large_json_with_one_line_and_exit_2(tmp_path: Path) -> None:
    ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    head = runs.load("r1").head
    deep = tmp_path / "deep.json"
    deep.write_text('{"output": ' + "[" * 50_000 + "]" * 50_000 + "}")
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"output": {"n": 1, "pad": "x" * (2 * bounds.MAX_RESULT_BYTES)}}))
    done = ("flow", "done", "r1", "a", "--token", entry["dispatchToken"], "--result")
    for args, code in (
        ((*done, f"@{deep}"), "too_deep"),
        ((*done, "[" * 70 + "]" * 70), "too_deep"),
        ((*done, f"@{large}"), "too_large"),
        (("flow", "usage", "r1", entry["dispatchId"], "--usage", f"@{deep}"), "too_deep"),
        (("flow", "plan", str(tmp_path / "s.yaml"), "--input", "x=" + "[" * 5000 + "]" * 5000), "too_deep"),
    ):
        (tmp_path / "s.yaml").write_text(DISPATCH_SPEC)
        proc = ws.strato(*args)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        exit_code, doc = ws.strato_json(*args)
        assert exit_code == 2 and doc["error"]["code"] == code, doc
    assert runs.load("r1").head == head and runs.store.run_ids() == ["r1"]


def test_engine_mode_takes_an_agents_too_deep_output_as_a_failed_attempt(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    too_deep = json.dumps({"n": 1, "deep": nested(bounds.MAX_DEPTH)})
    answer = {"type": "result", "result": too_deep, "usage": {}}
    good = {"type": "result", "result": json.dumps({"n": 2}), "usage": {}}
    ws.agents([{"match": "step a", "replies": [reply(answer), reply(good)]}, {"match": "step b", "replies": [reply(good)]}])
    (tmp_path / "s.yaml").write_text(DISPATCH_SPEC)
    code, view = ws.strato_json("run", str(tmp_path / "s.yaml"), "--id", "r1")
    assert code == 0 and view["status"] == "completed", view
    rows = [row for row in ws.runs().audit("r1")["attempts"] if row["stepId"] == "a"]
    assert "nests deeper than 64 levels" in json.dumps(rows[0]), rows
