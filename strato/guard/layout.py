"""Where a ledger's lines live in a notes tree: one entry blob per line, read by name.

Line ``n`` (from 0) of a resource's ledger is the blob ``ledgers/<anchor>/aa/bb/cc`` of
the notes tree, ``aabbcc`` being ``n`` in six hex digits: an append writes one blob and
four small trees, and the append-only check of a notes commit is a tree diff
(:mod:`strato.guard.history`), so neither grows with the ledger. The note on the anchor
is a fixed marker saying so; a reader older than this layout finds a note it cannot parse
and refuses (fails closed) instead of seeing no ledger. A ledger in the older layout (the
whole ledger as the note) is still read. Beside the lines, ``state/<anchor>`` holds the
ledger's running state (:mod:`strato.guard.running`).

Pure reading: nothing here writes an object or moves a ref.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from strato.guard import cache, running
from strato.guard.errors import GuardError
from tropo.git import notes
from tropo.git.types import Blob, Object, Oid, Repository, Tree, hash_blob

LEDGERS = "ledgers"
LEVELS = 3  # names of two hex digits per level: 16,777,216 lines per ledger
MAX_LINES = 256**LEVELS
_HEX = frozenset("0123456789abcdef")

def marker(anchor: str) -> bytes:
    """The note on ``anchor`` when its ledger is kept as entry blobs."""
    return (
        f"vivary guard ledger: its lines are the blobs under {LEDGERS}/{anchor}/ "
        "of this notes tree; this note is not a ledger line (upgrade vivary to read it)\n"
    ).encode()


def entry_path(anchor: str, line: int) -> list[str]:
    """Where line ``line`` (from 0) of ``anchor``'s ledger lives in the notes tree."""
    if not 0 <= line < MAX_LINES:
        raise GuardError("ledger_full", f"a ledger holds at most {MAX_LINES} lines")
    digits = f"{line:0{2 * LEVELS}x}"
    return [LEDGERS, anchor, *(digits[i : i + 2] for i in range(0, 2 * LEVELS, 2))]


@dataclass(frozen=True)
class Stored:
    """A ledger as a notes commit keeps it, in either layout; its bytes read on demand.

    ``blob`` names the bytes for the verification cache without reading them: in the
    older layout the note's oid, else :func:`prefix_id` of all its lines. ``problem``
    says why the tree does not hold a readable ledger for ``anchor``; the line names are
    only walked for it when the cache has not seen this very ledger (``checked``).
    """

    anchor: str
    blob: str
    note: bytes = b""  # the older layout's whole ledger
    tree: Tree | None = None  # ``ledgers/<anchor>``
    repo: Repository | None = None  # where the line blobs are read from
    count: int = 0  # lines, as the last name says
    checked: bool = False
    early: str | None = None  # a problem found without walking
    running: bytes | None = None  # ``state/<anchor>`` (b"" if it is not a blob)
    running_id: str = ""  # its oid, for the verification cache

    @functools.cached_property
    def _walked(self) -> tuple[tuple[Oid, ...], str | None]:
        if self.tree is None:
            return (), None
        try:
            return tuple(_entry_blobs(self.tree)), None
        except _Malformed as exc:
            return (), str(exc)

    @property
    def parts(self) -> tuple[Oid, ...]:
        return self._walked[0]

    @functools.cached_property
    def problem(self) -> str | None:
        if self.early is not None or self.tree is None or self.checked:
            return self.early
        return self._walked[1]

    @functools.cached_property
    def data(self) -> bytes:
        if self.repo is None:
            return self.note
        read = self.repo.odb.read  # (type, bytes); every part is a blob by construction
        return b"".join(read(oid)[1] for oid in self.parts)

    @property
    def lines(self) -> int:
        return self.count

    @property
    def legacy(self) -> bool:
        return self.tree is None and bool(self.note)

    @property
    def first_line(self) -> bytes:
        """The register line, to learn which resource the ledger claims."""
        if self.repo is None or self.tree is None:
            return self.note.split(b"\n", 1)[0]
        try:
            return read_line(self.tree, self.anchor, 0)
        except (KeyError, ValueError):
            return b""

    def prefix(self, lines: int) -> str:
        """:func:`prefix_id` of this ledger's first ``lines`` lines ("" in the older layout)."""
        return prefix_id(self.tree, lines) if self.tree is not None else ""


class _Malformed(Exception):
    pass


def _entry_blobs(tree: Tree) -> list[Oid]:
    """The line blobs under ``ledgers/<anchor>``, in order; every odd name and gap refused.

    Reads names only, no blob."""
    found: list[Oid] = []

    def walk(node: Tree, depth: int, prefix: str) -> None:
        for item in node:
            name = item.name or ""
            where = f"{prefix}{name}"
            if len(name) != 2 or not set(name) <= _HEX:
                raise _Malformed(f"unexpected entry {where!r} among the ledger's lines")
            if depth < LEVELS:
                if not isinstance(item, Tree):
                    raise _Malformed(f"{where!r} is not a directory of ledger lines")
                walk(item, depth + 1, where + "/")
            elif not isinstance(item, Blob) or int(where.replace("/", ""), 16) != len(found):
                raise _Malformed(f"ledger line {where!r} is out of sequence (a line is missing)")
            else:
                found.append(item.id)

    walk(tree, 1, "")
    return found


def prefix_id(tree: Tree | None, lines: int) -> str:
    """A name for the first ``lines`` line blobs of a ``ledgers/<anchor>`` tree.

    It hashes, level by level, the oids of the subtrees wholly before the last of those
    lines and the leaf entries up to it: git's content addressing makes two trees agree on
    it exactly when their first ``lines`` lines are the same bytes, and it costs the
    tree's depth times its fan-out, never the ledger's length. "" if there are not that
    many lines."""
    if tree is None or lines <= 0:
        return ""
    digits = f"{lines - 1:0{2 * LEVELS}x}"
    parts = [digits[i : i + 2] for i in range(0, 2 * LEVELS, 2)]
    digest = hashlib.sha1(b"vivary-ledger-prefix\n", usedforsecurity=False)
    node: Object = tree
    for depth, part in enumerate(parts, 1):
        if not isinstance(node, Tree) or part not in node:
            return ""
        for item in node:
            name = item.name or ""
            if name > part or (name == part and depth < LEVELS):
                break
            digest.update(f"{depth} {name} {item.id}\n".encode())
        node = node[part]
    return digest.hexdigest()


def lines_tree(tree: Tree | None, anchor: str) -> Tree | None:
    """``ledgers/<anchor>`` of a notes tree, if there is one."""
    if tree is None or LEDGERS not in tree:
        return None
    top = tree[LEDGERS]
    if not isinstance(top, Tree) or anchor not in top:
        return None
    sub = top[anchor]
    return sub if isinstance(sub, Tree) else None


def running_blob(tree: Tree | None, anchor: str) -> tuple[str, bytes] | None:
    """``state/<anchor>`` of a notes tree (its oid and bytes; b"" if it is not a blob)."""
    top = tree[running.STATE] if tree is not None and running.STATE in tree else None
    if not isinstance(top, Tree) or anchor not in top:
        return None
    item = top[anchor]
    return str(item.id), (item.data if isinstance(item, Blob) else b"")


def line_count(tree: Tree | None, anchor: str) -> int:
    """How many lines ``anchor``'s ledger has as entry blobs: the last name, plus one.

    Read down the last name of each level, so it costs the depth, not the ledger."""
    node: Object | None = lines_tree(tree, anchor)
    digits = ""
    for _ in range(LEVELS):
        if not isinstance(node, Tree) or len(node) == 0:
            return 0
        node = node[len(node) - 1]
        digits += node.name or ""
    try:
        return int(digits, 16) + 1
    except ValueError:
        return 0


def stored(
    repo: Repository,
    tree: Tree | None,
    anchor: str,
    note: str | None,
    verified: cache.GuardCache | None = None,
) -> Stored:
    """``anchor``'s ledger in a notes tree whose note on it is ``note`` (a blob oid).

    With ``verified``, a ledger the cache recorded as checked under this very name is not
    walked again (a prefix id of all the lines fixes every name and blob)."""
    text = notes.blob_data(repo, note) if note is not None else None
    lines = lines_tree(tree, anchor)
    oid, state = running_blob(tree, anchor) or ("", None)
    if lines is None:
        if text is None and state is not None:
            return Stored(anchor, "", early=f"a running-state blob under {running.STATE}/ for no ledger")
        data = text or b""
        return Stored(anchor, hash_blob(data), note=data, running=state, running_id=oid)
    if text != marker(anchor):
        what = "no note" if text is None else "a note that is a ledger too"
        return Stored(anchor, "", early=f"ledger lines under {LEDGERS}/ but {what}")
    count = line_count(tree, anchor)
    name = prefix_id(lines, count)
    record = verified.record(anchor) if verified is not None else None
    found = Stored(
        anchor,
        name,
        tree=lines,
        repo=repo,
        count=count,
        checked=bool(record and record.blob == name),
        running=state,
        running_id=oid,
    )
    if not found.checked and found.problem is None and len(found.parts) != count:
        return Stored(anchor, "", early="the ledger's line names do not count up from 000000")
    return found




def read_line(lines: Tree, anchor: str, n: int) -> bytes:
    """Line ``n`` (from 0) of a ``ledgers/<anchor>`` tree."""
    blob = lines["/".join(entry_path(anchor, n)[2:])]
    if not isinstance(blob, Blob):
        raise ValueError(f"line {n + 1} is not a blob")
    data: bytes = blob.data
    return data


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)
