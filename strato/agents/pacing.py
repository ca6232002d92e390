"""A per-agent pacing interval that holds across processes: the last call's start is
kept in a lock file (under `.git/vivary`), so two runs, or a run and its background
dispatches, never call one agent closer together than its `min_interval_s`."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path


def pace(lock_path: Path, interval: float) -> float:
    """Wait until `interval` seconds have passed since the previous call to this agent
    from any process; the lock file holds the last call's wall-clock start, which this
    returns (the start it recorded: the times the lock orders, where a clock read after
    the return may be late by however long this process was not scheduled)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        try:
            last = float(fh.read().strip() or 0)
        except ValueError:
            last = 0.0
        wait = last + interval - time.time()
        if wait > 0:
            time.sleep(wait)
        start = time.time()
        fh.seek(0)
        fh.truncate()
        fh.write(f"{start:.6f}")
        fh.flush()
    return start
