"""Background flow runs: a detached runner drives the run while nobody holds a line.

The run's state is its ref, as for every run; a background run is marked there
(`background` in `run.json`), and so is a cancel asked of it
(`background.cancelRequested`). The runner is ``python -m strato.runs.background.runner ROOT
RUN`` in a session of its own, started through a short-lived parent so it is nobody's
child; its output goes to ``.git/vivary/bg/<run>/runner.log``. For its whole life it
holds ``.git/vivary/bg/<run>/runner.lock`` (a kernel lock, see `strato.agents.locks`):
a second runner, or a foreground `strato run --resume`, finds it held and leaves the
run alone, and a runner killed by kill -9 leaves it free for the next one. The next one
is started by whatever notices work and no runner: a poll, a gate decision, `strato
flow resume`, a cancel.

Each agent runs in a dispatch process of its own (`strato.runs.background.dispatch`), so a
runner that dies mid-step does not lose the step or run its agent twice. The runner
exits when nothing is left for it to do (the run ended, or only gates wait for a
person): no process spins at a gate. A cancel is recorded in the ref; the runner sees
it within a tick, stops the agents' process groups and records `flow_cancelled`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from strato.agents import groups
from strato.agents.calls import CallResult, agent_prompt, interpret
from strato.agents.config import READ_ONLY, AgentSpec
from strato.agents.interpreter import own_python
from strato.agents.locks import exclusive, is_held, open_append, take
from strato.agents.pacing import pace
from strato.agents.process import spawn_orphan
from strato.flow.spec import FanoutStep
from strato.runs.background import dispatch as bgdispatch
from strato.runs.dispatch.fanout import ItemCall
from strato.runs.engine import bounds
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import RUN_TERMINAL, Refused, now_iso, token_holders
from strato.runs.service import Runs
from strato.runs.store import Outcome, RunSnapshot
from strato.runs.views import documents as views
from strato.runs.views import wire
from tropo.fs.atomic import write_atomic
from tropo.git.repo import private_dir

CANCEL_SLACK_S = groups.KILL_WAIT_S + 20  # how long a cancel waits for the runner, past the grace
LOG_LIMIT = 1 << 20
MAX_FAILED_STARTS = 3  # runners that died in a row at one head before the run is failed


class Cancelled(Exception):
    """A cancel was asked while the runner drove the run."""


def bg_dir(runs: Runs, run_id: str, *parts: str, create: bool = False) -> Path:
    """`.git/vivary/bg/<run>/<parts>`, never through a folder planted as a symlink."""
    return private_dir(runs.repo, "bg", run_id, *parts, create=create)


def runner_lock(runs: Runs, run_id: str) -> Path:
    return bg_dir(runs, run_id, create=True) / "runner.lock"


def is_background(state: dict[str, Any]) -> bool:
    return isinstance(state.get("background"), dict)


def cancel_request(state: dict[str, Any]) -> dict[str, Any] | None:
    req = state.get("background", {}).get("cancelRequested") if is_background(state) else None
    return req if isinstance(req, dict) else None


# --- starting


def start(runs: Runs, spec_text: str, inputs: dict[str, Any], run_id: str | None = None) -> str:
    """Plan the run, mark it as a background run and start its runner; its id."""
    run_id = runs.plan(spec_text, inputs, run_id).snap.run_id
    mark(runs, run_id)
    wake(runs, run_id)
    return run_id


def mark(runs: Runs, run_id: str) -> None:
    """Record in the ref that this run is driven in the background (kept if it already is)."""

    def act(e: Engine) -> None:
        e.run.setdefault("background", {"since": now_iso()})

    if not is_background(runs.load(run_id).state):
        runs.apply(run_id, "background", act)


def has_work(runs: Runs, snap: RunSnapshot) -> bool:
    """A runner has something to do: a cancel to record, an agent step or a fanout to run."""
    if snap.state["status"] in RUN_TERMINAL:
        return False
    if cancel_request(snap.state) is not None:
        return True
    eng = runs.engine(snap, judge=False)
    return bool(eng.running_fanouts()) or any("itemIndex" not in e for e in eng.ready())


def wake(runs: Runs, run_id: str) -> bool:
    """Start a runner for a background run that has work and no runner; True if one
    was started (a runner already there, or nothing to do: False). The runner lock is
    taken here and handed to the runner, so pollers that all saw no runner start one
    between them, and each start counted is a runner that really ran."""
    run_id = runs.store.resolve(run_id)
    if not _wanted(runs, runs.load(run_id)):
        return False
    held = take(runner_lock(runs, run_id))
    if held is None:
        return False
    with held:
        snap = runs.load(run_id)  # again, under the lock: a runner may have just ended it
        if not _wanted(runs, snap):
            return False
        if runs.store.transition_at(snap.head).get("op") != "background":  # not its first runner
            snap = runs.resume(run_id, "runner").snap
        failed = _count_start(runs, run_id, snap.head)
        if failed >= MAX_FAILED_STARTS:
            _record_crashes(runs, run_id, failed)
            return False
        launch(runs, run_id, held.fileno())
    return True


def take_up(runs: Runs, run_id: str, by: str) -> RunSnapshot:
    """Resume a run (`stratum_resume`): record it, then carry it on, as `carry_on`."""
    run_id = runs.store.resolve(run_id)
    runs.resume(run_id, by)
    carry_on(runs, run_id)
    return runs.load(run_id)


def carry_on(runs: Runs, run_id: str) -> None:
    """Before showing what a run has ready (`strato flow next`, `stratum_resume`): run
    its due engine fanouts here, or wake the runner of a background run. Never a second
    driver: a run whose runner lock is held (its runner, a foreground `strato run`) is
    left to that one, and the answer says `running` while its fanout is in flight."""
    snap = runs.load(run_id)
    if is_background(snap.state):
        wake(runs, snap.run_id)
        return
    if not runs.engine(snap, judge=False).running_fanouts():
        return
    with exclusive(runner_lock(runs, snap.run_id)) as held:
        if held is not None:
            views.run_due_fanouts(runs, snap.run_id)


def _wanted(runs: Runs, snap: RunSnapshot) -> bool:
    return is_background(snap.state) and has_work(runs, snap)


def launch(runs: Runs, run_id: str, lock_fd: int | None = None) -> None:
    """Start a runner, detached; `lock_fd` (an open file holding the runner lock) is
    handed to it, else it takes the lock itself."""
    log = bg_dir(runs, run_id, create=True) / "runner.log"
    if log.exists() and log.stat().st_size > LOG_LIMIT:
        log.unlink()
    runner = own_python("-m", "strato.runs.background.runner", str(runs.root), run_id)
    if lock_fd is not None:
        runner.append(str(lock_fd))
    with open_append(log) as out:
        spawn_orphan(runner, cwd=runs.root, log=out, pass_fds=() if lock_fd is None else (lock_fd,))


# --- runners that crash


def _starts_file(runs: Runs, run_id: str) -> Path:
    return bg_dir(runs, run_id) / "starts.json"


def _count_start(runs: Runs, run_id: str, head: str) -> int:
    """Record a runner start at `head`; how many runners started before it at this same
    head and did not end normally (a runner that ends normally clears the count, and
    one that moved the run on changed its head)."""
    path = _starts_file(runs, run_id)
    try:
        last = json.loads(path.read_text(encoding="utf-8"))
        failed = int(last["count"]) if last["head"] == head else 0
    except (OSError, ValueError, TypeError, KeyError):
        failed = 0
    bgdispatch.write_whole(path, json.dumps({"head": head, "count": failed + 1}))
    return failed


def _record_crashes(runs: Runs, run_id: str, failed: int) -> None:
    """End the run as failed: its runner died `failed` times in a row without moving
    it on, so another start would only die again. Its agents are stopped first (we
    hold the runner lock: nobody else drives it)."""
    _starts_file(runs, run_id).unlink(missing_ok=True)
    for folder in _dispatches(runs, run_id):
        bgdispatch.stop(folder)
    log = bg_dir(runs, run_id) / "runner.log"
    with contextlib.suppress(ValueError):
        log = log.relative_to(runs.root)
    reason = f"background runner crashed {failed} times in a row without progress (see {log})"
    _end_failed(runs, run_id, reason, runnerStarts=failed)


def _end_failed(runs: Runs, run_id: str, reason: str, **detail: Any) -> None:
    """End the run as failed with `reason`; outstanding tokens become stale."""

    def act(e: Engine) -> None:
        e.require_running()
        for frame in e.frames():
            for st in frame.steps.values():
                for holder in token_holders(st):  # results that land later are stale
                    holder.pop("dispatchToken", None)
        e.run.update(status="failed", failure={"attempt": 0, "reason": reason})
        e.emit("failed", reason=reason, **detail)

    with contextlib.suppress(Refused):  # it ended meanwhile
        runs.apply(run_id, "runner_failed", act)


# --- the runner


def drive(runs: Runs, run_id: str, inherited: bool = False) -> None:
    """Be the run's runner until nothing is left to do. With `inherited`, the runner
    lock came from the process that started us; else it is taken here (and we return
    at once if another runner holds it)."""
    if inherited:
        _drive(runs, run_id)
        return
    with exclusive(runner_lock(runs, run_id)) as held:
        if held is not None:
            _drive(runs, run_id)


def _drive(runs: Runs, run_id: str) -> None:
    write_atomic(bg_dir(runs, run_id) / "runner.pid", str(os.getpid()).encode(), fsync=False)
    watch = _CancelWatch(runs, run_id)
    while True:
        snap = runs.load(run_id)
        if snap.state["status"] in RUN_TERMINAL:
            break
        req = cancel_request(snap.state)
        if req is not None:
            _record_cancel(runs, run_id, req)
            break
        try:
            runs.drive(
                run_id,
                dispatch=lambda rid, entry: _dispatch(runs, rid, entry, watch),
                fanout_calls=lambda rid, path: _fanout_calls(runs, rid, path, watch),
            )
        except Cancelled:
            continue
        except Refused as exc:  # an agent, judge or command nobody approved here: none runs
            if exc.code != "untrusted":
                raise
            _end_failed(runs, run_id, str(exc))
            break
        if cancel_request(runs.load(run_id).state) is None:
            break  # the run ended or waits for a person: the runner goes
    _forget_dispatches(runs, run_id)
    _starts_file(runs, run_id).unlink(missing_ok=True)  # it ended normally


class _CancelWatch:
    """Whether a cancel was asked: one ref read per look, the state only when it moved
    (looked at from the threads of a fanout's items too)."""

    def __init__(self, runs: Runs, run_id: str) -> None:
        self.runs, self.run_id = runs, run_id
        self.head: str | None = None
        self.asked = False
        self.lock = threading.Lock()

    def __call__(self) -> bool:
        with self.lock:
            if not self.asked:
                head = self.runs.store.head(self.run_id)
                if head != self.head:
                    self.head = head
                    self.asked = cancel_request(self.runs.store.at(self.run_id, head).state) is not None
            return self.asked


def _call(
    runs: Runs, folder: Path, agent: AgentSpec, prompt: str, cwd: Path, cancelled: _CancelWatch,
    sandbox: str = READ_ONLY,
) -> CallResult:
    """Run the agent in the dispatch process of `folder` (or take what one already
    did); Cancelled once a cancel is asked, its process group stopped."""
    if cancelled():
        raise Cancelled

    def paced() -> None:
        if agent.min_interval_s > 0:
            pace(runs.pacing_dir / f"{agent.name}.lock", agent.min_interval_s)

    done = bgdispatch.run(folder, agent.argv_for(prompt, sandbox), cwd, agent.timeout_s, paced,
                         cancelled)
    if done is None:
        raise Cancelled
    return interpret(agent, done, admit=bounds.agent_output)


def _dispatch(runs: Runs, run_id: str, entry: dict[str, Any], cancelled: _CancelWatch) -> Outcome:
    folder = bg_dir(runs, run_id, "dispatch", entry["dispatchToken"], create=True)
    agent = runs.config.get(entry["agent"])
    res = _call(runs, folder, agent, agent_prompt(entry), runs.root, cancelled)
    return runs.report(run_id, entry, res, agent.model())


def _fanout_calls(runs: Runs, run_id: str, path: str, cancelled: _CancelWatch) -> ItemCall:
    """The calls of one fanout's items, each in a dispatch process of its own, in a
    folder named for the fanout's start (the commit that recorded it) and the call's
    key: a runner that runs the fanout again after its runner died hands back what each
    call already gave, or waits for the one still running, instead of calling again.
    Under `isolation: worktree` an item's edits live in a worktree its runner made, and
    that is made afresh: those items are run again, after stopping what still runs."""
    started = next(
        commit
        for commit, transition in reversed(list(runs.store.history(run_id)))
        for ev in transition.get("events", [])
        if ev.get("type") == "fanout_started" and ev.get("stepId") == path
    )
    name = hashlib.sha256(f"{started}\0{path}".encode()).hexdigest()[:16]
    step = runs.engine(runs.load(run_id), judge=False).locate(path)[1]
    assert isinstance(step, FanoutStep)
    if step.fanout.isolation == "worktree":
        for folder in _dispatches(runs, run_id):
            if folder.name.startswith(f"item-{name}-"):
                bgdispatch.stop(folder)
                shutil.rmtree(folder, ignore_errors=True)

    def call_item(key: str, agent: AgentSpec, prompt: str, cwd: Path, sandbox: str) -> CallResult:
        folder = bg_dir(runs, run_id, "dispatch", f"item-{name}-{key}", create=True)
        return _call(runs, folder, agent, prompt, cwd, cancelled, sandbox)

    return call_item


def _record_cancel(runs: Runs, run_id: str, req: dict[str, Any]) -> None:
    """Stop every dispatch still running, then end the run as cancelled."""
    for folder in _dispatches(runs, run_id):
        bgdispatch.stop(folder)
    with contextlib.suppress(Refused):  # it ended (or another caller cancelled it) meanwhile
        runs.cancel(run_id, req.get("reason"), by=str(req.get("by", "cli")))


def _dispatches(runs: Runs, run_id: str) -> list[Path]:
    """The run's dispatch folders (an entry planted as a symlink is none of them)."""
    root = bg_dir(runs, run_id, "dispatch")
    return sorted(p for p in root.iterdir() if not p.is_symlink() and p.is_dir()) if root.is_dir() else []


def _forget_dispatches(runs: Runs, run_id: str) -> None:
    """Drop the folders of dispatches whose token the run no longer hands out (their
    results are recorded, or stale); a live dispatch is never removed."""
    snap = runs.load(run_id)
    live = {e["dispatchToken"] for e in runs.engine(snap, judge=False).ready()}
    for folder in _dispatches(runs, run_id):
        if folder.name not in live and not is_held(folder / "lock"):
            shutil.rmtree(folder, ignore_errors=True)


# --- cancel


def cancel(runs: Runs, run_id: str, by: str, reason: str | None = None, wait_s: float | None = None) -> str:
    """Ask a run to stop and wait until it has (up to `wait_s`; None: the agents' grace,
    which the user may have set long, and some): the run's status after (`running` if
    the runner has not finished stopping it yet). A run without a runner is cancelled
    here, under the runner lock, so two callers never both record it."""
    run_id = runs.store.resolve(run_id)
    snap = runs.load(run_id)
    if snap.state["status"] in RUN_TERMINAL:
        return str(snap.state["status"])
    if cancel_request(snap.state) is None:
        asked = {"by": by, "at": now_iso(), **({"reason": reason} if reason else {})}

        def act(e: Engine) -> None:
            if e.run["status"] not in RUN_TERMINAL:
                bg = e.run.setdefault("background", {"since": now_iso()})
                bg.setdefault("cancelRequested", asked)

        runs.apply(run_id, "cancel_request", act, by=by)
    deadline = time.monotonic() + (groups.grace() + CANCEL_SLACK_S if wait_s is None else wait_s)
    while True:
        with exclusive(runner_lock(runs, run_id)) as held:
            state = runs.load(run_id).state
            if held is not None and state["status"] not in RUN_TERMINAL:
                req = cancel_request(state)
                assert req is not None
                _record_cancel(runs, run_id, req)
                _forget_dispatches(runs, run_id)
                state = runs.load(run_id).state
        if state["status"] in RUN_TERMINAL or time.monotonic() > deadline:
            return str(state["status"])
        time.sleep(bgdispatch.TICK_S)


def cancel_view(runs: Runs, run_id: str, by: str, reason: str | None = None) -> dict[str, Any]:
    """`strato flow cancel`'s document for any run. A run that is not a background run
    ends at once (its outstanding tokens go stale); a background run ends once its runner
    has stopped the agents it started: the document's status is still `running` if that
    has not happened within the wait."""
    snap = runs.load(run_id)
    if not is_background(snap.state):
        return views.outcome_view(runs, runs.cancel(snap.run_id, reason, by=by))
    if snap.state["status"] in RUN_TERMINAL:
        raise Refused("run_not_running", f"run is {snap.state['status']}")
    cancel(runs, snap.run_id, by, reason)
    after = runs.load(snap.run_id)
    done = [ev for _, t in runs.store.since(after.head, snap.head) for ev in t.get("events", [])]
    return views.outcome_view(runs, Outcome(after, done))


# --- poll


def bg_status(runs: Runs, snap: RunSnapshot) -> dict[str, Any]:
    """The `bg` block of a poll: what the background side of the run is doing."""
    state = snap.state
    eng = runs.engine(snap, judge=False)
    pending = [
        frame.prefix + sid
        for frame in eng.frames()
        for sid, st in frame.steps.items()
        if st["status"] == "waiting_gate"
    ] if state["status"] == "running" else []
    requested = cancel_request(state) is not None
    if state["status"] in RUN_TERMINAL:
        status = state["status"]
    elif requested:
        status = "cancelling"
    elif pending and not has_work(runs, snap):
        status = "waiting_gate"
    else:
        status = "running"
    out: dict[str, Any] = {"status": status, "cancelRequested": requested, "pendingGates": pending}
    if pending:
        out["gateStepId"] = pending[0]
    return out


def poll(runs: Runs, run_id: str, cursor: int = 0) -> dict[str, Any]:
    """Stratum's `stratum_flow_bg_poll` answer: `stratum_flow_poll`'s (events from
    `cursor` in the reference's kinds, ledger, output or failure) and the `bg` block. A
    background run with work and no runner (killed, or its server restarted) gets a new
    runner here. `bg` is read first: a run only moves on, so when `bg` says the run
    ended the rest of the answer says so too."""
    snap = runs.load(run_id)
    bg = bg_status(runs, snap)
    doc = wire.poll(runs, snap.run_id, cursor)  # refuses a bad cursor before anything starts
    wake(runs, snap.run_id)
    return {**doc, "bg": bg}


def main(argv: list[str]) -> int:
    """``ROOT RUN [LOCKFD]``: LOCKFD is the inherited runner lock (its file is kept
    open, so the lock lasts as long as this process)."""
    root, run_id = Path(argv[0]), argv[1]
    drive(Runs(root), run_id, inherited=len(argv) > 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
