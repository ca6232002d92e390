"""What ``verify`` accepted of a ledger, so a longer ledger is checked from there.

Every append after a verify moves the cache's record of a ledger
(:mod:`strato.guard.cache`) past lines no verify has judged, so its verdict no longer
names the whole ledger; without this file the next verify (and so every transition,
which verifies its ledger first) re-derived every line again, and growing a ledger
cost the square of its length.

Per anchor, ``accepted/<anchor>.json`` in the cache folder records the first ``lines``
lines verify accepted by their prefix id (:func:`strato.guard.layout.prefix_id`: equal
exactly when those lines are the same bytes), the trust root each signed one was judged
by (the commit and its ``allowed_signers`` blob), and what verify's own fold of them came
to. A ledger that starts with exactly those lines, under the same trust roots, is checked
from there: every later line's digest, link, re-derivation, signature and step, from the
state the record names (its policy read again from its own line and checked against the
record). Nothing a writer recorded is used. As trusted as the rest of the cache: a
missing, garbage or other-version file is a miss.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strato.guard import cache, ledger, running
from strato.guard.running import Running
from tropo.fs.atomic import write_atomic

VERSION = 1
_KEYS = frozenset({"v", "blob", "lines", "size", "signers", "fold"})


@dataclass(frozen=True)
class Accepted:
    blob: str  # prefix id of the first ``lines`` lines
    lines: int
    size: int  # their bytes
    signers: tuple[cache.SignerKey, ...]  # one per signed line, as verify judged it
    fold: Running  # what verify's fold of those lines came to


def _path(known: cache.GuardCache, anchor: str) -> Path:
    return known.root / "accepted" / f"{anchor}.json"


def read(known: cache.GuardCache, anchor: str) -> Accepted | None:
    try:
        obj = json.loads(_path(known, anchor).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or set(obj) != _KEYS or obj["v"] != VERSION:
        return None
    blob, lines, size, fold = obj["blob"], obj["lines"], obj["size"], obj["fold"]
    folded = running.parse(fold.encode()) if isinstance(fold, str) else None
    signers = cache.signer_keys(obj["signers"])
    if not (isinstance(blob, str) and blob and signers is not None and isinstance(size, int)):
        return None
    if folded is None or folded.lines != lines:
        return None
    return Accepted(blob, lines, size, signers, folded)


def write(known: cache.GuardCache, anchor: str, accepted: Accepted) -> None:
    body = {
        "v": VERSION,
        "blob": accepted.blob,
        "lines": accepted.lines,
        "size": accepted.size,
        "signers": [list(k) for k in accepted.signers],
        "fold": running.render(accepted.fold).decode(),
    }
    with contextlib.suppress(OSError):  # a record that cannot be written is a miss later
        write_atomic(_path(known, anchor), json.dumps(body, sort_keys=True).encode(), fsync=False)


def state_at(accepted: Accepted, resource_id: str, line: Callable[[int], bytes]) -> ledger.State:
    """The state after the accepted lines, its policy read from its own line (``line(i)``
    reads line ``i`` from 0); raises :class:`ledger.LedgerBreak` (or ValueError, KeyError)
    unless that line holds the policy the record names. Its entries are not read: a
    caller asks for its ``length``."""
    fold = accepted.fold
    entry = ledger.loads(line(fold.policy_line).decode("utf-8"))
    if not isinstance(entry, dict):
        raise ValueError("the policy line is not an entry")
    return cache.state_of(resource_id, fold, entry, {}, list)
