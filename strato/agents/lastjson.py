"""The last top-level JSON object in an agent's output, in time linear in the output.

The definition is the greedy scan: from the first `{`, take the object that parses
there and continue after it; where nothing parses, try the next `{`. Decoding at every
`{` with `json` is quadratic on hostile output (each failed attempt costs a scan and an
error whose line number is counted from the start of the text). Here one pass of a small
recognizer finds where an attempt ends or fails and, on the way, the fate of every
object nested in it: an object opened as a token inside the attempt parses exactly as
the attempt saw it (it closed, or it is open where the attempt failed). So only a `{`
the attempt read inside a string, or past its failure, is scanned afresh, and the text
is decoded once, for the answer. A `{` that neither a `}` nor a key and its colon follow
fails having opened nothing, so a run of them costs one regex search, not an attempt each.

The recognizer has no nesting limit, where `json` stops at the interpreter's recursion
limit: an object nested deeper than that is found here and then fails to decode, and the
previous one found is answered instead."""

from __future__ import annotations

import json
import re
from typing import Any

_WS = re.compile(r"[ \t\n\r]*")
# unrolled (plain run, then escape and plain run, ...): each character has one way to
# match, so a string that fails (unclosed, a control character) fails in linear time; the
# alternation of a plain run and an escape under one star backtracked exponentially
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
# json's scalars, NaN and the infinities included (json.loads accepts them)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity")

# what an object starts with: a close, or a key and its colon. A `{` followed by anything
# else fails within its first key, having opened nothing: it is never an attempt's start
# and never an answer, so a run of them is skipped by one search
_OPENS = re.compile(r'[ \t\n\r]*(?:\}|' + _STRING.pattern + r'[ \t\n\r]*:)')
_OPENING = re.compile(r'\{(?=' + _OPENS.pattern + ")")

# what the innermost open container expects next
_KEY_OR_CLOSE, _KEY, _COLON, _VALUE, _VALUE_OR_CLOSE, _COMMA_OR_CLOSE = range(6)


def last_json_object(text: str) -> dict[str, Any] | None:
    found: list[tuple[int, int]] = []
    known: dict[int, int | None] = {}  # `{` read as a token by the last attempt: its end, or None
    limit = -1  # where that attempt ended or failed: what it saw before is in `known`
    i = text.find("{")
    while i != -1:
        if i >= limit or i not in known:
            if not _OPENS.match(text, i + 1):  # fails within its first key: skip every such `{`
                i = _opening(text, i + 1)
                continue
            known, limit = _attempt(text, i)
        end = known[i]
        if end is None:
            i = text.find("{", i + 1)
        else:
            found.append((i, end))
            i = text.find("{", end)
    for start, end in reversed(found):
        try:
            value = json.loads(text[start:end])
        except (RecursionError, ValueError):  # too deep, or an integer past Python's digit limit
            continue
        if isinstance(value, dict):
            return value
    return None


def _opening(text: str, pos: int) -> int:
    """The next `{` from `pos` an object can start at, or -1."""
    match = _OPENING.search(text, pos)
    return match.start() if match else -1


def _attempt(text: str, start: int) -> tuple[dict[int, int | None], int]:
    """Parse one JSON value from the `{` at `start`: every object opened on the way with
    its end (None if still open), and the offset where the attempt ended or failed."""
    objects: dict[int, int | None] = {start: None}
    stack: list[tuple[int, str]] = [(start, "{")]
    expect = _KEY_OR_CLOSE
    pos = start + 1
    n = len(text)
    while stack:
        space = _WS.match(text, pos)
        pos = space.end() if space else pos
        if pos >= n:
            return objects, pos
        ch = text[pos]
        kind = stack[-1][1]
        if expect in (_KEY_OR_CLOSE, _KEY):
            if ch == "}" and expect == _KEY_OR_CLOSE:
                expect = _close(stack, objects, pos + 1)
                pos += 1
                continue
            match = _STRING.match(text, pos) if ch == '"' else None
            if match is None:
                return objects, pos
            pos, expect = match.end(), _COLON
        elif expect == _COLON:
            if ch != ":":
                return objects, pos
            pos, expect = pos + 1, _VALUE
        elif expect in (_VALUE, _VALUE_OR_CLOSE):
            if ch == "]" and expect == _VALUE_OR_CLOSE:
                expect = _close(stack, objects, pos + 1)
                pos += 1
            elif ch in "{[":
                stack.append((pos, ch))
                if ch == "{":
                    objects[pos] = None
                pos, expect = pos + 1, _KEY_OR_CLOSE if ch == "{" else _VALUE_OR_CLOSE
            else:
                match = (_STRING if ch == '"' else _SCALAR).match(text, pos)
                if match is None:
                    return objects, pos
                pos, expect = match.end(), _COMMA_OR_CLOSE
        else:  # _COMMA_OR_CLOSE
            if ch == ",":
                pos, expect = pos + 1, _KEY if kind == "{" else _VALUE
            elif ch == ("}" if kind == "{" else "]"):
                expect = _close(stack, objects, pos + 1)
                pos += 1
            else:
                return objects, pos
    return objects, pos


def _close(stack: list[tuple[int, str]], objects: dict[int, int | None], end: int) -> int:
    opener, kind = stack.pop()
    if kind == "{":
        objects[opener] = end
    return _COMMA_OR_CLOSE
