"""What the guard remembers of a ledger, so neither a write nor verify folds it again.

One mechanism with one key. Per anchor, ``.git/vivary/guard/cache.v2/ledgers/<anchor>.json``
records a :class:`Remembered` ledger: the name of its first ``lines`` lines (``blob``:
:func:`strato.guard.layout.prefix_id`, which git's content addressing makes equal
exactly when those lines are the same bytes; the note's oid in the older layout), and
what is known of those very lines:

- their chain holds (every digest and link): a longer ledger whose first ``lines`` lines
  have that name only needs its new lines checked (:func:`known_lines`);
- what they fold to (``fold``, in the running-state format of :mod:`strato.guard.running`)
  with the first entry of each idempotency key under ``keys/<anchor>/<generation>/``: a
  writer resumes there and applies only the lines appended since (:func:`resume`);
- what ``verify`` accepted of them: for every signed entry, the commit its trust root was
  read from and that commit's ``allowed_signers`` blob, and the running-state blob found
  true of them. A hit needs the same lines, signers blobs and state blob now.

A writer with no such record may take the copy of ``fold`` kept in the notes tree
(``state/<anchor>``), but only after checking it against the lines it names
(:func:`from_running`): whoever writes the notes chooses those bytes.

Beside the ledgers: the notes commits whose history was checked append-only (a commit oid
fixes its whole history), and, for the newest tip verified, the commits it descends from.

Disposable: a missing, corrupt or other-version file is a miss and costs only the full
read. It is as trusted as the rest of ``.git``: whoever can write there can also replace
objects and hooks, so it guards against staleness and corruption, not against forgery.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import shutil
import string
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from strato.guard import derive, ledger, running
from strato.guard.errors import GuardError
from strato.guard.running import Running
from tropo.fs.atomic import write_atomic
from tropo.git import repo as gitrepo
from tropo.git.types import Repository, hash_blob

VERSION = 2  # bump when what a record promises changes
_HEX = frozenset(string.hexdigits.lower())

# (git_head the entry names, or None; allowed_signers blob that trust resolved to)
SignerKey = tuple[str | None, str]
Keyed = MutableMapping[str, dict[str, Any]]


@dataclass(frozen=True)
class Remembered:
    blob: str  # the name of the first ``lines`` lines
    size: int  # their bytes, when known (the older layout's append check needs it)
    lines: int
    verified: tuple[SignerKey, ...] | None = None  # set once verify accepted ``blob``
    running: str = ""  # the running-state blob verify found true of ``blob`` ("" none)
    fold: Running | None = None  # what the lines fold to
    generation: str = ""  # the directory of ``fold``'s idempotency keys

    def to_json(self) -> dict[str, Any]:
        return {
            "v": VERSION,
            "blob": self.blob,
            "size": self.size,
            "lines": self.lines,
            "verified": None if self.verified is None else [list(k) for k in self.verified],
            "running": self.running,
            "fold": None if self.fold is None else running.render(self.fold).decode(),
            "generation": self.generation,
        }


def known_lines(record: Remembered | None, blob: str, data: bytes) -> int:
    """How many leading lines of ``data`` (the blob ``blob``) are known to chain correctly."""
    if record is None:
        return 0
    if record.blob == blob:
        return record.lines
    size = record.size
    if (
        0 < size < len(data)
        and data[size - 1 : size] == b"\n"
        and data.count(b"\n", 0, size) == record.lines
        and hash_blob(data[:size]) == record.blob
    ):
        return record.lines
    return 0


def _remembered(obj: object) -> Remembered | None:
    if not isinstance(obj, dict) or obj.get("v") != VERSION or len(obj) != 8:
        return None
    blob, size, lines, verified = (obj.get(k) for k in ("blob", "size", "lines", "verified"))
    state, fold, generation = obj.get("running"), obj.get("fold"), obj.get("generation")
    if not (_is_oid(blob) and _count(size) and _count(lines) and lines):
        return None
    if not ((state == "" or _is_oid(state)) and isinstance(generation, str)):
        return None
    assert isinstance(blob, str) and isinstance(state, str) and isinstance(size, int)
    folded = running.parse(fold.encode()) if isinstance(fold, str) else None
    if (fold is not None and (folded is None or folded.lines != lines)) or (generation and folded is None):
        return None
    keys = signer_keys(verified)
    if keys is None and verified is not None:
        return None
    return Remembered(blob, size, lines, keys, state, folded, generation)


def signer_keys(obj: object) -> tuple[SignerKey, ...] | None:
    """The signer keys a record's JSON list holds, or None if it is not one."""
    if not isinstance(obj, list) or not all(
        isinstance(k, list)
        and len(k) == 2
        and (k[0] is None or isinstance(k[0], str))
        and isinstance(k[1], str)
        for k in obj
    ):
        return None
    return tuple((k[0], k[1]) for k in obj)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_oid(value: object) -> bool:
    return isinstance(value, str) and len(value) == 40 and set(value) <= _HEX


class Keys(MutableMapping[str, dict[str, Any]]):
    """The first entry of each idempotency key, one cache file per key, read on demand."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir

    def _path(self, key: str) -> Path:
        return self.dir / hashlib.sha256(key.encode("utf-8")).hexdigest()

    def __getitem__(self, key: str) -> dict[str, Any]:
        try:
            entry = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError, RecursionError):
            raise KeyError(key) from None
        if not isinstance(entry, dict) or entry.get("idempotency_key") != key:
            raise KeyError(key)
        return entry

    def __setitem__(self, key: str, entry: dict[str, Any]) -> None:
        """Only ever called for an entry already in git (a committed line). Raises
        OSError: a key that could not be recorded must not look absent later."""
        write_atomic(self._path(key), json.dumps(entry, sort_keys=True).encode(), fsync=False)

    def __delitem__(self, key: str) -> None:
        raise TypeError("a ledger forgets no idempotency key")

    def __iter__(self) -> Iterator[str]:
        raise TypeError("the key index is looked up, not listed")

    def __len__(self) -> int:
        raise TypeError("the key index is looked up, not listed")


class Deferred(MutableMapping[str, dict[str, Any]]):
    """Idempotency keys a state taken from the notes does not hold: the first use reads
    the ledger."""

    def __init__(self, load: Callable[[], Keyed]) -> None:
        self._load = functools.cache(load)

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._load()[key]

    def __setitem__(self, key: str, entry: dict[str, Any]) -> None:
        self._load()[key] = entry

    def __delitem__(self, key: str) -> None:
        raise TypeError("a ledger forgets no idempotency key")

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


class GuardCache:
    """The cache files of one repository; every read tolerates garbage."""

    def __init__(self, repo: Repository) -> None:
        self.root = gitrepo.private_dir(repo) / "guard" / f"cache.v{VERSION}"

    def _path(self, anchor: str) -> Path:
        return self.root / "ledgers" / f"{anchor}.json"

    def record(self, anchor: str) -> Remembered | None:
        try:
            return _remembered(json.loads(self._path(anchor).read_bytes()))
        except (OSError, ValueError, RecursionError):
            return None

    def save(self, anchor: str, record: Remembered) -> None:
        with contextlib.suppress(OSError):  # a cache that cannot be written is a miss later
            data = json.dumps(record.to_json(), sort_keys=True).encode()
            write_atomic(self._path(anchor), data, fsync=False)

    def forget(self, anchor: str) -> None:
        """Drop the record, so the next load folds the whole ledger again."""
        with contextlib.suppress(OSError):
            self._path(anchor).unlink(missing_ok=True)

    def keys(self, anchor: str, generation: str) -> Keys:
        return Keys(self.root / "keys" / anchor / generation)

    def accepted(self, anchor: str, record: Remembered) -> None:
        """Record what verify accepted, keeping the fold already known of the same lines."""
        found = self.record(anchor)
        if found is not None and found.blob == record.blob:
            record = replace(record, fold=found.fold, generation=found.generation)
        self.save(anchor, record)

    def remember(self, anchor: str, blob: str, size: int, state: ledger.State) -> str:
        """Record a fully folded state as a new generation of keys; returns it ("" if the
        keys could not be recorded). The old record goes first, so none is left naming key
        files that are gone."""
        found = self.record(anchor)
        self.forget(anchor)
        keys_root = self.root / "keys" / anchor
        with contextlib.suppress(OSError):
            for old in keys_root.iterdir():
                shutil.rmtree(old, ignore_errors=True)
        kept = found if found is not None and found.blob == blob else Remembered(blob, size, state.length)
        index = self.keys(anchor, blob)
        try:
            for key, entry in state.by_key.items():
                index[key] = entry
        except OSError:  # no fold without its keys: only that the lines chain
            self.save(anchor, replace(kept, fold=None, generation=""))
            return ""
        self.save(anchor, replace(kept, fold=running.of_state(state), generation=blob))
        return blob

    def advance(
        self, anchor: str, state: ledger.State | None, entry: dict[str, Any], blob: str, generation: str
    ) -> None:
        """Move the record past ``entry``, which we just appended to the lines ``state``
        folds (``blob`` names the lines with it). Without a generation to move (the state
        was not resumed from one, nor folded into one), only the chain is recorded."""
        lines = 1 if state is None else state.length + 1
        found = self.record(anchor) if state is not None and not generation else None
        if state is not None and found is not None and found.fold == running.of_state(state):
            generation = found.generation  # folded while deciding (a key was looked up)
        if state is None or not generation:
            self.save(anchor, Remembered(blob, 0, lines))
            return
        key = entry["idempotency_key"]
        fresh = key is not None and key not in state.by_key
        try:
            state.apply(entry, lines)
            if fresh and not isinstance(state.by_key, Keys):
                self.keys(anchor, generation)[key] = entry
        except (OSError, ledger.LedgerBreak):
            self.save(anchor, Remembered(blob, 0, lines))
            return
        self.save(anchor, Remembered(blob, 0, lines, fold=running.of_state(state), generation=generation))

    def checked_history(self) -> set[str]:
        """Notes commits whose history was checked append-only."""
        try:
            text = self._history_path.read_text("ascii", errors="replace")
        except OSError:
            return set()
        # garbage lines are harmless here: only real oids are ever looked up
        return set(text.split("\n")) - {""}

    @property
    def _history_path(self) -> Path:
        return self.root / "history"

    @property
    def _reach_path(self) -> Path:
        return self.root / "reach"

    def reached(self, tip: str) -> set[str] | None:
        """Every notes commit ``tip`` descends from, if recorded for this very tip."""
        last = self.last_reached()
        return last[1] if last is not None and last[0] == tip else None

    def last_reached(self) -> tuple[str, set[str]] | None:
        """The tip whose ancestors are recorded, and those ancestors."""
        try:
            first, _, rest = self._reach_path.read_text("ascii", errors="replace").partition("\n")
        except OSError:
            return None
        return first, set(rest.split("\n")) - {""}

    def save_reached(self, tip: str, commits: set[str]) -> None:
        """Record ``tip``'s ancestors (one tip at a time: a commit fixes its history)."""
        with contextlib.suppress(OSError):
            data = "".join(f"{c}\n" for c in [tip, *sorted(commits)]).encode("ascii")
            write_atomic(self._reach_path, data, fsync=False)

    def add_history(self, commits: list[str]) -> None:
        if not commits:
            return
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)
            with self._history_path.open("a", encoding="ascii") as fh:
                fh.write("".join(f"{c}\n" for c in commits))


def _entry(text: bytes) -> dict[str, Any]:
    """One ledger line, its own digest checked (its link to the line before is not)."""
    decoded = text.decode("utf-8")
    first = ledger.loads(decoded)
    prev = first.get("prev_digest") if isinstance(first, dict) else None
    (entry,) = ledger.parse(decoded, 0, prev if isinstance(prev, str) else "")
    return entry


def state_of(
    resource_id: str,
    fold: Running,
    at: dict[str, Any],
    by_key: Keyed,
    entries: Callable[[], list[dict[str, Any]]],
) -> ledger.State:
    """The state ``fold`` names, its policy read from ``at`` (the policy line); raises
    :class:`ledger.LedgerBreak` unless that line holds the policy ``fold`` names."""
    pol, version = ledger.policy_of(at, fold.policy_line + 1)
    if (version, pol.checksum) != (fold.graph_version, fold.checksum):
        raise ledger.LedgerBreak(fold.policy_line + 1, "not the policy the record names")
    return ledger.State(
        resource_id,
        pol,
        version,
        fold.current_state,
        fold.head,
        by_key=by_key,
        length=fold.lines,
        read_entries=entries,
        policy_line=fold.policy_line,
    )


def from_running(
    data: bytes | None,
    resource_id: str,
    count: int,
    line: Callable[[int], bytes],
    keys: Callable[[], Keyed],
    entries: Callable[[], list[dict[str, Any]]],
) -> ledger.State | None:
    """The state after the ``count`` lines of a ledger (``line(i)`` reads line ``i``)
    from its running-state blob ``data`` in the notes tree, if that record is consistent
    with the lines it names: the last one is sound, has that digest, leaves that state
    and is a legal step under the named policy (a policy change stays where it is), and
    the named line holds that policy. None on any doubt. ``keys`` and ``entries`` read
    the whole ledger, only if asked for."""
    record = running.parse(data) if data is not None else None
    if record is None or record.lines != count:
        return None
    try:
        last = _entry(line(count - 1))
        at = last if record.policy_line == count - 1 else _entry(line(record.policy_line))
        first = at if record.policy_line == 0 else _entry(line(0))
        policy_kind = "register" if record.policy_line == 0 else "graph_version"
        moved = last["kind"] == "register" or last["outcome"] in ledger.MOVES
        if (
            at["kind"] != policy_kind
            or (last["kind"] in ("register", "graph_version")) != (record.policy_line == count - 1)
            or first["kind"] != "register"
            or first["verdict"].get("resource_id") != resource_id
            or last["entry_digest"] != record.head
            or (last["to_state"] if moved else last["from_state"]) != record.current_state
            or (last["kind"] == "graph_version" and last["to_state"] != last["from_state"])
        ):
            return None
        state = state_of(resource_id, record, at, Deferred(keys), entries)
        if last["kind"] in ("transition", "deviation"):
            pol, version = state.policy, state.graph_version
            before = ledger.State(resource_id, pol, version, last["from_state"], last["prev_digest"])
            derive.check(last, before)  # a legal step under the policy the record names
    except (ledger.LedgerBreak, GuardError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return state


def resume(
    known: GuardCache,
    anchor: str,
    resource_id: str,
    count: int,
    prefix: Callable[[int], str],
    line: Callable[[int], bytes],
    kept: bytes | None,
    folded: Callable[[], ledger.State],
    entries: Callable[[], list[dict[str, Any]]],
) -> tuple[ledger.State, str] | None:
    """The state after ``count`` lines without folding them, or None (fold them).

    From the local record when the ledger extends the lines it names (``prefix(n)``
    names the first ``n`` lines; the lines appended since are checked and applied), else
    from the notes tree's running state ``kept``, checked by :func:`from_running`.
    ``folded`` (the full fold) and ``entries`` (the lines read, their chain checked) are
    only called when asked for what a resumed state does not hold. Returns the state and
    its generation ("" for a state from the notes)."""
    record = known.record(anchor)
    fold = record.fold if record is not None else None
    if record is None or fold is None or count < record.lines or prefix(record.lines) != record.blob:
        state = from_running(
            kept, resource_id, count, line, lambda: folded().by_key, lambda: folded().entries
        )
        return None if state is None else (state, "")
    try:
        policy_entry = json.loads(line(fold.policy_line))
        state = state_of(
            resource_id,
            fold,
            policy_entry,
            known.keys(anchor, record.generation),
            entries,
        )
    except (ValueError, KeyError, TypeError, RecursionError, ledger.LedgerBreak):
        return None
    if count > record.lines:
        text = b"".join(line(i) for i in range(record.lines, count))
        try:
            for n, entry in enumerate(ledger.parse(text.decode("utf-8"), 0, fold.head)):
                state.apply(entry, record.lines + n + 1)
        except (ledger.LedgerBreak, UnicodeDecodeError, OSError):
            known.forget(anchor)
            return None  # the full fold says where and why
        grown = running.of_state(state)
        known.save(anchor, Remembered(prefix(count), 0, count, fold=grown, generation=record.generation))
    return state, record.generation
