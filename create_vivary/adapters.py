"""``adopt --adapter``: the runtime skills create-vivary 0.4.3's adopt projects.

Each selected adapter is one generated file (``thin.adapter_doc``). Adopt writes it
when the place is free, keeps it when it is already exactly that file, replaces it only
when it is that file as an older create-vivary release generated it (only the release
in the marker differs, so nothing a person wrote can qualify), and otherwise reports a
conflict that refuses the apply, as 0.4.3 does.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from create_vivary import thin
from create_vivary.plan import Refused

_MARKER = re.compile(rb"<!-- generated-by: create-vivary ([0-9]+)\.([0-9]+)\.([0-9]+) -->")
_OURS = tuple(int(n) for n in thin.ADAPTER_FORMAT.rsplit(" ", 1)[1].split("."))


@dataclass(frozen=True)
class Projection:
    adapter: str
    path: str
    data: bytes  # what adopt writes (or finds) there
    status: str  # create | clean | replace | conflict
    reason: str | None = None  # why a conflict
    before: str | None = None  # a replaced file's generator release

    def as_json(self) -> dict[str, object]:
        source_hash, content_hash = thin.adapter_hashes(self.adapter)
        return {"adapter": self.adapter, "path": self.path, "bytes": len(self.data),
                "source_hash": source_hash, "content_hash": content_hash,
                "status": self.status}


def older_release(data: bytes, adapter: str) -> str | None:
    """The older release that generated ``data`` as this adapter's file, or None."""
    first, newline, _ = data.partition(b"\n")
    found = _MARKER.fullmatch(first)
    if not newline or found is None or tuple(int(n) for n in found.groups()) >= _OURS:
        return None
    release = "create-vivary " + ".".join(g.decode() for g in found.groups())
    return release if thin.adapter_doc(adapter, release).encode() == data else None


def project(root: Path, adapter: str) -> Projection:
    """Where one adapter's file stands: free, already it, an older release's, or not ours."""
    rel = thin.ADAPTERS[adapter]
    data = thin.adapter_doc(adapter).encode()
    where = root / rel
    if not os.path.lexists(where):
        return Projection(adapter, rel, data, "create")
    if where.is_symlink() or not where.is_file():
        return Projection(adapter, rel, data, "conflict", "adapter destination is not a regular file")
    found = where.read_bytes()
    if found == data:
        return Projection(adapter, rel, data, "clean")
    release = older_release(found, adapter)
    if release is not None:
        return Projection(adapter, rel, data, "replace", before=release)
    return Projection(adapter, rel, data, "conflict", "adapter content is user-owned")


def plan(root: Path, adapters: tuple[str, ...]) -> tuple[list[Projection], list[dict[str, str]]]:
    """The projection of each selected adapter, in adapter order, and the conflicts
    that refuse the apply (sorted by path)."""
    if len(set(adapters)) != len(adapters):
        raise Refused("each --adapter value may be selected only once")
    projections = [project(root, adapter) for adapter in sorted(adapters)]
    conflicts = [{"path": p.path, "reason": str(p.reason)} for p in projections
                 if p.status == "conflict"]
    declared = _declared(root)
    if declared is not None and declared != sorted(adapters):
        conflicts.append({"path": CONFIG, "reason": (
            f"the workspace declares adapters {declared}, not the selected {sorted(adapters)}: "
            "name the same adapters")})
    return projections, sorted(conflicts, key=lambda c: c["path"])


CONFIG = ".vivary/workspace.toml"


def _declared(root: Path) -> list[str] | None:
    """The adapters a thin-v0.3 workspace declares (None for any other workspace):
    0.4.3 adopts one only with the same adapters named, so its declaration stays true."""
    path = root / CONFIG
    if path.is_symlink() or not path.is_file():
        return None
    try:
        workspace = tomllib.loads(path.read_text(encoding="utf-8-sig")).get("workspace")
    except (OSError, UnicodeError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(workspace, dict) or workspace.get("contract") != thin.CONTRACT:
        return None
    named = workspace.get("adapters", [])
    return sorted(str(a) for a in named) if isinstance(named, list) else []
