"""The guard's pre-push checks: every ledger must verify before it leaves this clone, and
every branch pushed must pin guard notes the remote has (else its review cannot run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strato.guard import branchnotes, pin, store, team
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tropo.git import refs as gitrefs
from tropo.git import remote as gitremote
from tropo.git import repo as gitrepo
from tropo.git.refs import is_ancestor

if TYPE_CHECKING:
    from tropo.git.remote import Push
    from tropo.git.types import Repository

ZERO = "0" * 40
BRANCHES, CLAIMS = "refs/heads/", "refs/heads/claim/"


def check(push: Push) -> list[str]:
    """The breaks ``strato guard verify`` would report (the notes commits after the
    remote's tip judged as about to be pushed). The local notes need not descend from the
    remote's: they go along merged with them (:func:`sync_notes`), which keeps every line
    the remote has, so a remote tip the local one does not contain is no rewind."""
    repo = gitrepo.require(push.root)
    local = gitrefs.read_ref(repo, store.REF)
    if local is None:
        return []
    since = []
    try:
        remote_tip = gitremote.remote_oid(push.root, push.remote, store.REF)
    except gitremote.RemoteError:
        remote_tip = None
    if remote_tip is not None and remote_tip in repo and is_ancestor(repo, remote_tip, local):
        since.append(remote_tip)
    return _uncommitted(repo, push) + [str(b) for b in verify_repository(repo, since=since).breaks]


def _branches(push: Push) -> list[tuple[str, str]]:
    """(branch name, commit) of each branch the push creates or moves, claims left out."""
    return [
        (u.remote_ref.removeprefix(BRANCHES), u.local_sha)
        for u in push.updates
        if u.local_sha != ZERO and u.remote_ref.startswith(BRANCHES) and not u.remote_ref.startswith(CLAIMS)
    ]


def _uncommitted(repo: Repository, push: Push) -> list[str]:
    """A guard write moved the work tree's pin to the notes tip after the last commit: the
    branch pushed from HEAD pins something else, so its review would fail. One commit fixes it."""
    head = None if repo.is_bare else gitrepo.head_commit(repo)
    if head is None:
        return []
    try:
        worktree = pin.read_worktree(repo)
    except GuardError:
        return []
    current = pin.judge_at(repo, worktree, branchnotes.current(repo)).kind == "current"
    if worktree is None or not current or pin.read_or_none(head) == worktree:
        return []
    return [
        f"{branch}: the work tree pins notes commit {worktree[:12]} but the branch does not: commit it "
        f"(`git add {pin.PIN_PATH} && git commit`)"
        for branch, sha in _branches(push)
        if sha == str(head.id)
    ]


def _pins(repo: Repository, push: Push) -> dict[str, str]:
    """The notes commit each branch being pushed pins (branches pinning none left out)."""
    out = {}
    for branch, sha in _branches(push):
        pinned = pin.read_or_none(gitrepo.resolve_commit(repo, sha))
        if pinned is not None and pinned != pin.NONE:
            out[branch] = pinned
    return out


def pins_pushed(push: Push) -> list[str]:
    """Run once the guard notes travelled along: each branch pushed that pins a notes
    commit must find it in the remote's notes, or CI's review of it fails closed."""
    repo = gitrepo.require(push.root)
    pins = _pins(repo, push)
    if not pins:
        return []
    try:
        remote_tip = gitremote.remote_oid(push.root, push.remote, store.REF)
        if remote_tip is not None and remote_tip not in repo:
            gitremote.fetch_objects(push.root, push.remote, store.REF)
    except gitremote.RemoteError as exc:
        return [f"cannot tell whether {push.remote} has the guard notes the branches pin: {exc}"]
    problems = []
    for branch, pinned in sorted(pins.items()):
        if not pin.SHA.match(pinned):  # shown no further: the bytes are anyone's
            problems.append(f"{branch}: its {pin.PIN_PATH} is not a commit id: run `{pin.FIX}`")
            continue
        if remote_tip is not None and is_ancestor(repo, pinned, remote_tip):
            continue
        if _remote_has(push, team.branch_ref(branch), pinned):
            continue
        has = "has no guard notes" if remote_tip is None else f"has guard notes at {remote_tip[:12]}"
        problems.append(
            f"{branch} pins notes commit {pinned[:12]}, which {push.remote} lacks (it {has}): "
            f"push the notes (`git push {push.remote} {store.REF}`), or fetch them and re-pin "
            f"(`{pin.FIX}`) if they moved"
        )
    return problems


def sync_notes(push: Push) -> list[str]:
    """The guard notes go along merged with the remote's (``strato guard sync``), so two
    clones' pushes never refuse or lose each other's entries, and each branch pushed
    carries the notes commit it pins under ``refs/notes/vivary/branches/<branch>``, so
    its review finds them even when they do not merge into the shared ref (a
    same-ledger conflict, settled when the second of the two lands); warning lines."""
    repo = gitrepo.require(push.root)
    warnings = []
    try:
        team.sync(repo, push.remote, mirror=False)
    except GuardError as exc:
        warnings.append(f"guard ledgers not merged into {push.remote}'s: {exc.message}")
    for branch, pinned in sorted(_pins(repo, push).items()):
        if not pin.SHA.match(pinned) or pinned not in repo:
            continue
        dst = team.branch_ref(branch)
        try:
            there = gitremote.remote_oid(push.root, push.remote, dst)
            if there == pinned:
                continue
            pushed = gitremote.push_ref(push.root, push.remote, pinned, dst, there)
            why = None if pushed.ok else pushed.detail  # refused: the remote's hook, or a lost lease
        except gitremote.RemoteError as exc:
            why = str(exc)
        if why is not None:
            warnings.append(f"guard notes of {branch} not pushed: {why}")
    return warnings


def _remote_has(push: Push, ref: str, sha: str) -> bool:
    try:
        return gitremote.remote_oid(push.root, push.remote, ref) == sha
    except gitremote.RemoteError:
        return False
