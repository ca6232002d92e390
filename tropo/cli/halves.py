"""The second core for ``tropo check``: half of a cold check's documents read, parsed
and checked by a forked child of the command's own process, and the caches written by
another while the command builds and prints its answer.

Only the command line forks (:func:`two_cores` around the command, through
:func:`tropo.check.spread.spreading`): it owns its process, while the workbench and the
MCP server, which load the same library, never do. A child starts no program and is
given nothing new; it ends with ``os._exit`` (none of the parent's buffers, handlers or
caches are flushed twice). Whenever forking is not plainly safe or useful (no ``fork``,
no idle second core, a second thread that a fork would freeze mid-lock, a small batch)
the parent does the work itself. A child that fails costs time, never results: the parent does a
failed half again; a failed cache writer leaves the caches as they were (each file is
written whole or not at all), and the command waits for it before it ends, so the next
command never races it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import threading
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

from tropo.check import spread

MIN_ITEMS = 4000  # below this, forking and sending results back costs about what it saves

P = ParamSpec("P")
R = TypeVar("R")
_R = TypeVar("_R")


BUSY = 0.75  # without /proc: a one-minute load this far past one core's worth is too busy


def _second_core_idle() -> bool:
    """Whether a child would run on a core no other work wants: a fork costs CPU (the
    child's copy-on-write pages, its findings encoded and decoded), which only an idle
    core pays back. Measured now: the tasks the kernel has running or ready, less this
    process and its own children (the ``git status`` beside a cold check). Without
    ``/proc``, the one-minute load average stands in (this command's past runs count
    in it too)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    others = _others_running()
    if others is not None:
        return others <= cores - 2
    try:
        return os.getloadavg()[0] < cores - 1 + BUSY
    except OSError:
        return False


def _others_running() -> int | None:
    """Runnable tasks that are not this process or its children; None without /proc."""
    try:
        running = int(Path("/proc/loadavg").read_text().split()[3].partition("/")[0])
        children = [pid for task in Path("/proc/self/task").iterdir()
                    for pid in (task / "children").read_text().split()]
    except (OSError, ValueError, IndexError):
        return None
    mine = 1
    for pid in children:
        with contextlib.suppress(OSError):
            mine += Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "R"
    return running - mine


def may_fork(items: int) -> bool:
    """Whether work over ``items`` documents is worth a child and safe to fork for."""
    return (items >= MIN_ITEMS and hasattr(os, "fork") and threading.active_count() == 1
            and _second_core_idle())


class TwoProcesses:
    """A :class:`tropo.check.spread.Spreader` that forks; :meth:`wait` reaps the writers."""

    def __init__(self) -> None:
        self.writers: list[int] = []
        self.items = 0  # the last split's size: whether a write is worth a child

    def split(self, items: int, work: Callable[[int, int, bool], list[_R]],
              encode: Callable[[list[_R]], Any], decode: Callable[[Any], list[_R]]) -> list[_R]:
        """The second half of ``[0, items)`` worked by a child, the first half here."""
        self.items = items
        if not may_fork(items):
            return work(0, items, True)
        middle = items * 11 // 20  # the child also sends what it found (some 8% more work)
        reading, writing = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reading)
            os.close(writing)
            return work(0, items, True)
        if pid == 0:  # the child: never returns
            _child(lambda: _send(writing, encode(work(middle, items, False))), reading)
        os.close(writing)
        reaped = False
        try:
            mine = work(0, middle, True)
            sent = _receive(reading)
            reaped = True
            ended = os.waitpid(pid, 0)[1]
        finally:
            os.close(reading)
            if not reaped:  # the parent's own part raised: the child's part is not wanted
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
        if ended == 0 and sent is not None:
            with contextlib.suppress(EOFError, ValueError, TypeError):
                return mine + decode(marshal.loads(sent))
        return mine + work(middle, items, True)  # the child failed: its part done here

    def aside(self, job: Callable[[], object]) -> None:
        """``job`` in a child when the split before it was worth one, else here."""
        if not may_fork(self.items):
            job()
            return
        try:
            pid = os.fork()
        except OSError:
            job()
            return
        if pid == 0:
            _child(job)
        self.writers.append(pid)

    def wait(self) -> None:
        """Reap every writer (a failed one leaves the caches as they were)."""
        while self.writers:
            with contextlib.suppress(ChildProcessError, InterruptedError):
                os.waitpid(self.writers.pop(), 0)


def two_cores(func: Callable[P, R]) -> Callable[P, R]:
    """For ``tropo check``: its checks may use a second process, and it ends only once
    every child it made has ended."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        forks = TwoProcesses()
        try:
            with spread.spreading(forks):
                return func(*args, **kwargs)
        finally:
            forks.wait()

    return wrapper


def _child(job: Callable[[], object], *close: int) -> NoReturn:
    code = 1
    try:
        for fd in close:
            os.close(fd)
        job()
        code = 0
    finally:
        os._exit(code)  # whatever happened: the parent's cleanup is the parent's


def _send(writing: int, found: Any) -> None:
    view = memoryview(marshal.dumps(found))
    while view:
        view = view[os.write(writing, view):]


def _receive(reading: int) -> bytes | None:
    chunks = []
    try:
        while chunk := os.read(reading, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks)
