"""The notes commit a branch's ledgers are at, pinned in the branch's own tree.

Notes refs are not protected on common hosts; branches are. A base branch that names
its notes commit in ``.vivary/guard/notes-tip`` fixes, through its own protection,
which ledger lines review takes as already accepted (see docs/guard.md, threat model).
Keeping the pin current (guard writes move it, the hooks check it) is a convenience for
honest contributors: review never trusts anything but the base's pin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strato.guard import store, verify
from strato.guard.errors import GuardError
from tropo.fs.rooted import UnsafePath, check_target, write_within
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.refs import is_ancestor
from tropo.git.snapshot import read_file
from tropo.git.types import Commit, Repository

PIN_PATH = ".vivary/guard/notes-tip"
NONE = "none"  # the branch has no ledgers yet
SHA = re.compile(r"^[0-9a-f]{40}$")
FETCH = f"git fetch origin '+{store.REF}:{store.REF}'"
FIX = f"strato guard pin --from local && git add {PIN_PATH}"
CONFLICT = "<<<<<<<"  # what git writes into a file it could not merge
RESOLVE = f"strato guard merge-pins --resolve && git add {PIN_PATH}"
LOCAL = "local"  # `--from local`: this clone's own notes tip
MAX_PIN = 256  # a pin is 41 bytes; more is not a pin (and is not read)


def text(tip: str | None) -> str:
    return f"{tip if tip is not None else NONE}\n"


def _unsafe(exc: UnsafePath) -> GuardError:
    return GuardError("pin_unsafe", f"{PIN_PATH}: {exc}; not touched")


def write(repo: Repository) -> str | None:
    """Pin the current notes tip in the work tree (commit it with the change); the tip."""
    return write_tip(repo, gitrefs.read_ref(repo, store.REF))


def write_tip(repo: Repository, tip: str | None) -> str | None:
    """Pin the notes commit ``tip`` in the work tree. Never through a symlink: a branch
    could point the pin at any file of the user's."""
    try:
        write_within(gitrepo.workdir(repo), PIN_PATH, text(tip).encode())
    except UnsafePath as exc:
        raise _unsafe(exc) from None
    return tip


def read_worktree(repo: Repository) -> str | None:
    """The work tree's pin as written (None: there is none), read without following a link."""
    try:
        path = check_target(gitrepo.workdir(repo), PIN_PATH)
    except UnsafePath as exc:
        raise _unsafe(exc) from None
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_PIN)
    except FileNotFoundError:
        return None
    return data.decode("utf-8", "replace").strip()


@dataclass(frozen=True)
class State:
    """How a pin relates to this clone's notes tip."""

    kind: str  # current | stale | diverged | behind | missing | invalid
    pinned: str | None  # the pin's text, None when there is no pin
    tip: str | None  # the notes tip, None when this clone has no guard notes

    def reason(self, what: str = "the pin") -> str | None:
        """One line: why ``what`` is not current and the command that fixes it."""
        pinned, tip = (self.pinned or "")[:12], (self.tip or NONE)[:12]
        return {
            "current": None,
            "missing": f"there is no {PIN_PATH}: run `{FIX}`",
            "invalid": f"{what} ({PIN_PATH}) is neither a commit id nor `{NONE}`: run `{FIX}`"
            if not (self.pinned or "").startswith(CONFLICT)
            else f"{what} ({PIN_PATH}) holds merge conflict markers: run `{RESOLVE}`",
            "stale": f"{what} names notes commit {pinned} but the guard notes are at {tip}: run `{FIX}`",
            "behind": f"{what} names notes commit {pinned}, which the guard notes here (at {tip}) "
            f"do not contain: run `git fetch origin {store.REF}:{store.REF}`",
            "diverged": f"the guard notes at {tip} do not descend from notes commit {pinned} that "
            f"{what} names (the notes ref was reset, or another clone appended): re-pin only if "
            f"that is intended: `{FIX}`",
        }[self.kind]


def judge(repo: Repository, pinned: str | None) -> State:
    """Whether ``pinned`` (a pin's text) names this clone's notes tip: :func:`judge_at`."""
    return judge_at(repo, pinned, gitrefs.read_ref(repo, store.REF))


def judge_at(repo: Repository, pinned: str | None, tip: str | None) -> State:
    """Whether ``pinned`` (a pin's text) names the notes commit ``tip``, and if not, which
    way they differ: the notes moved past it (stale), the clone lacks it (behind), or
    neither descends from the other (diverged)."""
    if pinned is None:
        return State("missing", None, tip)
    if pinned != NONE and not SHA.match(pinned):
        return State("invalid", pinned, tip)
    if pinned == text(tip).strip():
        return State("current", pinned, tip)
    if pinned == NONE:
        return State("stale", pinned, tip)
    if tip is None or pinned not in repo or is_ancestor(repo, tip, pinned):
        return State("behind", pinned, tip)
    return State("stale" if is_ancestor(repo, pinned, tip) else "diverged", pinned, tip)


def follow(repo: Repository) -> str | None:
    """After a guard write: move the work tree's pin forward to the new notes tip; one line
    saying what was done, or None when the work tree keeps no pin (the project does not
    pin) or it is current. Only forward: a pin the notes do not descend from stays, said."""
    if repo.is_bare:
        return None
    try:
        state = judge(repo, read_worktree(repo))
        if state.kind in ("missing", "current"):
            return None
        if state.kind != "stale":
            return f"{PIN_PATH} not updated: {state.reason()}"
        tip = write(repo)
    except GuardError as exc:
        return exc.message
    except OSError as exc:  # the write to the notes went through: say, never fail it
        return f"{PIN_PATH} not updated: {exc}"
    return f"{PIN_PATH} now pins notes commit {(tip or NONE)[:12]}: commit it with your change"


def read_or_none(commit: Commit) -> str | None:
    """The pin file's text as written, None when there is none (no judgement)."""
    data = read_file(commit, PIN_PATH)
    return None if data is None else data.decode("utf-8", "replace").strip()


def read(commit: Commit) -> str | None:
    """The notes commit ``commit`` pins (None: no ledgers); fails closed with the fix."""
    data = read_file(commit, PIN_PATH)
    where = str(commit.id)[:12]
    if data is None:
        raise GuardError(
            "review_unpinned",
            f"base {where} has no {PIN_PATH}: run `strato guard pin` on the base branch and "
            "commit it, or pass --base-notes REV (a notes commit your CI keeps)",
        )
    value = data.decode("utf-8", "replace").strip()
    if value == NONE:
        return None
    if not SHA.match(value):
        why = "is not a commit id"
        if value.startswith(CONFLICT):
            why = f"holds merge conflict markers: run `{RESOLVE}`"
        raise GuardError("review_unpinned", f"{PIN_PATH} at base {where} {why}")
    return value


def require_commit(repo: Repository, sha: str, whose: str = "the base's") -> str:
    """``sha`` as a notes commit this clone has; the fetch to run otherwise. A short name
    several refs answer to stays a usage error: no fetch would settle it."""
    try:
        return str(gitrepo.resolve_commit(repo, sha).id)
    except gitrepo.AmbiguousRevision:
        raise
    except gitrepo.RevisionError:
        raise GuardError(
            "review_unpinned",
            f"{whose} notes commit {sha[:12]} is not in this clone (run {FETCH}); "
            "if the remote no longer has it, the notes ref was rewritten",
        ) from None


def chosen(repo: Repository, source: str, base: str | None) -> str | None:
    """The notes commit ``strato guard pin --from SOURCE`` pins. ``local``: this clone's
    notes tip (entries a branch's review will judge). A remote's name: what that remote's
    copy of ``base`` (default: the branch checked out) pins, as last fetched, ``none``
    when it pins nothing: the base never takes entries no review has seen from a clone."""
    if source == LOCAL:
        return gitrefs.read_ref(repo, store.REF)
    branch = base or gitrepo.branch_name(repo)
    if branch is None:
        raise GuardError("invalid_usage", "HEAD is detached: name the base branch with --base")
    ref = f"refs/remotes/{source}/{branch}"
    try:
        commit = gitrepo.resolve_commit(repo, ref)
    except gitrepo.RevisionError:
        return None
    pinned = read_or_none(commit)
    if pinned is None or pinned == NONE:
        return None
    if not SHA.match(pinned):
        raise GuardError("pin_refused", f"{ref} pins something that is not a commit id: not pinned")
    return require_commit(repo, pinned)


def verified(repo: Repository, tip: str | None) -> str | None:
    """``tip``, refused (nothing written) when its notes fail ``verify``: a pin names
    notes a reviewer may take as accepted, so they must at least hold together."""
    if tip is None:
        return None
    report = verify.verify_repository(repo, at=tip)
    if not report.ok:
        raise GuardError(
            "pin_refused", f"notes commit {tip[:12]} fails verify ({report.breaks[0]}): not pinned"
        )
    return tip
