"""How a whole check may spread its work over a second process.

Reading, parsing and checking a document depends on nothing but that document, and the
caches a cold check fills are written for later runs, not for its own answer; so a
caller at the edge of the program (the ``tropo check`` command, which owns its process)
may give either to a forked child of its own. The library never starts a process: it
asks :func:`split` and :func:`aside`, which do the work here, at once, unless the caller
set a :class:`Spreader` around the call with :func:`spreading`. Servers that load this
library (the workbench, the MCP server) set none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

_R = TypeVar("_R")


class Spreader(Protocol):
    def split(self, items: int, work: Callable[[int, int, bool], list[_R]],
              encode: Callable[[list[_R]], Any], decode: Callable[[Any], list[_R]]) -> list[_R]:
        """``work(start, stop, seen)`` over items ``[0, items)``, results in item order;
        ``work`` may be asked for any pieces of the range, in any order and in either
        process, so it must be a pure function of its range. ``seen`` is False where the
        results are sent elsewhere (nothing a person sees may be written there);
        ``encode`` makes them marshal-able, ``decode`` undoes it."""
        ...

    def aside(self, job: Callable[[], object]) -> None:
        """Run ``job``, which only writes caches, by the time the command ends."""
        ...


_current: ContextVar[Spreader | None] = ContextVar("tropo_check_spreader", default=None)


@contextmanager
def spreading(spreader: Spreader) -> Iterator[None]:
    """Let the checks made inside this block spread their work with ``spreader``."""
    token = _current.set(spreader)
    try:
        yield
    finally:
        _current.reset(token)


def split(items: int, work: Callable[[int, int, bool], list[_R]],
          encode: Callable[[list[_R]], Any], decode: Callable[[Any], list[_R]]) -> list[_R]:
    """``work`` over ``[0, items)``: here, or as the caller's spreader shares it."""
    spreader = _current.get()
    return work(0, items, True) if spreader is None else spreader.split(items, work, encode, decode)


def aside(job: Callable[[], object]) -> None:
    """``job`` (cache writes only): now, or beside the caller's remaining work."""
    spreader = _current.get()
    if spreader is None:
        job()
    else:
        spreader.aside(job)
