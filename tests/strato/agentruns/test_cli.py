"""`strato agent run|poll|cancel` with real subprocess agents, the process tree read from /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from strato.agentruns.store import STREAM_LIMIT
from strato.agents import groups
from strato.agents.process import MAX_KEPT
from tests.support.runs import strato, wait_for

# their agents ignore SIGTERM; the claim is that they are stopped, not the grace's length
pytestmark = pytest.mark.usefixtures("short_grace")


def runs_dir(root: Path) -> Path:
    return root / ".git" / "vivary" / "agent-runs"


def test_foreground_run_completes_with_text_usage_and_telemetry(workspace: Path) -> None:
    code, doc, _ = strato(workspace, "agent", "run", "steady", "--prompt", "now", "--model", "m-1")
    assert code == 0
    assert set(doc) == {"status", "text", "usage", "telemetry"}
    assert doc["status"] == "complete" and doc["text"] == "done: now"
    assert doc["usage"] == {"usd": 0.25, "tokens": 15}
    assert doc["telemetry"]["model"] == "m-1" and doc["telemetry"]["durationMs"] >= 0


def test_background_run_outlives_its_caller_and_is_polled_to_the_end(workspace: Path) -> None:
    code, started, _ = strato(workspace, "agent", "run", "steady", "--prompt", "wait", "--background")
    assert code == 0 and started["status"] == "bg_started"
    assert Path(started["streamPath"]).parent.parent == runs_dir(workspace)
    run_id = started["runId"]  # the `strato` process that started it has exited by now

    running = wait_for(
        lambda: (d := strato(workspace, "agent", "poll", run_id)[1])["eventsSeen"] == 2 and d, "two events"
    )
    assert running["status"] == "running" and '"n": 2' in running["textTail"]
    (workspace / "go").touch()
    done = wait_for(
        lambda: (d := strato(workspace, "agent", "poll", run_id)[1])["status"] != "running" and d, "the end"
    )
    assert done == {"status": "complete", "runId": run_id, "text": "done: wait", "exitCode": 0,
                    "usage": {"usd": 0.25, "tokens": 15}, "telemetry": done["telemetry"]}
    assert strato(workspace, "agent", "cancel", run_id)[1] == {"status": "already_complete", "runId": run_id}


def _pids(root: Path) -> list[int]:
    path = root / "pids.txt"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_cancel_stops_a_forking_agent_that_ignores_sigterm(workspace: Path) -> None:
    _, started, _ = strato(workspace, "agent", "run", "hostile", "--prompt", "x", "--background")
    run_id = started["runId"]
    pids = wait_for(lambda: len(_pids(workspace)) == 4 and _pids(workspace), "four processes")
    pgid = os.getpgid(pids[0])
    assert all(os.getpgid(p) == pgid for p in pids) and sorted(groups.members(pgid)) == sorted(pids)
    os.killpg(pgid, signal.SIGTERM)  # what a plain kill would do: nothing, they ignore it
    assert sorted(groups.members(pgid)) == sorted(pids)

    code, doc, _ = strato(workspace, "agent", "cancel", run_id, "--grace", "0.5")
    assert code == 0 and doc == {"status": "cancelled", "runId": run_id}
    assert groups.members(pgid) == [] and not any(groups.alive(p) for p in pids)

    code, polled, _ = strato(workspace, "agent", "poll", run_id)
    assert code == 1 and polled["status"] == "error" and polled["reason"] == "cancelled by cli"
    assert "still here" in polled["textTail"]
    assert strato(workspace, "agent", "cancel", run_id)[1] == {"status": "already_error", "runId": run_id}


def test_a_timeout_stops_the_whole_group_too(workspace: Path) -> None:
    code, doc, _ = strato(workspace, "agent", "run", "sleepy", "--prompt", "x")
    assert code == 1 and doc["status"] == "error" and doc["reason"] == "timed out after 1s"
    pids = _pids(workspace)
    assert len(pids) == 4 and not any(groups.alive(p) for p in pids)


def test_a_flood_of_output_is_bounded_on_disk_and_in_the_answer(workspace: Path) -> None:
    code, doc, _ = strato(workspace, "agent", "run", "flood", "--prompt", "x")
    assert code == 0 and doc["status"] == "complete"
    assert doc["text"].endswith("the end") and len(doc["text"]) <= MAX_KEPT
    (run,) = runs_dir(workspace).iterdir()
    on_disk = sum(f.stat().st_size for f in run.glob("stream.log*"))
    assert on_disk <= 2 * STREAM_LIMIT < 100 * 1024 * 1024
    assert (run / "stream.log").read_bytes().endswith(b"the end\n")


def test_no_output_and_a_crash_are_errors_with_their_tails(workspace: Path) -> None:
    code, doc, _ = strato(workspace, "agent", "run", "silent", "--prompt", "x")
    assert code == 1 and doc["reason"] == "exited 0 without output" and doc["exitCode"] == 0
    code, doc, _ = strato(workspace, "agent", "run", "crash", "--prompt", "x")
    assert code == 1 and doc["exitCode"] == 3 and doc["reason"] == "exited 3"
    assert "half an answer" in doc["textTail"] and "disk on fire" in doc["stderrTail"]


def test_a_runner_killed_with_its_agent_is_reported_not_left_running(workspace: Path) -> None:
    _, started, _ = strato(workspace, "agent", "run", "hostile", "--prompt", "x", "--background")
    pids = wait_for(lambda: len(_pids(workspace)) == 4 and _pids(workspace), "four processes")
    os.kill(started["pid"], signal.SIGKILL)
    os.killpg(os.getpgid(pids[0]), signal.SIGKILL)
    wait_for(lambda: not groups.alive(started["pid"]) and not any(groups.alive(p) for p in pids), "all dead")
    code, doc, _ = strato(workspace, "agent", "poll", started["runId"])
    assert code == 1 and doc["reason"] == "runner died before the agent finished"


def test_bad_input_is_one_line_and_changes_nothing(workspace: Path) -> None:
    for args, want in [
        (("run", "nobody", "--prompt", "x"), "no agent 'nobody'"),
        (("run", "steady", "--prompt", "x", "--cwd", ".."), "not a folder inside the workspace"),
        (("run", "steady", "--prompt", "x", "--cwd", "/etc"), "not a folder inside the workspace"),
    ]:
        code, doc, err = strato(workspace, "agent", *args)
        assert code == 2 and err.count("\n") == 1 and want in err, err
        assert doc is not None and doc["ok"] is False and doc["exitCode"] == 2 and want in doc["error"]["message"]
    assert not runs_dir(workspace).exists()
    for bad in ("ar-000000000000", "../../HEAD", "ar-../x"):
        code, doc, _ = strato(workspace, "agent", "poll", bad)
        assert code == 1 and doc == {"status": "not_found", "runId": bad}
        assert strato(workspace, "agent", "cancel", bad)[1] == {"status": "not_found", "runId": bad}


def test_two_cancels_at_once_stop_it_once(workspace: Path) -> None:
    _, started, _ = strato(workspace, "agent", "run", "hostile", "--prompt", "x", "--background")
    pids = wait_for(lambda: len(_pids(workspace)) == 4 and _pids(workspace), "four processes")
    argv = [sys.executable, "-m", "strato.cli", "agent", "cancel", started["runId"], "--grace", "0.5",
            "--root", str(workspace), "--json"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    answers = [json.loads(p.communicate()[0])["status"] for p in procs]
    assert "cancelled" in answers and set(answers) <= {"cancelled", "already_error"}
    assert not any(groups.alive(p) for p in pids)
    polled = strato(workspace, "agent", "poll", started["runId"])[1]
    assert polled["status"] == "error" and polled["reason"] == "cancelled by cli"


def test_an_agents_file_changed_after_its_approval_is_refused_and_creates_nothing(workspace: Path) -> None:
    toml = workspace / ".vivary" / "agents.toml"
    toml.write_text(toml.read_text().replace("agents/steady.py", "agents/hostile.py"))
    code, doc, err = strato(workspace, "agent", "run", "steady", "--prompt", "x")
    assert code == 1 and doc["error"]["code"] == "untrusted" and err.count("\n") == 1
    assert err.startswith("error: .vivary/agents.toml is changed since you approved it; it would run ")
    assert not runs_dir(workspace).exists() and not (workspace / "pids.txt").exists()
