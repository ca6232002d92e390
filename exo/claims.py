"""Claims: a work item is owned by whoever created its branch ``claim/<id>`` first.

Creating a ref that must not exist yet is git's mutex (``tropo.git.refs.cas_ref``); with a
remote, a push that must create the branch there is the distributed one, and a
rejected push means the claim is lost. The claim commit is built from HEAD in the
object database, so the person's working tree and index are never touched; its only
change is the ``assignee`` line of the item. The branch is also where the work goes.

Only the holder (the agent the claim commit names) releases a claim; anyone else needs
``force`` with a reason, kept as a commit on ``refs/exo/released/<id>`` (a chain of
records, moved by :func:`tropo.git.chain.move`) whose parents hold the released tips,
so the record and the work it dropped stay reachable. Both names are self-asserted
handles, not authenticated identities: this stops mistakes and makes overrides
visible; who may push or delete at all is the remote's permissions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo.assignee import FrontmatterError, read_fields, set_assignee
from tropo.git import chain, objects
from tropo.git import remote as gitremote
from tropo.git.refs import RefRaceError, cas_ref, read_ref
from tropo.git.repo import signature, workdir
from tropo.git.types import Commit, GitError, Oid, Repository, valid_ref_name
from tropo.git.worktrees import WorktreeError, add_worktree, checked_out_at

BRANCHES = "refs/heads/claim/"
RELEASED = "refs/exo/released/"
TRAILER = "Exo-Claim"
PATH_TRAILER = "Exo-Claim-Path"  # on a claim commit that changes nothing (see claimant)
PUSH_ATTEMPTS = 8  # a ref update can fail on a lock while the winner is still writing


class ClaimRefused(Exception):
    """The claim or release was refused (exit 1); ``holder`` names who holds it."""

    def __init__(self, message: str, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class ClaimError(Exception):
    """The repository or the request is unusable for a claim (exit 2)."""


@dataclass(frozen=True)
class Claim:
    id: str
    path: str
    branch: str
    assignee: str
    previous_assignee: Any
    changed: bool
    commit: str
    remote: str | None
    worktree: str | None
    resumed: bool = False  # an interrupted claim's local branch, published now


@dataclass(frozen=True)
class Release:
    id: str
    branch: str
    local: str | None
    remote: str | None
    forced: bool
    holder: str | None
    record: str | None  # the forced-release commit on refs/exo/released/<id>


def branch_ref(item_id: str) -> str:
    ref = BRANCHES + item_id
    # git keeps a branch as a file, written through NAME.lock: no name part over 250
    # bytes (255 with ".lock"), and libgit2 reads no ref name over 1024 bytes at all (a
    # ValueError, not an answer).
    if len(ref.encode()) > 1000 or any(len(p.encode()) > 250 for p in ref.split("/")):
        raise ClaimError(f"{item_id[:40]!r}... ({len(item_id)} characters) is too long to "
                         "name a git branch; rename the item")
    if not valid_ref_name(ref):
        raise ClaimError(f"{item_id!r} cannot name a git branch; rename the item")
    return ref


def _tip(repo: Repository, ref: str) -> str | None:
    """What ``ref`` points at (None: no such ref), refusing one that does not resolve,
    such as a symbolic ref to a branch that does not exist."""
    try:
        return read_ref(repo, ref)
    except (GitError, ValueError) as exc:
        raise ClaimError(f"{ref} does not point at a commit; delete it "
                         f"(git update-ref -d --no-deref {ref}) or repair it") from exc


def tracking_ref(remote: str, item_id: str) -> str:
    return f"refs/remotes/{remote}/claim/{item_id}"


def _usable_remote(remote: str | None) -> str | None:
    """``remote``, refused when git would read it as an option (``--upload-pack=...``)."""
    if remote is not None and remote.startswith("-"):
        raise ClaimError(f"{remote!r}: a remote name cannot start with '-'")
    return remote


def default_remote(repo: Repository) -> str | None:
    """The remote claims go to when ``--remote`` is not given (git config exo.remote)."""
    try:
        value = repo.config["exo.remote"]
    except KeyError:
        return None
    return str(value) or None


def holder_at(repo: Repository, oid: str, path: str) -> str | None:
    """The assignee that the commit ``oid`` records for the item at ``path``."""
    try:
        commit = repo[oid].peel(Commit)
    except (KeyError, ValueError, GitError):
        return None
    found = objects.tree_file(repo, commit.tree, path)
    if found is None or found.filemode == objects.LINK:
        return None
    try:
        value = read_fields(found.data.decode("utf-8")).get("assignee")
    except (UnicodeDecodeError, FrontmatterError):
        return None
    return None if value is None else str(value)


def claim_commit(repo: Repository, tip: str, item_id: str) -> Commit | None:
    """The newest commit on ``tip``'s first-parent line carrying ``Exo-Claim: item_id``."""
    marker = f"{TRAILER}: {item_id}"
    try:
        commit: Commit | None = repo[tip].peel(Commit)
    except (KeyError, ValueError, GitError):
        return None
    while commit is not None:
        if marker in commit.message.splitlines():
            return commit
        commit = commit.parents[0] if commit.parents else None
    return None


def claimant(repo: Repository, tip: str, item_id: str) -> str | None:
    """The agent the claim commit under ``tip`` names: the assignee it set on the one
    file it changed (or, when the item named the claimer already and the commit changes
    nothing, on the file its ``Exo-Claim-Path`` trailer names). These are bytes the
    claimer wrote, so this says who claimed, not who is allowed to act; the releaser's
    handle is just as self-asserted."""
    found = claim_commit(repo, tip, item_id)
    if found is None or len(found.parents) != 1:
        return None
    changed = [d.new_file.path for d in repo.diff(found.parents[0], found).deltas]
    if not changed:
        prefix = f"{PATH_TRAILER}: "
        changed = [line.removeprefix(prefix) for line in found.message.splitlines()
                   if line.startswith(prefix)]
    return holder_at(repo, str(found.id), changed[0]) if len(changed) == 1 else None


def claim_refs(repo: Repository) -> dict[str, list[str]]:
    """Item id -> its claim refs, local branch first, then remote-tracking ones: exactly
    ``refs/remotes/<a configured remote>/claim/<id>`` (the longest remote name that fits
    first), so neither a branch ``wip/claim/<id>`` nor a remote named ``claim`` poses as
    a claim."""
    names = sorted((r for r in repo.remotes.names() if r), key=len, reverse=True)
    tracking = [tracking_ref(r, "") for r in names]
    found: dict[str, list[str]] = {}
    for name in sorted(repo.references):
        if name.startswith(BRANCHES):
            found.setdefault(name[len(BRANCHES) :], []).insert(0, name)
            continue
        prefix = next((p for p in tracking if name.startswith(p)), None)
        if prefix is not None:
            found.setdefault(name[len(prefix) :], []).append(name)
    return found


def holders(repo: Repository, paths: Mapping[str, str]) -> dict[str, str]:
    """Item id -> holder named by its claim branches, for the items in ``paths``
    (id -> repo-relative path)."""
    result: dict[str, str] = {}
    for item_id, refs in claim_refs(repo).items():
        if item_id not in paths:
            continue
        for ref in refs:
            oid = _tip(repo, ref)
            who = holder_at(repo, oid, paths[item_id]) if oid else None
            if who:
                result[item_id] = who
                break
    return result


def _head(repo: Repository) -> Commit:
    if repo.head_is_unborn:
        raise ClaimError("the repository has no commits yet; commit the workspace first")
    if repo.head_is_detached:
        raise ClaimError("HEAD is detached; check out the branch the claim should start from")
    commit = repo.head.peel(Commit)
    assert isinstance(commit, Commit)
    return commit


def _held(repo: Repository, ref: str, oid: str, item_id: str, path: str) -> ClaimRefused:
    who = holder_at(repo, oid, path)
    named = f"@{who}" if who else "another agent"
    short = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
    return ClaimRefused(f"{item_id} is already claimed by {named} ({short})", who)


def _build_claim(
    repo: Repository, head: Commit, item_id: str, path: str, handle: str
) -> tuple[Oid, Any, bool]:
    found = objects.tree_file(repo, head.tree, path)
    if found is None:
        raise ClaimRefused(f"{path}: not in HEAD; commit the item before claiming it")
    if found.filemode == objects.LINK:
        raise ClaimRefused(f"{path}: refusing to claim symlinked or out-of-workspace file")
    try:
        edit = set_assignee(found.data.decode("utf-8"), handle)
    except UnicodeDecodeError as exc:
        raise ClaimRefused(f"{path}: not UTF-8 text") from exc
    except FrontmatterError as exc:
        raise ClaimRefused(f"{path}: {exc}") from exc
    message = f"exo: claim {item_id} for @{handle}\n\n{TRAILER}: {item_id}\n"
    if not edit.changed:  # the item names the claimer already: say which file holds it
        message += f"{PATH_TRAILER}: {path}\n"
    oid = objects.commit_files(repo, head.id, {path: edit.text.encode("utf-8")}, message)
    return oid, edit.previous, edit.changed


def _push(repo: Repository, remote: str, ref: str, oid: str, item_id: str,
          path: str) -> None:
    """Push the claim branch at ``oid`` so that it must be created on ``remote``; a
    rejection with another commit there is a lost claim, named after the winner (the
    same commit there means an earlier, interrupted push of this claim got through)."""
    cwd = workdir(repo)
    try:
        for attempt in range(PUSH_ATTEMPTS):
            pushed = gitremote.push_ref(cwd, remote, ref, ref, None)
            if pushed.ok:
                return
            if not pushed.rejected:
                raise ClaimRefused(f"{remote}: push of {ref} failed ({pushed.detail})")
            winner = gitremote.fetch_ref(cwd, remote, ref, tracking_ref(remote, item_id))
            if winner == oid:
                return
            if winner is not None:
                raise _held(repo, tracking_ref(remote, item_id), winner, item_id, path)
            time.sleep(0.05 * (attempt + 1))  # the winner still held the remote lock
    except gitremote.RemoteError as exc:
        raise ClaimRefused(f"{exc}; nothing claimed") from exc
    raise ClaimRefused(f"{remote} rejected {ref} ({pushed.detail}); nothing claimed")


def _create(repo: Repository, ref: str, oid: Oid, message: str, item_id: str,
            path: str) -> None:
    """Create the claim branch; losing to a writer that still holds the ref lock means
    waiting to see who it was (or retrying, when that writer gave up)."""
    for attempt in range(PUSH_ATTEMPTS):
        try:
            cas_ref(repo, ref, oid, None, message)
            return
        except RefRaceError as race:
            held = race.actual or read_ref(repo, ref)
            if held is not None:
                raise _held(repo, ref, held, item_id, path) from race
        time.sleep(0.01 * (attempt + 1))
    raise ClaimRefused(f"{ref} stayed locked by another process; nothing claimed")


def _unpublished(repo: Repository, ref: str, item_id: str, handle: str,
                 remote: str | None) -> str | None:
    """The local claim branch of ``handle`` that a retry with ``remote`` should publish
    (a claim interrupted between creating the branch and pushing it), else None."""
    local = _tip(repo, ref)
    if remote is None or local is None or claimant(repo, local, item_id) != handle:
        return None
    return local


def claim(
    repo: Repository,
    item_id: str,
    path: str,
    handle: str,
    remote: str | None = None,
    worktree: Path | None = None,
) -> Claim:
    """Claim the item at ``path`` (repo-relative) for ``handle`` (already normalized).

    A local claim branch of the same agent that never reached ``remote`` (the process
    died before or during the push) is published now instead of refused; if that push
    fails too, the branch is kept (it existed before this call and may carry work or be
    checked out). Only a branch this call created is deleted again."""
    ref = branch_ref(item_id)
    remote = _usable_remote(remote)
    head = _head(repo)
    if worktree is not None and (worktree.exists() or worktree.is_symlink()):
        raise ClaimError(f"{worktree}: already exists; choose a new directory")
    resumed = _unpublished(repo, ref, item_id, handle, remote)
    if resumed is not None:
        oid = resumed
        made = claim_commit(repo, resumed, item_id)
        previous = holder_at(repo, str(made.parents[0].id), path) if made else None
        changed = True
    else:
        refs = [ref] if remote else claim_refs(repo).get(item_id, [ref])
        for existing in refs:
            held = _tip(repo, existing)
            if held is not None:
                raise _held(repo, existing, held, item_id, path)
        new, previous, changed = _build_claim(repo, head, item_id, path, handle)
        oid = str(new)
        _create(repo, ref, new, f"exo: claim {item_id} for @{handle}", item_id, path)
    if remote:
        try:
            _push(repo, remote, ref, oid, item_id, path)
        except ClaimRefused as refused:
            if resumed is not None:  # not ours to delete: it may carry work, or a worktree
                raise ClaimRefused(
                    f"{refused}; kept your local claim/{item_id} (it may carry work): retry "
                    f"once {remote} takes it, or rename it to keep its commits "
                    f"(git branch -m claim/{item_id} NEW-NAME)", refused.holder) from refused
            cas_ref(repo, ref, None, oid, f"exo: claim on {item_id} lost or unpublished")
            raise
    where = None
    if worktree is not None:
        try:
            where = str(add_worktree(repo, worktree, ref))
        except WorktreeError as exc:
            raise ClaimError(f"claimed {item_id}, but {exc}") from exc
    return Claim(item_id, path, ref.removeprefix("refs/heads/"), handle, previous, changed,
                 oid, remote, where, resumed is not None)


def _unmerged(repo: Repository, tip: str, base: Oid, item_id: str) -> int:
    """Commits on ``tip`` that ``base`` lacks, not counting the claim commit itself."""
    walker = repo.walk(Oid(hex=tip))
    walker.hide(base)
    marker = f"{TRAILER}: {item_id}"
    return sum(1 for c in walker if marker not in c.message.splitlines())


def _check_holder(repo: Repository, tips: list[str], item_id: str, agent: str,
                  force: bool) -> str | None:
    """The holder of the claim (refusing a releaser who is not it, unless ``force``)."""
    holder = None
    for tip in tips:
        holder = claimant(repo, tip, item_id)
        if holder != agent and not force:
            named = f"@{holder}" if holder else "an agent this clone cannot tell"
            raise ClaimRefused(
                f"claim/{item_id} is held by {named}, not @{agent}; only the holder "
                "releases it (override with --force --reason TEXT, which is recorded)",
                holder,
            )
    return holder


def _record(repo: Repository, item_id: str, agent: str, holder: str | None,
            reason: str, tips: list[str], previous: list[str]) -> Oid:
    """The forced-release commit: parents are the earlier records, then the released
    tips (so neither the audit trail nor the dropped work can be garbage-collected)."""
    parents = [Oid(hex=o) for o in dict.fromkeys([*previous, *tips])]
    tree = repo[tips[0]].peel(Commit).tree.id
    named = f"@{holder}" if holder else "an unknown holder"
    message = (f"exo: forced release of {item_id} held by {named}, by @{agent}\n\n"
               f"{reason}\n\nExo-Released: {item_id}\nExo-Released-By: {agent}\n")
    sig = signature(repo)
    return repo.create_commit(None, sig, sig, message, tree, parents)


def release(
    repo: Repository,
    item_id: str,
    agent: str,
    force: bool = False,
    remote: str | None = None,
    reason: str | None = None,
) -> Release:
    """Delete ``agent``'s claim on ``item_id`` (on ``remote`` too), refusing another
    agent's claim, and a branch carrying work HEAD has not merged, unless ``force``
    with a ``reason``. The remote branch is deleted only if it is still the commit
    read here, in one atomic push with the forced-release record."""
    ref = branch_ref(item_id)
    remote = _usable_remote(remote)
    if force and not (reason and reason.strip()):
        raise ClaimError("--force needs --reason TEXT; the reason is recorded on "
                         f"{RELEASED}{item_id}")
    if repo.head_is_unborn:
        raise ClaimError("the repository has no commits yet; nothing to release")
    head = repo.head.peel(Commit).id
    local = _tip(repo, ref)
    log = RELEASED + item_id
    remote_tip = remote_log = None
    if remote:
        try:
            remote_tip = gitremote.fetch_ref(workdir(repo), remote, ref, tracking_ref(remote, item_id))
            if force:
                remote_log = gitremote.fetch_ref(workdir(repo), remote, log,
                                            f"refs/exo/remotes/{remote}/released/{item_id}")
        except gitremote.RemoteError as exc:
            raise ClaimRefused(f"{exc}; nothing released") from exc
    if local is None and remote_tip is None:
        where = f" here or on {remote}" if remote else ""
        raise ClaimRefused(f"{item_id} is not claimed{where}")
    if local is not None:
        busy = checked_out_at(repo, ref)
        if busy is not None:
            raise ClaimRefused(
                f"claim/{item_id} is checked out in {busy}; run `git worktree remove {busy}` first"
            )
    tips = list(dict.fromkeys(t for t in (local, remote_tip) if t))
    holder = _check_holder(repo, tips, item_id, agent, force)
    for tip in tips:
        count = _unmerged(repo, tip, head, item_id)
        if count and not force:
            raise ClaimRefused(
                f"claim/{item_id} has {count} unmerged commit(s); merge them or pass "
                "--force --reason TEXT"
            )
    record = None
    local_log = _tip(repo, log)
    if force:
        assert reason is not None
        earlier = [o for o in (remote_log, local_log) if o]
        record = str(_record(repo, item_id, agent, holder, reason.strip(), tips, earlier))
    if remote and remote_tip:
        updates: list[tuple[str | None, str, str | None]] = [(None, ref, remote_tip)]
        if record is not None:
            updates.append((record, log, remote_log))
        try:
            outcome = gitremote.push_refs(workdir(repo), remote, updates)
        except gitremote.RemoteError as exc:
            raise ClaimRefused(f"{exc}; nothing released") from exc
        if not outcome.ok:
            raise ClaimRefused(f"claim/{item_id} not deleted on {remote} ({outcome.detail}); it may "
                               "have moved since it was read: fetch, look, and retry")
        tracked = _tip(repo, tracking_ref(remote, item_id))
        if tracked is not None:
            cas_ref(repo, tracking_ref(remote, item_id), None, tracked, "exo: release")
    if record is not None:
        chain.move(repo, log, record, local_log, f"exo: forced release of {item_id}")
    if local is not None:
        cas_ref(repo, ref, None, local, f"exo: release {item_id}")
    return Release(item_id, ref.removeprefix("refs/heads/"), local, remote, force, holder,
                   record)
