"""Background flow runs with real subprocess agents: a detached runner drives the run from
its ref, survives nothing (kill -9 at random points: a new runner resumes and no step's
agent runs twice), waits at gates with no process left, and a cancel stops every agent
process it started, read from /proc."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from strato.agents import groups
from strato.agents.interpreter import own_python
from strato.agents.locks import is_held
from strato.runs.background import runner as background
from strato.runs.engine.state import RUN_TERMINAL
from strato.runs.service import Runs
from strato.runs.views import wire
from tests.support.approvals import approve_agents
from tests.support.runs import (
    STEPS_SPEC,
    calls,
    ended,
    fanout_spec,
    is_runner,
    kill_hostiles,
    make_workspace,
    one_step_spec,
    pids,
    runner_pid,
    strato,
    wait_for,
)

# their agents ignore SIGTERM; the claim is that they are stopped, not the grace's length
pytestmark = pytest.mark.usefixtures("short_grace")


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    yield make_workspace(repo_dir)
    kill_hostiles(repo_dir)


def foreground(root: Path, spec: str, tag: str, **inputs: Any) -> tuple[dict[str, Any], list[str]]:
    """The same spec run in the foreground: what a background run must end as."""
    runs = Runs(root)
    snap = runs.drive(runs.plan(spec, {"tag": tag, **inputs}).snap.run_id)
    return _ending(snap.state), calls(root, tag)


def _ending(state: dict[str, Any]) -> dict[str, Any]:
    steps = {k: (v["status"], len(v["attempts"]), v.get("output")) for k, v in state["scope"]["steps"].items()}
    return {"status": state["status"], "output": state.get("output"), "failure": state.get("failure"),
            "steps": steps}


def no_runner(root: Path, run_id: str) -> bool:
    pid = runner_pid(root, run_id)
    lock = root / ".git" / "vivary" / "bg" / run_id / "runner.lock"
    return not is_held(lock) and (pid is None or not is_runner(pid))


def test_a_background_run_ends_as_the_foreground_run_does(workspace: Path) -> None:
    expected, dispatched = foreground(workspace, STEPS_SPEC, "fg")
    assert dispatched == ["draft", "fix", "fix", "finish"]  # the wrong agent was retried once

    code, started, _ = strato(workspace, "run", str(workspace / "specs/steps.yaml"), "--input", "tag=bg", "--background")
    assert code == 0 and set(started) == {"status", "runId"} and started["status"] == "running"
    run_id = started["runId"]  # the process that started it has exited
    doc = ended(workspace, run_id)
    assert doc["status"] == "completed" and doc["output"] == {"text": "finish done"}
    assert _ending(Runs(workspace).load(run_id).state) == expected
    assert calls(workspace, "bg") == dispatched
    assert doc["bg"] == {"status": "completed", "cancelRequested": False, "pendingGates": []}
    assert wait_for(lambda: no_runner(workspace, run_id), "the runner exits")


def test_poll_pages_events_from_a_cursor(workspace: Path) -> None:
    run_id = background.start(Runs(workspace), STEPS_SPEC, {"tag": "page"})
    everything = ended(workspace, run_id)["events"]
    assert next(e["type"] for e in everything) == "planned" and everything[-1]["type"] == "completed"

    code, doc, _ = strato(workspace, "flow", "poll", run_id, "--cursor", "3")
    assert code == 0 and doc["events"] == everything[3:] and doc["nextCursor"] == len(everything)
    code, doc, _ = strato(workspace, "flow", "poll", run_id, "--cursor", str(len(everything)))
    assert code == 0 and doc["events"] == []
    code, doc, err = strato(workspace, "flow", "poll", run_id, "--cursor", str(len(everything) + 1))
    assert code == 2 and doc["error"]["code"] == "invalid_cursor" and err.count("\n") == 1
    code, doc, err = strato(workspace, "flow", "poll", run_id, "--cursor", "-1")
    assert code == 2 and doc["error"]["code"] == "invalid_cursor"
    code, doc, err = strato(workspace, "flow", "poll", "no-such-run")
    assert code == 1 and doc["error"]["code"] == "run_not_found" and err.count("\n") == 1


def test_an_unknown_run_is_one_line_exit_1_and_starts_nothing(workspace: Path) -> None:
    for args in (("flow", "poll", "ghost", "--cursor", "0"), ("flow", "cancel", "ghost"), ("flow", "next", "ghost"),
                 ("flow", "resume", "ghost"), ("run", "--resume", "ghost"), ("run", "--resume", "ghost", "--background")):
        code, doc, err = strato(workspace, *args)
        expected = 2 if args[1] == "cancel" else 1  # Stratum's `flow cancel`: 2 for an unknown flow
        assert code == expected and doc["error"]["code"] == "run_not_found" and err.count("\n") == 1, (args, err)
    assert not (workspace / ".git" / "vivary" / "bg").exists()
    assert Runs(workspace).store.run_ids() == []


def test_a_gate_waits_with_no_runner_and_a_decision_starts_one(workspace: Path) -> None:
    code, started, _ = strato(workspace, "run", str(workspace / "specs/gated.yaml"), "--input", "tag=gate", "--background")
    run_id = started["runId"]

    def waiting() -> dict[str, Any] | None:
        doc = strato(workspace, "flow", "poll", run_id)[1]
        return doc if doc["bg"]["status"] == "waiting_gate" else None

    doc = wait_for(waiting, "the run waits at its gate")
    assert doc["status"] == "running"
    assert doc["bg"] == {"status": "waiting_gate", "cancelRequested": False, "pendingGates": ["review"],
                         "gateStepId": "review"}
    assert wait_for(lambda: no_runner(workspace, run_id), "no runner waits at the gate")
    assert strato(workspace, "flow", "poll", run_id)[1]["bg"]["status"] == "waiting_gate"
    assert no_runner(workspace, run_id), "a poll at a gate started a runner with nothing to do"

    # revise sends the run back to `draft`: the decision itself starts a runner
    code, _, err = strato(workspace, "flow", "gate", "revise", run_id, "review", "--resolved-by", "agent")
    assert code == 0, err
    wait_for(lambda: calls(workspace, "gate") == ["draft", "draft"], "draft is dispatched again")
    doc = wait_for(waiting, "the run waits at its gate again")
    assert doc["bg"]["pendingGates"] == ["review"]
    code, _, _ = strato(workspace, "flow", "gate", "approve", run_id, "review", "--resolved-by", "agent")
    assert ended(workspace, run_id)["output"] == {"text": "draft done"}
    assert calls(workspace, "gate") == ["draft", "draft"]
    # the first runner started the run; each decision's runner took it up again
    runs = Runs(workspace)
    kinds = [e["type"] for e in wire.events(runs, run_id) if e["type"] in ("resumed", "gate_resolved", "ready")]
    assert kinds == ["ready", "gate_resolved", "ready", "resumed", "gate_resolved"], kinds
    audit = [e for e in runs.audit(run_id)["events"] if e["type"] == "resumed"]
    assert [e["detail"] for e in audit] == [{"by": "runner"}]


def test_cancel_stops_an_agent_that_ignores_sigterm_and_everything_it_forked(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, one_step_spec("hostile"), {"tag": "h"})
    procs = wait_for(lambda: len(pids(workspace, "h")) == 4 and pids(workspace, "h"), "four agent processes")
    pgid = os.getpgid(procs[0])
    assert sorted(groups.members(pgid)) == sorted(procs)
    os.killpg(pgid, signal.SIGTERM)  # what a plain kill does to it: nothing
    assert sorted(groups.members(pgid)) == sorted(procs)

    code, view, err = strato(workspace, "flow", "cancel", run_id, "--reason", "superseded")
    assert code == 0, err
    assert view["status"] == "cancelled"
    assert groups.members(pgid) == [] and not any(groups.alive(p) for p in procs)
    doc = background.poll(runs, run_id)
    assert doc["status"] == "failed" and doc["failure"] == {"attempt": 0, "reason": "cancelled: superseded"}
    assert doc["bg"] == {"status": "cancelled", "cancelRequested": True, "pendingGates": []}
    cancelled = [e for e in doc["events"] if e["type"] == "flow_cancelled"]
    assert len(cancelled) == 1
    assert cancelled[0]["detail"] == {"by": "cli", "reason": "superseded", "burned": {"steps": ["work"], "items": 0}}
    assert calls(workspace, "h") == ["work"]
    assert wait_for(lambda: no_runner(workspace, run_id), "the runner exits")
    code, again, _ = strato(workspace, "flow", "cancel", run_id)  # a retried cancel is safe
    assert code == 0 and again["status"] == "cancelled" and again["reason"] == "already_cancelled"


def test_cancel_with_no_runner_is_recorded_by_the_canceller(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, (workspace / "specs" / "gated.yaml").read_text(), {"tag": "c"})
    wait_for(lambda: background.poll(runs, run_id)["bg"]["status"] == "waiting_gate", "the gate")
    assert wait_for(lambda: no_runner(workspace, run_id), "no runner")
    assert background.cancel(runs, run_id, "mcp") == "cancelled"
    detail = next(e for e in wire.events(runs, run_id) if e["type"] == "flow_cancelled")["detail"]
    assert detail == {"by": "mcp", "burned": {"steps": ["review"], "items": 0}}


def test_an_agent_that_exits_without_output_fails_the_run_as_in_the_foreground(workspace: Path) -> None:
    spec = one_step_spec("silent")
    expected, dispatched = foreground(workspace, spec, "s-fg")
    assert expected["status"] == "failed" and dispatched == ["work", "work"]
    run_id = background.start(Runs(workspace), spec, {"tag": "s-bg"})
    doc = ended(workspace, run_id)
    assert doc["status"] == "failed" and doc["failure"] == wire.failure(expected)
    assert _ending(Runs(workspace).load(run_id).state) == expected
    assert calls(workspace, "s-bg") == dispatched


def test_a_missing_agent_program_fails_a_background_run_at_once_as_in_the_foreground(workspace: Path) -> None:
    (workspace / ".vivary" / "agents.toml").write_text('[agents.claude]\nargv = ["no-such-agent-here", "{prompt}"]\n')
    approve_agents(workspace)
    spec = one_step_spec("steady")  # attempts: 2, and none is made again
    expected, _ = foreground(workspace, spec, "nf-fg")
    [(status, tries, _)] = expected["steps"].values()
    assert status == "failed" and tries == 1 and expected["failure"]["reason"].startswith("agent_not_found")
    run_id = background.start(Runs(workspace), spec, {"tag": "nf-bg"})
    doc = ended(workspace, run_id)
    assert doc["status"] == "failed" and doc["failure"] == wire.failure(expected)
    assert _ending(Runs(workspace).load(run_id).state) == expected


def test_resume_carries_a_planned_run_on_in_the_background(workspace: Path) -> None:
    code, planned, _ = strato(workspace, "flow", "plan", str(workspace / "specs/steps.yaml"), "--input", "tag=res")
    assert code == 0 and [e["id"] for e in planned["ready"]] == ["draft"] and calls(workspace, "res") == []
    code, doc, _ = strato(workspace, "flow", "resume", planned["runId"])
    assert code == 0 and doc["bg"]["status"] in ("running", "completed")
    assert ended(workspace, planned["runId"])["output"] == {"text": "finish done"}
    assert calls(workspace, "res") == ["draft", "fix", "fix", "finish"]
    audit = Runs(workspace).audit(planned["runId"])["events"]
    assert [e.get("detail") for e in audit if e["type"] == "resumed"] == [{"by": "cli"}]  # its runner: no second
    code, doc, _ = strato(workspace, "flow", "resume", planned["runId"])  # an ended run is not resumed
    assert code == 0 and [e["type"] for e in doc["events"]].count("resumed") == 1
    code, _, err = strato(workspace, "flow", "resume", "no-such-run")
    assert code == 1 and err.count("\n") == 1


def test_two_runners_never_drive_one_run(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, STEPS_SPEC, {"tag": "two"})
    for _ in range(4):  # as a crowd of pollers that all saw no runner would
        background.launch(runs, run_id)
    assert ended(workspace, run_id)["status"] == "completed"
    assert calls(workspace, "two") == ["draft", "fix", "fix", "finish"]


def test_a_foreground_resume_refuses_a_run_its_runner_drives(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, one_step_spec("hostile"), {"tag": "fr"})
    wait_for(lambda: len(pids(workspace, "fr")) == 4, "the agent runs")
    code, _, err = strato(workspace, "run", "--resume", run_id)
    assert code == 1 and "background runner" in err and err.count("\n") == 1
    assert background.cancel(runs, run_id, "cli") == "cancelled"


def killed_at_random(
    workspace: Path, spec: str, inputs: dict[str, Any], repeats: int, tag: str, ordered: bool = True
) -> int:
    """Run `spec` `repeats` times in the background, killing the runner with SIGKILL
    once or twice at random moments (between or inside steps, while agents run or just
    after one answered) while polls restart it: every run must end as the foreground run
    did, with each agent started exactly as often. The number of kills that landed."""
    if os.nice(0) < 19:
        os.nice(19 - os.nice(0))  # a heavy loop on a shared machine: everything it starts inherits this
    expected, dispatched = foreground(workspace, spec, f"{tag}-fg", **inputs)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = 0
    for i in range(repeats):
        run_tag = f"{tag}{i}"
        runs = Runs(workspace)
        run_id = background.start(runs, spec, {"tag": run_tag, **inputs})
        for _ in range(rng.randint(1, 2)):
            after = rng.randint(0, len(dispatched))  # dispatches started before the kill

            def due(run_tag: str = run_tag, after: int = after, run_id: str = run_id) -> bool:
                polled = background.poll(Runs(workspace), run_id)  # as a client would: it restarts a dead runner
                return len(calls(workspace, run_tag)) >= after or polled["bg"]["status"] in RUN_TERMINAL

            wait_for(due, f"{after} dispatches of {run_tag}")
            time.sleep(rng.uniform(0, 0.4))  # a random point, not a wait for an event
            pid = runner_pid(workspace, run_id)
            if pid is not None and is_runner(pid):
                os.kill(pid, signal.SIGKILL)
                kills += 1
        ended(workspace, run_id)
        state = Runs(workspace).load(run_id).state
        assert _ending(state) == expected, f"seed {seed}, run {i}"
        got = calls(workspace, run_tag)
        assert (got if ordered else sorted(got)) == (dispatched if ordered else sorted(dispatched)), (
            f"seed {seed}, run {i}: dispatches {got}"
        )
        _item_calls_sent_once(workspace, run_id, f"seed {seed}, run {i}")
    print(f"seed {seed}: {kills} kills of a live runner in {repeats} runs")
    return kills


def _item_calls_sent_once(root: Path, run_id: str, where: str) -> None:
    """Each fanout item call is on the wire once: handed out, debited and settled."""
    events = wire.events(Runs(root), run_id)

    def keys(kind: str) -> list[tuple[int, int, int]]:
        return [(e["detail"]["itemIndex"], e["detail"]["stage"], e["detail"]["attempt"])
                for e in events if e["type"] == kind]

    handed = keys("fanout_item_dispatched")
    assert len(set(handed)) == len(handed) and sorted(handed) == sorted(keys("fanout_attempt_result")), where
    debited = [e for e in events if e["type"] == "usage_debit" and "item" in e["detail"]]
    assert len(debited) == len(handed), where


@pytest.mark.slow
def test_a_runner_killed_at_random_points_30_times_ends_each_run_as_the_foreground(workspace: Path) -> None:
    kills = killed_at_random(workspace, STEPS_SPEC, {}, 30, "k")
    assert kills >= 15, f"only {kills} kills landed on a live runner"


@pytest.mark.slow
def test_a_runner_killed_mid_fanout_never_runs_an_item_agent_twice(workspace: Path) -> None:
    """The same with a fanout: a runner started after a kill hands back the calls its
    items' agents made (or waits for the ones still running) instead of calling again.
    Two items run at once, so only the multiset of calls is the foreground's."""
    kills = killed_at_random(workspace, fanout_spec(), {"items": ["a", "b", "c"]}, 10, "kf", ordered=False)
    assert kills >= 5, f"only {kills} kills landed on a live runner"


def test_cancel_reaches_the_agents_of_a_fanouts_items(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, fanout_spec("hostile"), {"tag": "hf", "items": ["a", "b", "c"]})
    procs = wait_for(lambda: len(pids(workspace, "hf")) == 8 and pids(workspace, "hf"), "two items' agents, 4 each")
    code, view, err = strato(workspace, "flow", "cancel", run_id)
    assert code == 0, err
    assert view["status"] == "cancelled"
    assert not any(groups.alive(p) for p in procs)
    detail = next(e for e in wire.events(runs, run_id) if e["type"] == "flow_cancelled")["detail"]
    assert detail == {"by": "cli", "burned": {"steps": ["fan"], "items": 0}}
    assert sorted(calls(workspace, "hf")) == ["a", "b"]  # the third item was never started
    assert wait_for(lambda: no_runner(workspace, run_id), "the runner exits")
    assert not any(groups.alive(p) for p in procs)


def broken_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runners that die at their first import, as one would after a bad upgrade. Runners
    start isolated (`strato.agents.interpreter`), so no PYTHONPATH reaches them: the command of
    the runner itself is what breaks."""
    def crashing(*args: str) -> list[str]:
        if args[:2] == ("-m", "strato.runs.background.runner"):
            return own_python("-c", 'raise ImportError("strato: broken install")')
        return own_python(*args)

    monkeypatch.setattr(background, "own_python", crashing)


def runner_log(root: Path, run_id: str) -> str:
    path = root / ".git" / "vivary" / "bg" / run_id / "runner.log"
    return path.read_text() if path.exists() else ""


def test_a_runner_that_crashes_on_every_start_fails_the_run_naming_its_log(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(workspace)
    run_id = runs.plan(STEPS_SPEC, {"tag": "crash"}).snap.run_id
    background.mark(runs, run_id)
    broken_install(monkeypatch)  # every runner started from now on

    def failed() -> dict[str, Any] | None:
        doc = background.poll(Runs(workspace), run_id)  # each poll restarts a dead runner
        return doc if doc["bg"]["status"] == "failed" else None

    doc = wait_for(failed, "the run is recorded as failed")
    log = runner_log(workspace, run_id)
    assert log.count("ImportError: strato: broken install") == background.MAX_FAILED_STARTS
    reason = f"background runner crashed 3 times in a row without progress (see .git/vivary/bg/{run_id}/runner.log)"
    assert doc["status"] == "failed" and doc["failure"] == {"attempt": 0, "reason": reason}
    assert [e["detail"] for e in doc["events"] if e["type"] == "failed"] == [{"attempt": 0, "reason": reason}]
    state = Runs(workspace).load(run_id).state
    assert state["status"] == "failed" and "dispatchToken" not in state["scope"]["steps"]["draft"]
    assert calls(workspace, "crash") == []
    for _ in range(3):  # an ended run starts no runner
        background.poll(Runs(workspace), run_id)
    assert runner_log(workspace, run_id) == log


def test_crashes_are_counted_in_a_row_and_a_runner_that_works_clears_them(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(workspace)
    run_id = runs.plan(STEPS_SPEC, {"tag": "heal"}).snap.run_id
    background.mark(runs, run_id)
    broken_install(monkeypatch)
    crashes = background.MAX_FAILED_STARTS - 1

    def crashed() -> bool:
        idle = no_runner(workspace, run_id)  # first: with no runner, the count of deaths is final
        died = runner_log(workspace, run_id).count("ImportError: strato: broken install")
        if idle and died < crashes:
            background.poll(Runs(workspace), run_id)  # starts the next runner
        return idle and died == crashes

    wait_for(crashed, f"{crashes} runners crash")
    starts = workspace / ".git" / "vivary" / "bg" / run_id / "starts.json"
    assert json.loads(starts.read_text())["count"] == crashes
    monkeypatch.setattr(background, "own_python", own_python)  # repaired before the last start
    doc = ended(workspace, run_id)
    assert doc["status"] == "completed" and calls(workspace, "heal") == ["draft", "fix", "fix", "finish"]
    assert wait_for(lambda: no_runner(workspace, run_id), "the runner exits")  # it clears the count last
    assert not starts.exists()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_cancel_stops_a_child_that_left_the_agents_process_group_with_setsid(workspace: Path) -> None:
    runs = Runs(workspace)
    run_id = background.start(runs, one_step_spec("escape"), {"tag": "esc"})
    escaped = wait_for(lambda: pids(workspace, "esc", "escaped"), "the agent's child left its group")[0]
    agent = wait_for(lambda: pids(workspace, "esc"), "the agent runs")[0]
    assert os.getsid(escaped) != os.getsid(agent) and os.getpgid(escaped) not in (os.getpgid(agent), 0)
    assert escaped not in groups.members(os.getpgid(agent))  # stopping the group alone would miss it
    dispatch = parent_of(agent)
    # the child between them exited: the orphan was handed to the dispatch process, not init
    assert b"strato.runs.background.dispatch" in Path(f"/proc/{dispatch}/cmdline").read_bytes()
    assert parent_of(escaped) == dispatch

    code, view, err = strato(workspace, "flow", "cancel", run_id)
    assert code == 0, err
    assert view["status"] == "cancelled"
    assert not groups.alive(agent) and not groups.alive(escaped)
    assert wait_for(lambda: no_runner(workspace, run_id), "the runner exits")


def test_a_child_an_agent_left_in_its_own_session_is_stopped_when_the_agent_answers(workspace: Path) -> None:
    """It holds the agent's stdout open: without the dispatch stopping it, the agent's
    output would never end and the step never finish."""
    run_id = background.start(Runs(workspace), one_step_spec("leave"), {"tag": "lv"})
    doc = ended(workspace, run_id)
    assert doc["status"] == "completed" and doc["output"] == {"text": "work done"}
    escaped = pids(workspace, "lv", "escaped")
    assert len(escaped) == 1 and not groups.alive(escaped[0])
    assert calls(workspace, "lv") == ["work"]
