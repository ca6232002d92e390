"""The end of an engine-mode fanout: its `pre_merge` commands, then `require` settled
and, under `isolation: worktree`, the succeeded items' trees merged back in item order,
all or nothing, as one transition (whoever ran the items: this process, or workers on
other clones). The merge is made in memory and recorded as a commit in that transition;
only once the transition has landed is it applied to the work tree and the index, so a
transition decided again after a lost race never applies it twice."""

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
from tropo.git.objects import commit_tree
from tropo.git.types import oid

PRE_MERGE_TIMEOUT_S = 900


def settle_fanout(runs: RunAccess, run_id: str, path: str) -> Outcome:
    """Run the `pre_merge` commands and settle the fanout whose items have all run."""
    checks = _pre_merge(runs, run_id, path)
    try:
        outcome = runs.apply(run_id, "fanout_settle", lambda e: settle(runs, e, path, checks), stepId=path)
    except Refused:  # a budget breach already ended the step or the run
        return Outcome(runs.load(run_id), [])
    if (merged := merged_commit(outcome)) is not None:
        base, commit = merged
        try:
            worktrees.apply_change(runs.repo, oid(base), oid(commit))
        except worktrees.WorktreeError as exc:  # the work tree changed since the transition checked it
            raise Refused("merge_not_applied", f"fanout {path} is merged as commit {commit}, but {exc}; "
                          f"`git cherry-pick -n {commit}` applies it") from None
    return outcome


def merged_commit(outcome: Outcome) -> tuple[str, str] | None:
    """The (base, commit) of the merge a settling transition recorded, if it made one."""
    for event in outcome.events:
        detail = event.get("detail", {})
        if event["type"] == "fanout_merge" and "commit" in detail:
            return detail["base"], detail["commit"]
    return None


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
                base, indexes = done[0][0], [it["index"] for it in ok]
                tree, changed = worktrees.merge_in_order(runs.repo, base, done)
                worktrees.apply_change(runs.repo, base, tree, check=True)
                message = f"fanout {path}: items {indexes} merged in order\n"
                commit = commit_tree(runs.repo, tree, [base], message)
                eng.emit("fanout_merge", path, items=indexes, files=changed, base=str(base),
                         commit=str(commit))
        except worktrees.WorktreeError as exc:
            failure = f"fanout merge failed: {exc}"
    eng.finish_fanout(path, FanoutOutcome(items, failure))
