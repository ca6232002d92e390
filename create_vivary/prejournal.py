"""The marker line adopt --minimal appends to ``.gitignore`` before its journal exists.

The journal lives under ``.vivary/runtime/``, which only the new ``.gitignore`` block
ignores, so ``.gitignore`` is changed first, ending in this line: the plan it belongs
to and what was there before (whether it existed, its digest and size). A crash
between that write and the journal's is recovered from the line alone. The format is
create-vivary 0.4.3's, so either tool recovers the other's.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "# vivary-adopt-prejournal "
PATTERN = re.compile(rb"# vivary-adopt-prejournal plan=(sha256:[0-9a-f]{64}) existed=([01]) "
                     rb"before=(none|sha256:[0-9a-f]{64}) size=([0-9]+)\n\Z")


def marked(after: bytes, before: bytes | None, plan_hash: str) -> bytes:
    """``.gitignore`` as first written: the planned bytes, then the marker line."""
    was = "sha256:" + hashlib.sha256(before).hexdigest() if before is not None else "none"
    line = (f"{PREFIX}plan={plan_hash} existed={int(before is not None)} before={was} "
            f"size={len(before or b'')}\n")
    return after + line.encode("ascii")


def conflict(text: str) -> str | None:
    """Why a ``.gitignore`` holding a marker cannot be adopted (recover it first)."""
    found = PATTERN.search(text.encode())
    if found is not None:
        return f"unfinished pre-journal adoption privacy replacement; recover {found.group(1).decode()}"
    return "malformed pre-journal adoption marker" if PREFIX in text else None
