"""The server's stdin, read in front of the MCP SDK's parser so that every request gets
an answer. The SDK parses each line with pydantic, whose JSON parser gives up on text
nested 200 deep; the SDK then drops the line without reading its id, so it never answers
and the client waits forever. Here each container nested past :data:`KEEP_DEPTH` is
replaced by `null` before the SDK reads the line: the request keeps its id and tool, and
its arguments still nest past `bounds.MAX_DEPTH`, so :mod:`strato.mcp.dispatch` refuses
it like any other too-deep request, with one error answer and nothing run. (A container
cut from outside the arguments, in `_meta` or a field the envelope does not declare, is
only replaced: no tool reads those.)

The SDK's own stdin (fd 0 pointed at the null device while serving, so no child reads
the wire) is kept: :func:`claimed` does the same for the stream read here."""

from __future__ import annotations

import fcntl
import io
import os
import re
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate, islice
from operator import methodcaller
from typing import TextIO

from strato.runs.engine import bounds

# envelope, params and arguments are 3 levels; pydantic's JSON parser stops at 200
KEEP_DEPTH = 100
assert bounds.MAX_DEPTH + 3 < KEEP_DEPTH < 200

# a string, to its closing `"` or, left open, to the end of the line: each character is
# read once (a pattern that needed the closing quote rescanned the rest of the line from
# every escaped `"` after an open one: a 120 KB line took a minute, every request behind it
# waiting)
_STRING = r'"(?:[^"\\]++|\\.)*+"?'
_STRINGS = re.compile(_STRING, re.DOTALL)
# the next bracket outside strings, the text and strings before it read inside the match
_NEXT_BRACKET = re.compile(rf'(?:[^"\[\]{{}}]++|{_STRING})*+[\[\]{{}}]', re.DOTALL)
# a bracket's step of the nesting level, as a signed byte; every other byte is deleted
_STEP = bytes(1 if c in b"[{" else 255 if c in b"]}" else 0 for c in range(256))
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_CHUNK = 1 << 16  # the levels of this many brackets at once: bounded memory, C speed


def prune(line: str, keep: int = KEEP_DEPTH) -> str:
    """``line`` with every array or object below depth ``keep`` replaced by `null`;
    the line itself when it nests no deeper than ``keep``. A hostile client chooses the
    line, so the work is linear, in memory too, and its per-character part runs in C
    (``re``, ``bytes.translate``, ``itertools``, ``list.index``): a MiB takes a fraction
    of a second (docs/benchmarks.md)."""
    if line.count("[") + line.count("{") <= keep:  # brackets in strings only over-count
        return line
    outside = _STRINGS.sub("", line).encode("ascii", "replace")  # a string's brackets are text
    steps = array("b", outside.translate(_STEP, _NOT_BRACKET))  # one per bracket, in order
    where = _Brackets(line)
    out: list[str] = []
    copied, level, start = 0, 0, 0
    while (opens := _reach(steps, start, level, keep + 1)) is not None:
        out.append(line[copied : where.at(opens)] + "null")
        closes = _reach(steps, opens + 1, keep + 1, keep)
        if closes is None:  # a line still open at its end is not JSON: the SDK says so as before
            return "".join(out)
        copied, level, start = where.at(closes) + 1, keep, closes + 1
    out.append(line[copied:])
    return "".join(out)


class _Brackets:
    """Where in the line its brackets outside strings are, asked for in increasing order
    (each bracket is found once: the matches are skipped in C, by ``islice``)."""

    def __init__(self, line: str) -> None:
        self._ends = map(methodcaller("end"), _NEXT_BRACKET.finditer(line))
        self._taken = 0

    def at(self, k: int) -> int:
        """The index in the line of bracket ``k`` (counted from 0)."""
        end: int = next(islice(self._ends, k - self._taken, None))
        self._taken = k + 1
        return end - 1


def _reach(steps: array[int], start: int, level: int, target: int) -> int | None:
    """The first bracket from ``start`` after which the level (``level`` before it) is
    ``target``; steps are of one, so a level is reached before any beyond it."""
    for low in range(start, len(steps), _CHUNK):
        levels = list(accumulate(steps[low : low + _CHUNK], initial=level))
        try:
            return low + levels.index(target, 1) - 1
        except ValueError:
            level = levels[-1]
    return None


class PrunedLines:
    """The wire as lines of text, each :func:`prune`\\ d (all that the SDK reads of it)."""

    def __init__(self, wire: TextIO) -> None:
        self.wire = wire

    def readline(self) -> str:
        return prune(self.wire.readline())


@contextmanager
def claimed() -> Iterator[PrunedLines]:
    """The wire, read through a private duplicate of fd 0 while fd 0 itself points at
    the null device (a child that reads stdin gets EOF, never a request); fd 0 is
    restored on exit. The duplicate is never closed: a reader thread may still block on
    it after the server stops."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        # lines end at "\n" only: JSON allows a lone "\r" between tokens, and the default
        # (universal newlines) would split one request there into two
        raw = os.fdopen(wire, "rb", closefd=False)
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")
        yield PrunedLines(text)
    finally:
        os.dup2(wire, 0)
