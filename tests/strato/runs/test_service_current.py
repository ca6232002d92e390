"""A report for "the dispatch outstanding now" (Stratum's step_done names no token): the
token is the one outstanding when the report arrived, so a report that loses a race to
another writer is refused as stale, never taken as the result of the newer dispatch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from strato.runs.store import Outcome
from tests.support.flows import make_workspace
from tests.support.mcp import GATE_SPEC

LOW = {"output": {"text": "draft", "score": 0.2}}  # fails the ensure: a retry is issued
GOOD = {"output": {"text": "final", "score": 0.9}}


class ReportedFirst(Runs):
    """Runs where another writer reports `LOW` for the step just before this writer's
    first transition starts: the race a server loses to a CLI or a second server."""

    def apply(self, run_id: str, op: str, action: Callable[[Engine], None], **detail: Any) -> Outcome:
        if not getattr(self, "raced", False):
            self.raced = True
            other = Runs(self.root)
            other.done(run_id, "work", None, LOW, current=True)
        return super().apply(run_id, op, action, **detail)


def test_a_report_that_lost_the_race_is_stale_not_the_newer_dispatchs_result(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    run_id = Runs(ws.root).plan(GATE_SPEC, {"topic": "t"}).snap.run_id
    with pytest.raises(Refused) as refused:
        ReportedFirst(ws.root).done(run_id, "work", None, GOOD, current=True)
    assert refused.value.code == "stale_token"
    [attempt] = Runs(ws.root).load(run_id).state["scope"]["steps"]["work"]["attempts"]
    assert attempt["result"] == LOW["output"]  # only the other writer's report was taken
    # reported now, the same result is the retry's
    after = Runs(ws.root).done(run_id, "work", None, GOOD, current=True)
    assert after.snap.state["scope"]["steps"]["work"]["status"] == "succeeded"


def test_a_step_that_is_not_ready_has_no_current_dispatch(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = Runs(ws.root)
    run_id = runs.plan(GATE_SPEC, {"topic": "t"}).snap.run_id
    with pytest.raises(Refused) as refused:
        runs.done(run_id, "review", None, GOOD, current=True)
    assert refused.value.code == "step_not_ready"
