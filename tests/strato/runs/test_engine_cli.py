"""The `strato flow` and `strato run` commands as a person or an outside agent uses
them: real processes, --json with stable keys, exit codes 0/1/2, one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.flows import FIXTURES, STRATO, make_workspace, reply

GATE = str(FIXTURES / "readme_gate.stratum.yaml")


def test_consumer_mode_round_trip(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    code, planned = ws.strato_json("flow", "plan", GATE, "--input", "text=a haiku")
    assert code == 0 and planned["status"] == "running"
    run_id = planned["runId"]
    [entry] = planned["ready"]
    assert entry["id"] == "work" and entry["do"] == "Produce the deliverable requested in a haiku"
    code, nxt = ws.strato_json("flow", "next", run_id)
    assert code == 0 and nxt["ready"][0]["dispatchToken"] == entry["dispatchToken"]
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"output": {"result": "snow", "quality_score": 0.95}}))
    code, done = ws.strato_json("flow", "done", run_id, "work", "--token", entry["dispatchToken"], "--result", f"@{result}")
    assert code == 0 and done["ready"] == [] and done["gates"][0]["stepId"] == "review"
    code, gates = ws.strato_json("flow", "gates")
    assert [g["runId"] for g in gates["gates"]] == [run_id]
    code, commit = ws.strato_json("flow", "commit", run_id, "at-gate")
    assert code == 0 and commit["checkpoints"] == ["at-gate"]
    code, approved = ws.strato_json("flow", "gate", "approve", run_id, "review", "--note", "lovely")
    assert code == 0 and approved["status"] == "completed"
    assert approved["output"] == {"result": "snow", "quality_score": 0.95}
    code, audit = ws.strato_json("flow", "audit", run_id)
    types = [e["type"] for e in audit["events"]]
    assert types == ["planned", "ready", "result", "gate_waiting", "gate_resolved", "completed"]
    assert audit["events"][4]["detail"]["note"] == "lovely"
    code, listing = ws.strato_json("flow", "list")
    assert listing["runs"][0]["status"] == "completed"
    watch = ws.strato("flow", "watch", run_id, "--json")
    assert watch.returncode == 0 and len(watch.stdout.splitlines()) == 6
    code, show = ws.strato_json("flow", "show", run_id)
    assert show["steps"] == {"work": "succeeded", "review": "succeeded"} and show["checkpoints"] == ["at-gate"]
    # revert goes back to the gate; a completed run can be reopened that way
    code, reverted = ws.strato_json("flow", "revert", run_id, "at-gate")
    assert code == 0 and reverted["status"] == "running" and reverted["gates"][0]["stepId"] == "review"
    code, rejected = ws.strato_json("flow", "gate", "reject", run_id, "review")
    assert code == 1 and rejected["failure"]["killed"] is True


def test_refusals_exit_1_and_change_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _, planned = ws.strato_json("flow", "plan", GATE, "--input", "text=x")
    run_id = planned["runId"]
    head = planned["head"]
    cases = [
        ("flow", "done", run_id, "work", "--token", "forged", "--result", '{"output": {}}'),
        ("flow", "done", run_id, "review", "--token", "t", "--result", '{"output": {}}'),
        ("flow", "gate", "approve", run_id, "work"),
        ("flow", "gate", "approve", run_id, "review"),
        ("flow", "revert", run_id, "unknown-label"),
        ("flow", "show", "no-such-run"),
    ]
    for args in cases:
        proc = ws.strato(*args)
        assert proc.returncode == 1, args
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    _, show = ws.strato_json("flow", "show", run_id)
    assert show["head"] == head
    proc = ws.strato("flow", "revert", run_id, "unknown-label", "--json")
    assert json.loads(proc.stdout)["error"]["code"] == "checkpoint_not_found"


@pytest.mark.parametrize(
    "args",
    [
        ("flow", "plan", "missing.yaml"),
        ("flow", "plan", GATE),  # input missing: contract
        ("flow", "plan", GATE, "--input", "novalue"),
        ("flow", "done", "r", "s", "--token", "t", "--result", "{not json"),
        ("flow", "gate", "maybe", "r", "s"),
    ],
)
def test_usage_and_spec_errors_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    ws = make_workspace(tmp_path)
    proc = ws.strato(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


def test_invalid_spec_reports_codes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ncontracts: {}\nflows:\n  entry: nope\n")
    proc = ws.strato("flow", "plan", str(bad), "--json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["errors"][0]["code"] == "FLOW_UNKNOWN_ENTRY"


def test_strato_run_drives_to_the_gate_then_resumes_after_approval(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "deliverable", "replies": [reply({"result": "x", "quality_score": 0.1}),
                                                    reply({"result": "y", "quality_score": 0.99})]}])
    proc = ws.strato("run", GATE, "--input", "text=t", "--json")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert view["status"] == "running" and view["gates"][0]["stepId"] == "review"
    code, done = ws.strato_json("flow", "gate", "approve", view["runId"], "review")
    assert code == 0 and done["output"]["result"] == "y"


def test_strato_run_exits_1_when_the_run_fails(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "deliverable", "replies": [{"say": "I refuse"}]}])
    proc = ws.strato("run", GATE, "--input", "text=t")
    assert proc.returncode == 1
    assert "failed" in proc.stdout


def test_every_command_has_help_with_an_example(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for cmd in ("plan", "next", "done", "gate", "gates", "commit", "revert", "cancel", "audit", "list", "show", "watch"):
        proc = ws.strato("flow", cmd, "--help")
        assert proc.returncode == 0 and "Example" in proc.stdout, cmd
    assert "Example" in ws.strato("run", "--help").stdout


def test_watch_follows_a_run_moved_by_another_process_until_it_ends(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _, planned = ws.strato_json("flow", "plan", GATE, "--input", "text=a haiku", "--id", "w1")
    watcher = subprocess.Popen(
        [str(STRATO), "flow", "watch", "w1", "--json", "--interval", "0.02", "--root", str(ws.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None
    # the watcher prints what is already there, then waits for the ref to move
    first = [json.loads(watcher.stdout.readline())["type"] for _ in range(2)]
    assert first == ["planned", "ready"]
    token = planned["ready"][0]["dispatchToken"]
    result = json.dumps({"output": {"result": "snow", "quality_score": 0.95}})
    ws.strato("flow", "done", "w1", "work", "--token", token, "--result", result, check=True)
    assert json.loads(watcher.stdout.readline())["type"] == "result"
    assert json.loads(watcher.stdout.readline())["type"] == "gate_waiting"
    ws.strato("flow", "gate", "approve", "w1", "review", check=True)
    rest, _ = watcher.communicate()
    assert watcher.returncode == 0
    assert [json.loads(line)["type"] for line in rest.splitlines()] == ["gate_resolved", "completed"]
    # every event exactly once, in the order the audit reads them from the ref's history
    audit = ws.runs().audit("w1")
    assert [e["type"] for e in audit["events"]] == [*first, "result", "gate_waiting", "gate_resolved", "completed"]


def test_watch_exits_1_when_the_run_fails_and_on_an_unknown_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.strato("flow", "plan", GATE, "--input", "text=x", "--id", "w2", check=True)
    ws.strato("flow", "cancel", "w2", check=True)
    proc = ws.strato("flow", "watch", "w2", "--json")
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1].count("flow_cancelled") == 1
    missing = ws.strato("flow", "watch", "nope")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no run")
