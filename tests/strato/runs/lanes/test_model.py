"""Adaptive verification: a lane (flow, step, agent) has its judged ensures checked on
every output until it has earned trust, then on a sampled share decided by a hash of
the output's identity; failures, gate overrides and changes of the step's spec or the
agent's configuration reset it; paranoid stakes always run. Runs are real: a git
repository, a real judge subprocess that logs every call, results reported as a
consumer agent would, and the lanes read back from `refs/vivary/lanes`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from strato.runs.lanes import model as lanes
from strato.runs.lanes.store import REF, LaneStore
from strato.runs.service import Runs
from tests.support.approvals import approve_agents, approve_spec
from tests.support.flows import Workspace
from tests.support.lanes import JUDGED_SPEC, LANE, decisions, judge_calls, judged_workspace, run_once
from tests.support.repos import git


def lane(runs: Runs) -> dict[str, Any]:
    return LaneStore(runs.repo).read()[1][LANE]


# --- the rule itself


def test_the_rate_is_full_until_trust_then_halves_per_streak_down_to_a_floor_above_zero() -> None:
    assert [lanes.rate(s) for s in range(lanes.TRUST_AFTER)] == [1.0] * lanes.TRUST_AFTER
    assert lanes.rate(lanes.TRUST_AFTER) == 0.5
    assert lanes.rate(2 * lanes.TRUST_AFTER) == 0.25
    assert lanes.rate(3 * lanes.TRUST_AFTER) == lanes.FLOOR
    assert lanes.rate(10_000) == lanes.FLOOR > 0


def test_the_draw_is_fixed_by_the_outputs_identity_and_nonce_and_differs_between_outputs() -> None:
    a = lanes.draw("run-1", "w", 0, 1, "n")
    assert a == lanes.draw("run-1", "w", 0, 1, "n")
    others = {
        lanes.draw("run-1", "w", 0, 2, "n"),
        lanes.draw("run-2", "w", 0, 1, "n"),
        lanes.draw("run-1", "w", 1, 1, "n"),
        lanes.draw("run-1", "w", 0, 1, "m"),
    }
    assert a not in others and all(0 <= x < 1 for x in {a, *others})


def test_an_agent_cannot_know_its_draw_before_it_answers(tmp_path: Path) -> None:
    """Everything an agent sees before answering (run id, step, epoch, attempt) leaves
    the draw open: the same output identity in two workspaces draws differently."""
    draws = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        ws = judged_workspace(tmp_path / name)
        [decision] = decisions(run_once(ws.runs(), "same-id", "hello"))
        draws.append(decision["detail"]["draw"])
        assert len(decision["detail"]["nonce"]) == 32
    assert draws[0] != draws[1]


def test_replay_refuses_evidence_whose_rate_or_draw_was_altered() -> None:
    decision = lanes.decide(
        lanes.Lane("main", "w", "claude"),
        {"clean": 12, "specDigest": "s", "configDigest": "c"},
        ("s", "c"),
        ("r", "w", 0, 1),
        "nonce",
    )
    assert lanes.replay("w", decision.evidence) == decision.verify
    with pytest.raises(ValueError):
        lanes.replay("w", {**decision.evidence, "rate": 1.0})
    with pytest.raises(ValueError):
        lanes.replay("w", {**decision.evidence, "draw": 0.0})
    with pytest.raises(ValueError):
        lanes.replay("w", {**decision.evidence, "streak": 0})
    with pytest.raises(ValueError):
        lanes.replay("w", {**decision.evidence, "nonce": "other"})


# --- lanes in runs


def test_a_thin_lane_verifies_every_output(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    for n in range(lanes.TRUST_AFTER):
        audit = run_once(runs, f"r{n}", "hello")
        assert audit["status"] == "completed"
        [decision] = decisions(audit)
        assert decision["type"] == "verified"
        assert decision["detail"]["streak"] == n and decision["detail"]["rate"] == 1.0
        assert "not yet trusted" in decision["detail"]["reason"]
    assert judge_calls(tmp_path) == lanes.TRUST_AFTER
    record = lane(runs)
    assert record["clean"] == lanes.TRUST_AFTER and record["verified"] == lanes.TRUST_AFTER
    assert record["rate"] == 0.5


def test_earned_trust_skips_checks_by_the_recorded_rule_and_the_audit_replays_every_decision(
    tmp_path: Path,
) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    verified = skipped = 0
    for n in range(40):
        audit = run_once(runs, f"r{n}", "hello")
        assert audit["status"] == "completed"
        for event in decisions(audit):
            must_check = lanes.replay(event["stepId"], event["detail"])
            assert must_check == (event["type"] == "verified"), event
            verified += event["type"] == "verified"
            skipped += event["type"] == "skipped"
            if event["type"] == "skipped":
                assert event["detail"]["check"] == "judged" and event["detail"]["ensures"] == [1]
                assert event["detail"]["rate"] < 1.0
    assert verified + skipped == 40
    assert skipped >= 10  # trust earned after 5 and halving: most later outputs go unjudged
    assert judge_calls(tmp_path) == verified  # a skipped check never asked the judge
    record = lane(runs)
    assert record["verified"] == verified and record["skipped"] == skipped
    assert lanes.rate(record["clean"]) == record["rate"] < 1.0


def _trusted(tmp_path: Path, count: int = 12) -> tuple[Workspace, Runs]:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    for n in range(count):
        run_once(runs, f"t{n}", "hello")
    assert lane(runs)["clean"] >= lanes.TRUST_AFTER
    return ws, runs


def test_a_failure_resets_the_lane_to_full_verification(tmp_path: Path) -> None:
    _ws, runs = _trusted(tmp_path)
    audit = run_once(runs, "bad", "forbidden")  # the deterministic ensure always runs
    assert audit["status"] == "failed"
    record = lane(runs)
    assert record["clean"] == 0 and record["failures"] == 1
    assert record["lastReset"]["reason"].startswith("failure: ensure[0] failed")
    assert record["lastReset"]["runId"] == "bad"
    after = run_once(runs, "after", "hello")
    [decision] = decisions(after)
    assert decision["type"] == "verified" and decision["detail"]["streak"] == 0


def test_a_judge_failure_caught_while_trusted_also_resets(tmp_path: Path) -> None:
    _ws, runs = _trusted(tmp_path, 15)
    for n in range(200):  # rude outputs until one is sampled in (at 1/8 or more) and caught
        audit = run_once(runs, f"rude{n}", "RUDE words")
        if audit["status"] == "failed":
            break
        assert decisions(audit)[0]["type"] == "skipped"  # only an unjudged rude output passes
    else:
        raise AssertionError("no rude output was ever judged")
    record = lane(runs)
    assert record["clean"] == 0 and "judged false" in record["lastReset"]["reason"]


def test_a_change_of_the_steps_spec_resets_the_lane(tmp_path: Path) -> None:
    _ws, runs = _trusted(tmp_path)
    changed = JUDGED_SPEC.replace("the text is polite", "the text is kind")
    for n in range(lanes.TRUST_AFTER):
        [decision] = decisions(run_once(runs, f"c{n}", "hello", spec=changed))
        assert decision["type"] == "verified" and decision["detail"]["streak"] == n
    [first] = decisions(runs.audit("c0"))
    assert first["detail"]["resetBy"] == "step spec changed"
    assert lane(runs)["lastReset"]["reason"] == "step spec changed"


def test_a_change_of_the_agents_configuration_resets_the_lane(tmp_path: Path) -> None:
    ws, runs = _trusted(tmp_path)
    config = ws.root / ".vivary" / "agents.toml"
    config.write_text(config.read_text().replace("timeout_s = 60\n", "timeout_s = 61\n", 1))
    approve_agents(ws.root)
    runs = ws.runs()
    [decision] = decisions(run_once(runs, "after", "hello"))
    assert decision["type"] == "verified" and decision["detail"]["resetBy"] == "agent configuration changed"
    assert lane(runs)["clean"] == 1


def test_a_paranoid_judged_ensure_is_never_skipped(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    for n in range(30):
        [decision] = decisions(run_once(runs, f"p{n}", "hello", stakes="paranoid"))
        assert decision["type"] == "verified"
        if n >= lanes.TRUST_AFTER:
            assert decision["detail"]["reason"] == "high stakes: never skipped"
    assert judge_calls(tmp_path) == 30
    assert lane(runs)["clean"] == 30 and lane(runs)["rate"] == lanes.FLOOR


GATED = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {}
    max_rounds: 3
    output: {from: "${w.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
        ensure:
          - judged: {statement: "the text is polite", stakes: cheap}
      - id: review
        after: [w]
        gate: {on_approve: null, on_revise: w, on_kill: null}
"""


def test_a_person_revising_at_a_gate_overrides_the_lanes_that_led_to_it(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    for n in range(8):
        snap = runs.plan(GATED, {}, f"g{n}").snap
        runs.done(snap.run_id, "w", snap.state["scope"]["steps"]["w"]["dispatchToken"], {"output": {"text": "hi"}})
        runs.gate(snap.run_id, "review", "approve", resolved_by="human", via="terminal")
    assert lane(runs)["clean"] >= lanes.TRUST_AFTER
    snap = runs.plan(GATED, {}, "g-revise").snap
    runs.done(snap.run_id, "w", snap.state["scope"]["steps"]["w"]["dispatchToken"], {"output": {"text": "hi"}})
    runs.gate(snap.run_id, "review", "revise", note="not it", resolved_by="human", via="terminal")
    record = lane(runs)
    assert record["clean"] == 0
    assert record["lastReset"]["reason"] == "override: gate review revise by human"


EVALUATED = """
version: 1
contracts:
  A: {text: string}
  T: {passed: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${w.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
      - id: test
        after: [w]
        evaluate:
          command: COMMAND
        out: T
"""


def test_an_evaluate_command_nobody_reads_is_sampled_and_one_whose_output_is_read_always_runs(
    tmp_path: Path,
) -> None:
    ws = judged_workspace(tmp_path)
    tool = tmp_path / "tool.py"
    tool.write_text(f"open({str(tmp_path / 'tool.log')!r}, 'a').write('x\\n')\nprint('{{\"passed\": true}}')\n")
    spec = EVALUATED.replace("COMMAND", json.dumps(f"{sys.executable} {tool}"))
    runs = ws.runs()
    approve_spec(ws.root, spec)
    kinds = []
    for n in range(40):
        snap = runs.plan(spec, {}, f"e{n}").snap
        runs.done(snap.run_id, "w", snap.state["scope"]["steps"]["w"]["dispatchToken"], {"output": {"text": "x"}})
        audit = runs.audit(snap.run_id)
        assert audit["status"] == "completed"
        [decision] = decisions(audit)
        assert lanes.replay("test", decision["detail"]) == (decision["type"] == "verified")
        kinds.append(decision["type"])
    assert kinds[: lanes.TRUST_AFTER] == ["verified"] * lanes.TRUST_AFTER and "skipped" in kinds
    assert len((tmp_path / "tool.log").read_text().splitlines()) == kinds.count("verified")
    assert LaneStore(runs.repo).read()[1]["main/test/command"]["skipped"] == kinds.count("skipped")

    read = spec.replace('output: {from: "${w.output}", contract: A}', 'output: {from: "${test.output}", contract: T}')
    approve_spec(ws.root, read, "read.yaml")
    for n in range(10):
        snap = runs.plan(read, {}, f"read{n}").snap
        runs.done(snap.run_id, "w", snap.state["scope"]["steps"]["w"]["dispatchToken"], {"output": {"text": "x"}})
        assert runs.audit(snap.run_id)["status"] == "completed"  # its output was there to read


def test_lanes_travel_with_push_and_fetch_and_show_in_strato_lanes(tmp_path: Path) -> None:
    ws, _runs = _trusted(tmp_path, lanes.TRUST_AFTER)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "push", "-q", str(remote), f"{REF}:{REF}")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "fetch", "-q", "origin", f"{REF}:{REF}")
    code, view = ws.strato_json("lanes")
    assert code == 0
    code, fetched = Workspace(clone, ws.plan_file).strato_json("lanes")
    assert code == 0 and fetched == view
    [row] = view["lanes"]
    assert row["lane"] == LANE and row["clean"] == lanes.TRUST_AFTER and row["rate"] == 0.5 and row["lastReset"] is None
    text = ws.strato("lanes").stdout
    assert LANE in text and "0.5" in text
    log = git(ws.root, "log", "--format=%s", REF)
    assert log.count("lanes: clean main/w/claude") == lanes.TRUST_AFTER


def test_strato_lanes_on_a_corrupt_ref_is_one_line_and_exit_1(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    (ws.root / "lanes.json").write_text("not json")
    git(ws.root, "add", "lanes.json")
    git(ws.root, "commit", "-qm", "bogus")
    git(ws.root, "update-ref", REF, "HEAD")
    proc = ws.strato("lanes")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not JSON" in proc.stderr


def _git_in(cwd: Path, text: str, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=text, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _forge(ws: Workspace, lanes_json: str, message: str) -> None:
    """Move the lanes ref as an agent with a shell could: plain git plumbing."""
    blob = _git_in(ws.root, lanes_json, "hash-object", "-w", "--stdin")
    tree = _git_in(ws.root, f"100644 blob {blob}\tlanes.json\n", "mktree")
    parent = git(ws.root, "rev-parse", REF).strip()
    commit = git(ws.root, "commit-tree", tree, "-p", parent, "-m", message).strip()
    git(ws.root, "update-ref", REF, commit)


def test_strato_lanes_check_finds_a_tip_that_its_history_does_not_explain(tmp_path: Path) -> None:
    ws, runs = _trusted(tmp_path, lanes.TRUST_AFTER)
    assert ws.strato("lanes", "--check").returncode == 0
    _tip, current = LaneStore(runs.repo).read()
    forged = {LANE: {**current[LANE], "clean": 100, "rate": lanes.FLOOR}}
    _forge(ws, json.dumps({"version": 1, "lanes": forged}), "lanes: tidy")
    proc = ws.strato("lanes", "--check")
    assert proc.returncode == 1 and "not what its history of evidence folds to" in proc.stdout


def test_strato_lanes_check_finds_clean_evidence_no_run_recorded(tmp_path: Path) -> None:
    ws, runs = _trusted(tmp_path, lanes.TRUST_AFTER)
    _tip, current = LaneStore(runs.repo).read()
    fake = [{"kind": "clean", "lane": LANE, "runId": "never-ran", "stepId": "w", "attempt": 1,
             "specDigest": current[LANE]["specDigest"], "configDigest": current[LANE]["configDigest"]}
            for _ in range(20)]
    replayed = json.loads(json.dumps(current))
    for item in fake:
        lanes.fold(replayed, item)
    _forge(ws, json.dumps({"version": 1, "lanes": replayed}), "lanes: clean\n\n" + json.dumps(fake))
    code, report = ws.strato_json("lanes", "--check")
    assert code == 1 and not report["ok"]
    assert len(report["findings"]) == 20 and "'never-ran'" in report["findings"][0]


def test_a_malformed_lanes_ref_means_full_verification_and_is_reported(tmp_path: Path) -> None:
    ws, runs = _trusted(tmp_path, 8)
    _tip, current = LaneStore(runs.repo).read()
    _forge(ws, json.dumps({"version": 1, "lanes": {LANE: {**current[LANE], "clean": "lots"}}}), "lanes: x")
    proc = ws.strato("lanes")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "malformed" in proc.stderr
    [decision] = decisions(run_once(runs, "after", "hello"))
    assert decision["type"] == "verified" and decision["detail"]["streak"] == 0
    record = lane(runs)  # the next evidence starts the lanes over on top of the bad tip
    assert record["clean"] == 1
    assert "unreadable" in git(ws.root, "log", "-1", "--format=%s", REF)
