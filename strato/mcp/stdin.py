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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from strato.runs import bounds

# envelope, params and arguments are 3 levels; pydantic's JSON parser stops at 200
KEEP_DEPTH = 100
assert bounds.MAX_DEPTH + 3 < KEEP_DEPTH < 200

# a string, or a run of opening or of closing brackets (one step for `[[[[...`)
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[{]++|[\]}]++')


def prune(line: str, keep: int = KEEP_DEPTH) -> str:
    """``line`` with every array or object below depth ``keep`` replaced by `null`;
    linear in its length, and the line itself when it nests no deeper than ``keep``."""
    if line.count("[") + line.count("{") <= keep:  # brackets in strings only over-count
        return line
    out: list[str] = []
    level, copied, cut = 0, 0, False
    for m in _TOKEN.finditer(line):
        run = len(m.group())
        if m.group()[0] in "[{":
            if not cut and level + run > keep:  # the run's bracket that opens level keep + 1
                out.append(line[copied : m.start() + keep - level] + "null")
                cut = True
            level += run
        elif m.group()[0] in "]}":
            if cut and level - run <= keep:  # the run's bracket that closes level keep + 1
                copied, cut = m.start() + level - keep, False
            level -= run
    if not cut:  # a line still open at its end is not JSON: the SDK says so as before
        out.append(line[copied:])
    return "".join(out)


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
