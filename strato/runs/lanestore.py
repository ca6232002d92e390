"""Lanes stored in the repository: `refs/vivary/lanes` is a chain of commits whose tree
holds `lanes.json` (every lane's record) and whose message is the evidence folded in,
so `git log refs/vivary/lanes` is the review trail and the ref travels with push and
fetch like any other. The ref moves by compare-and-swap: a writer that loses the race
re-reads the new tip and folds its evidence again, so no evidence is ever overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from strato.runs.lanes import fold
from tropo.git.chains import commits_since
from tropo.git.objects import blob_at, write_commit
from tropo.git.reflock import ref_writer
from tropo.git.repo import RefRaceError, cas_ref, read_ref
from tropo.git.types import Repository, oid

REF = "refs/vivary/lanes"
FILE = "lanes.json"
MAX_RACE_RETRIES = 50


class LanesCorrupt(Exception):
    """`refs/vivary/lanes` does not hold a lanes document we wrote."""


class LaneStore:
    def __init__(self, repo: Repository) -> None:
        self.repo = repo

    def read(self) -> tuple[str | None, dict[str, dict[str, Any]]]:
        """(tip, lanes): the lanes as of the ref's tip ({} before the first evidence)."""
        tip = read_ref(self.repo, REF)
        if tip is None:
            return None, {}
        data = blob_at(self.repo, tip, FILE)
        try:
            doc = json.loads(data or b"")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LanesCorrupt(f"{REF} {tip[:12]}: {FILE} is not JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("lanes"), dict):
            raise LanesCorrupt(f"{REF} {tip[:12]}: {FILE} has no lanes object")
        for key, record in doc["lanes"].items():
            if not _well_formed(key, record):
                raise LanesCorrupt(f"{REF} {tip[:12]}: lane {key[:80]!r} is malformed")
        return tip, doc["lanes"]

    def standing(self) -> dict[str, dict[str, Any]]:
        """The lanes to decide by: none at all (so every output is verified) when the
        ref cannot be read; `strato lanes` reports why."""
        try:
            return self.read()[1]
        except LanesCorrupt:
            return {}

    def record(self, evidence: Iterable[Mapping[str, Any]]) -> str | None:
        """Fold `evidence` into the lanes and move the ref; the new tip (None: nothing
        to record). A lost race starts over from the winner's tip."""
        items = list(evidence)
        if not items:
            return None
        for _ in range(MAX_RACE_RETRIES):
            tip, note = read_ref(self.repo, REF), ""
            try:
                lanes = self.read()[1]
            except LanesCorrupt as exc:  # start over on top of it: history keeps what it was
                lanes, note = {}, f" (the previous tip was unreadable, lanes start over: {exc})"
            for item in items:
                fold(lanes, item)
            body = json.dumps({"version": 1, "lanes": lanes}, sort_keys=True, indent=1).encode()
            subject = ", ".join(sorted({f"{i['kind']} {i['lane']}" for i in items}))[:200]
            message = f"lanes: {subject}{note}\n\n{json.dumps(items, sort_keys=True)}\n"
            commit = write_commit(self.repo, {FILE: body}, [oid(tip)] if tip else [], message)
            try:
                with ref_writer(self.repo, REF):
                    cas_ref(self.repo, REF, commit, tip, "vivary: lanes")
            except RefRaceError:
                continue
            return str(commit)
        raise RefRaceError(REF, None, read_ref(self.repo, REF))

    def history(self) -> list[list[dict[str, Any]]]:
        """The evidence of every commit on the ref, oldest first."""
        tip = read_ref(self.repo, REF)
        if tip is None:
            return []
        out = []
        for _commit, message in commits_since(self.repo, tip, None):
            body = message.split("\n\n", 1)[1] if "\n\n" in message else "[]"
            out.append(json.loads(body))
        return out[::-1]


COUNTS = ("clean", "verified", "skipped", "failures", "resets")


def _well_formed(key: str, record: Any) -> bool:
    """A record the rule can read: its key names a lane and its counts are counts."""
    if not isinstance(record, dict) or key.count("/") < 2:
        return False
    counts = all(type(record.get(k, 0)) is int and record.get(k, 0) >= 0 for k in COUNTS)
    digests = all(isinstance(record.get(k), str) for k in ("specDigest", "configDigest"))
    return counts and digests
