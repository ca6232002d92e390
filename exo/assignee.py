"""Reading and setting the ``assignee`` frontmatter field of one Markdown file.

Pure text in, text out. A claim must change exactly one line of the item (or add the
minimal block when there is none), so the edit works on lines, never by re-dumping
YAML, and is then verified by parsing both versions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

BOM = "\ufeff"
# The same block boundaries vivary-tropo accepts.
FRONTMATTER = re.compile(r"^---[ \t]*(\r?\n)(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.S)
ASSIGNEE_LINE = re.compile(r"^assignee[ \t]*:")
HANDLE = re.compile(r"@?[A-Za-z0-9._-]+")


class FrontmatterError(ValueError):
    """The file's frontmatter cannot be read or edited safely."""


class HandleError(ValueError):
    """An agent handle outside the allowed alphabet."""


def normalize_handle(handle: str) -> str:
    """The stored form of a handle: letters, digits, ``._-``; a leading ``@`` dropped."""
    if not HANDLE.fullmatch(handle):
        raise HandleError(
            f"invalid agent handle {handle!r}; use letters, digits, '.', '_', '-' "
            "and an optional leading @"
        )
    return handle.removeprefix("@")


def _load(block: str) -> dict[str, Any]:
    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"frontmatter is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a mapping")
    return data


def read_fields(text: str) -> dict[str, Any]:
    """The frontmatter mapping of ``text`` ({} when the file has none)."""
    body = text.removeprefix(BOM)
    match = FRONTMATTER.match(body)
    if match is None:
        if body.startswith("---"):
            raise FrontmatterError("malformed frontmatter")
        return {}
    return _load(match.group(2))


@dataclass(frozen=True)
class AssigneeEdit:
    text: str
    previous: Any
    changed: bool


def _scalar(handle: str) -> str:
    """``handle`` as a YAML scalar that reads back as that string (``true``, ``1e3``
    and ``null`` would not, unquoted)."""
    return handle if _load(f"v: {handle}").get("v") == handle else f'"{handle}"'


def set_assignee(text: str, handle: str) -> AssigneeEdit:
    """``text`` with top-level ``assignee`` set to ``handle``: the existing line is
    replaced, or one line is appended to the block, or a block is added."""
    bom = BOM if text.startswith(BOM) else ""
    body = text[len(bom) :]
    line = f"assignee: {_scalar(handle)}"
    match = FRONTMATTER.match(body)
    if match is None:
        if body.startswith("---"):
            raise FrontmatterError("malformed frontmatter")
        return AssigneeEdit(f"{bom}---\n{line}\n---\n{body}", None, True)
    eol, block = match.group(1), match.group(2)
    before = _load(block)
    previous = before.get("assignee")
    if previous == handle:
        return AssigneeEdit(text, previous, False)
    lines = block.splitlines(keepends=True)
    hits = [i for i, old in enumerate(lines) if ASSIGNEE_LINE.match(old)]
    if len(hits) > 1:
        raise FrontmatterError("assignee appears more than once in the frontmatter")
    if hits:
        old = lines[hits[0]]
        lines[hits[0]] = line + old[len(old.rstrip("\r\n")) :]
    else:
        lines.append(("" if not lines or lines[-1].endswith("\n") else eol) + line)
    new_block = "".join(lines)
    if _load(new_block) != {**before, "assignee": handle}:
        raise FrontmatterError("assignee spans several lines; edit it by hand")
    start, end = match.span(2)
    return AssigneeEdit(bom + body[:start] + new_block + body[end:], previous, True)
