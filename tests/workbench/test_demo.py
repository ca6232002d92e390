"""Demo mode's replay of the recorded run (workbench.demo), on a clock the test moves."""

from __future__ import annotations

import pytest

from workbench.demo import FRAME_S, HOLD_FRAMES, DemoSource, fixture
from workbench.source import Refusal


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_recorded_run_is_replayed_transition_by_transition() -> None:
    clock = Clock()
    demo = DemoSource(fixture(), clock)
    frames = len(demo.frames)
    assert frames >= 4
    seen = []
    for n in range(frames):
        clock.now = 1000.0 + n * FRAME_S
        seen.append((demo.tips()["demo-note"], demo.runs(0, 50)["runs"][0]["status"]))
    assert len({tip for tip, _ in seen}) == frames  # every frame is a new head: the stream moves
    assert seen[0][1] == "running" and seen[-1][1] == "completed"
    clock.now = 1000.0 + (frames + HOLD_FRAMES - 1) * FRAME_S
    assert demo.tips() == {"demo-note": seen[-1][0]}  # the end holds a while
    clock.now = 1000.0 + (frames + HOLD_FRAMES) * FRAME_S
    assert demo.tips() == {"demo-note": seen[0][0]}  # then the replay starts again


def test_the_recorded_run_went_through_its_gate_twice() -> None:
    last = DemoSource(fixture()).static_views()["/api/runs/demo-note"]
    decided = [e["detail"] for e in last["events"]["items"] if e["type"] == "gate_resolved"]
    assert [d["decision"] for d in decided] == ["approve", "revise"]  # newest first
    # recorded by a script with no terminal: the decisions are the agent's, as they were made
    assert {d["resolvedBy"] for d in decided} == {"agent"}
    assert last["demo"] is True and last["status"] == "completed"


def test_every_view_is_labelled_and_nothing_can_be_decided() -> None:
    demo = DemoSource(fixture())
    for doc in (demo.runs(0, 10), demo.run("demo-note", 0, 5), demo.board(), demo.guard(),
                demo.heartbeat(), demo.lanes(), demo.review("a", "b")):
        assert doc["demo"] is True
    assert len(demo.run("demo-note", 0, 5)["events"]["items"]) <= 5
    for decide in (lambda: demo.decide_gate("demo-note", "review", {}),
                   lambda: demo.decide_proposal("x", "accept")):
        with pytest.raises(Refusal) as refused:
            decide()
        assert refused.value.status == 403
    with pytest.raises(Refusal):
        demo.run("../etc", 0, 5)



def test_the_sample_evals_are_real_runs_labelled_and_linked_to_their_runs() -> None:
    demo = DemoSource(fixture())
    listed = demo.evals()
    assert listed["demo"] is True and {e["id"] for e in listed["evals"]} == {"bare", "judged"}
    compared = demo.compare_evals("bare", "judged")
    assert compared["difference"]["successRate"] > 0 and compared["flipped"]
    judged = demo.eval("judged")
    assert judged["scratch"]["present"] and not judged["scratch"]["path"].startswith("/")  # no recorder's folder
    for result in judged["rows"]:  # every result opens down to its run's attempts
        run = demo.eval_run("judged", result["runId"], 0, 50)
        assert run["runId"] == result["runId"] and run["steps"][0]["attempts"]
    with pytest.raises(Refusal) as refused:
        demo.eval("../etc")
    assert refused.value.status == 404
    static = demo.static_views()
    assert "/api/evals/bare/compare/judged" in static and f"/api/evals/judged/runs/{result['runId']}" in static
