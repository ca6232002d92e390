"""Frontmatter: split a Markdown text, parse its YAML safely, remember key lines.

Values read exactly as vivary-tropo reads them: plain scalars follow its rules (no YAML
1.1 dates, ``yes``/``on`` stay strings, numbers as Python reads them), quoted scalars are
strings. PyYAML's C parser does the work for anything non-trivial; a line-based fast
path handles the common flat shape (``key: value``, inline and block lists of plain
scalars) and hands everything else to PyYAML, whose reading it must equal (pinned by a
property test). Anchors, aliases, merge keys, tags and oversized blocks are refused, so
a YAML bomb costs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tropo.check.scalars import FrontmatterError, plain_scalar

MAX_FRONTMATTER = 256 * 1024

_TITLE_RE = re.compile(r"^#\s+(.+)$", re.M)
_BOM = "\ufeff"


@dataclass(frozen=True)
class Parsed:
    """What one Markdown text says, independent of where it lives."""

    fields: dict[str, Any]
    key_lines: dict[str, int]  # 1-based file line of each top-level key
    title: str | None  # first ``# `` heading of the body
    error: tuple[str, int] | None  # (message, line) when the frontmatter is unusable


def split(text: str) -> tuple[str | None, str]:
    """(yaml block, body); no block when the text does not open with a closed one: a
    ``---`` line (blanks and a CR may end it), then the first later ``---`` line.

    This is what ``---[ \\t]*\\r?\\n(.*?)\\r?\\n---[ \\t]*(?:\\r?\\n|$)`` (DOTALL) matches
    at the start, found with ``str.find`` (a lazy regex tries every character: it was
    a sixth of the parse). A property test holds the two equal."""
    block, text, at = _split_at(text)
    return block, text[at:] if at else text


def _split_at(text: str) -> tuple[str | None, str, int]:
    """:func:`split` with the body as where it starts in the text (BOM gone): a parse
    only searches the body for its title, and copying it costs more than the search
    (four bytes a character in most of a Unicode workspace's documents)."""
    if text.startswith(_BOM):
        text = text[1:]
    if not text.startswith("---"):
        return None, text, 0
    start = text.find("\n", 3) + 1
    if not start or text[3:start - 1].removesuffix("\r").strip(" \t"):
        return None, text, 0
    at = start
    while (close := text.find("\n---", at)) >= 0:
        end = close + 4
        while end < len(text) and text[end] in " \t":
            end += 1
        if end == len(text) or text[end] == "\n" or text.startswith("\r\n", end):
            block_end = close - 1 if close > start and text[close - 1] == "\r" else close
            body_at = end if end == len(text) else end + (1 if text[end] == "\n" else 2)
            return text[start:block_end], text, body_at
        at = close + 1
    return None, text, 0


def title_of(text: str, at: int = 0) -> str | None:
    """The first ``# `` heading from ``at`` on, which starts a line (the body's start does)."""
    m = _TITLE_RE.search(text, at)
    return m.group(1).strip() if m else None


# --- fast path ---------------------------------------------------------------------

_SIMPLE_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):(?:[ ]+(.*))?$")
# A plain scalar the fast path may read: no YAML indicator that could change its meaning.
_SIMPLE_VALUE = re.compile(r"[A-Za-z0-9_./()+$=^~][^#:{}\[\],&*!|>'\"%`\t]*")
# A key's own value may also hold colons no blank follows (``10:00:00Z``): YAML reads
# them as text, and only a colon before a blank or the end would start a mapping.
_COLON_VALUE = re.compile(r"[A-Za-z0-9_./()+$=^~](?:[^#:{}\[\],&*!|>'\"%`\t]|:(?=[^ ]))*")
# The two commonest lines whole, in one match each: ``key: plain value`` and ``- plain``
# (what the general reading below makes of them, value and indentation alike).
_PLAIN_ENTRY = re.compile(r"( *)([A-Za-z0-9_][A-Za-z0-9_.\-]*): +(" + _COLON_VALUE.pattern + ")")
_PLAIN_ITEM = re.compile(r"( *)- (" + _SIMPLE_VALUE.pattern + ")")
# Characters a one-line quoted scalar may hold on the fast path: none that ends, escapes
# or comments it, nor a colon (the subset reads ``- "a: b"`` as a mapping in an item).
_QUOTE_UNSAFE = frozenset("\"'\\")
# The subset's test for a list item that holds a mapping (``yamlsubset.items``).
_ITEM_KEY = re.compile(r"([^:\s][^:]*?):(?:\s+(.*)|\s*)$")


def _quoted(raw: str) -> str | None:
    """A one-line ``"..."`` or ``'...'`` scalar's text, or None to defer to PyYAML.

    With no escape, quote or comment inside, both styles read their text verbatim;
    ``isprintable`` admits only characters YAML's reader admits, none a line break."""
    if len(raw) < 2 or raw[0] not in "\"'" or raw[-1] != raw[0]:
        return None
    inner = raw[1:-1]
    if not inner.isprintable() or not _QUOTE_UNSAFE.isdisjoint(inner):
        return None
    return inner


# What one line says: (indent, kind, key, value), value immutable (an inline list as a
# tuple); None when the fast path declines the line.
_BLANK, _ITEM, _SCALAR, _BLOCK, _INLINE = range(5)
Line = tuple[int, int, str, Any] | None
_LINES: dict[str, Line] = {}  # by text: a workspace repeats most of its lines
_LINES_KEPT = 1 << 16
_UNSEEN: Line = (-1, -1, "", None)
_MAX_NESTING = 8  # deeper blocks go to PyYAML (and its depth limit)


def _line(line: str) -> Line:
    """One line read on its own: a pure function of its text, so it is remembered. A
    comment line reads as blank: YAML and the subset both skip it wherever it stands."""
    m = _PLAIN_ENTRY.fullmatch(line)
    if m is not None:
        return len(m.group(1)), _SCALAR, m.group(2), plain_scalar(m.group(3))
    m = _PLAIN_ITEM.fullmatch(line)
    if m is not None:
        return len(m.group(1)), _ITEM, "", plain_scalar(m.group(2))
    return _general_line(line)


def _general_line(line: str) -> Line:
    """:func:`_line` without its two one-match shortcuts: any line, read piece by piece."""
    body = line.lstrip(" ")
    if not body or body.isspace() or body.startswith("#"):
        return 0, _BLANK, "", None
    indent = len(line) - len(body)
    if body.startswith("- "):
        item = body[2:].rstrip(" ")
        if _SIMPLE_VALUE.fullmatch(item):
            return indent, _ITEM, "", plain_scalar(item)
        quoted = _quoted(item)
        # the subset reads an item like ``- "a: b"`` as a mapping inside it: refused
        if quoted is None or (":" in quoted and _ITEM_KEY.match(item)):
            return None
        return indent, _ITEM, "", quoted
    m = _SIMPLE_KEY.match(body)
    if m is None:
        return None
    key, rest = m.group(1), (m.group(2) or "").rstrip(" ")
    if rest == "":
        return indent, _BLOCK, key, None
    if rest.startswith("["):
        if not rest.endswith("]"):
            return None
        inner = rest[1:-1].strip()
        items = tuple(map(_inline_item, inner.split(","))) if inner else ()
        return None if _NOT_PLAIN in items else (indent, _INLINE, key, items)
    if _COLON_VALUE.fullmatch(rest) and rest not in ("-", "?"):
        return indent, _SCALAR, key, plain_scalar(rest)
    quoted = _quoted(rest)
    return None if quoted is None else (indent, _SCALAR, key, quoted)


_ITEMS: dict[str, Any] = {}  # an inline list's items by text: ref lists repeat ids
_NOT_PLAIN: Any = object()


def _inline_item(raw: str) -> Any:
    """What one item of an inline list reads as (``_NOT_PLAIN``: the fast path declines
    it), read once per distinct text: a workspace's inline lists are mostly distinct
    lines made of the same few thousand ids."""
    value = _ITEMS.get(raw, _NOT_PLAIN)
    if value is _NOT_PLAIN:
        item = raw.strip()
        if _SIMPLE_VALUE.fullmatch(item):
            if len(_ITEMS) >= _LINES_KEPT:
                _ITEMS.clear()
            value = _ITEMS[raw] = plain_scalar(item)
    return value


def _fast(block: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Parse the common block shape, or None to defer to the subset's rules and PyYAML:
    keys with plain or simple quoted scalars, inline lists of plain scalars, and under a
    key either a nested mapping of the same or a list of such scalars, indented by spaces,
    comment lines anywhere. What it reads equals what PyYAML reads, and it reads nothing
    vivary-tropo's subset refuses (both pinned by property tests)."""
    fields: dict[str, Any] = {}
    lines: dict[str, int] = {}
    if "\t" in block:
        return None  # a tab in the indentation is refused by the subset
    raw_lines = block.split("\n")
    if "\r" in block:
        raw_lines = [line.rstrip("\r") for line in raw_lines]
    known = _LINES
    # The open blocks, innermost last: (indent, mapping or list). ``owner`` and ``at``
    # name a key whose value is still open (a ``key:`` line) and its indentation.
    frames: list[tuple[int, Any]] = [(0, fields)]
    here: Any = fields
    depth = 0
    owner: dict[str, Any] | None = None
    owned = ""
    at = 0
    for n, text in enumerate(raw_lines, start=2):
        read = known.get(text, _UNSEEN)
        if read is _UNSEEN:
            if len(known) >= _LINES_KEPT:
                known.clear()
            read = known[text] = _line(text)
        if read is None:
            return None
        indent, kind, key, value = read
        if kind == _BLANK:
            continue
        if owner is not None:
            if indent > at:  # the open key's value: a block one level in
                if len(frames) > _MAX_NESTING:
                    return None
                here = owner[owned] = [] if kind == _ITEM else {}
                frames.append((indent, here))
                depth = indent
            owner = None
        while indent < depth:
            frames.pop()
            depth, here = frames[-1]
        if indent != depth:
            return None  # deeper than its block, or between two levels
        if kind == _ITEM:
            if here.__class__ is not list:
                return None
            here.append(value)
            continue
        if here.__class__ is not dict or key in here:
            return None
        if kind == _BLOCK:
            here[key] = None  # null unless a deeper block follows
            owner, owned, at = here, key, indent
        else:
            here[key] = list(value) if kind == _INLINE else value
        if len(frames) == 1:
            lines[key] = n
    return fields, lines


def _slow(block: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Anything the fast path declines: first vivary-tropo's subset rules (what it refuses
    is refused here, at its line), then PyYAML behind the safety layer, loaded only when a
    document needs it (not for one the subset refuses: a duplicate key costs no import)."""
    from tropo.check import yamlsubset

    refused = yamlsubset.refusal(block)
    if refused is not None:
        raise FrontmatterError(*refused)
    from tropo.check import yamlsafe

    return yamlsafe.load(block)


def parse(text: str) -> Parsed:
    """Split and parse one Markdown text; never raises for bad content."""
    block, text, at = _split_at(text)
    title = title_of(text, at)
    if block is None:
        return Parsed({}, {}, title, None)
    if len(block) > MAX_FRONTMATTER:
        return Parsed({}, {}, title, (f"frontmatter larger than {MAX_FRONTMATTER} bytes", 2))
    try:
        fast = _fast(block)
        fields, lines = fast if fast is not None else _slow(block)
    except FrontmatterError as exc:
        return Parsed({}, {}, title, (str(exc), exc.line))
    except RecursionError:
        return Parsed({}, {}, title, ("frontmatter nests too deeply", 2))
    return Parsed(fields, lines, title, None)
