"""Signed upgrade descriptors: reviewed, named policy changes a person installed.

The file and its detached signature are read from HEAD (``.vivary/guard/upgrades.json``
and ``.json.sig``), never from a path the caller names: locating the artifact must not
be a way to author it. Every failure is ``upgrade_descriptor_unavailable``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from strato.guard.errors import GuardError

PATH = ".vivary/guard/upgrades.json"
SIG_PATH = PATH + ".sig"
_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_POLICY_KEYS = {"graph", "edge_predicates", "terminal", "stakes"}


@dataclass(frozen=True)
class Descriptor:
    id: str
    rationale: str
    from_checksum: str
    to_policy: dict[str, Any]


def _unavailable(message: str) -> GuardError:
    return GuardError("upgrade_descriptor_unavailable", message)


def parse(data: bytes) -> dict[str, Descriptor]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # also bad UTF-8, numbers of 4,300+ digits
        raise _unavailable(f"{PATH} is not JSON: {str(exc)[:200]}") from exc
    if not isinstance(doc, dict) or set(doc) != {"version", "descriptors"} or doc["version"] != 1:
        raise _unavailable(f"{PATH} must be exactly {{version: 1, descriptors: [...]}}")
    found: dict[str, Descriptor] = {}
    items = doc["descriptors"]
    if not isinstance(items, list):
        raise _unavailable(f"{PATH}: descriptors must be a list")
    for item in items:
        if not isinstance(item, dict) or set(item) != {
            "id",
            "rationale",
            "from_checksum",
            "to_policy",
        }:
            raise _unavailable(
                f"{PATH}: each descriptor has exactly id, rationale, from_checksum, to_policy"
            )
        ident, why, src, to = (
            item["id"],
            item["rationale"],
            item["from_checksum"],
            item["to_policy"],
        )
        if not isinstance(ident, str) or not _ID.match(ident) or ident in found:
            raise _unavailable(f"{PATH}: descriptor id {ident!r} is invalid or repeated")
        if not isinstance(why, str) or not why.strip():
            raise _unavailable(f"{PATH}: descriptor {ident} needs a rationale")
        if not isinstance(src, str) or not _HEX64.match(src):
            raise _unavailable(f"{PATH}: descriptor {ident} from_checksum must be 64 lowercase hex")
        if not isinstance(to, dict) or set(to) != _POLICY_KEYS:
            raise _unavailable(
                f"{PATH}: descriptor {ident} to_policy has exactly {sorted(_POLICY_KEYS)}"
            )
        found[ident] = Descriptor(ident, why, src, to)
    return found
