"""A claim's lease, and when a claim has expired: judged by commit order and the remote's
acceptance, never by comparing one machine's wall clock with another's.

A claim ref (``refs/vivary/runs/<id>/claims/<key>``) is a chain of commits whose tree
holds ``lease.json``. Its holder keeps it alive by pushing a renewal, a new commit on
the tip, which the remote takes only while the tip is still the holder's. An observer
therefore needs no clock but its own: a claim is expired for it once it has seen the
ref at the *same commit* for the lease's ``ttlS`` seconds of its own monotonic time.
Anyone who may push writes these bytes, so every field is read defensively: a lease that
does not parse is read as held, with the default ttl, and expires like any other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TTL_S = 30.0
MIN_TTL_S, MAX_TTL_S = 1.0, 3600.0
HELD, DONE, RELEASED = "held", "done", "released"
MAX_LEASE_BYTES = 16 * 1024


def claim_key(path: str, generation: int) -> str:
    """The claim ref's last components for one hand-out of a step: its path with ``/``
    written ``.`` (step ids never hold one) and its generation, so a retry, a revise
    round or a revert is a claim of its own."""
    return f"{path.replace('/', '.')}.g{generation}"


def fanout_key(path: str, st: dict[str, Any]) -> str:
    """The claims' prefix for one start of a fanout: its path, epoch and how many times
    it ran before (a fanout run again is claimed afresh)."""
    return f"{path.replace('/', '.')}.e{st['epoch']}.a{len(st.get('attempts', []))}"


def claim_ref(run_id: str, key: str) -> str:
    return f"refs/vivary/runs/{run_id}/claims/{key}"


def claims_prefix(run_id: str) -> str:
    return f"refs/vivary/runs/{run_id}/claims/"


@dataclass(frozen=True)
class Lease:
    """What one claim commit says; only ``state`` and ``ttl_s`` are ever acted on."""

    worker: str
    machine: str
    state: str
    ttl_s: float
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def holder(self) -> dict[str, str]:
        return {"worker": self.worker, "machine": self.machine}


def parse(raw: bytes | None) -> Lease:
    """A lease from bytes anyone could have pushed: anything that is not a well-formed
    lease is a held claim of nobody known, with the default ttl."""
    doc: Any = None
    if raw is not None and len(raw) <= MAX_LEASE_BYTES:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
    if not isinstance(doc, dict):
        return Lease("?", "?", HELD, DEFAULT_TTL_S)
    state = str(doc["state"]) if doc.get("state") in (HELD, DONE, RELEASED) else HELD
    return Lease(_text(doc.get("worker")), _text(doc.get("machine")), state, clamp_ttl(doc.get("ttlS")), doc)


def _text(value: Any) -> str:
    return value[:200] if isinstance(value, str) and value else "?"


def clamp_ttl(value: Any) -> float:
    """A ttl every reader agrees on: a number of seconds from 1 to 3600, else the default."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return DEFAULT_TTL_S
    return float(min(MAX_TTL_S, max(MIN_TTL_S, value)))


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, indent=1).encode()


class Watch:
    """When this observer first saw each claim ref at its current commit, on its own
    monotonic clock: the only time a takeover is judged by."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seen: dict[str, tuple[str, float]] = {}

    def observe(self, ref: str, commit: str) -> float:
        """Note that ``ref`` is at ``commit`` now; how long it has stood there as far as
        this observer knows (0 the first time it sees that commit)."""
        now = self.clock()
        seen = self._seen.get(ref)
        if seen is None or seen[0] != commit:
            self._seen[ref] = (commit, now)
            return 0.0
        return now - seen[1]

    def expired(self, ref: str, commit: str, lease: Lease) -> bool:
        """A held claim whose holder's renewals stopped landing for its ttl."""
        return lease.state == HELD and self.observe(ref, commit) >= lease.ttl_s
