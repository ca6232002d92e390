"""Byte-preserving frontmatter edits: remove or set top-level keys, touch nothing else.

Each edit works on the lines the parser says a key spans and is verified by parsing the
result: if the new text does not read back as exactly the intended fields, the edit is
refused rather than written.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tropo.check import frontmatter
from tropo.check.scalars import plain_scalar

_KEY_LINE = re.compile(r"^[^\s#-][^:]*:")


class EditError(ValueError):
    """The edit cannot be made without touching more than the named keys."""


def _spans(lines: list[str], start: int, end: int) -> dict[int, int]:
    """Top-level key line index -> exclusive end index, within [start, end)."""
    heads = [i for i in range(start, end) if _KEY_LINE.match(lines[i])]
    spans = {}
    for n, i in enumerate(heads):
        stop = heads[n + 1] if n + 1 < len(heads) else end
        # Trailing blank and comment lines belong to what follows.
        while stop - 1 > i and (not lines[stop - 1].strip() or lines[stop - 1].lstrip().startswith("#")):
            stop -= 1
        spans[i] = stop
    return spans


def _block_bounds(lines: list[str]) -> tuple[int, int]:
    """(first yaml line index, closing fence index) of the frontmatter block."""
    for j in range(1, len(lines)):
        if re.fullmatch(r"---[ \t]*\r?\n?", lines[j]):
            return 1, j
    raise EditError("frontmatter block is not closed")


def _verify(new_text: str, expected: dict[str, Any]) -> None:
    parsed = frontmatter.parse(new_text)
    if parsed.error is not None or parsed.fields != expected:
        raise EditError("the edit would change more than the named keys")


def remove_keys(text: str, keys: list[str]) -> str:
    """``text`` without the top-level ``keys``; the block is dropped when it empties."""
    before = frontmatter.parse(text)
    if before.error is not None:
        raise EditError(before.error[0])
    lines = text.splitlines(keepends=True)
    bom = lines[0].startswith("\ufeff") if lines else False
    first, close = _block_bounds(lines)
    spans = _spans(lines, first, close)
    drop: set[int] = set()
    for key in keys:
        line = before.key_lines.get(key)
        if line is None:
            continue
        i = line - 1
        if i not in spans:
            raise EditError(f"cannot locate key {key!r}")
        drop.update(range(i, spans[i]))
    kept = [ln for i, ln in enumerate(lines[first:close], start=first) if i not in drop]
    expected = {k: v for k, v in before.fields.items() if k not in keys}
    if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in kept):
        body = "".join(lines[close + 1 :])
        new = ("\ufeff" if bom else "") + body.lstrip("\r\n")
    else:
        new = "".join(lines[:first] + kept + lines[close:])
    _verify(new, expected)
    return new


def set_key(text: str, key: str, value: str) -> str:
    """``text`` with top-level ``key`` set to the string ``value`` (one line, JSON-quoted
    when plain YAML would misread it); the line is added last when the key is new."""
    before = frontmatter.parse(text)
    if before.error is not None:
        raise EditError(before.error[0])
    rendered = value if plain_scalar(value) == value and re.fullmatch(
        r"[A-Za-z0-9_][A-Za-z0-9_.@/+-]*", value) else json.dumps(value)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    expected = dict(before.fields)
    expected[key] = value
    if frontmatter.split(text)[0] is None:
        new = f"---{newline}{key}: {rendered}{newline}---{newline}" + text.lstrip("\ufeff")
        _verify(new, {key: value})
        return new
    first, close = _block_bounds(lines)
    spans = _spans(lines, first, close)
    line = before.key_lines.get(key)
    entry = f"{key}: {rendered}{newline}"
    if line is None:
        new_lines = [*lines[:close], entry, *lines[close:]]
    else:
        i = line - 1
        if i not in spans:
            raise EditError(f"cannot locate key {key!r}")
        new_lines = [*lines[:i], entry, *lines[spans[i]:]]
    new = "".join(new_lines)
    _verify(new, expected)
    return new
