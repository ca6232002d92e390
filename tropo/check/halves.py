"""Half of a large batch of pure work done by a forked child, when a second core is idle.

A cold check reads, parses and checks every document: work that depends on nothing but
the document, so two cores can share it. The child is a fork of this very process: it
starts no program and is given nothing new, it works through the second half, sends
what it found back through a pipe as one marshal document and ends with ``os._exit``
(none of the parent's buffers, handlers or caches are flushed twice). Whenever that is
not plainly safe or useful (no ``fork``, a second thread that a fork would freeze
mid-lock, a small batch, less than half a core idle: on a busy machine the split only
adds CPU time) the parent does all of it; when the child fails in any way (it dies, is
killed, sends a short or damaged document) the parent does the second half itself.
Either way the results are the same, in the same order.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

MIN_ITEMS = 4000  # below this, forking and sending results back costs about what it saves

_T = TypeVar("_T")
_R = TypeVar("_R")


def _spare_cores() -> float:
    """Cores this process may use less the one-minute load average: what a child would
    not have to take from other work (on a busy machine the split only adds CPU time)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        return cores - os.getloadavg()[0]
    except OSError:
        return 0.0


def may_fork(items: int) -> bool:
    """Whether a batch of ``items`` is worth a child and safe to fork for."""
    return (items >= MIN_ITEMS and hasattr(os, "fork") and threading.active_count() == 1
            and _spare_cores() >= 0.5)


def run(items: Sequence[_T], work: Callable[[Sequence[_T], bool], _R],
        encode: Callable[[_R], Any], decode: Callable[[Any], _R]) -> list[_R]:
    """``work`` over ``items``, as one part or two (the first part's results first).
    ``work(part, seen)``: ``seen`` is False in the child, which must then write nothing
    a person sees. ``encode`` makes a child's results marshal-able; ``decode`` undoes it."""
    if not may_fork(len(items)):
        return [work(items, True)]
    middle = len(items) // 2
    first, second = items[:middle], items[middle:]
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return [work(items, True)]
    if pid == 0:  # the child: never returns
        _child(reading, writing, lambda: encode(work(second, False)))
    os.close(writing)
    reaped = False
    try:
        mine = work(first, True)
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
            return [mine, decode(marshal.loads(sent))]
    return [mine, work(second, True)]  # the child failed: its part done here


def _child(reading: int, writing: int, job: Callable[[], Any]) -> NoReturn:
    code = 1
    try:
        os.close(reading)
        view = memoryview(marshal.dumps(job()))
        while view:
            view = view[os.write(writing, view):]
        code = 0
    finally:
        os._exit(code)  # whatever happened: the parent's cleanup is the parent's


def _receive(reading: int) -> bytes | None:
    chunks = []
    try:
        while chunk := os.read(reading, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks)
