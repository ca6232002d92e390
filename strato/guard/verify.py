"""Re-check every ledger in the repository: chains, steps, signatures, notes history.

The pre-push hook calls :func:`verify_repository`; ``strato guard verify`` prints its
:class:`Report`. A break names the resource and the ledger line (or the notes commit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pygit2

from strato.guard import authz, entries, ledger, store
from strato.guard.errors import GuardError
from strato.guard.signers import AllowedSigner
from tropo import notes
from tropo import repo as gitrepo
from tropo.revision import is_ancestor


@dataclass(frozen=True)
class Break:
    resource_id: str | None
    line: int | None
    message: str
    anchor: str | None = None

    def __str__(self) -> str:
        where = repr(self.resource_id) if self.resource_id is not None else f"note {self.anchor}"
        return (
            f"{where} line {self.line}: {self.message}" if self.line else f"{where}: {self.message}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "resource_id": self.resource_id,
            "line": self.line,
            "message": self.message,
            "anchor": self.anchor,
        }


@dataclass
class Report:
    ref: str
    tip: str | None
    resources: int = 0
    entries: int = 0
    breaks: list[Break] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.breaks

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "ref": self.ref,
            "tip": self.tip,
            "resources": self.resources,
            "entries": self.entries,
            "first_break": self.breaks[0].to_json() if self.breaks else None,
            "breaks": [b.to_json() for b in self.breaks],
        }


TrustAt = Callable[[dict[str, Any]], list[AllowedSigner]]


def trust_at_entry_head(repo: pygit2.Repository) -> TrustAt:
    """The allowed signers as of the commit each entry was made at (HEAD if unknown)."""
    cache: dict[str | None, list[AllowedSigner]] = {}

    def at(entry: dict[str, Any]) -> list[AllowedSigner]:
        sha = entry.get("git_head")
        commit: pygit2.Commit | None
        try:
            commit = (
                gitrepo.resolve_commit(repo, sha)
                if isinstance(sha, str)
                else gitrepo.head_commit(repo)
            )
        except gitrepo.RevisionError:
            commit = gitrepo.head_commit(repo)
        key = str(commit.id) if commit is not None else None
        if key not in cache:
            cache[key] = authz.trusted_signers(commit)
        return cache[key]

    return at


def signed_by(
    entry: dict[str, Any], resource_id: str, state: ledger.State, trust: TrustAt
) -> authz.Signer | None:
    """Check the signature an entry needs; the signer, None if none is needed."""
    claimed = entries.claim(entry, resource_id, state.policy)
    if claimed is None:
        return None
    signer = authz.check_signature(
        claimed.armor,
        claimed.namespace,
        claimed.message,
        trust(entry),
        int(entry["ts_ms"]) // 1000,
        claimed.message.decode("utf-8", "replace"),
    )
    recorded = entry["verdict"]["authorization"]
    named = authz.Signer(str(recorded.get("principal")), signer.fingerprint)
    if recorded.get("fingerprint") != signer.fingerprint or entry[
        "rationale"
    ] != claimed.expected_rationale(named):
        raise ValueError("the entry's rationale or recorded signer does not match the signature")
    return signer


# Sees each entry after the register line: (resource, line, entry, signer, problem).
OnEntry = Callable[[str, int, dict[str, Any], authz.Signer | None, str | None], None]


def check_ledger(
    text: str, resource_id: str, trust: TrustAt, on_entry: OnEntry | None = None
) -> ledger.State:
    """Fold a ledger, checking every signature; raises :class:`ledger.LedgerBreak`.

    ``on_entry`` then sees every entry up to the first break, in ledger order.
    """
    entries = ledger.parse(text)
    seen: list[tuple[int, dict[str, Any], authz.Signer | None, str | None]] = []

    def hook(line: int, entry: dict[str, Any], state: ledger.State) -> None:
        signer, problem = None, None
        try:
            signer = signed_by(entry, resource_id, state, trust)
        except GuardError as exc:
            problem = exc.message
        except (ValueError, KeyError, TypeError) as exc:
            problem = str(exc)
        seen.append((line, entry, signer, problem))
        if problem is not None:
            raise ledger.LedgerBreak(line, problem)

    broken: ledger.LedgerBreak | None = None
    try:
        return ledger.fold(entries, resource_id, hook)
    except ledger.LedgerBreak as exc:
        broken = exc
        raise
    finally:
        if on_entry is not None and entries:
            rows = [(1, entries[0], None, None), *seen]
            for line, entry, signer, problem in rows:
                if problem is None and broken is not None and broken.line == line:
                    problem = broken.message
                on_entry(resource_id, line, entry, signer, problem)


def _resource_id(text: str) -> str | None:
    """The id the first line registers, read without trusting anything else."""
    first = ledger.first_entry(text)
    verdict = first.get("verdict") if first else None
    rid = verdict.get("resource_id") if isinstance(verdict, dict) else None
    return rid if isinstance(rid, str) else None


def _history_breaks(repo: pygit2.Repository, tip: str) -> list[Break]:
    """Each notes commit may only append to the ledgers its parents had."""
    found: list[Break] = []
    cache: dict[str, dict[str, str]] = {}

    def blobs_of(commit: pygit2.Commit) -> dict[str, str]:
        key = str(commit.id)
        if key not in cache:
            cache[key] = notes.blobs(repo, key)
        return cache[key]

    for commit in notes.commits(repo, tip):
        after = blobs_of(commit)
        for parent in commit.parents:
            for anchor, old in blobs_of(parent).items():
                new = after.get(anchor)
                if new == old:
                    continue
                old_text = notes.blob_data(repo, old)
                if new is None or not notes.blob_data(repo, new).startswith(old_text):
                    what = "deleted" if new is None else "rewritten, not appended to"
                    rid = _resource_id(old_text.decode("utf-8", "replace"))
                    found.append(
                        Break(
                            rid,
                            None,
                            f"ledger {what} in notes commit {str(commit.id)[:12]}",
                            anchor,
                        )
                    )
    return found


def _rewind_breaks(repo: pygit2.Repository, tip: str | None, since: list[str]) -> list[Break]:
    """A tip that does not descend from an earlier tip means history was rewritten."""
    return [
        Break(None, None, f"{store.REF} was rewritten: {old[:12]} is not in its history", None)
        for old in since
        if tip is None or not is_ancestor(repo, old, tip)
    ]


def _reflog_tips(repo: pygit2.Repository) -> list[str]:
    try:
        log = repo.references[store.REF].log()
    except KeyError:
        return []
    return [str(e.oid_new) for e in log if str(e.oid_new) != gitrepo.ZERO]


def verify_repository(
    repo: pygit2.Repository,
    *,
    since: list[str] | None = None,
    trust: TrustAt | None = None,
    on_entry: OnEntry | None = None,
) -> Report:
    """Check every ledger on the notes ref, its history, and (optionally) that it
    descends from each of ``since`` (e.g. the remote's notes ref); the reflog's earlier
    tips are always checked."""
    tip = gitrepo.read_ref(repo, store.REF)
    report = Report(store.REF, tip)
    rewinds = _rewind_breaks(repo, tip, [*(since or []), *_reflog_tips(repo)])
    if tip is None:
        report.breaks += rewinds
        return report
    trust = trust or trust_at_entry_head(repo)
    for anchor, blob in sorted(notes.blobs(repo, tip).items()):
        report.resources += 1
        try:
            text = notes.blob_data(repo, blob).decode("utf-8")
        except UnicodeDecodeError:
            report.breaks.append(Break(None, None, "ledger is not UTF-8", anchor))
            continue
        rid = _resource_id(text)
        if rid is None or notes.anchor_id(store.anchor_content(rid)) != anchor:
            report.breaks.append(
                Break(rid, 1, "note does not belong to the resource it registers", anchor)
            )
            continue
        try:
            state = check_ledger(text, rid, trust, on_entry)
        except ledger.LedgerBreak as exc:
            report.breaks.append(Break(rid, exc.line, exc.message, anchor))
            continue
        report.entries += len(state.entries)
    # line-precise breaks first: they say the most about what was done
    report.breaks += _history_breaks(repo, tip) + rewinds
    return report
