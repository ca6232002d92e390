"""Two pull requests from one clone: each branch's guard writes go on its own notes chain.

A clone has one guard notes ref (:data:`strato.guard.store.REF`). Left alone, a write on
a second branch chains after the first branch's writes, so the second branch's pin holds
them, its review shows them, and its merge carries them into the base even when the
first is closed unmerged. So the terminal's guard commands keep a local record per
branch, ``refs/vivary/guard/branches/<branch>``: the notes commit the branch's last
write left. Before a write, when the notes ref holds another branch's recorded writes
that this branch's pin lacks, the notes ref switches to this branch's own chain (its
record with its pin merged in, or its pin alone); the other chain stays under its
record, whole. Only this clone writes these refs (no push, fetch or hook moves
``refs/vivary/guard/``), and they grant nothing: review judges whatever a pin adds.
"""

from __future__ import annotations

import contextlib

from strato.guard import pin, store, team, union
from strato.guard.errors import GuardError
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Repository

RECORDS = "refs/vivary/guard/branches/"


def record_ref(branch: str) -> str:
    """Where this clone keeps the notes commit ``branch``'s last guard write left."""
    return RECORDS + branch


def pinned(repo: Repository) -> tuple[bool, str | None]:
    """Whether the work tree pins notes this clone has, and which (None: ``none``)."""
    try:
        text = pin.read_worktree(repo)
    except GuardError:
        return False, None
    if text == pin.NONE:
        return True, None
    if text is None or not pin.SHA.match(text) or text not in repo:
        return False, None
    return True, text


def _holds(repo: Repository, tip: str | None, sha: str) -> bool:
    return tip is not None and gitrefs.is_ancestor(repo, sha, tip)


def foreign(repo: Repository, branch: str, local: str | None, pin_tip: str | None) -> str | None:
    """Another branch whose recorded writes the notes ref ``local`` holds and this
    branch's pin ``pin_tip`` lacks (its first by name), or None."""
    for name, sha in sorted(gitrefs.ref_targets(repo, RECORDS).items()):
        other = name.removeprefix(RECORDS)
        if other != branch and _holds(repo, local, sha) and not _holds(repo, pin_tip, sha):
            return other
    return None


def _start(repo: Repository, own: str | None, pin_tip: str | None) -> str | None:
    """This branch's chain: its record with its pin merged in; its pin alone when it has
    no record or the two do not merge."""
    if own is None:
        return pin_tip
    try:
        return union.merge(repo, own, pin_tip)
    except GuardError:
        return pin_tip


def _branch(repo: Repository) -> str | None:
    """The branch checked out, when the work tree pins (else no chain is kept per branch)."""
    if repo.is_bare or not pinned(repo)[0]:
        return None
    return gitrepo.branch_name(repo)


def current(repo: Repository) -> str | None:
    """The notes commit the branch checked out is at: the notes ref, unless it holds
    another branch's writes (then where :func:`enter` would put it). Writes nothing."""
    local = gitrefs.read_ref(repo, store.REF)
    branch = _branch(repo)
    pin_tip = pinned(repo)[1]
    if branch is None or foreign(repo, branch, local, pin_tip) is None:
        return local
    own = gitrefs.read_ref(repo, record_ref(branch))
    if own is None:
        return pin_tip
    return own if pin_tip is None or gitrefs.is_ancestor(repo, pin_tip, own) else pin_tip


def enter(repo: Repository) -> str | None:
    """Before a guard write at the terminal: put the notes ref on the checked-out branch's
    own chain (else the pinned notes are taken in, :func:`team.join_pinned`); one line
    saying what was done, or None."""
    branch = _branch(repo)
    local = gitrefs.read_ref(repo, store.REF)
    pin_tip = pinned(repo)[1]
    other = None if branch is None else foreign(repo, branch, local, pin_tip)
    if branch is None or other is None:
        return team.join_pinned(repo)
    start = _start(repo, gitrefs.read_ref(repo, record_ref(branch)), pin_tip)
    if start == local:
        return team.join_pinned(repo)
    kept = record_ref(other)
    try:  # the other chain whole, with any write made on it after its last record
        gitrefs.cas_ref(repo, kept, local, gitrefs.read_ref(repo, kept), "guard: keep the branch's notes")
        gitrefs.forget_log(repo, store.REF)  # a switch on purpose, the other chain kept: no rewind
        gitrefs.cas_ref(repo, store.REF, start, local, f"guard: the notes of branch {branch[:80]}")
    except gitrefs.RefRaceError:
        raise GuardError("ledger_busy", f"{store.REF} moved while switching branches; try again") from None
    return (f"the guard notes are now branch {branch}'s (at {(start or pin.NONE)[:12]}); "
            f"branch {other}'s stay at {kept}")


def record(repo: Repository) -> None:
    """After a guard write at the terminal: the checked-out branch's chain is where the
    notes ref now is."""
    branch = _branch(repo)
    tip = gitrefs.read_ref(repo, store.REF)
    if branch is None or tip is None:
        return
    name = record_ref(branch)
    with contextlib.suppress(gitrefs.RefRaceError):  # recorded meanwhile: the next write records again
        gitrefs.cas_ref(repo, name, tip, gitrefs.read_ref(repo, name), "guard: the branch's notes")
