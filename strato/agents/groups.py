"""Process groups, seen through /proc: an agent and everything it forked share one
group, so stopping the group stops them all (SIGTERM, then SIGKILL after a grace)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

GRACE_S = 5.0
GRACE_ENV = "VIVARY_STOP_GRACE_S"
KILL_WAIT_S = 10.0


def grace() -> float:
    """Seconds a stopped agent gets between SIGTERM and SIGKILL: `GRACE_S`, or the user's
    own `VIVARY_STOP_GRACE_S`. Read at each stop, so the detached runners and dispatches
    the user's shell started follow it too; a value that is not a number >= 0 is ignored."""
    try:
        chosen = float(os.environ.get(GRACE_ENV, GRACE_S))
    except ValueError:
        return GRACE_S
    return chosen if 0 <= chosen < float("inf") else GRACE_S


def _stat(pid: str) -> list[str] | None:
    """State, parent, group, ... of a live process (a zombie has finished: None)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields


def alive(pid: int) -> bool:
    return _stat(str(pid)) is not None


def started(pid: int) -> int | None:
    """When a live process started (clock ticks since boot), None when it has ended: a
    pid and its start time name one process, where a pid alone may be reused."""
    fields = _stat(str(pid))
    return None if fields is None else int(fields[19])


def leads(pid: int) -> bool:
    """Whether a live process leads its own group (its pid is the group's id)."""
    fields = _stat(str(pid))
    return fields is not None and fields[2] == str(pid)


def members(pgid: int) -> list[int]:
    """Live processes of the group."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)) is not None and fields[2] == str(pgid):
            found.append(int(entry.name))
    return found


def parents() -> dict[int, int]:
    """Each live process and its parent."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)) is not None:
            found[int(entry.name)] = int(fields[1])
    return found


def stop(pgid: int, grace_s: float | None = None) -> bool:
    """SIGTERM the group, SIGKILL what is left after `grace_s` (None: `grace()`); True when
    SIGKILL was needed. A recorded pgid is only a number on disk: our own group, init's and
    0 are never signalled."""
    if pgid <= 1 or pgid == os.getpgrp() or not members(pgid):
        return False
    _signal(pgid, signal.SIGTERM)
    deadline = time.monotonic() + (grace() if grace_s is None else grace_s)
    while members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not members(pgid):
        return False
    _signal(pgid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while members(pgid) and time.monotonic() < deadline:  # SIGKILL cannot be refused, but
        time.sleep(0.02)  # the kernel takes a moment (and a process in D state longer)
    return True


def _signal(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
