"""The shape rules of vivary-tropo's frontmatter subset, so what it refuses is E001 here too.

vivary-tropo reads frontmatter with a line-based subset of YAML: maps and lists by
indentation, a list item never holds a mapping, a list is never at its key's own
indentation, a value never continues on the next line. We read values with real YAML,
which accepts more; a block the subset refuses would fail for anyone who checks the
same files with vivary-tropo, so it is E001 here too, at the line vivary-tropo names.
This module walks only that structure (indentation, list items, keys, block scalars) and
builds no values: the first refusal, or None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A key line: a key without colons, a colon, then a value after whitespace or nothing.
_KEY = re.compile(r"([^:\s][^:]*?):(?:\s+(.*)|\s*)$")
_BLOCK_SCALARS = frozenset({"|", ">", "|-", ">-", "|+", ">+"})
_PREFIX = "frontmatter is outside the YAML subset vivary-tropo reads"


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based in the file (the block starts on line 2)
    indent: int
    text: str  # without indentation and comment


class _Refused(Exception):
    def __init__(self, why: str, line: int) -> None:
        super().__init__(why)
        self.line = line


def _uncommented(raw: str) -> str:
    """The line without a ``#`` comment (one that starts the line or follows a blank,
    outside quotes)."""
    quote = ""
    for i, ch in enumerate(raw):
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote else ch
        elif ch == "#" and not quote and (i == 0 or raw[i - 1] in " \t"):
            return raw[:i].rstrip()
    return raw.rstrip()


def _lines(block: str) -> list[_Line]:
    out: list[_Line] = []
    for number, raw in enumerate(block.split("\n"), start=2):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise _Refused("a tab in the indentation", number)
        text = _uncommented(raw)
        if text.strip():
            out.append(_Line(number, len(text) - len(text.lstrip(" ")), text.strip()))
    return out


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith("- ")


class _Walk:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.pos = 0

    def _here(self, min_indent: int) -> _Line | None:
        if self.pos < len(self.lines) and self.lines[self.pos].indent >= min_indent:
            return self.lines[self.pos]
        return None

    def block(self, min_indent: int) -> str | None:
        """Walk the block that starts here, if indented at least ``min_indent``: its kind."""
        line = self._here(min_indent)
        if line is None:
            return None
        if _is_item(line.text):
            self.items(line.indent)
            return "list"
        self.mapping(line.indent)
        return "map"

    def mapping(self, indent: int) -> None:
        keys: set[str] = set()
        while (line := self._here(indent)) is not None:
            if line.indent > indent:
                raise _Refused("a line indented deeper than its mapping (a value that "
                               "continues, or a stray indent)", line.number)
            if line.text.startswith("- "):
                raise _Refused("a list item at the mapping's own indentation", line.number)
            m = _KEY.match(line.text)
            if m is None:
                raise _Refused(f"a line that is not `key: value`: {line.text!r}", line.number)
            key = m.group(1).strip().strip("\"'")
            if key in keys:
                raise _Refused(f"duplicate key {key!r}", line.number)
            keys.add(key)
            self.pos += 1
            rest = (m.group(2) or "").strip()
            if rest in _BLOCK_SCALARS:
                while self._here(indent + 1) is not None:
                    self.pos += 1
            elif rest == "":
                self.block(indent + 1)

    def items(self, indent: int) -> None:
        while (line := self._here(indent)) is not None:
            if line.indent != indent or not _is_item(line.text):
                return
            item = line.text[1:].strip()
            if item and _KEY.match(item) and not item.startswith(("http:", "https:")):
                raise _Refused("a mapping inside a list item", line.number)
            self.pos += 1


def refusal(block: str) -> tuple[str, int] | None:
    """(message, file line) of the first line vivary-tropo's subset refuses, or None."""
    try:
        walk = _Walk(_lines(block))
        kind = walk.block(0)
        if walk.pos < len(walk.lines):
            raise _Refused("a line past the end of the top-level block",
                           walk.lines[walk.pos].number)
    except _Refused as refused:
        return f"{_PREFIX}: {refused}", refused.line
    if kind == "list":
        return "frontmatter must be a mapping of key: value", 2
    return None
