"""Pull-request review of guard ledgers: what was added since the base, and who signed it.

New entries are the lines past the ledgers of the base's **pinned** notes commit
(:mod:`strato.guard.pin` or ``--base-notes``), never what an entry says about itself.
Every new entry is re-derived and judged by the base's allowed signers at the time of
review; base entries must survive byte for byte and are not judged again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from strato.guard import authz, config, layout, ledger, notesig, pin, store, union, verify
from strato.guard.errors import GuardError
from strato.guard.signers import AllowedSigner
from tropo import untrusted
from tropo.git import notes
from tropo.git import repo as gitrepo
from tropo.git.refs import is_ancestor
from tropo.git.types import Commit, Repository


@dataclass(frozen=True)
class Row:
    resource_id: str
    line: int
    kind: str
    outcome: str
    from_state: str | None
    to_state: str | None
    signer: str | None
    rationale: str | None
    git_head: str | None
    status: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReviewReport:
    base: str
    head: str
    base_notes: str | None
    verify: verify.VerifyReport
    rows: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verify.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "base": self.base,
            "head": self.head,
            "base_notes": self.base_notes,
            "entries": [r.to_json() for r in self.rows],
            "verify": self.verify.to_json(),
        }

    def markdown(self) -> str:
        verdict = "passed" if self.ok else "**failed**"
        count = f"{len(self.rows)} ledger entr{'y' if len(self.rows) == 1 else 'ies'}"
        lines = [
            f"### Guard review {verdict}: `{self.base[:12]}..{self.head[:12]}`",
            "",
            f"{count} added since the base; signers checked against the base's `{authz.SIGNERS_PATH}`.",
            "",
        ]
        if self.rows:
            lines += [
                "| resource | line | kind | outcome | transition | signer | rationale | status |",
                "|---|---|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {_cell(r.resource_id)} | {_cell(r.line)} | {_cell(r.kind)} "
                f"| {_cell(r.outcome)} | {_cell(r.from_state)} → {_cell(r.to_state)} "
                f"| {_cell(r.signer)} | {_cell(r.rationale)} | {_cell(r.status)} |"
                for r in self.rows
            ]
        if self.verify.breaks:
            lines += ["", "Breaks:", *(f"- {_cell(str(b))}" for b in self.verify.breaks)]
        return "\n".join(lines) + "\n"


MAX_CELL = 200


def _cell(value: object) -> str:
    """One table cell as a code span (:func:`tropo.untrusted.code_span`: nothing in it is
    Markdown or HTML, every hidden character is shown), with ``|`` escaped as GitHub
    tables require, cut at ``MAX_CELL`` characters."""
    return untrusted.code_span(value, MAX_CELL).replace("|", chr(92) + "|")


def error_markdown(error_type: str, message: str) -> str:
    """A review that could not run, as the pull-request comment: a CI recipe posts stdout
    whatever the exit code, so the error must read as Markdown, not as a JSON document."""
    heading = f"### Guard review **failed**: {untrusted.code_span(error_type)}"
    return f"{heading}\n\n{untrusted.code_span(message)}\n"


def _base_notes(repo: Repository, base: Commit, base_notes: str | None) -> str | None:
    if base_notes is not None:
        return pin.require_commit(repo, base_notes)
    pinned = pin.read(base)
    return None if pinned is None else pin.require_commit(repo, pinned)


def _landing(
    repo: Repository, base_tip: str | None, head_tip: str | None
) -> tuple[str | None, list[verify.Break]]:
    """The notes the base pins once the head lands: the head's, when they descend from
    the base's pin; else the union of both (what the pin merge driver writes, so another
    PR landing first never makes this one re-pin). Notes that do not merge are a break
    naming the command that re-appends; a head with no notes keeps the base's check (a tip
    is its own ancestor: equal pins need no merge)."""
    if base_tip is None or head_tip is None or is_ancestor(repo, base_tip, head_tip):
        return head_tip, []
    try:
        return union.merge(repo, base_tip, head_tip), []
    except GuardError as exc:
        why = f"{store.REF} does not descend from the base's notes commit {base_tip[:12]} nor merge with it"
        return head_tip, [verify.Break(None, None, f"{why}: {exc.message}")]


def _head_notes(repo: Repository, pinned: str | None) -> str | None:
    """The notes commit the head pins: what merging it makes the base accept, so exactly
    what this review judges, whatever the shared notes ref has moved on to since."""
    if pinned is None or pinned == pin.NONE:
        return None
    if pinned.startswith(pin.CONFLICT):
        why = f"holds merge conflict markers: run `{pin.RESOLVE}`"
        raise GuardError("review_unpinned", f"the head's {pin.PIN_PATH} {why}")
    if not pin.SHA.match(pinned):
        raise GuardError("review_unpinned", f"the head's {pin.PIN_PATH} is not a commit id: run `{pin.FIX}`")
    if pinned in repo:  # as it is: a pin naming a tree or a blob is a break, not a traceback
        return pinned
    return pin.require_commit(repo, pinned, "the head's")


def _base_breaks(
    repo: Repository, base_tip: str | None, head_tip: str | None
) -> tuple[dict[str, int], list[verify.Break]]:
    """Lines each base ledger holds, and the breaks where the head dropped or rewrote them."""
    if base_tip is None:
        return {}, []
    if head_tip is None or not (head_tip == base_tip or is_ancestor(repo, base_tip, head_tip)):
        why = f"{store.REF} does not descend from the base's notes commit {base_tip[:12]}"
        return {}, [verify.Break(None, None, why + " (rewritten or force-pushed)")]
    known: dict[str, int] = {}
    found: list[verify.Break] = []
    after = {kept.anchor: kept for kept in store.ledgers(repo, head_tip)}
    for kept in store.ledgers(repo, base_tip):
        if kept.problem is not None:  # the base's own ledger: nothing to judge the head by
            why = f"the base's ledger is unreadable: {kept.problem}"
            found.append(verify.Break(None, None, why, kept.anchor))
            continue
        old = kept.data
        known[kept.anchor] = old.count(b"\n")
        rid = ledger.resource_of(kept.first_line)
        now = after.get(kept.anchor)
        if now is None:
            found.append(verify.Break(rid, None, "ledger of the base was deleted", kept.anchor))
        elif now.problem is not None:
            why = f"ledger of the base unreadable in the head: {now.problem}"
            found.append(verify.Break(rid, None, why, kept.anchor))
        elif not _extends(kept, now):
            line = _first_difference(old, now.data)
            why = "line of the base's ledger rewritten or removed"
            found.append(verify.Break(rid, line, why, kept.anchor))
    return known, found


def _extends(base: layout.Stored, head: layout.Stored) -> bool:
    """Whether ``head``'s ledger bytes start with all of ``base``'s. Two ledgers kept as
    line blobs agree when the head's first line blobs are the base's (an oid names the
    bytes, so no line is read); otherwise, or if they do not, the bytes decide."""
    if base.parts and not head.legacy and head.parts[: len(base.parts)] == base.parts:
        return True
    return head.data.startswith(base.data)


def _first_difference(old: bytes, new: bytes) -> int:
    for n, (a, b) in enumerate(zip(old.split(b"\n"), new.split(b"\n"), strict=False), 1):
        if a != b:
            return n
    return min(old.count(b"\n"), new.count(b"\n")) + 1


def _signer(entry: dict[str, Any], signer: authz.Signer | None) -> str | None:
    if signer is not None:
        return signer.principal
    verdict = entry.get("verdict")
    auth = verdict.get("authorization") if isinstance(verdict, dict) else None
    named = auth.get("principal") if isinstance(auth, dict) else None
    return f"{named} (not verified)" if named is not None else None


def review(
    repo: Repository,
    base: str,
    head: str = "HEAD",
    since: list[str] | None = None,
    *,
    base_notes: str | None = None,
    now_s: int | None = None,
) -> ReviewReport:
    """Verify every ledger; judge each line the base's pinned ledgers lack by the base's
    allowed signers at ``now_s`` (the time of review)."""
    base_commit = gitrepo.resolve_commit(repo, base)
    head_commit = gitrepo.resolve_commit(repo, head)
    base_tip = _base_notes(repo, base_commit, base_notes)
    pinned = pin.read_or_none(head_commit)
    unpinned = pinned is None and pin.read_or_none(base_commit) is not None
    head_tip = base_tip if pinned == pin.read_or_none(base_commit) else _head_notes(repo, pinned)
    if (bad_tip := verify.tip_break(repo, head_tip)) is not None:
        empty = verify.VerifyReport(store.REF, head_tip, breaks=[bad_tip])
        return ReviewReport(str(base_commit.id), str(head_commit.id), base_tip, empty)
    at = int(time.time()) if now_s is None else now_s
    judged, apart = _landing(repo, base_tip, head_tip)
    known, breaks = _base_breaks(repo, base_tip, judged)
    breaks += apart
    base_signers: list[list[AllowedSigner]] = []

    def signers() -> list[AllowedSigner]:
        if not base_signers:
            base_signers.append(authz.trusted_signers(base_commit))
        return base_signers[0]

    def is_new(rid: str, line: int) -> bool:
        return line > known.get(notes.anchor_id(store.anchor_content(rid)), 0)

    def trust(rid: str, line: int, entry: dict[str, Any]) -> verify.Judgement | None:
        if not is_new(rid, line):
            return None
        made_at = entry.get("git_head")
        if made_at is not None and not _exists(repo, made_at):
            raise ValueError(f"claims commit {str(made_at)[:12]}, which this repository lacks")
        return signers, at

    rows: list[Row] = []

    def collect(
        rid: str, line: int, entry: dict[str, Any], signer: authz.Signer | None, problem: str | None
    ) -> None:
        if not is_new(rid, line):
            return
        rows.append(
            Row(
                rid,
                line,
                entry["kind"],
                entry["outcome"],
                entry["from_state"],
                entry["to_state"],
                _signer(entry, signer),
                entry["rationale"],
                entry.get("git_head"),
                "ok" if problem is None else f"refused: {problem}",
            )
        )

    report = verify.verify_repository(
        repo, since=since, trust=trust, on_entry=collect, tree=head_commit, at=judged
    )
    if unpinned:  # once merged, the next review would have no accepted notes to start from
        why = f"the head has no {pin.PIN_PATH} but the base has one: run `{pin.FIX}` and commit it"
        breaks.append(verify.Break(None, None, why))
    if head_tip is not None:
        for target in notes.duplicated(repo, head_tip):
            why = "two notes on one object (flat and fanned out); git shows both concatenated"
            breaks.append(verify.Break(None, None, why, target))
        required = config.load(base_commit).require_signed_notes
        stops = [base_tip] if base_tip is not None else []
        for why in notesig.unsigned_breaks(repo, head_tip, stops, signers, at, required):
            breaks.append(verify.Break(None, None, why))
    report.breaks = breaks + report.breaks
    return ReviewReport(str(base_commit.id), str(head_commit.id), base_tip, report, rows)


def _exists(repo: Repository, sha: object) -> bool:
    """Whether ``sha`` is the full id of a commit here. Not containment in the head: the notes ref is
    shared, so entries of other open branches appear in every review (and are judged)."""
    if not isinstance(sha, str) or not pin.SHA.match(sha):
        return False
    try:
        gitrepo.resolve_commit(repo, sha)
    except gitrepo.RevisionError:
        return False
    return True
