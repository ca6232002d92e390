"""Keeping hold of what an agent forks when it leaves the process group: a child that
calls `setsid` (or double-forks into a session of its own) is out of the agent's group,
so stopping the group misses it. A process made a child subreaper (Linux's
`prctl(PR_SET_CHILD_SUBREAPER)`) becomes the parent of every orphan below it instead of
init, so all that its agent left is still found among its descendants in /proc."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

from strato.agents import groups

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of orphans below it; False where the kernel cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Live processes below `pid` (children, theirs, ...), read from /proc."""
    children: dict[int, list[int]] = {}
    for child, parent in groups.parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop_descendants() -> None:
    """SIGTERM every live descendant of this process, SIGKILL what is left after the
    grace (and what they fork meanwhile), reaping the ones that were our children."""
    me = os.getpid()
    _signal(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + groups.grace()
    while descendants(me) and time.monotonic() < deadline:
        _reap()
        time.sleep(0.05)
    deadline = time.monotonic() + groups.KILL_WAIT_S
    while (left := descendants(me)) and time.monotonic() < deadline:
        _signal(left, signal.SIGKILL)
        _reap()
        time.sleep(0.02)
    _reap()


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap() -> None:
    """Collect the exit of any child of ours that has ended (orphans handed to us)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
