"""The second core for ``tropo check``: a cold check's documents read, parsed and
checked by the command's own process and a forked child of it, each taking the next
piece while any is left, and the caches written by another child while the command
builds and prints its answer.

Only the command line forks (:func:`two_cores` around the command, through
:func:`tropo.check.spread.spreading`): it owns its process, while the workbench and the
MCP server, which load the same library, never do. A child starts no program and is
given nothing new; it ends with ``os._exit`` (none of the parent's buffers, handlers or
caches are flushed twice). Whenever forking is not plainly safe or useful (no ``fork``,
no idle second core, a second thread that a fork would freeze mid-lock, a small batch)
the parent does the work itself. A child that fails costs time, never results: the parent does
the pieces it took again; a failed cache writer leaves the caches as they were (each file is
written whole or not at all), and the command waits for it before it ends, so the next
command never races it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import threading
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

from tropo.check import spread

MIN_ITEMS = 4000  # below this, forking and sending results back costs about what it saves
PIECES = 128  # a split's pieces: the last one taken is all either process may wait for

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
        """``[0, items)`` in :data:`PIECES` pieces, each worked by whichever of this
        process and a child is free first: no fixed share can be right when ``git
        status``, the child's encoding and this process's decoding take turns on the cores."""
        self.items = items
        if not may_fork(items):
            return work(0, items, True)
        size = -(-items // PIECES)
        pieces = [(start, min(start + size, items)) for start in range(0, items, size)]
        queue, feed = os.pipe()
        os.write(feed, bytes(range(len(pieces))))  # the pieces to take, a byte each
        os.close(feed)
        reading, writing = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (queue, reading, writing):
                os.close(fd)
            return work(0, items, True)
        if pid == 0:  # the child: never returns
            _child(lambda: _send(writing, [(n, marshal.dumps(encode(work(*pieces[n], False))))
                                           for n in _taken(queue)]), reading)
        os.close(writing)
        reaped = False
        mine: dict[int, list[_R]] = {}
        try:
            for n in _taken(queue):
                mine[n] = work(*pieces[n], True)
            sent = _receive(reading)
            reaped = True
            ended = os.waitpid(pid, 0)[1]
        finally:
            os.close(reading)
            os.close(queue)
            if not reaped:  # the parent's own part raised: the child's part is not wanted
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
        theirs: dict[int, list[_R]] = {}
        if ended == 0 and sent is not None:
            with contextlib.suppress(EOFError, ValueError, TypeError):
                theirs = {n: decode(marshal.loads(found)) for n, found in marshal.loads(sent)}
        out: list[_R] = []
        for n, (start, stop) in enumerate(pieces):
            found = mine.get(n, theirs.get(n))
            out += found if found is not None else work(start, stop, True)  # the child failed: here
        return out

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


def _taken(queue: int) -> Iterator[int]:
    """The pieces this process takes from the shared queue until it is empty: a pipe's
    one-byte read is atomic, so no piece is taken twice or missed."""
    while taken := os.read(queue, 1):
        yield taken[0]


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
