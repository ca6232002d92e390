"""What the guard already verified, keyed by object id under ``.git/vivary/guard/``.

Disposable: a missing, corrupt or other-version file is a miss and gets rebuilt, and a
miss only costs the full check. Every fact is keyed so a hit repeats exactly what a
fresh check concluded about the same bytes under the same trust:

- a *chain* record per anchor: the newest ledger blob whose every digest and link held
  (oid, byte size, line count). The same oid is the same bytes; a longer blob whose first
  ``size`` bytes hash to that oid (an append) only needs its new lines checked.
- with it, what ``verify`` accepted for that blob: for every signed entry, the commit
  its trust root was read from and that commit's ``allowed_signers`` blob, and the
  running-state blob found true of it. A hit needs the same blob, the same signers blobs
  and the same running-state blob now (a rewritten HEAD, signers file or state misses).
- the notes commits whose history was checked append-only: a commit oid fixes its whole
  history, so the walk stops at the first one already checked; and, for the newest tip
  verified, the set of commits it descends from (the rewind check's answer).

The cache is as trusted as the rest of ``.git``: whoever can write there can also replace
objects and hooks, so it guards against staleness and corruption, not against forgery.
"""

from __future__ import annotations

import contextlib
import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tropo.fs.atomic import write_atomic
from tropo.git import repo as gitrepo
from tropo.git.types import Repository, hash_blob

VERSION = 1  # bump when what a check accepts changes
_HEX = frozenset(string.hexdigits.lower())

# (git_head the entry names, or None; allowed_signers blob that trust resolved to)
SignerKey = tuple[str | None, str]


@dataclass(frozen=True)
class Chain:
    blob: str
    size: int
    lines: int
    verified: tuple[SignerKey, ...] | None = None  # set once verify accepted ``blob``
    running: str = ""  # the running-state blob verify found true of ``blob`` ("" none)

    def to_json(self) -> dict[str, Any]:
        return {
            "v": VERSION,
            "blob": self.blob,
            "size": self.size,
            "lines": self.lines,
            "verified": None if self.verified is None else [list(k) for k in self.verified],
            "running": self.running,
        }


def known_lines(chain: Chain | None, blob: str, data: bytes) -> int:
    """How many leading lines of ``data`` (the blob ``blob``) are known to chain correctly."""
    if chain is None:
        return 0
    if chain.blob == blob:
        return chain.lines
    size = chain.size
    if (
        0 < size < len(data)
        and data[size - 1 : size] == b"\n"
        and data.count(b"\n", 0, size) == chain.lines
        and hash_blob(data[:size]) == chain.blob
    ):
        return chain.lines
    return 0


def _chain(obj: object) -> Chain | None:
    if not isinstance(obj, dict) or obj.get("v") != VERSION:
        return None
    blob, size, lines, verified = (obj.get(k) for k in ("blob", "size", "lines", "verified"))
    state = obj.get("running", "")
    if not (_is_oid(blob) and isinstance(size, int) and isinstance(lines, int) and lines > 0):
        return None
    if not (state == "" or _is_oid(state)):
        return None
    assert isinstance(blob, str) and isinstance(state, str)
    keys: tuple[SignerKey, ...] | None = None
    if isinstance(verified, list):
        if not all(
            isinstance(k, list)
            and len(k) == 2
            and (k[0] is None or isinstance(k[0], str))
            and isinstance(k[1], str)
            for k in verified
        ):
            return None
        keys = tuple((k[0], k[1]) for k in verified)
    elif verified is not None:
        return None
    return Chain(blob, size, lines, keys, state)


def _is_oid(value: object) -> bool:
    return isinstance(value, str) and len(value) == 40 and set(value) <= _HEX


class GuardCache:
    """The cache files of one repository; every read tolerates garbage."""

    def __init__(self, repo: Repository) -> None:
        self.root = gitrepo.private_dir(repo) / "guard" / f"cache.v{VERSION}"

    def _chain_path(self, anchor: str) -> Path:
        return self.root / "chains" / f"{anchor}.json"

    def chain(self, anchor: str) -> Chain | None:
        try:
            return _chain(json.loads(self._chain_path(anchor).read_bytes()))
        except (OSError, ValueError, RecursionError):
            return None

    def save_chain(self, anchor: str, chain: Chain) -> None:
        with contextlib.suppress(OSError):  # a cache that cannot be written is a miss later
            data = json.dumps(chain.to_json(), sort_keys=True).encode()
            write_atomic(self._chain_path(anchor), data, fsync=False)

    @property
    def _history_path(self) -> Path:
        return self.root / "history"

    def checked_history(self) -> set[str]:
        """Notes commits whose history was checked append-only."""
        try:
            text = self._history_path.read_text("ascii", errors="replace")
        except OSError:
            return set()
        # garbage lines are harmless here: only real oids are ever looked up
        return set(text.split("\n")) - {""}

    @property
    def _reach_path(self) -> Path:
        return self.root / "reach"

    def reached(self, tip: str) -> set[str] | None:
        """Every notes commit ``tip`` descends from, if recorded for this very tip."""
        try:
            first, _, rest = self._reach_path.read_text("ascii", errors="replace").partition("\n")
        except OSError:
            return None
        return set(rest.split("\n")) - {""} if first == tip else None

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
