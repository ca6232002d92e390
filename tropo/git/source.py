"""Where a workspace is read from, and the errors of reading it.

Kept free of git bindings so front ends can name sources and catch these errors before
deciding whether they need a repository at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """Where to read a workspace from: ``worktree`` (default), ``index`` or ``rev``."""

    kind: str
    rev: str | None = None

    @classmethod
    def worktree(cls) -> Source:
        return cls("worktree")

    @classmethod
    def index(cls) -> Source:
        return cls("index")

    @classmethod
    def at(cls, rev: str) -> Source:
        return cls("rev", rev)

    def describe(self) -> str:
        return {"worktree": "the working tree", "index": "the index"}.get(self.kind, f"{self.rev}")


class SourceError(Exception):
    """The source cannot be read (no repository, no commit); exit 2."""


class NotARepository(Exception):
    """The path is not inside a git work tree."""


class RevisionError(ValueError):
    """A revision names no commit."""
