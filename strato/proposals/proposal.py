"""A proposal and its two ids: ``id`` names the subject, ``revision`` the evidence.

The same subject always gets the same id (so a rejection sticks and a rerun after a
crash proposes nothing twice); new evidence about it gets a new revision, never an edit
of the old one. Both are digests of canonical JSON, so they do not depend on the run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

KINDS = ("hygiene", "playbook", "memory", "skill")


def digest(value: Any) -> str:
    """A short, stable digest of a JSON value (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Proposal:
    """One thing the heartbeat suggests; ``files`` is what ``apply`` would write
    (path -> full new content, built on ``base``); empty means a person acts by hand."""

    kind: str
    check: str
    subject: str
    title: str
    evidence: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    base: str | None = None

    @property
    def id(self) -> str:
        return f"{self.check}-{digest([self.kind, self.check, self.subject])}"

    @property
    def revision(self) -> str:
        return digest([self.id, list(self.evidence), sorted(self.files.items()), self.base])

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "kind": self.kind, "check": self.check,
                "subject": self.subject, "title": self.title, "evidence": list(self.evidence),
                "files": dict(sorted(self.files.items())), "base": self.base}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        return cls(str(data["kind"]), str(data["check"]), str(data["subject"]), str(data["title"]),
                   tuple(str(e) for e in data["evidence"]),
                   {str(k): str(v) for k, v in dict(data.get("files") or {}).items()},
                   data.get("base"))
