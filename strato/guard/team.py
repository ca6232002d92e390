"""Many pull requests at once: the pin merge driver and ``strato guard sync``.

Two branches that each pinned their own notes commit conflict on
``.vivary/guard/notes-tip`` when the second merges. The driver (``merge=vivary-guard-pin``,
registered by ``vivary hooks install``) resolves it with the pin of the union of both
notes commits (:mod:`strato.guard.union`). ``sync`` does the same for the shared notes
ref: fetch, merge, push with a lease, so a concurrent push is never overwritten.
Neither decides trust: review judges whatever lines a pin adds.
"""

from __future__ import annotations

from pathlib import Path

from strato.guard import pin, store, union
from strato.guard.errors import GuardError
from tropo.git import refs as gitrefs
from tropo.git import remote as gitremote
from tropo.git import repo as gitrepo
from tropo.git.snapshot import SourceError, read_staged
from tropo.git.types import Repository

DRIVER = "vivary-guard-pin"
ATTRIBUTE = f"/{pin.PIN_PATH} merge={DRIVER}"
BRANCHES = "refs/notes/vivary/branches/"  # each pushed branch's pinned notes commit
MAX_ATTEMPTS = 10


def branch_ref(branch: str) -> str:
    """Where a pushed branch's pinned notes commit waits on the remote for its review."""
    return BRANCHES + branch


def parse(data: bytes | None, what: str) -> str | None:
    """The notes commit a pin file's bytes name (None: ``none``); refuses anything else."""
    text = (data or b"")[: pin.MAX_PIN + 1].decode("utf-8", "replace")
    value = text.strip()
    shaped = value == pin.NONE or pin.SHA.match(value)
    if data is None or len(data) > pin.MAX_PIN or "\n" in value or not shaped:
        why = "is not a guard pin (a notes commit id or `none`): not merged"
        raise GuardError("invalid_usage", f"{what} {why}")
    return None if value == pin.NONE else value


def merge_pins(repo: Repository, ours: str | None, theirs: str | None) -> str | None:
    """The notes commit both pins' notes merge to; this clone's notes ref moves along when
    it can (forward only), so the next write and push carry the merge."""
    for sha in (ours, theirs):
        if sha is not None:
            pin.require_commit(repo, sha, "a merged side's")
    merged = union.merge(repo, ours, theirs)
    local = gitrefs.read_ref(repo, store.REF)
    try:
        joined = union.merge(repo, local, merged)
        if joined != local and joined is not None:
            gitrefs.cas_ref(repo, store.REF, joined, local, "guard: merge pinned notes")
    except (GuardError, gitrefs.RefRaceError):
        pass  # the pin is what matters; the local ref is merged by the next sync
    return merged


def driver(repo: Repository, ours_path: Path, theirs_path: Path) -> str | None:
    """git's merge driver (``%A %B``): the merged pin written over ``ours_path``."""
    ours = parse(_read(ours_path), str(ours_path))
    theirs = parse(_read(theirs_path), str(theirs_path))
    merged = merge_pins(repo, ours, theirs)
    ours_path.write_text(pin.text(merged))
    return merged


def resolve(repo: Repository) -> str | None:
    """A pin conflict git left in the index (a merge without the driver): the work tree's
    pin becomes the merge of both sides' (``git add`` it)."""
    try:
        ours = read_staged(repo, pin.PIN_PATH, "2")
        theirs = read_staged(repo, pin.PIN_PATH, "3")
    except SourceError as exc:
        raise GuardError("invalid_usage", f"cannot read the conflicted {pin.PIN_PATH}: {exc}") from None
    if ours is None or theirs is None:
        raise GuardError("invalid_usage", f"{pin.PIN_PATH} is not in conflict: nothing to resolve")
    merged = merge_pins(repo, parse(ours, "our pin"), parse(theirs, "their pin"))
    return pin.write_tip(repo, merged)


def _read(path: Path) -> bytes | None:
    try:
        with path.open("rb") as fh:
            return fh.read(pin.MAX_PIN + 1)
    except OSError:
        return None


def sync(repo: Repository, remote: str, mirror: bool = True) -> dict[str, str | None]:
    """Fetch ``remote``'s guard notes (and every pushed branch's pinned notes), merge them
    with this clone's, and push the merge with a lease on the tip fetched; a push that
    lost the race fetches and merges again.
    This clone's notes ref stays on its own writes, so a branch's pin never takes in
    another pull request's entries (docs/guard.md, "A team")."""
    root = gitrepo.workdir(repo)
    for _ in range(MAX_ATTEMPTS):
        try:
            if mirror:  # every pushed branch's pinned notes, for a merge driver to find
                gitremote.mirror(root, remote, BRANCHES)
            theirs = gitremote.remote_oid(root, remote, store.REF)
            if theirs is not None and theirs not in repo:
                gitremote.fetch_objects(root, remote, store.REF)
        except gitremote.RemoteError as exc:
            raise GuardError("sync_failed", str(exc)) from None
        local = gitrefs.read_ref(repo, store.REF)
        merged = union.merge(repo, local, theirs)
        if merged is None or merged == theirs:
            pushed = None
        else:
            try:
                result = gitremote.push_ref(root, remote, merged, store.REF, theirs)
            except gitremote.RemoteError as exc:
                raise GuardError("sync_failed", str(exc)) from None
            if result.rejected:
                continue
            pushed = merged
        return {"remote": remote, "notes_tip": merged, "pushed": pushed}
    raise GuardError("sync_failed", f"{remote}'s guard notes kept moving; try again")


def join_pinned(repo: Repository) -> str | None:
    """Before a guard write at the terminal: when the work tree pins notes this clone's
    notes ref does not contain (a branch started from a base that merged other pull
    requests), the ref takes them in first (their union), so the write chains on the
    ledgers the branch's review will compare with. A pin this clone lacks, or notes that
    do not merge, are left for the write's own checks; one line says what was done."""
    if repo.is_bare:
        return None
    try:
        pinned = pin.read_worktree(repo)
    except GuardError:
        return None
    local = gitrefs.read_ref(repo, store.REF)
    if pinned is None or not pin.SHA.match(pinned) or pinned not in repo or pinned == local:
        return None
    try:
        joined = union.merge(repo, local, pinned)
        if joined == local:
            return None
        gitrefs.cas_ref(repo, store.REF, joined, local, "guard: take in the pinned notes")
    except (GuardError, gitrefs.RefRaceError):
        return None
    return f"the guard notes took in notes commit {pinned[:12]} that {pin.PIN_PATH} names"
