"""Git notes as an append-only keyed store: one note per key, moved by compare-and-swap.

A note hangs on an *anchor*: a blob whose content is fixed for a key, so the note's
address is derivable from the key alone and never depends on a branch. Writes build the
notes commit themselves (parent = the tip the caller read) and move the notes ref with
:func:`tropo.git.refs.cas_ref`, so a concurrent writer is told who won instead of being
overwritten, and a crash leaves the ref at the last good commit.

Readers accept git's fan-out layout (``ab/cdef...``) as well as the flat one, so notes
that ``git notes`` itself rewrote stay readable.

Anchors are kept reachable: every write also records each annotated anchor blob under
``anchors/<oid>`` in the notes tree. ``anchors`` is not a hex name, so git treats it as
a non-note entry and keeps it through its own rewrites; being in the notes commit's tree,
the anchors survive ``git gc --prune=now`` and ``git notes prune`` and travel with every
push, fetch and clone of the notes ref, in the same atomic update as the note itself.

Notes commits are signed the way ``git commit -S`` signs them (by ``git commit-tree -S``,
so every ``gpg.format`` git knows works) when ``vivary.signNotes`` is true, or when it is
unset and ``commit.gpgsign`` is true: whoever signs their commits signs their notes.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Iterator
from pathlib import Path

import pygit2

from tropo.git import gitcli
from tropo.git.refs import cas_ref
from tropo.git.repo import signature

_HEX = frozenset(string.hexdigits.lower())
ANCHORS = "anchors"


def anchor(repo: pygit2.Repository, content: bytes) -> str:
    """Write the anchor blob for ``content`` (idempotent) and return its hex oid."""
    return str(repo.create_blob(content))


def anchor_id(content: bytes) -> str:
    """The anchor's oid without touching the object store."""
    return str(pygit2.hash(content))


def tree_of(repo: pygit2.Repository, tip: str | None) -> pygit2.Tree | None:
    if tip is None:
        return None
    tree = repo[tip].peel(pygit2.Tree)
    assert isinstance(tree, pygit2.Tree)
    return tree


def blob_data(repo: pygit2.Repository, oid: str) -> bytes:
    blob = repo.get(oid)
    if not isinstance(blob, pygit2.Blob):
        raise ValueError(f"{oid} is not a blob")
    data: bytes = blob.data
    return data


def _locate(tree: pygit2.Tree, target: str) -> list[str] | None:
    """Path of ``target``'s note inside a (possibly fanned-out) notes tree."""
    if target in tree:
        return [target]
    head = target[:2]
    if len(target) > 2 and head in tree:
        sub = _child(tree, head)
        if isinstance(sub, pygit2.Tree):
            rest = _locate(sub, target[2:])
            return None if rest is None else [head, *rest]
    return None


def _child(tree: pygit2.Tree, name: str) -> pygit2.Object:
    entry = tree[name]
    assert isinstance(entry, pygit2.Object)
    return entry


def note_blob(repo: pygit2.Repository, tip: str | None, target: str) -> str | None:
    """The oid of the note blob on ``target`` in the notes commit ``tip``, or None."""
    tree = tree_of(repo, tip)
    if tree is None:
        return None
    path = _locate(tree, target)
    if path is None:
        return None
    obj: pygit2.Object = tree
    for part in path:
        assert isinstance(obj, pygit2.Tree)
        obj = _child(obj, part)
    return str(obj.id) if isinstance(obj, pygit2.Blob) else None


def read(repo: pygit2.Repository, tip: str | None, target: str) -> bytes | None:
    """The note on ``target`` in the notes commit ``tip``, or None."""
    oid = note_blob(repo, tip, target)
    return None if oid is None else blob_data(repo, oid)


def _walk(tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, pygit2.Oid]]:
    for entry in tree:
        name = prefix + (entry.name or "").lower()  # git reads ABCDEF... as a note too
        if not set(name) <= _HEX or len(name) > 40:
            continue  # a non-note entry: git notes keeps these, so do we
        if isinstance(entry, pygit2.Tree):
            yield from _walk(entry, name)
        elif len(name) == 40 and isinstance(entry, pygit2.Blob):
            yield name, entry.id  # a submodule or other object under a note's name is no note


def blobs(repo: pygit2.Repository, tip: str | None) -> dict[str, str]:
    """Every note in ``tip``: annotated object hex -> note blob hex."""
    tree = tree_of(repo, tip)
    return {} if tree is None else {target: str(oid) for target, oid in _walk(tree, "")}


def duplicated(repo: pygit2.Repository, tip: str | None) -> list[str]:
    """Objects ``tip`` holds more than one note for (flat and fanned-out paths at once).
    Readers here take the flat one; ``git notes show`` concatenates them, so a reader of
    git's output and a reader of ours would see different text."""
    tree = tree_of(repo, tip)
    seen: dict[str, int] = {}
    for target, _ in _walk(tree, "") if tree is not None else ():
        seen[target] = seen.get(target, 0) + 1
    return sorted(t for t, n in seen.items() if n > 1)


def kept_anchors(repo: pygit2.Repository, tip: str | None) -> set[str]:
    """The anchors ``tip``'s tree keeps reachable."""
    tree = tree_of(repo, tip)
    if tree is None or ANCHORS not in tree:
        return set()
    sub = _child(tree, ANCHORS)
    return {e.name for e in sub if e.name} if isinstance(sub, pygit2.Tree) else set()


def keep_anchors(repo: pygit2.Repository, tree: pygit2.Oid, tip: str | None, target: str) -> pygit2.Oid:
    """``tree`` with ``anchors/`` holding every annotated blob (older ledgers included)."""
    kept = kept_anchors(repo, tip)
    missing = ({target} | set(blobs(repo, tip))) - kept
    missing = {m for m in missing if isinstance(repo.get(m), pygit2.Blob)}
    if not missing:
        return tree
    root = repo[tree]
    assert isinstance(root, pygit2.Tree)
    old = _child(root, ANCHORS) if ANCHORS in root else None
    builder = repo.TreeBuilder(old) if isinstance(old, pygit2.Tree) else repo.TreeBuilder()
    for oid in sorted(missing):
        builder.insert(oid, pygit2.Oid(hex=oid), pygit2.GIT_FILEMODE_BLOB)
    top = repo.TreeBuilder(root)
    top.insert(ANCHORS, builder.write(), pygit2.GIT_FILEMODE_TREE)
    new: pygit2.Oid = top.write()
    return new


def insert(
    repo: pygit2.Repository,
    tree: pygit2.Tree | None,
    path: list[str],
    oid: pygit2.Oid,
    mode: int = pygit2.GIT_FILEMODE_BLOB,
) -> pygit2.Oid:
    """``tree`` with ``oid`` at ``path``, missing subtrees created: one new tree per
    level, so the cost is the path's depth, not the tree's size."""
    return insert_all(repo, tree, [(path, oid, mode)])


def insert_all(
    repo: pygit2.Repository, tree: pygit2.Tree | None, items: list[tuple[list[str], pygit2.Oid, int]]
) -> pygit2.Oid:
    """``tree`` with each ``(path, oid, mode)`` of ``items`` in place, every tree they
    touch written once. Inserting them one by one would leave each intermediate root
    unreachable: thousands of those make ``git gc --auto`` refuse to run at all."""
    builder = repo.TreeBuilder() if tree is None else repo.TreeBuilder(tree)
    below: dict[str, list[tuple[list[str], pygit2.Oid, int]]] = {}
    for path, oid, mode in items:
        if len(path) == 1:
            builder.insert(path[0], oid, mode)
        else:
            below.setdefault(path[0], []).append((path[1:], oid, mode))
    for name, rest in below.items():
        sub = _child(tree, name) if tree is not None and name in tree else None
        sub = sub if isinstance(sub, pygit2.Tree) else None
        builder.insert(name, insert_all(repo, sub, rest), pygit2.GIT_FILEMODE_TREE)
    new: pygit2.Oid = builder.write()
    return new


def note_path(tree: pygit2.Tree | None, target: str) -> list[str]:
    """Where ``target``'s note is (fan-out kept), or the flat name for a new note."""
    return (_locate(tree, target) if tree is not None else None) or [target]


class SigningError(Exception):
    """git could not sign a notes commit (no key, agent down): nothing was written."""


def signs(repo: pygit2.Repository) -> bool:
    """Whether notes commits are signed here (see the module doc)."""
    config = repo.config
    for name in ("vivary.signNotes", "commit.gpgsign"):
        if name in config:
            try:
                return bool(config.get_bool(name))
            except pygit2.GitError:
                raise SigningError(f"git config {name} is not a boolean") from None
    return False


def _signed_commit(
    repo: pygit2.Repository,
    sig: pygit2.Signature,
    message: str,
    tree: pygit2.Oid,
    parents: list[pygit2.Oid],
) -> pygit2.Oid:
    """A commit made and signed by ``git commit-tree -S``, as ``git commit -S`` makes it."""
    when = (
        f"{sig.time} {'+' if sig.offset >= 0 else '-'}{abs(sig.offset) // 60:02d}{abs(sig.offset) % 60:02d}"
    )
    env = {
        "GIT_AUTHOR_NAME": sig.name,
        "GIT_AUTHOR_EMAIL": sig.email,
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_NAME": sig.name,
        "GIT_COMMITTER_EMAIL": sig.email,
        "GIT_COMMITTER_DATE": when,
    }
    args = ["commit-tree", "-S", str(tree)]
    for parent in parents:
        args += ["-p", str(parent)]
    proc = gitcli.call_bytes(Path(repo.path), *args, stdin=message.encode(), env=env)
    if proc.returncode != 0:
        why = " ".join(proc.stderr.decode("utf-8", "replace").split()) or f"exit {proc.returncode}"
        raise SigningError(f"cannot sign the notes commit: {why}")
    return pygit2.Oid(hex=proc.stdout.decode().strip())


def commit(repo: pygit2.Repository, ref: str, tip: str | None, tree: pygit2.Oid, message: str) -> str:
    """Commit ``tree`` on top of ``tip`` (signed if configured) and move ``ref`` by CAS.

    Raises :class:`tropo.git.refs.RefRaceError` when ``ref`` no longer points at ``tip``,
    :class:`SigningError` when signing is configured and fails (``ref`` is not moved).
    """
    new = make_commit(repo, [] if tip is None else [tip], tree, message)
    cas_ref(repo, ref, pygit2.Oid(hex=new), tip, message.splitlines()[0])
    return new


def make_commit(repo: pygit2.Repository, parents: list[str], tree: pygit2.Oid, message: str) -> str:
    """A notes commit of ``tree`` on ``parents`` (signed if configured), moving no ref: a
    merge of two notes histories is pushed or pinned before any local ref names it."""
    sig = signature(repo)
    oids = [pygit2.Oid(hex=p) for p in parents]
    if signs(repo):
        return str(_signed_commit(repo, sig, message, tree, oids))
    return str(repo.create_commit(None, sig, sig, message, tree, oids))


def write(
    repo: pygit2.Repository,
    ref: str,
    tip: str | None,
    target: str,
    content: bytes,
    message: str,
) -> str:
    """Set the note on ``target`` to ``content`` on top of ``tip`` and move ``ref``.

    The tree also keeps every annotated anchor blob reachable (see the module doc).

    Raises as :func:`commit` does; returns the new notes commit.
    """
    tree = tree_of(repo, tip)
    new_tree = insert(repo, tree, note_path(tree, target), repo.create_blob(content))
    return commit(repo, ref, tip, keep_anchors(repo, new_tree, tip, target), message)


def commits(repo: pygit2.Repository, tip: str | None, hide: Iterable[str] = ()) -> Iterator[pygit2.Commit]:
    """The notes history from ``tip`` back to its root (newest first, parents after
    children), leaving out ``hide`` and everything they reach."""
    if tip is None:
        return
    walker = repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.TOPOLOGICAL)
    for stop in hide:
        walker.hide(pygit2.Oid(hex=stop))
    yield from walker
