"""The board: every work item with its status and who holds it.

The holder of an item is whoever its claim branch names (local or remote-tracking),
falling back to the ``assignee`` the tree records; with no claim branches the board
reads exactly as vivary-exo's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exo.items import WorkItem


@dataclass(frozen=True)
class Row:
    id: str
    status: Any
    assignee: Any


def rows(items: Iterable[WorkItem], holders: Mapping[str, str]) -> list[Row]:
    """Board rows sorted by status (items without one last), then id."""
    board = [Row(i.id, i.status, holders.get(i.id) or i.assignee) for i in items]
    return sorted(board, key=lambda r: (str(r.status) if r.status else "~", r.id))


def as_json(board: list[Row]) -> dict[str, object]:
    return {"items": [{"id": r.id, "status": r.status, "assignee": r.assignee} for r in board]}


def as_text(board: list[Row]) -> list[str]:
    if not board:
        return ["exo: no work items (changes) found"]
    lines = [f"exo: {len(board)} work item(s)"]
    for r in board:
        who = f"  @{r.assignee}" if r.assignee else ""
        lines.append(f"  [{r.status or 'no status'}]  {r.id}{who}")
    return lines
