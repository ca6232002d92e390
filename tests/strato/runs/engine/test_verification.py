"""Lanes for the outputs that are not a `do` step's: every stage of a fanout (engine
mode, whose items run outside the engine, and consumer mode) and every `set` step with a
judged ensure has its own lane, decided, recorded and replayed exactly as a step's.
Runs are real: a git repository, scripted agents and a judge that are subprocesses, the
judge logging every call, and the lanes read back from `refs/vivary/lanes`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.runs.lanes import model as lanes
from strato.runs.lanes.store import LaneStore
from strato.runs.service import Runs
from strato.runs.views.events import project
from tests.support.lanes import decisions, judge_calls, judged_workspace

FANOUT = """
version: 1
contracts:
  A: {text: string}
  N: {n: integer}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${total.output}", contract: N}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          dispatch: DISPATCH
          steps:
            - do: "Write ${item}"
              out: A
              attempts: 1
              ensure:
                - expr: "result.text != 'forbidden'"
                - judged: {statement: "the text is polite", stakes: STAKES}
      - id: total
        after: [fan]
        set: {n: "len(result.fan)"}
        out: N
"""
STAGE_LANE = "main/fan.0/claude"
WRITER = [
    {"match": "Write forbidden", "replies": [{"json": {"text": "forbidden"}}]},
    {"match": "Write", "replies": [{"json": {"text": "hello"}}]},
]


def _fanout(dispatch: str = "engine", stakes: str = "cheap") -> str:
    return FANOUT.replace("DISPATCH", dispatch).replace("STAKES", stakes)


def _record(runs: Runs, key: str = STAGE_LANE) -> dict[str, Any]:
    return LaneStore(runs.repo).read()[1][key]


def _drive(runs: Runs, run_id: str, items: list[str], spec: str | None = None) -> dict[str, Any]:
    runs.plan(spec or _fanout(), {"items": items}, run_id)
    runs.drive(run_id)
    return runs.audit(run_id)


def _replayed(audit: dict[str, Any]) -> tuple[int, int]:
    """(verified, skipped) of the audit's lane decisions, each replayed from its evidence
    and compared with what the run did (paranoid ensures run whatever the draw says)."""
    counts = {"verified": 0, "skipped": 0}
    for event in decisions(audit):
        paranoid = event["detail"]["reason"] == "high stakes: never skipped"
        must_check = lanes.replay(event["stepId"], event["detail"]) or paranoid
        assert must_check == (event["type"] == "verified"), event
        counts[event["type"]] += 1
    return counts["verified"], counts["skipped"]


# --- fanout stages, engine mode


def test_an_engine_fanouts_stage_earns_trust_and_every_skip_replays(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path, WRITER)
    runs = ws.runs()
    first = _drive(runs, "f1", [f"a{n}" for n in range(6)])
    assert first["status"] == "completed"
    assert _replayed(first) == (6, 0)  # a new lane: every item's output is judged
    judged = [e for e in first["events"] if e["type"] == "judged"]
    assert [e["stepId"] for e in judged] == [f"fan/{n}" for n in range(6)]  # judged events, as for steps
    assert all(e["detail"]["stage"] == 0 and e["detail"]["holds"] for e in judged)
    assert _record(runs)["clean"] == 6 and judge_calls(tmp_path) == 6

    second = _drive(runs, "f2", [f"b{n}" for n in range(24)])
    assert second["status"] == "completed"
    verified, skipped = _replayed(second)
    assert verified + skipped == 24 and skipped >= 4  # at rate 1/2: about half
    for event in decisions(second):
        assert event["detail"]["lane"] == STAGE_LANE and event["detail"]["stage"] == 0
        assert event["detail"]["streak"] == 6 and event["detail"]["rate"] == 0.5  # the lanes as it started
        if event["type"] == "skipped":
            assert event["detail"]["ensures"] == [1] and event["detail"]["highStakes"] == []
    assert judge_calls(tmp_path) == 6 + verified  # a skipped check never asked the judge
    assert sum(e["type"] == "judged" for e in second["events"]) == verified
    record = _record(runs)
    assert record["verified"] == 6 + verified and record["skipped"] == skipped
    assert record["clean"] == 6 + verified
    assert ws.strato("lanes", "--check").returncode == 0  # each clean count is a recorded decision


def test_a_failing_fanout_item_resets_its_stages_lane(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path, WRITER)
    runs = ws.runs()
    _drive(runs, "f1", [f"a{n}" for n in range(6)])
    assert _record(runs)["clean"] == 6
    audit = _drive(runs, "bad", ["a", "forbidden"])
    assert audit["status"] == "failed"
    record = _record(runs)
    assert record["clean"] == 0 and record["failures"] == 1
    assert record["lastReset"]["reason"].startswith("failure: ensure[0] failed")
    assert record["lastReset"]["runId"] == "bad" and record["lastReset"]["stepId"] == "fan/1"


def test_a_paranoid_stage_is_never_skipped(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path, WRITER)
    runs = ws.runs()
    spec = _fanout(stakes="paranoid")
    _drive(runs, "p1", [f"a{n}" for n in range(6)], spec)
    audit = _drive(runs, "p2", [f"b{n}" for n in range(10)], spec)
    assert _replayed(audit) == (10, 0)
    assert {e["detail"]["reason"] for e in decisions(audit)} == {"high stakes: never skipped"}
    assert judge_calls(tmp_path) == 16 and _record(runs)["clean"] == 16


# --- fanout stages, consumer mode


def _consume(runs: Runs, run_id: str, items: list[str], text: str = "hello") -> dict[str, Any]:
    """Plan a consumer fanout and report `text` for every item it hands out."""
    runs.plan(_fanout("consumer"), {"items": items}, run_id)
    while ready := runs.engine(runs.load(run_id)).ready():
        for entry in ready:
            runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"text": text}})
    return runs.audit(run_id)


def test_a_consumer_fanouts_stage_has_the_same_lane_and_learns_item_by_item(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    audit = _consume(runs, "c1", [f"a{n}" for n in range(30)])
    assert audit["status"] == "completed"
    verified, skipped = _replayed(audit)
    streaks = [e["detail"]["streak"] for e in decisions(audit)]
    assert streaks[: lanes.TRUST_AFTER + 1] == list(range(lanes.TRUST_AFTER + 1))  # each result is evidence
    assert skipped >= 3 and judge_calls(tmp_path) == verified
    assert {e["stepId"] for e in decisions(audit)} == {f"fan/{n}" for n in range(30)}
    record = _record(runs)
    assert record["verified"] == verified and record["skipped"] == skipped
    assert ws.strato("lanes", "--check").returncode == 0


def test_a_rude_consumer_item_caught_while_trusted_resets_the_stage_lane(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    _consume(runs, "c1", [f"a{n}" for n in range(20)])
    assert _record(runs)["clean"] >= lanes.TRUST_AFTER
    for n in range(100):  # rude outputs until one is sampled in (at 1/8 or more) and caught
        audit = _consume(runs, f"rude{n}", ["x"], "RUDE words")
        if audit["status"] == "failed":
            break
        assert [e["type"] for e in decisions(audit)] == ["skipped"]  # only an unjudged one passes
    else:
        raise AssertionError("no rude output was ever judged")
    record = _record(runs)
    assert record["clean"] == 0 and "judged false" in record["lastReset"]["reason"]


# --- a gate above a fanout


GATED = FANOUT.replace("    steps:\n      - id: fan", "    max_rounds: 3\n    steps:\n      - id: fan").replace(
    "      - id: total\n        after: [fan]",
    "      - id: review\n        after: [fan]\n        gate: {on_approve: null, on_revise: fan, on_kill: null}\n"
    "      - id: total\n        after: [review]",
)


def test_a_person_revising_at_a_gate_overrides_the_fanout_stage_lanes_above_it(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path, WRITER)
    runs = ws.runs()
    spec = GATED.replace("DISPATCH", "engine").replace("STAKES", "cheap")
    _drive(runs, "g1", [f"a{n}" for n in range(6)], spec)
    runs.gate("g1", "review", "approve", resolved_by="human", via="terminal")
    assert runs.audit("g1")["status"] == "completed" and _record(runs)["clean"] == 6
    _drive(runs, "g2", ["b"], spec)
    runs.gate("g2", "review", "revise", note="not it", resolved_by="human", via="terminal")
    record = _record(runs)
    assert record["clean"] == 0
    assert record["lastReset"]["reason"] == "override: gate review revise by human"


# --- set steps


SET = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {text: string}
    output: {from: "${s.output}", contract: A}
    steps:
      - id: s
        set: {text: "input.text"}
        out: A
        ensure:
          - judged: {statement: "the text is polite", stakes: cheap}
"""


def test_a_set_steps_judged_ensure_has_a_lane_and_is_sampled_by_it(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    verified = skipped = 0
    for n in range(30):
        runs.plan(SET, {"text": "hello"}, f"s{n}")
        audit = runs.audit(f"s{n}")
        assert audit["status"] == "completed"
        v, s = _replayed(audit)
        verified, skipped = verified + v, skipped + s
        assert sum(e["type"] == "judged" for e in audit["events"]) == v  # judged events, as for steps
    assert verified + skipped == 30 and skipped >= 5
    assert judge_calls(tmp_path) == verified
    record = _record(runs, "main/s/set")
    assert record["verified"] == verified and record["skipped"] == skipped
    for n in range(100):
        runs.plan(SET, {"text": "RUDE"}, f"rude{n}")
        if runs.audit(f"rude{n}")["status"] == "failed":
            break
    else:
        raise AssertionError("no rude output was ever judged")
    assert _record(runs, "main/s/set")["clean"] == 0


# --- what the wire says


def test_a_judge_a_lane_skipped_is_not_sent_as_a_skipped_step() -> None:
    """Stratum's `skipped` means the step did not run: a `do` step whose judge was
    sampled out did run, so only the evaluate step that was itself skipped is sent."""
    events = [
        {"at": "t", "type": "skipped", "stepId": "w", "detail": {"check": "judged", "reason": "sampled out"}},
        {"at": "t", "type": "skipped", "stepId": "test", "detail": {"check": "evaluate", "reason": "sampled out"}},
        {"at": "t", "type": "verified", "stepId": "w", "detail": {"check": "judged", "reason": "trusted"}},
    ]
    wire = project([("c", {"events": events})], lambda _commit: {})
    assert wire == [{"at": "t", "type": "skipped", "stepId": "test", "detail": {"reason": "sampled out"}}]
