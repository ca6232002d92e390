"""Work items: the graph nodes under ``changes/``, with the two fields exo reads.

A node's coordination role is its top-level folder, whatever type the schema gives
it, exactly as vivary-exo decides it; root-level files have no role.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

WORK_FOLDER = "changes"


class NodeLike(Protocol):
    """What exo needs of a tropo graph node."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def fields(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class WorkItem:
    id: str
    path: str
    status: Any
    assignee: Any


def is_work_item(path: str) -> bool:
    """True for a file inside ``changes/`` (at any depth), relative to the root."""
    parts = path.split("/")
    return len(parts) > 1 and parts[0] == WORK_FOLDER


def work_items(nodes: Iterable[NodeLike]) -> list[WorkItem]:
    """The work items among ``nodes``, in the order given."""
    return [
        WorkItem(n.id, n.path, n.fields.get("status"), n.fields.get("assignee"))
        for n in nodes
        if is_work_item(n.path)
    ]
