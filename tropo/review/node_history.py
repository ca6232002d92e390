"""One document's history through commits: when it appeared, each frontmatter field change
with its commit and author, and renames followed back to where the file began.

The commit walk is the repository layer's (:func:`tropo.git.log.path_log`); this
module reads the frontmatter on either side of each step and names what changed.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from tropo.check.frontmatter import parse
from tropo.git.log import path_log
from tropo.git.types import Commit
from tropo.review.graphdiff import field_changes


@dataclass
class Event:
    commit: Commit
    kind: str  # added | changed | renamed
    path: str
    from_path: str | None = None
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        c = self.commit
        zone = datetime.timezone(datetime.timedelta(minutes=c.author.offset))
        out: dict[str, Any] = {
            "commit": str(c.id), "date": datetime.datetime.fromtimestamp(c.author.time, zone).isoformat(),
            "author": c.author.name, "email": c.author.email, "summary": c.message.split("\n", 1)[0],
            "kind": self.kind, "path": self.path,
            "changes": [{"field": f, "from": _plain(a), "to": _plain(b)} for f, a, b in self.changes],
        }
        if self.from_path is not None:
            out["from_path"] = self.from_path
        return out


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else None


def _fields(data: bytes | None) -> dict[str, Any]:
    if data is None:
        return {}
    return parse(data.decode("utf-8", "replace")).fields


def history(head: Commit, path: str) -> list[Event]:
    """Events for the file at ``path`` in ``head``, oldest first."""
    return [Event(step.commit, step.kind, step.path, step.from_path,
                  field_changes(_fields(step.before), _fields(step.after)))
            for step in path_log(head, path)]
