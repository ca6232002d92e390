"""Canonical JSON and the digests built on it, byte-compatible with Stratum's guard.

Canonical JSON is Python's ``json.dumps(sort_keys=True, separators=(",", ":"))`` with
ASCII escaping, exactly what Stratum's Python engine wrote; every digest below is a
sha256 hex over it, so a ledger line written by either engine verifies in the other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

ENTRY_PREFIX = '{"entry_digest":"'


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def policy_canonical(
    graph: Mapping[str, Sequence[str]],
    edge_predicates: Mapping[str, Any],
    terminal: Sequence[str],
    stakes: Mapping[str, str],
) -> str:
    """The policy's canonical text: graph lists keep their order, terminal is sorted.
    Its sha256 is the checksum, and it is what a person approves (``strato guard trust``)."""
    return canonical(
        {
            "graph": {k: list(v) for k, v in graph.items()},
            "edge_predicates": edge_predicates,
            "terminal": sorted(terminal),
            "stakes": stakes,
        }
    )


def policy_checksum(
    graph: Mapping[str, Sequence[str]],
    edge_predicates: Mapping[str, Any],
    terminal: Sequence[str],
    stakes: Mapping[str, str],
) -> str:
    """sha256 of :func:`policy_canonical`."""
    return sha256_hex(policy_canonical(graph, edge_predicates, terminal, stakes))


def payload_digest(
    from_state: str,
    to_state: str,
    artifacts: Mapping[str, str],
    modified_files: Sequence[str],
    resolved_by: str,
    policy_checksum: str | None = None,
) -> str:
    """v1 without ``policy_checksum``; v2 (newest Stratum) binds the policy as well."""
    body: dict[str, Any] = {
        "from_state": from_state,
        "to_state": to_state,
        "artifacts": dict(artifacts),
        "modified_files": sorted(modified_files),
        "resolved_by": resolved_by,
    }
    if policy_checksum is not None:
        body["policy_checksum"] = policy_checksum
    return sha256_hex(canonical(body))


def entry_digest(entry: Mapping[str, Any], prev_digest: str) -> str:
    """sha256(canonical(entry without entry_digest) + prev_digest)."""
    body = {k: v for k, v in entry.items() if k != "entry_digest"}
    return sha256_hex(canonical(body) + prev_digest)


def raw_entry_digest(line: str, prev_digest: str) -> str | None:
    """The digest of a ledger line computed from its bytes, as Stratum's TS engine does.

    Lets a line whose numbers a re-serialisation would change (``0.0``) still verify.
    """
    if not line.startswith(ENTRY_PREFIX):
        return None
    rest = line[len(ENTRY_PREFIX) + 64 :]
    if not rest.startswith('",'):
        return None
    return sha256_hex("{" + rest[2:] + prev_digest)


def seal(entry: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The entry with its ``entry_digest`` and the ledger line (canonical + newline)."""
    sealed = dict(entry)
    sealed["entry_digest"] = entry_digest(entry, str(entry["prev_digest"]))
    return sealed, canonical(sealed) + "\n"
