"""Where ledgers live: on ``refs/notes/vivary/guard``, one entry blob per ledger line.

Each resource has a fixed anchor blob derived from its id, so every clone finds the same
ledger at the same address. Line ``n`` (from 0) of its ledger is the blob
``ledgers/<anchor>/aa/bb/cc`` of the notes tree, ``aabbcc`` being ``n`` in six hex
digits: an append writes one blob and four small trees, and the append-only check of a
notes commit is a tree diff (:mod:`strato.guard.history`), so neither grows with the
ledger. The note on the anchor is a fixed marker saying so; a reader older than this
layout finds a note it cannot parse and refuses (fails closed) instead of seeing no
ledger. A ledger in the older layout (the whole ledger as the note) is still read, and
is moved to entry blobs by its next append or by :func:`migrate`.

Beside the lines, ``state/<anchor>`` holds the ledger's running state
(:mod:`strato.guard.running`), rewritten by every append in the same notes commit: a
writer with no local cache checks it against the last line and the policy line and
folds nothing. It is the writer's bytes, so verify checks it and never uses it.

Appends are compare-and-swap on the notes ref: a writer that lost a race re-reads and
re-checks instead of overwriting.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.guard import cache, ledger, running, tail
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from tropo.git import notes, objects
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import (
    FILEMODE_BLOB,
    FILEMODE_TREE,
    Blob,
    GitError,
    Object,
    Oid,
    Repository,
    Tree,
    TreeBuilder,
    hash_blob,
)

REF = "refs/notes/vivary/guard"
ANCHOR_PREFIX = b"vivary-guard-anchor\n"
LEDGERS = "ledgers"
LEVELS = 3  # names of two hex digits per level: 16,777,216 lines per ledger
MAX_LINES = 256**LEVELS
_HEX = frozenset("0123456789abcdef")
MAX_ATTEMPTS = 50
MAX_LOCK_WAITS = 20  # about two seconds in all
GC_EVERY = 256  # appends between two `git gc --auto`, as git's own commands run it


def anchor_content(resource_id: str) -> bytes:
    return ANCHOR_PREFIX + resource_id.encode("utf-8")


def guard_id(resource_id: str) -> str:
    """Stratum's guard id: the first 32 hex of sha256(resource_id)."""
    return hashlib.sha256(resource_id.encode("utf-8")).hexdigest()[:32]


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
            return _line(self.tree, self.anchor, 0)
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
    chain = verified.chain(anchor) if verified is not None else None
    found = Stored(
        anchor,
        name,
        tree=lines,
        repo=repo,
        count=count,
        checked=bool(chain and chain.blob == name),
        running=state,
        running_id=oid,
    )
    if not found.checked and found.problem is None and len(found.parts) != count:
        return Stored(anchor, "", early="the ledger's line names do not count up from 000000")
    return found


def ledgers(repo: Repository, tip: str | None) -> list[Stored]:
    """Every ledger (and every other note) at the notes commit ``tip``, by anchor."""
    tree = notes.tree_of(repo, tip)
    found: dict[str, str | None] = dict(notes.blobs(repo, tip))
    for where in (LEDGERS, running.STATE):
        top = tree[where] if tree is not None and where in tree else None
        if isinstance(top, Tree):
            for item in top:
                found.setdefault(item.name or "", None)
    verified = cache.GuardCache(repo)
    return [stored(repo, tree, anchor, found[anchor], verified) for anchor in sorted(found)]


@dataclass(frozen=True)
class LedgerSnapshot:
    """One resource's ledger as one notes commit has it."""

    tip: str | None
    resource_id: str
    state: ledger.State | None
    raw: bytes = b""  # the older layout's note (only read for it)
    legacy: bool = False  # kept as one note: the next append moves it to entry blobs
    lines: int = 0
    generation: str = ""  # the cached tail state this came from or was recorded as


def parse_ledger(
    anchor: str,
    blob: str,
    data: bytes,
    verified: cache.GuardCache,
    prefix: Callable[[int], str] | None = None,
) -> list[dict[str, Any]]:
    """The entries of the ledger ``blob`` (``data``), digests and links checked for every
    line the cache has not seen for this anchor; raises :class:`ledger.LedgerBreak`.
    ``prefix`` is :meth:`Stored.prefix` for a ledger kept as line blobs."""
    chain = verified.chain(anchor)
    if prefix is not None and chain is not None and chain.blob != blob:
        known = chain.lines if prefix(chain.lines) == chain.blob else 0
    else:
        known = cache.known_lines(chain, blob, data)
    try:
        found = ledger.parse(data.decode("utf-8"), known)
    except UnicodeDecodeError:
        raise ledger.LedgerBreak(1, "ledger is not UTF-8") from None
    if known < len(found):
        verified.save_chain(anchor, cache.Chain(blob, len(data), len(found)))
    return found


def load(repo: Repository, resource_id: str, tip: str | None = None) -> LedgerSnapshot:
    """``resource_id``'s ledger at ``tip`` (default: the notes ref), folded; resumed from
    the cached tail state when the ledger extends it (:mod:`strato.guard.tail`), so the
    cost does not grow with the ledger. ``state.entries`` is read when asked for."""
    tip = gitrefs.read_ref(repo, REF) if tip is None else tip
    anchor = notes.anchor_id(anchor_content(resource_id))
    tree = notes.tree_of(repo, tip)
    note = notes.note_blob(repo, tip, anchor)
    verified = cache.GuardCache(repo)
    lines = lines_tree(tree, anchor)

    def full() -> tuple[Stored, list[dict[str, Any]]]:
        found = stored(repo, tree, anchor, note)
        if found.problem is not None:
            raise GuardError("ledger_corrupt", f"ledger of {resource_id!r}: {found.problem}")
        try:
            return found, parse_ledger(anchor, found.blob, found.data, verified, found.prefix)
        except ledger.LedgerBreak as exc:
            raise exc.as_guard_error(resource_id) from None

    @functools.cache
    def folded() -> LedgerSnapshot:
        found, entries = full()
        if not entries:
            return LedgerSnapshot(tip, resource_id, None)
        try:
            state = ledger.fold(entries, resource_id)
        except ledger.LedgerBreak as exc:
            raise exc.as_guard_error(resource_id) from None
        generation = "" if found.legacy else tail.remember(verified, anchor, state, found.blob)
        return LedgerSnapshot(tip, resource_id, state, found.data, found.legacy, len(entries), generation)

    if lines is not None and note is not None and notes.blob_data(repo, note) == marker(anchor):
        count = line_count(tree, anchor)
        line = functools.partial(_line, lines, anchor)
        try:
            resumed = tail.resume(
                verified,
                anchor,
                resource_id,
                functools.partial(prefix_id, lines),
                count,
                line,
                lambda: full()[1],
            )
        except (KeyError, ValueError):  # a line its names promise is missing or not a blob:
            resumed = None  # no record is true of it, and the full read says what is wrong
        if resumed is not None:
            return LedgerSnapshot(tip, resource_id, resumed[0], lines=count, generation=resumed[1])
        # no local record: the one in the notes tree, checked against the lines it names
        kept = running_blob(tree, anchor)
        state = running.resume(
            kept[1] if kept is not None else None,
            resource_id,
            count,
            line,
            lambda: require(folded()).by_key,
            lambda: require(folded()).entries,
        )
        if state is not None:
            return LedgerSnapshot(tip, resource_id, state, lines=count)
    return folded()


def _line(lines: Tree, anchor: str, n: int) -> bytes:
    """Line ``n`` (from 0) of a ``ledgers/<anchor>`` tree."""
    blob = lines["/".join(entry_path(anchor, n)[2:])]
    if not isinstance(blob, Blob):
        raise ValueError(f"line {n + 1} is not a blob")
    data: bytes = blob.data
    return data


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _lines_tree(repo: Repository, lines: list[bytes]) -> Oid:
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
        new = _with_lines(repo, tree, anchor, [*lines_of(legacy), line]).id
    else:
        new = notes.insert(repo, tree, entry_path(anchor, count), repo.create_blob(line))
    return notes.keep_anchors(repo, _with_state(repo, new, anchor, state), tip, anchor)


def _with_state(repo: Repository, tree: Oid, anchor: str, state: bytes) -> Oid:
    staged = repo[tree]
    assert isinstance(staged, Tree)
    return notes.insert(repo, staged, [running.STATE, anchor], repo.create_blob(state))


def require(snap: LedgerSnapshot) -> ledger.State:
    if snap.state is None:
        raise GuardError("guard_not_found", f"no guard is registered for {snap.resource_id!r}")
    return snap.state


# A step decides, from a fresh snapshot, either a response without writing (a dict)
# or the entry to append and how to answer once it is sealed.
Respond = Callable[[dict[str, Any]], dict[str, Any]]
Step = Callable[[LedgerSnapshot], dict[str, Any] | tuple[dict[str, Any], Respond]]


def commit(
    repo: Repository, resource_id: str, step: Step, read: LedgerSnapshot | None = None
) -> dict[str, Any]:
    """Run ``step`` against the newest ledger and append its entry atomically.

    A lost race re-runs ``step`` on the winner's ledger, so every check it makes (state,
    idempotency, policy) holds at the moment of the write. ``read`` is a snapshot the
    caller already loaded; it is used while the notes ref has not moved since.
    """
    target = notes.anchor(repo, anchor_content(resource_id))
    waits = 0
    for _ in range(MAX_ATTEMPTS):
        tip = gitrefs.read_ref(repo, REF)
        snap = read if read is not None and read.tip == tip else load(repo, resource_id, tip)
        read = None
        decided = step(snap)
        if isinstance(decided, dict):
            return decided
        fields, respond = decided
        head = gitrepo.head_commit(repo)
        prev = snap.state.head if snap.state is not None else ""
        entry, line = seal(
            {
                "ts_ms": int(time.time() * 1000),
                **fields,
                "prev_digest": prev,
                "git_head": str(head.id) if head is not None else None,
            }
        )
        message = f"guard: {resource_id[:80]} {entry['kind']} {entry['outcome']}\n"
        legacy = snap.raw if snap.legacy else b""
        before = running.of_state(snap.state) if snap.state is not None else None
        state = running.render(running.after(before, entry))
        try:
            tree = append_tree(repo, snap.tip, target, line.encode("utf-8"), state, legacy)
            notes.commit(repo, REF, snap.tip, tree, message)
        except notes.SigningError as exc:
            raise GuardError("signing_failed", str(exc)) from None
        except gitrefs.RefRaceError as exc:
            if exc.actual == snap.tip:  # not moved, only locked: give the holder a moment
                waits += 1
                if waits > MAX_LOCK_WAITS:
                    break
                time.sleep(0.01 * waits)
            continue
        except GitError as exc:
            raise GuardError("ledger_busy", f"cannot move {REF}: {exc}") from exc
        # we sealed the new line on a checked chain: the whole new ledger chains correctly
        lines = snap.lines + 1
        written = repo[tree]
        assert isinstance(written, Tree)
        ident = prefix_id(lines_tree(written, target), lines)
        answer = respond(entry)  # before the state below moves past the entry
        verified = cache.GuardCache(repo)
        verified.save_chain(target, cache.Chain(ident, 0, lines))
        if snap.state is not None and snap.generation:
            tail.advance(verified, target, snap.state, entry, ident, snap.generation)
        if lines % GC_EVERY == 0:  # each append leaves a few small loose objects, and reading
            objects.gc_auto(repo)  # tens of thousands of them costs far more than a pack
        return answer
    lock = Path(repo.path) / (REF + ".lock")
    if lock.exists():
        raise GuardError(
            "ledger_busy",
            f"{lock} exists: another writer holds it, or one was killed; "
            "run `strato guard unlock` (it checks the lock is stale and the ledger sound)",
        )
    raise GuardError("ledger_busy", f"{REF} kept moving; try again")


def find_entry(repo: Repository, digest: str) -> dict[str, Any] | None:
    """The entry with ``digest`` in any ledger whose chain holds, or None."""
    if len(digest) != 64:
        return None
    for kept in ledgers(repo, gitrefs.read_ref(repo, REF)):
        if digest.encode() not in kept.data:
            continue
        try:
            found = ledger.parse(kept.data.decode("utf-8"))
        except (UnicodeDecodeError, ledger.LedgerBreak):
            continue
        for entry in found:
            if entry["entry_digest"] == digest:
                return entry
    return None


def _with_lines(
    repo: Repository, tree: Tree | None, anchor: str, lines: list[bytes]
) -> Tree:
    """``tree`` with ``anchor``'s ledger being exactly ``lines`` as entry blobs, and the
    marker as its note."""
    new = notes.insert(repo, tree, [LEDGERS, anchor], _lines_tree(repo, lines), FILEMODE_TREE)
    staged = repo[new]
    assert isinstance(staged, Tree)
    done = repo[notes.insert(repo, staged, notes.note_path(tree, anchor), repo.create_blob(marker(anchor)))]
    assert isinstance(done, Tree)
    return done


def replace_tree(repo: Repository, tip: str | None, anchor: str, data: bytes) -> Oid:
    """The notes tree of ``tip`` with ``anchor``'s ledger being exactly ``data`` and no
    running state (as an older writer leaves it). No check at all: an attacker's tool in
    tests."""
    new = _with_lines(repo, notes.tree_of(repo, tip), anchor, lines_of(data))
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


def _missing_states(repo: Repository, tip: str | None, found: list[Stored]) -> dict[str, bytes]:
    """The running-state blob of each ledger that folds, where it lacks that very blob
    (none yet, an older writer's append since, or bytes that are not true of it)."""
    wanted: dict[str, bytes] = {}
    for kept in found:
        rid = ledger.resource_of(kept.first_line) if kept.problem is None else None
        if rid is None or notes.anchor_id(anchor_content(rid)) != kept.anchor:
            continue
        try:
            state = load(repo, rid, tip).state
        except GuardError:  # a broken ledger: verify names it, and no record is true of it
            continue
        want = running.render(running.of_state(state)) if state is not None else None
        if want is not None and kept.running != want:
            wanted[kept.anchor] = want
    return wanted


def migrate(repo: Repository) -> dict[str, Any]:
    """Move every ledger still kept as one note to entry blobs, and write the running
    state of every ledger that lacks it, in one notes commit.

    Idempotent (nothing left to do writes nothing) and compare-and-swap: when another
    writer moved the ref first, start again from its tip. The bytes of every ledger stay
    the same, so every digest and the append-only history check still hold.
    """
    for _ in range(MAX_ATTEMPTS):
        tip = gitrefs.read_ref(repo, REF)
        found = ledgers(repo, tip)
        moved = [s for s in found if s.problem is None and s.legacy]
        states = _missing_states(repo, tip, found)
        if not moved and not states:
            return {"status": "up_to_date", "ref": REF, "tip": tip, "migrated": 0, "states": 0}
        tree = notes.tree_of(repo, tip)
        for kept in moved:
            tree = _with_lines(repo, tree, kept.anchor, lines_of(kept.data))
        for anchor, data in states.items():
            assert tree is not None
            staged = repo[_with_state(repo, tree.id, anchor, data)]
            assert isinstance(staged, Tree)
            tree = staged
        assert tree is not None
        first = moved[0].anchor if moved else next(iter(states))
        new_tree = notes.keep_anchors(repo, tree.id, tip, first)
        try:
            new_tip = notes.commit(repo, REF, tip, new_tree, "guard: migrate-store\n")
        except notes.SigningError as exc:
            raise GuardError("signing_failed", str(exc)) from None
        except gitrefs.RefRaceError:
            continue
        return {
            "status": "migrated",
            "ref": REF,
            "tip": new_tip,
            "migrated": len(moved),
            "states": len(states),
        }
    raise GuardError("ledger_busy", f"{REF} kept moving; try again")
