"""One dispatch of a background run, done by a process that outlives the runner.

A background runner does not run a step's agent itself: it starts
``python -m strato.runs.background.dispatch DIR`` (its own session) in a folder named for the
dispatch token, under ``.git/vivary/bg/<run>/dispatch/``. The folder's `lock` is taken
by the runner before the start and handed to that process, which holds it until it has
written `finished.json` (the agent's exit code, last MiB of output and stderr tail). So
a runner that is killed at any point leaves a dispatch in one of three states that the
next runner tells apart without guessing: the lock is held (the agent is still running:
wait for it), `finished.json` is there (take the result: the agent is not run again),
or neither (it never started, or its process died: start it). The agent's process group
is written to `agent.pgid` as soon as it exists, so a cancel can stop it and every
child it forked.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from strato.agents import groups, reaper
from strato.agents.interpreter import own_python
from strato.agents.locks import exclusive, open_append
from strato.agents.process import Finished, run_process, spawn
from tropo.fs.atomic import write_atomic

TICK_S = 0.05
MAX_STARTS = 3


def write_whole(path: Path, text: str) -> None:
    """Replace `path` whole: a reader sees the old file or the new one, never half (and
    a symlink planted at `path` is replaced, not written through)."""
    write_atomic(path, text.encode(), fsync=False)


def finished(folder: Path) -> Finished | str | None:
    """The recorded end of the dispatch (a string: the agent could not be started)."""
    try:
        data = json.loads((folder / "finished.json").read_text(encoding="utf-8"))
        return str(data["startError"]) if "startError" in data else Finished(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def agent_group(folder: Path) -> int | None:
    try:
        return int((folder / "agent.pgid").read_text())
    except (OSError, ValueError):
        return None


def run(
    folder: Path,
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    before_start: Callable[[], None],
    cancelled: Callable[[], bool],
    grace_s: float | None = None,
) -> Finished | str | None:
    """The dispatch's finished agent: started here, or already running (a runner that
    died started it) or already finished. None when `cancelled()` became true: its
    process group is stopped (SIGTERM, SIGKILL after `grace_s`) before returning. The
    caller made `folder` (`background.bg_dir`, which refuses a planted link)."""
    for _ in range(MAX_STARTS):
        done = finished(folder)
        if done is None and not cancelled():
            _start_unless_running(folder, argv, cwd, timeout_s, before_start)
            done = _wait(folder, cancelled, grace_s)
        if cancelled():
            stop(folder, grace_s)
            return None
        if done is not None:
            return done
    return f"its dispatch process died {MAX_STARTS} times before the agent finished"


def stop(folder: Path, grace_s: float | None = None) -> None:
    """Stop the dispatch's agent group and wait for its dispatch process to end."""
    while True:
        pgid = agent_group(folder)
        if pgid is not None:
            groups.stop(pgid, grace_s)
        with exclusive(folder / "lock") as free:
            if free is not None:
                return
        time.sleep(TICK_S)


def _start_unless_running(
    folder: Path, argv: list[str], cwd: Path, timeout_s: float, before_start: Callable[[], None]
) -> None:
    with open_append(folder / "lock") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a dispatch process started by a runner that died still runs it
        if finished(folder) is not None:  # it ended between the look and the lock
            return
        (folder / "agent.pgid").unlink(missing_ok=True)
        before_start()
        request = {"argv": argv, "cwd": str(cwd), "timeoutS": timeout_s}
        write_whole(folder / "request.json", json.dumps(request))
        _start(folder, fh.fileno())
    # closing our descriptor never unlocks: the child holds the same open file


def _wait(folder: Path, cancelled: Callable[[], bool], grace_s: float | None) -> Finished | str | None:
    """Until the dispatch process lets its lock go; a cancel stops its agent first."""
    while True:
        with exclusive(folder / "lock") as free:
            if free is not None:
                return finished(folder)
        if cancelled():
            stop(folder, grace_s)
            return None
        time.sleep(TICK_S)


def _start(folder: Path, lock_fd: int) -> None:
    log = folder / "dispatch.log"
    with open_append(log) as out:
        spawn(own_python("-m", "strato.runs.background.dispatch", str(folder)), log=out, pass_fds=(lock_fd,))


def main(folder: Path) -> None:
    """Run the recorded request and write `finished.json`; the inherited lock is let go
    when this process exits, after the file is in place. This process is the reaper of
    orphans below it (`strato.agents.reaper`), so what the agent put in a session of
    its own is re-parented here, and stopped with the agent's group: at its end, or when
    a cancel stops the group."""
    req = json.loads((folder / "request.json").read_text(encoding="utf-8"))
    reaper.become_subreaper()

    def started(pgid: int) -> None:
        write_whole(folder / "agent.pgid", str(pgid))

    argv, cwd, timeout_s = req["argv"], Path(req["cwd"]), float(req["timeoutS"])
    done = run_process(argv, cwd, timeout_s, on_start=started, on_exit=reaper.stop_descendants)
    record = {"startError": done} if isinstance(done, str) else asdict(done)
    write_whole(folder / "finished.json", json.dumps(record))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main(Path(sys.argv[1]))
