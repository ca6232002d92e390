"""The ``assignee`` field of a work item: the agent handle rule and the one-line edit.

Reading and editing go through tropo's frontmatter parser and byte-preserving editor,
so a value reads exactly as ``tropo check`` will read it and nothing but the assignee
line changes (or a minimal block is added when the item has none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tropo.check import edit, frontmatter

HANDLE = re.compile(r"@?[A-Za-z0-9._-]+")


class FrontmatterError(ValueError):
    """The item's frontmatter cannot be read or edited safely."""


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


def read_fields(text: str) -> dict[str, Any]:
    """The frontmatter mapping of ``text`` ({} when the file has none)."""
    parsed = frontmatter.parse(text)
    if parsed.error is not None:
        raise FrontmatterError(parsed.error[0])
    return parsed.fields


@dataclass(frozen=True)
class AssigneeEdit:
    text: str
    previous: Any
    changed: bool


def set_assignee(text: str, handle: str) -> AssigneeEdit:
    """``text`` with top-level ``assignee`` set to ``handle``."""
    if frontmatter.split(text)[0] is None and text.lstrip("\ufeff").startswith("---"):
        raise FrontmatterError("malformed frontmatter: the opening --- is never closed")
    previous = read_fields(text).get("assignee")
    if previous == handle:
        return AssigneeEdit(text, previous, False)
    try:
        return AssigneeEdit(edit.set_key(text, "assignee", handle), previous, True)
    except edit.EditError as exc:
        raise FrontmatterError(str(exc)) from exc
