"""The notes trees a ledger write leaves: a line appended, a whole ledger laid out as
line blobs, the running-state blob put or taken away.

Each function returns a new tree and moves no ref: the callers (:mod:`strato.guard.append`,
:func:`strato.guard.store.migrate`, and attack tools in tests) commit it.
"""

from __future__ import annotations

from strato.guard import running
from strato.guard.layout import LEDGERS, LEVELS, entry_path, line_count, lines_of, marker
from tropo.git import notes
from tropo.git.types import FILEMODE_BLOB, FILEMODE_TREE, Oid, Repository, Tree, TreeBuilder


def lines_tree_of(repo: Repository, lines: list[bytes]) -> Oid:
    """A whole ``ledgers/<anchor>`` tree for ``lines``, built bottom-up (migration)."""
    level: list[tuple[str, Oid]] = []
    for n, line in enumerate(lines):
        level.append((f"{n:0{2 * LEVELS}x}", repo.create_blob(line)))
    mode = FILEMODE_BLOB
    for depth in range(LEVELS, 0, -1):
        groups: dict[str, TreeBuilder] = {}
        for name, oid in level:
            head, tail = name[: 2 * (depth - 1)], name[2 * (depth - 1) :]
            groups.setdefault(head, repo.TreeBuilder()).insert(tail, oid, mode)
        level = [(head, builder.write()) for head, builder in groups.items()]
        mode = FILEMODE_TREE
    ((_, root),) = level
    return root



def append_tree(
    repo: Repository, tip: str | None, anchor: str, line: bytes, state: bytes, legacy: bytes = b""
) -> Oid:
    """The notes tree of ``tip`` with ``line`` appended to ``anchor``'s ledger and
    ``state`` (:func:`running.render`) as its running state.

    A ledger still in the older layout (``legacy``, its note) moves to entry blobs in the
    same commit; the note becomes the marker."""
    tree = notes.tree_of(repo, tip)
    count = line_count(tree, anchor)
    if count == 0:  # a new ledger, or one still kept as its note
        new = with_state(repo, with_lines(repo, tree, anchor, [*lines_of(legacy), line]).id, anchor, state)
    else:  # the line and the state in one pass: no tree is written that the commit does not keep
        new = notes.insert_all(
            repo,
            tree,
            [
                (entry_path(anchor, count), repo.create_blob(line), FILEMODE_BLOB),
                ([running.STATE, anchor], repo.create_blob(state), FILEMODE_BLOB),
            ],
        )
    return notes.keep_anchors(repo, new, tip, anchor)



def with_state(repo: Repository, tree: Oid, anchor: str, state: bytes) -> Oid:
    staged = repo[tree]
    assert isinstance(staged, Tree)
    return notes.insert(repo, staged, [running.STATE, anchor], repo.create_blob(state))



def with_lines(
    repo: Repository, tree: Tree | None, anchor: str, lines: list[bytes]
) -> Tree:
    """``tree`` with ``anchor``'s ledger being exactly ``lines`` as entry blobs, and the
    marker as its note."""
    new = notes.insert(repo, tree, [LEDGERS, anchor], lines_tree_of(repo, lines), FILEMODE_TREE)
    staged = repo[new]
    assert isinstance(staged, Tree)
    done = repo[notes.insert(repo, staged, notes.note_path(tree, anchor), repo.create_blob(marker(anchor)))]
    assert isinstance(done, Tree)
    return done



def replace_tree(repo: Repository, tip: str | None, anchor: str, data: bytes) -> Oid:
    """The notes tree of ``tip`` with ``anchor``'s ledger being exactly ``data`` and no
    running state (as an older writer leaves it). No check at all: an attacker's tool in
    tests."""
    new = with_lines(repo, notes.tree_of(repo, tip), anchor, lines_of(data))
    return notes.keep_anchors(repo, without_state(repo, new, anchor), tip, anchor)


def without_state(repo: Repository, tree: Tree, anchor: str) -> Oid:
    """``tree`` without ``anchor``'s running-state blob."""
    top = tree[running.STATE] if running.STATE in tree else None  # noqa: SIM401 (no Tree.get)
    if not isinstance(top, Tree) or anchor not in top:
        return tree.id
    states = repo.TreeBuilder(top)
    states.remove(anchor)
    root = repo.TreeBuilder(tree)
    root.insert(running.STATE, states.write(), FILEMODE_TREE)
    return root.write()

