"""Re-check every ledger in the repository: chains, steps, signatures, notes history.

The pre-push hook calls :func:`verify_repository`; ``strato guard verify`` prints its
:class:`VerifyReport`. A break names the resource and the ledger line (or the notes commit).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from strato.guard import (
    accepted,
    authz,
    cache,
    config,
    derive,
    entries,
    history,
    layout,
    ledger,
    notesig,
    running,
    store,
)
from strato.guard.errors import GuardError
from strato.guard.layout import Stored
from strato.guard.signers import AllowedSigner
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Commit, Repository


@dataclass(frozen=True)
class Break:
    """One thing verify found wrong. ``kind``: ``ledger`` (its lines), ``history`` (the
    notes history rewrote what it held) or ``state`` (the running-state record lies;
    writers never use such a record, they fold the lines and write a true one)."""

    resource_id: str | None
    line: int | None
    message: str
    anchor: str | None = None
    kind: str = field(default="ledger", compare=False)  # how a writer treats it, not what

    def __str__(self) -> str:
        """Where, then what; a break of the notes ref itself has no resource or note to name."""
        if self.resource_id is not None:
            where = repr(self.resource_id)
        elif self.anchor is not None:
            where = f"note {self.anchor}"
        else:
            return self.message
        return f"{where} line {self.line}: {self.message}" if self.line else f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "resource_id": self.resource_id,
            "line": self.line,
            "message": self.message,
            "anchor": self.anchor,
        }


@dataclass
class VerifyReport:
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


# How to judge one entry (resource, line, entry): the allowed signers and the time
# (epoch seconds) to check key validity at, or None for an entry that is not re-judged
# (review: it is part of the base's ledger, byte for byte).
# The signers are read lazily: a base without allowed_signers refuses only signed entries.
Judgement = tuple[Callable[[], list[AllowedSigner]], int]
TrustAt = Callable[[str, int, dict[str, Any]], Judgement | None]


class EntryHeadTrust:
    """The allowed signers as of the commit each entry was made at (HEAD if unknown),
    at the entry's own time: a local integrity check, not the review boundary."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self._signers: dict[str | None, list[AllowedSigner]] = {}

    def _commit(self, sha: object) -> Commit | None:
        try:
            if isinstance(sha, str):
                return gitrepo.resolve_commit(self.repo, sha)
        except gitrepo.RevisionError:
            pass
        return gitrepo.head_commit(self.repo)

    def signers(self, entry: dict[str, Any]) -> list[AllowedSigner]:
        commit = self._commit(entry.get("git_head"))
        key = str(commit.id) if commit is not None else None
        if key not in self._signers:
            self._signers[key] = authz.trusted_signers(commit)
        return self._signers[key]

    def __call__(self, resource_id: str, line: int, entry: dict[str, Any]) -> Judgement:
        return functools.partial(self.signers, entry), int(entry["ts_ms"]) // 1000

    def key(self, git_head: str | None) -> str:
        """What this trust root is made of for an entry naming ``git_head``: the commit
        it resolves to and that commit's allowed_signers blob (the cache's trust key)."""
        commit = self._commit(git_head)
        if commit is None:
            return "-"
        try:
            signers = str(commit.tree[authz.SIGNERS_PATH].id)
        except KeyError:
            signers = "-"
        return f"{commit.id}:{signers}"


def signed_by(
    entry: dict[str, Any], resource_id: str, state: ledger.State, judged: Judgement
) -> authz.Signer | None:
    """Check the signature an entry needs; the signer, None if none is needed."""
    claimed = entries.claim(entry, resource_id, state.policy)
    if claimed is None:
        return None
    trusted, at_s = judged
    recorded = entry["verdict"]["authorization"]
    principal = recorded.get("principal")
    if not isinstance(principal, str):
        raise ValueError("the entry's recorded signer names no principal")
    signer = authz.check_signature(
        claimed.armor,
        claimed.namespace,
        claimed.message,
        trusted(),
        at_s,
        claimed.message.decode("utf-8", "replace"),
        principal,
    )
    if recorded.get("fingerprint") != signer.fingerprint or entry["rationale"] != claimed.expected_rationale(
        signer
    ):
        raise ValueError("the entry's rationale or recorded signer does not match the signature")
    return signer


# Sees each entry after the register line: (resource, line, entry, signer, problem).
OnEntry = Callable[[str, int, dict[str, Any], authz.Signer | None, str | None], None]


def check_ledger(
    found: list[dict[str, Any]],
    resource_id: str,
    trust: TrustAt,
    on_entry: OnEntry | None = None,
    tree: Commit | None = None,
    start: ledger.State | None = None,
) -> ledger.State:
    """Fold parsed entries, re-deriving each one the trust judges and checking its
    signature; raises :class:`ledger.LedgerBreak`. ``tree`` is the commit deterministic
    file predicates are re-checked against (review's head), if any. ``start`` is the
    state after the lines before ``found`` (accepted already), when ``found`` is a tail.

    ``on_entry`` then sees every entry up to the first break, in ledger order.
    """
    seen: list[tuple[int, dict[str, Any], authz.Signer | None, str | None]] = []

    def hook(line: int, entry: dict[str, Any], state: ledger.State) -> None:
        signer, problem = None, None
        try:
            judged = trust(resource_id, line, entry)
            if judged is not None:
                derive.check(entry, state, tree)
                signer = signed_by(entry, resource_id, state, judged)
        except GuardError as exc:
            problem = exc.message
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problem = str(exc)
        seen.append((line, entry, signer, problem))
        if problem is not None:
            raise ledger.LedgerBreak(line, problem)

    broken: ledger.LedgerBreak | None = None
    try:
        if start is not None:
            return ledger.fold_on(start, found, hook)
        if found:
            _check_register(found[0], resource_id, trust)
        return ledger.fold(found, resource_id, hook)
    except ledger.LedgerBreak as exc:
        broken = exc
        raise
    finally:
        if on_entry is not None and found:
            rows = seen if start is not None else [(1, found[0], None, None), *seen]
            for line, entry, signer, problem in rows:
                if problem is None and broken is not None and broken.line == line:
                    problem = broken.message
                on_entry(resource_id, line, entry, signer, problem)


def _check_register(first: dict[str, Any], resource_id: str, trust: TrustAt) -> None:
    try:
        judged = trust(resource_id, 1, first)
    except (GuardError, ValueError) as exc:
        raise ledger.LedgerBreak(1, getattr(exc, "message", str(exc))) from None
    if judged is not None:
        try:
            derive.check_register(first)
        except (ValueError, KeyError, TypeError) as exc:
            raise ledger.LedgerBreak(1, str(exc)) from None


def _history_breaks(judged: history.Checked) -> tuple[Container[str], list[Break]]:
    ancestors, found = judged()
    return ancestors, [Break(rid, None, why, anchor, "history") for rid, anchor, why in found]


def _rewind_breaks(ancestors: Container[str], since: list[str]) -> list[Break]:
    """A tip that does not descend from an earlier tip means history was rewritten."""
    return [
        Break(None, None, f"{store.REF} was rewritten: {old[:12]} is not in its history", None, "history")
        for old in since
        if old not in ancestors
    ]


def _reflog_tips(repo: Repository, tip: str | None) -> list[str]:
    """The ref's earlier values, newest first, from the entry that set ``tip`` on: newer
    entries are appends another writer made after ``tip`` was read, not a rewind (when
    no entry set ``tip``, every entry counts)."""
    try:
        log = repo.references[store.REF].log()
    except KeyError:
        return []
    found = [str(e.oid_new) for e in log if str(e.oid_new) != gitrefs.ZERO]
    return found[found.index(tip):] if tip in found else found


def tip_break(repo: Repository, tip: str | None) -> Break | None:
    """The notes ref must name a commit: a force-push may point it at any object."""
    obj = None if tip is None else repo.get(tip)
    if tip is None or isinstance(obj, Commit):
        return None
    what = "missing object" if obj is None else type(obj).__name__.lower()
    return Break(
        None, None, f"{store.REF} names a {what} ({tip[:12]}), not a notes commit", kind="history"
    )


def verify_repository(
    repo: Repository,
    *,
    since: list[str] | None = None,
    trust: TrustAt | None = None,
    on_entry: OnEntry | None = None,
    tree: Commit | None = None,
    anchor: str | None = None,
    at: str | None = None,
) -> VerifyReport:
    """Check every ledger on the notes ref (only ``anchor``'s, when given; at the notes
    commit ``at`` instead of the ref's tip, when given), its history, and (optionally)
    that it descends from each of ``since`` (e.g. the remote's notes ref); the reflog's
    earlier tips are checked when the ref's own tip is.

    With the default trust (each entry's own commit) and no ``on_entry``, a ledger blob
    that verified before under the same signers blobs is not checked again.
    """
    tip = gitrefs.read_ref(repo, store.REF) if at is None else at
    report = VerifyReport(store.REF, tip)
    olds = [*(since or []), *(_reflog_tips(repo, tip) if at is None else [])]
    if tip is None:
        report.breaks += _rewind_breaks(set(), olds)
        return report
    if (bad_tip := tip_break(repo, tip)) is not None:
        report.breaks.append(bad_tip)
        return report
    known = cache.GuardCache(repo)
    judged = history.start(repo, tip, known)  # git diffs the notes history while the ledgers are checked
    at_head = EntryHeadTrust(repo)
    own_trust = trust is None  # only the default trust is what the cache records
    signed: list[str | None] = []  # git_head of each signed entry of the ledger at hand

    def note_signed(
        rid: str, line: int, entry: dict[str, Any], signer: authz.Signer | None, why: str | None
    ) -> None:
        if signer is not None:
            head = entry.get("git_head")
            signed.append(head if isinstance(head, str) else None)
        if on_entry is not None:
            on_entry(rid, line, entry, signer, why)

    for kept in store.ledgers(repo, tip):
        if anchor is not None and kept.anchor != anchor:
            continue
        blob = kept.blob
        report.resources += 1
        if kept.problem is not None:
            report.breaks.append(Break(None, None, kept.problem, kept.anchor))
            continue
        rid = ledger.resource_of(kept.first_line)
        if rid is None or notes.anchor_id(store.anchor_content(rid)) != kept.anchor:
            report.breaks.append(
                Break(rid, 1, "note does not belong to the resource it registers", kept.anchor)
            )
            continue
        record = known.record(kept.anchor)
        if (
            own_trust
            and on_entry is None
            and record is not None
            and record.blob == blob
            and record.verified is not None
            and record.running == kept.running_id
            and all(at_head.key(head) == key for head, key in record.verified)
        ):
            report.entries += record.lines
            continue
        signed.clear()
        before = _accepted_before(known, kept, rid, at_head) if own_trust and on_entry is None else None
        try:
            if before is not None:  # only the lines after what verify accepted before
                found, size = _tail(kept, before[0])
                state = check_ledger(found, rid, at_head, note_signed, tree, before[1])
            else:
                size = len(kept.data)
                found = store.parse_ledger(kept.anchor, blob, kept.data, known, kept.prefix)
                state = check_ledger(found, rid, trust or at_head, note_signed, tree)
        except ledger.LedgerBreak as exc:
            report.breaks.append(Break(rid, exc.line, exc.message, kept.anchor))
            continue
        except KeyError as exc:  # git's NotFoundError: a line's object is not in this clone
            report.breaks.append(Break(rid, None, f"a ledger line's object is missing ({exc})", kept.anchor))
            continue
        report.entries += state.length
        if kept.running is not None and (
            why := running.mismatch(kept.running, found, state)
        ):  # the writer's bytes: true of the lines, or a break
            report.breaks.append(Break(rid, None, why, kept.anchor, "state"))
            continue
        if own_trust:
            keys = (*(before[0].signers if before else ()), *((head, at_head.key(head)) for head in signed))
            known.accepted(kept.anchor, cache.Remembered(blob, size, state.length, keys, kept.running_id))
            if kept.tree is not None:
                folded = running.of_state(state)
                accepted.write(known, kept.anchor, accepted.Accepted(blob, state.length, size, keys, folded))
    ancestors, rewritten = _history_breaks(judged)
    if anchor is not None:
        rewritten = [b for b in rewritten if b.anchor in (anchor, None)]
    # line-precise breaks first: they say the most about what was done
    report.breaks += rewritten + _rewind_breaks(ancestors, olds)
    if since:
        report.breaks += _notes_signature_breaks(repo, tip, [s for s in since if s in ancestors])
    return report


def _accepted_before(
    known: cache.GuardCache, kept: Stored, rid: str, at_head: EntryHeadTrust
) -> tuple[accepted.Accepted, ledger.State] | None:
    """What verify accepted of this ledger's first lines and the state after them, when
    the ledger (kept as line blobs) starts with exactly those lines, every signed one
    still resolves to the same trust root, and its running-state record names all its
    lines (else the full check: a shorter record is judged against the lines it names)."""
    before = accepted.read(known, kept.anchor) if kept.tree is not None else None
    if before is None or not 0 < before.lines < kept.lines or kept.prefix(before.lines) != before.blob:
        return None
    record = running.parse(kept.running) if kept.running is not None else None
    if kept.running is not None and (record is None or record.lines != kept.lines):
        return None
    if not all(at_head.key(head) == key for head, key in before.signers):
        return None
    tree = kept.tree
    assert tree is not None
    try:
        return before, accepted.state_at(before, rid, functools.partial(layout.read_line, tree, kept.anchor))
    except (ledger.LedgerBreak, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def _tail(kept: Stored, before: accepted.Accepted) -> tuple[list[dict[str, Any]], int]:
    """The entries after the accepted lines, each digest and link checked from the last
    accepted digest (a break names its line in the whole ledger), and the ledger's size."""
    assert kept.tree is not None
    text = b"".join(layout.read_line(kept.tree, kept.anchor, n) for n in range(before.lines, kept.lines))
    try:
        return ledger.parse(text.decode("utf-8"), 0, before.fold.head), before.size + len(text)
    except ledger.LedgerBreak as exc:
        raise ledger.LedgerBreak(before.lines + exc.line, exc.message) from None
    except UnicodeDecodeError:
        raise ledger.LedgerBreak(before.lines + 1, "ledger is not UTF-8") from None


def _notes_signature_breaks(repo: Repository, tip: str, since: list[str]) -> list[Break]:
    """Notes commits about to be pushed (after ``since``), judged by HEAD's signers now:
    a bad signature always, a missing one when HEAD's config requires signed notes."""
    head = gitrepo.head_commit(repo)
    required = config.load(head).require_signed_notes
    found = notesig.unsigned_breaks(
        repo, tip, since, lambda: authz.trusted_signers(head), int(time.time()), required
    )
    return [Break(None, None, why) for why in found]
