"""One document's history through commits: when it appeared, each frontmatter field change
with its commit and author, and renames followed back to where the file began.

Walks first parents from a commit, comparing the blob at the tracked path with the
parent's; only where the parent lacks the path is a rename search (a tree diff) run.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

import pygit2

from tropo.check.frontmatter import parse
from tropo.review.graphdiff import field_changes


@dataclass
class Event:
    commit: pygit2.Commit
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


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Blob | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


def _fields(blob: pygit2.Blob | None) -> dict[str, Any]:
    if blob is None:
        return {}
    return parse(blob.data.decode("utf-8", "replace")).fields


def _renamed_from(repo: pygit2.Repository, parent: pygit2.Commit, commit: pygit2.Commit,
                  path: str) -> str | None:
    diff = parent.tree.diff_to_tree(commit.tree)
    diff.find_similar()
    for d in diff.deltas:
        if d.status == pygit2.enums.DeltaStatus.RENAMED and d.new_file.path == path:
            return str(d.old_file.path)
    return None


def history(repo: pygit2.Repository, head: pygit2.Commit, path: str) -> list[Event]:
    """Events for the file at ``path`` in ``head``, oldest first."""
    events: list[Event] = []
    commit: pygit2.Commit | None = head
    while commit is not None:
        blob = _blob(commit.tree, path)
        if blob is None:
            break
        parent = commit.parents[0] if commit.parents else None
        before = _blob(parent.tree, path) if parent is not None else None
        if before is not None and before.id == blob.id:
            commit = parent
            continue
        if before is not None:
            events.append(Event(commit, "changed", path, None,
                                field_changes(_fields(before), _fields(blob))))
            commit = parent
            continue
        old_path = _renamed_from(repo, parent, commit, path) if parent is not None else None
        if old_path is None or parent is None:
            events.append(Event(commit, "added", path, None, field_changes({}, _fields(blob))))
            break
        old_blob = _blob(parent.tree, old_path)
        events.append(Event(commit, "renamed", path, old_path,
                            field_changes(_fields(old_blob), _fields(blob))))
        path, commit = old_path, parent
    events.reverse()
    return events
