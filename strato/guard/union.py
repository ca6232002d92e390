"""Two guard notes histories merged ledger by ledger, so concurrent pull requests never
lose each other's entries.

Each pull request leaves its own notes commit. Their union takes every ledger from the
side that has more lines when the other side's lines are a prefix of them (the same line
blobs, so the same bytes): nothing is lost, and each parent's diff to the merge only
appends, which is what ``verify``'s history check accepts. Two sides that appended
different lines to one ledger are a real conflict: the hash chain orders them, so one
side's entries must be re-derived after the other's (``strato guard reappend``).
Nothing here decides trust: review judges the merged lines as it judges any.
"""

from __future__ import annotations

from strato.guard import ledger, running, store
from strato.guard.errors import GuardError
from strato.guard.layout import LEDGERS, Stored, lines_of
from strato.guard.ledgertrees import with_lines, without_state
from tropo.git import notes
from tropo.git.refs import is_ancestor
from tropo.git.types import FILEMODE_BLOB, FILEMODE_TREE, Blob, Oid, Repository, Tree

MESSAGE = "guard: merge notes\n"


def conflict(repo: Repository, kept: Stored, onto: str) -> GuardError:
    """One line: the ledger both sides appended to, and the command that re-appends."""
    rid = ledger.resource_of(kept.first_line) or kept.anchor
    return GuardError(
        "notes_conflict",
        f"both sides appended to the ledger of {rid!r} (its hash chain orders them): run "
        f"`strato guard reappend {rid} --onto {onto}` to re-derive this side's entries after theirs",
    )


def _covers(longer: Stored, shorter: Stored) -> bool:
    """Whether ``longer`` holds every line of ``shorter``, in order, at its start."""
    if longer.problem is not None or shorter.problem is not None:
        return False
    if not longer.legacy and not shorter.legacy:
        return longer.parts[: len(shorter.parts)] == shorter.parts
    return longer.data.startswith(shorter.data)


def _entry(tree: Tree | None, path: list[str]) -> tuple[Oid, int] | None:
    node: object = tree
    for name in path:
        if not isinstance(node, Tree) or name not in node:
            return None
        node = node[name]
    oid, mode = getattr(node, "id", None), getattr(node, "filemode", FILEMODE_BLOB)
    return None if oid is None else (oid, FILEMODE_TREE if isinstance(node, Tree) else mode)


def _take(
    repo: Repository, tree: Tree | None, theirs: Tree | None, kept: Stored, have: Stored | None
) -> Tree:
    """``tree`` with ``kept``'s ledger, note, running state and anchor blob as ``theirs``
    has them. An older release's whole note taken over our line blobs (``have``) is
    written as line blobs, as ``migrate-store`` writes it (same bytes), and our running
    state, true only of our shorter ledger, goes: copying their note alone would leave
    our lines beside it, a ledger that reads as broken."""
    anchor = kept.anchor
    if kept.legacy and have is not None and not have.legacy:
        tree = _tree(repo, without_state(repo, with_lines(repo, tree, anchor, lines_of(kept.data)), anchor))
        return _with_anchor(repo, tree, anchor)
    moves = [
        ([LEDGERS, anchor], [LEDGERS, anchor]),
        (notes.note_path(theirs, anchor), notes.note_path(tree, anchor)),
        ([running.STATE, anchor], [running.STATE, anchor]),
    ]
    for source, target in moves:
        found = _entry(theirs, source)
        if found is not None:
            tree = _tree(repo, notes.insert(repo, tree, target, found[0], found[1]))
    assert tree is not None
    return _with_anchor(repo, tree, anchor)


def _with_anchor(repo: Repository, tree: Tree, anchor: str) -> Tree:
    if isinstance(repo.get(anchor), Blob):
        return _tree(repo, notes.insert(repo, tree, [notes.ANCHORS, anchor], Oid(hex=anchor)))
    return tree


def _tree(repo: Repository, oid: Oid) -> Tree:
    found = repo[oid]
    assert isinstance(found, Tree)
    return found


def merged_tree(repo: Repository, ours: str, theirs: str, skip: str | None = None) -> Oid:
    """The notes tree holding every ledger of both notes commits (``skip``'s as ``ours``
    has it); raises ``notes_conflict`` (naming ``theirs`` to re-append onto) when one
    ledger grew differently on each side."""
    mine = {kept.anchor: kept for kept in store.ledgers(repo, ours)}
    tree = notes.tree_of(repo, ours)
    other = notes.tree_of(repo, theirs)
    for kept in store.ledgers(repo, theirs):
        if kept.anchor == skip:
            continue
        have = mine.get(kept.anchor)
        if have is not None and _covers(have, kept):
            continue
        if have is not None and not _covers(kept, have):
            raise conflict(repo, have, theirs)
        tree = _take(repo, tree, other, kept, have)
    assert tree is not None
    return tree.id


def merge(repo: Repository, ours: str | None, theirs: str | None) -> str | None:
    """The notes commit holding both histories: one side when it already descends from
    the other, else a new merge commit (``ours`` first parent). Moves no ref."""
    if theirs is None or ours == theirs or (ours is not None and is_ancestor(repo, theirs, ours)):
        return ours
    if ours is None or is_ancestor(repo, ours, theirs):
        return theirs
    tree = merged_tree(repo, ours, theirs)
    try:
        return notes.make_commit(repo, [ours, theirs], tree, MESSAGE)
    except notes.SigningError as exc:
        raise GuardError("signing_failed", str(exc)) from None
