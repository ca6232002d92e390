"""The end of an engine-mode fanout: its `pre_merge` commands, then `require` settled
and, under `isolation: worktree`, the succeeded items' trees merged back in item order,
all or nothing, as one transition (whoever ran the items: this process, or workers on
other clones)."""

from __future__ import annotations

from dataclasses import dataclass

from strato.agents.process import last_line, run_process
from strato.flow.spec import FanoutStep
from strato.runs.dispatch.access import RunAccess
from strato.runs.engine.consumer import require_failure
from strato.runs.engine.fanouts import FanoutOutcome
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.store import Outcome
from tropo.git import worktrees
from tropo.git.types import oid

PRE_MERGE_TIMEOUT_S = 900


def settle_fanout(runs: RunAccess, run_id: str, path: str) -> Outcome:
    """Run the `pre_merge` commands and settle the fanout whose items have all run."""
    checks = _pre_merge(runs, run_id, path)
    try:
        return runs.apply(run_id, "fanout_settle", lambda e: settle(runs, e, path, checks), stepId=path)
    except Refused:  # a budget breach already ended the step or the run
        return Outcome(runs.load(run_id), [])


@dataclass(frozen=True)
class PreMerge:
    """The `pre_merge` commands that ran and the first one that failed, if any."""

    ran: list[str]
    failure: str | None


def _pre_merge(runs: RunAccess, run_id: str, path: str) -> PreMerge:
    """Run the step's `pre_merge` commands (`sh -lc` in the workspace root, in order,
    stopping at the first failure) when there is a worktree merge to do. They run
    outside the transition, so a lost race on the ref cannot run them twice. Each runs
    only while the run's spec is approved here; otherwise it fails with the refusal."""
    snap = runs.load(run_id)
    eng = runs.engine(snap, judge=False)
    _frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    items = st["fanout"]["items"]
    merging = st["status"] == "running" and step.fanout.isolation == "worktree"
    commands = step.fanout.pre_merge or []
    if not merging or require_failure(step, items) is not None:
        commands = []
    ran: list[str] = []
    for command in commands:
        if (refusal := runs.command_refusal(snap, command)) is not None:
            return PreMerge(ran, f"pre_merge {command!r}: {refusal}")
        ran.append(command)
        done = run_process(["sh", "-lc", command], runs.root, PRE_MERGE_TIMEOUT_S)
        if isinstance(done, str):
            return PreMerge(ran, f"pre_merge {command!r} cannot start: {done}")
        if done.returncode != 0:
            how = "timed out" if done.returncode is None else f"exited {done.returncode}"
            tail = last_line(done.stderr_tail or done.stdout)
            return PreMerge(ran, f"pre_merge {command!r} {how}: {tail}".rstrip(": "))
    return PreMerge(ran, None)


def settle(runs: RunAccess, eng: Engine, path: str, checks: PreMerge) -> None:
    eng.require_running()
    _frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    if st["status"] != "running":
        raise Refused("fanout_not_running", f"fanout {path} is not running")
    items = st["fanout"]["items"]
    ok = [it for it in items if it["status"] == "succeeded"]
    failure = require_failure(step, items)
    if failure is None and step.fanout.isolation == "worktree":
        if checks.ran:
            eng.emit("fanout_pre_merge", path, commands=checks.ran, failure=checks.failure)
        # what each item did: the commit its transition recorded (a tree, before commits
        # were recorded), against the commit its worktree started from
        done = [(oid(it["base"]), oid(it.get("commit", it["tree"]))) for it in ok if "tree" in it]
        try:
            if checks.failure is not None:
                failure = f"fanout pre_merge failed: {checks.failure}"
            elif done:
                changed = worktrees.merge_sequential(runs.repo, done[0][0], done)
                eng.emit("fanout_merge", path, items=[it["index"] for it in ok], files=changed)
        except worktrees.WorktreeError as exc:
            failure = f"fanout merge failed: {exc}"
    eng.finish_fanout(path, FanoutOutcome(items, failure))
