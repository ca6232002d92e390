"""Lanes stored in the repository: `refs/vivary/lanes` is a chain of commits whose tree
holds `lanes.json` (every lane's record) and whose message is the evidence folded in,
so `git log refs/vivary/lanes` is the review trail and the ref travels with push and
fetch like any other. It is a chain store (:mod:`tropo.git.chain`): a writer that loses
the race re-reads the new tip and folds its evidence again, so no evidence is ever
overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from strato.runs.lanes.model import KINDS, digest, fold
from tropo.git import chain
from tropo.git.log import message_of, parents
from tropo.git.refs import is_ancestor, merge_base, read_ref
from tropo.git.types import Repository

REF = "refs/vivary/lanes"
FILE = "lanes.json"
MAX_MERGE_DEPTH = 100  # merges of merges: more is no history we wrote


class LanesCorrupt(Exception):
    """`refs/vivary/lanes` does not hold a lanes document we wrote."""


class LaneStore:
    def __init__(self, repo: Repository) -> None:
        self.repo = repo

    def read(self) -> tuple[str | None, dict[str, dict[str, Any]]]:
        """(tip, lanes): the lanes as of the ref's tip ({} before the first evidence)."""
        tip = read_ref(self.repo, REF)
        return tip, self._lanes(tip)

    def _lanes(self, tip: str | None) -> dict[str, dict[str, Any]]:
        if tip is None:
            return {}
        lanes = _document(self.repo, tip, f"{REF} {tip[:12]}")
        for key, record in lanes.items():
            if not _well_formed(key, record):
                raise LanesCorrupt(f"{REF} {tip[:12]}: lane {key[:80]!r} is malformed")
        return lanes

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

        def fold_in(tip: str | None) -> tuple[chain.Decision, None]:
            note = ""
            try:
                lanes = self._lanes(tip)
            except LanesCorrupt as exc:  # start over on top of it: history keeps what it was
                lanes, note = {}, f" (the previous tip was unreadable, lanes start over: {exc})"
            for item in items:
                fold(lanes, item)
            subject = ", ".join(sorted({f"{i['kind']} {i['lane']}" for i in items}))[:200]
            message = f"lanes: {subject}{note}\n\n{json.dumps(items, sort_keys=True)}\n"
            return chain.Append({FILE: _body(lanes)}, message), None

        return chain.update(self.repo, REF, fold_in, "vivary: lanes")[0]

    def log(self, tip: str | None = None) -> list[dict[str, Any]]:
        """The evidence the lanes at `tip` (default: the ref's) fold from, oldest first:
        each commit's message adds its evidence, and a merge of two clones' lanes is its
        common ancestor's log followed by every piece of evidence either side has since,
        each once (by its id), in the order it was taken (`at`, then id). A merge's own
        message is only for review: its log is recomputed from its parents."""
        commit = read_ref(self.repo, REF) if tip is None else tip
        return [] if commit is None else self._log(commit, {}, 0)

    def _log(self, commit: str, memo: dict[str, list[dict[str, Any]]], depth: int) -> list[dict[str, Any]]:
        if commit in memo:  # each commit's log once, however its merges share ancestry
            return memo[commit]
        if depth > MAX_MERGE_DEPTH:
            raise LanesCorrupt(f"{REF} commit {commit[:12]}: merges nested over {MAX_MERGE_DEPTH} deep")
        segments: list[list[dict[str, Any]]] = []
        start, at = commit, commit
        base: str | None = None
        while True:
            above = parents(self.repo, at)
            if len(above) == 2:
                base = merge_base(self.repo, *above)
                segments.append(self._since(base, above, memo, depth + 1))
                break
            segments.append(_evidence(self.repo, at))
            if not above:
                break
            at = above[0]
        head = self._log(base, memo, depth + 1) if base else []
        memo[start] = head + [item for segment in reversed(segments) for item in segment]
        return memo[start]

    def _since(
        self, base: str | None, tips: list[str], memo: dict[str, list[dict[str, Any]]], depth: int
    ) -> list[dict[str, Any]]:
        known = {evidence_id(item) for item in self._log(base, memo, depth)} if base else set()
        found: dict[str, dict[str, Any]] = {}
        for tip in tips:
            for item in self._log(tip, memo, depth):
                found.setdefault(evidence_id(item), item)
        fresh = [(key, item) for key, item in found.items() if key not in known]
        return [item for key, item in sorted(fresh, key=lambda pair: (str(pair[1].get("at", "")), pair[0]))]

    def absorb(self, theirs: str) -> str:
        """Take another clone's lanes tip in (its objects must be here): a fast-forward
        when ours is absent or behind, nothing when ours has it already, else a merge
        commit whose lanes are its log folded afresh. The new tip; `LanesCorrupt` (and
        nothing moves) when either side's evidence cannot be read."""
        self._readable(theirs)

        def take(ours: str | None) -> tuple[chain.Decision, None]:
            if ours is not None and is_ancestor(self.repo, theirs, ours):
                return None, None
            if ours is None or is_ancestor(self.repo, ours, theirs):
                return theirs, None
            return self._merge(ours, theirs), None

        new = chain.update(self.repo, REF, take, "vivary: lanes from another clone")[0]
        assert new is not None
        return new

    def _merge(self, ours: str, theirs: str) -> chain.Append:
        base = merge_base(self.repo, ours, theirs)
        memo: dict[str, list[dict[str, Any]]] = {}
        merged = self._log(base, memo, 0) if base else []
        tail = self._since(base, [ours, theirs], memo, 0)
        lanes: dict[str, dict[str, Any]] = {}
        for item in merged + tail:
            fold(lanes, item)
        since = f"since {base[:12]}" if base else "with no common history"
        subject = f"lanes: merge {theirs[:12]} into {ours[:12]} ({len(tail)} evidence {since}, refolded)"
        message = f"{subject}\n\n{json.dumps(tail, sort_keys=True)}\n"
        return chain.Append({FILE: _body(lanes)}, message, [ours, theirs])

    def _readable(self, tip: str) -> None:
        """Refuse a tip whose lanes or evidence this store cannot read."""
        self.log(tip)
        _document(self.repo, tip, tip[:12])


def _document(repo: Repository, tip: str, where: str) -> dict[str, Any]:
    """The lanes object of the lanes document at `tip`; `LanesCorrupt` saying `where`."""
    try:
        doc = chain.read(repo, tip, FILE)
    except ValueError as exc:
        raise LanesCorrupt(f"{where}: {FILE} is not JSON: {exc}") from None
    if doc is None:
        raise LanesCorrupt(f"{where}: {FILE} is not JSON")
    if not isinstance(doc, dict) or not isinstance(doc.get("lanes"), dict):
        raise LanesCorrupt(f"{where}: {FILE} has no lanes object")
    lanes: dict[str, Any] = doc["lanes"]
    return lanes


def _body(lanes: dict[str, dict[str, Any]]) -> bytes:
    """The lanes document, indented: people read its diffs in review."""
    return chain.encode({"version": 1, "lanes": lanes}, indent=1)


def evidence_id(item: Mapping[str, Any]) -> str:
    """A piece of evidence's identity: the digest of all it says (two clones that both
    hold it hold the same bytes)."""
    return digest(item)


NEEDED = ("kind", "lane", "specDigest", "configDigest")


def _evidence(repo: Repository, commit: str) -> list[dict[str, Any]]:
    """The evidence a lanes commit's message says it folded in."""
    message = message_of(repo, commit)
    body = message.split("\n\n", 1)[1] if "\n\n" in message else "[]"
    try:
        items = json.loads(body)
    except json.JSONDecodeError:
        raise LanesCorrupt(f"{REF} commit {commit[:12]}: its evidence is not JSON") from None
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and all(isinstance(i.get(k), str) for k in NEEDED) and i["kind"] in KINDS
        and i["lane"].count("/") >= 2 for i in items
    ):
        raise LanesCorrupt(f"{REF} commit {commit[:12]}: its evidence is not a list of lane evidence")
    return items


COUNTS = ("clean", "verified", "skipped", "failures", "resets")


def _well_formed(key: str, record: Any) -> bool:
    """A record the rule can read: its key names a lane and its counts are counts."""
    if not isinstance(record, dict) or key.count("/") < 2:
        return False
    counts = all(type(record.get(k, 0)) is int and record.get(k, 0) >= 0 for k in COUNTS)
    digests = all(isinstance(record.get(k), str) for k in ("specDigest", "configDigest"))
    return counts and digests
