"""The post-commit heartbeat: the hook leaves a mark, and a runner drains the marks.

The installed ``sh`` hook (``hooks/scripts.py``) writes no Python for a commit that only
adds to a burst: if ``pending`` in the sidecar names a runner that is still alive, that
runner will see the new commit, and the hook is done. Otherwise it starts
``hooks.run post-commit-actions`` in the background (appending its pid to ``pending``),
which calls :func:`post_commit` here: mark, wait for ``run.lock``, drain.
The lock is held with ``fcntl.flock`` (`strato.agents.locks`; the kernel releases it
when the process dies, even by kill -9); the holder waits ``debounce_ms`` for a burst to
end, moves the mark aside and runs; a mark left while it ran means one more run. A
runner killed mid-run leaves its mark aside, so the next one redoes that run (its
proposals are already staged, so nothing is proposed twice); a runner killed before
that leaves its dead pid in the mark, so the next commit starts another. So a rebase of
50 commits starts one or two interpreters and gives one or two runs, never 50, and
never two at once in one repository.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from pathlib import Path

from strato.agents.locks import exclusive, open_append
from strato.proposals import switch
from strato.proposals.store import sidecar


def post_commit(root: Path) -> None:
    """The hook's background half: mark, then run once whatever runner holds the lock
    now lets go (it may take this mark itself). It never raises: a commit is never
    failed by its heartbeat, and its last error goes to ``runner.log``."""
    try:
        if not switch.enabled(root):
            return
        side = sidecar(root)
        side.mkdir(parents=True, exist_ok=True)
        with open_append(side / "pending"):  # never through a link planted in its place
            pass
    except Exception as exc:
        print(f"vivary: heartbeat not started: {exc}", file=sys.stderr)
        return
    try:
        drain(root, wait=True)
    except Exception:
        with contextlib.suppress(OSError):
            (side / "runner.log").write_text(traceback.format_exc())


def _work(side: Path) -> bool:
    """A mark is waiting, or a run that took one died before finishing (kill -9)."""
    return (side / "pending").exists() or (side / "pending.taken").exists()


def _take_mark(side: Path) -> None:
    """Move the mark aside: a commit during the run leaves a new one, and a run that
    dies leaves ``pending.taken`` for the next runner."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(side / "pending", side / "pending.taken")


def drain(root: Path, *, wait: bool = False) -> int:
    """Run while marks are left; returns how many runs it made (0: none pending, or
    another runner holds the lock and ``wait`` is false; with ``wait`` it waits for it
    to let go, then looks again)."""
    from strato.heartbeat import engine
    from strato.proposals import settings as config

    side = sidecar(root)
    runs = 0
    while _work(side):
        with exclusive(side / "run.lock", wait=wait) as lock:
            if lock is None:
                return runs
            while _work(side):
                current = config.load(root)
                time.sleep(current.debounce_ms / 1000)
                _take_mark(side)
                if not current.enabled:  # turned off since the mark: drop it
                    (side / "pending.taken").unlink(missing_ok=True)
                    return runs
                result = engine.run(root, current)
                (side / "pending.taken").unlink(missing_ok=True)
                with open(side / "runs.log", "a", encoding="utf-8") as log:
                    log.write(f"{int(time.time())} {result['head']} commits={result['commits']} "
                              f"new={len(result['new'])}\n")
                runs += 1
        # a mark written between our last look and the unlock: loop and take the lock again
    return runs
