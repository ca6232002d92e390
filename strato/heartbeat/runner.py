"""The post-commit heartbeat: the hook only leaves a mark and starts a detached runner.

The hook (:func:`post_commit`) writes ``pending`` in the sidecar and, unless a runner
already holds the lock, starts ``python -m strato.heartbeat.runner ROOT`` in its own
session with no terminal and no pipes, then returns: git never waits for the heartbeat.
The runner holds ``run.lock`` with ``fcntl.flock`` (`strato.agents.locks`; the kernel releases it when the
process dies, even by kill -9), waits ``debounce_ms`` for a burst to end, clears the
mark and runs; a mark left while it ran means one more run. A runner killed mid-run
leaves its mark aside, so the next one redoes that run (its proposals are already
staged, so nothing is proposed twice). So a rebase of 50 commits
gives one or two runs, never 50, and never two at once in one repository.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from strato.agents.interpreter import own_python
from strato.agents.locks import exclusive
from strato.agents.process import spawn
from strato.proposals import switch
from strato.proposals.store import sidecar

# git's hook environment describes the commit in progress; the runner outlives it
_HOOK_ENV = ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE", "GIT_PREFIX", "GIT_EDITOR", "GIT_REFLOG_ACTION")


def post_commit(root: Path) -> None:
    """The hook's action: mark, and start a runner unless one is running. It never
    raises (hooks.run also guards it) and never waits for the heartbeat."""
    try:
        if not switch.enabled(root):
            return
        side = sidecar(root)
        side.mkdir(parents=True, exist_ok=True)
        (side / "pending").touch()
        with exclusive(side / "run.lock") as lock:
            if lock is None:
                return  # the running runner sees the mark when it finishes
        env = {k: v for k, v in os.environ.items() if k not in _HOOK_ENV}
        spawn(own_python("-m", "strato.heartbeat.runner", str(root)), cwd=root, env=env)
    except Exception as exc:  # a commit is never failed by its heartbeat
        print(f"vivary: heartbeat not started: {exc}", file=sys.stderr)


def _work(side: Path) -> bool:
    """A mark is waiting, or a run that took one died before finishing (kill -9)."""
    return (side / "pending").exists() or (side / "pending.taken").exists()


def _take_mark(side: Path) -> None:
    """Move the mark aside: a commit during the run leaves a new one, and a run that
    dies leaves ``pending.taken`` for the next runner."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(side / "pending", side / "pending.taken")


def drain(root: Path) -> int:
    """Run while marks are left; returns how many runs it made (0: none pending, or
    another runner holds the lock)."""
    from strato.heartbeat import engine
    from strato.proposals import settings as config

    side = sidecar(root)
    runs = 0
    while _work(side):
        with exclusive(side / "run.lock") as lock:
            if lock is None:
                return runs
            while _work(side):
                current = config.load(root)
                time.sleep(current.debounce_ms / 1000)
                _take_mark(side)
                if not current.enabled:
                    return runs
                result = engine.run(root, current)
                (side / "pending.taken").unlink(missing_ok=True)
                with open(side / "runs.log", "a", encoding="utf-8") as log:
                    log.write(f"{int(time.time())} {result['head']} commits={result['commits']} "
                              f"new={len(result['new'])}\n")
                runs += 1
        # a mark written between our last look and the unlock: loop and take the lock again
    return runs


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path.cwd()
    try:
        drain(root)
    except Exception:
        import traceback

        with contextlib.suppress(OSError):
            (sidecar(root) / "runner.log").write_text(traceback.format_exc())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
