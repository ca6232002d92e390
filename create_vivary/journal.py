"""The adoption journal: what an interrupted ``adopt`` wrote, so it can be taken back.

Before its first write, ``adopt`` records the approved plan's hash and, for every file
it will create, the digest of the bytes it will write. A finished adopt removes the
journal; a failed one takes its files back itself. A crash (power loss, kill -9) leaves
the journal, and ``adopt --recover PLAN_HASH`` plans the way back: each file still
holding exactly what adopt wrote is deleted, one that is gone is nothing to do, and one
that changed since is refused, so recovery never deletes a byte a person wrote. The
recovery plan has its own hash, applied only with ``--yes --plan <recovery-hash>``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from create_vivary.plan import FileAction, Refused
from create_vivary.presets import PRESETS
from create_vivary.scaffold import RATCHET, plan_hash, render
from tropo.git import gitcli
from tropo.git.rooted import UnsafePath, check_target, write_within

PATH = ".vivary/runtime/adopt-journal.json"
SCHEMA = "vivary-git.adopt-journal/v1"
RECOVERY_SCHEMA = "vivary-git.adopt-recovery/v1"
MAX_BYTES = 1024 * 1024


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def refuse_if_unfinished(root: Path) -> None:
    journal = root / PATH
    if journal.exists() or journal.is_symlink():
        raise Refused(f"an unfinished adoption journal exists ({PATH}); recover it first: "
                      f"`create-vivary adopt {root} --recover <its plan hash>`")


def begin(root: Path, tx_hash: str, created: list[FileAction], *, git_init: bool) -> None:
    refuse_if_unfinished(root)
    body = {"schema": SCHEMA, "plan_hash": tx_hash, "git_init": git_init,
            "created": [{"path": a.path, "after_hash": _digest(a.data)} for a in created]}
    write_within(root, PATH, (json.dumps(body, sort_keys=True, indent=2) + "\n").encode())


def finish(root: Path) -> None:
    (root / PATH).unlink()
    for folder in (root / ".vivary/runtime", root / ".vivary"):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _read(root: Path, tx_hash: str) -> dict[str, Any]:
    journal = root / PATH
    if journal.is_symlink() or not journal.is_file():
        raise Refused("no adoption journal to recover: nothing was interrupted")
    if journal.stat().st_size > MAX_BYTES:
        raise Refused("the adoption journal exceeds the recovery size limit")
    try:
        body = json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError) as exc:
        raise Refused(f"the adoption journal is unreadable: {exc}") from exc
    entries = body.get("created") if isinstance(body, dict) else None
    if (body.get("schema") != SCHEMA or not isinstance(entries, list)
            or not all(isinstance(e, dict) and isinstance(e.get("path"), str)
                       and isinstance(e.get("after_hash"), str) for e in entries)):
        raise Refused("the adoption journal is malformed; nothing was changed")
    if body.get("plan_hash") != tx_hash:
        raise Refused(f"the adoption journal is for plan {body.get('plan_hash')}, not {tx_hash}")
    foreign = sorted({e["path"] for e in entries} - adoptable())
    if foreign:  # a journal is a file in the tree: it may name only what adopt writes
        raise Refused(f"the adoption journal names a path adopt never writes: {foreign[0]}")
    return dict(body)


def adoptable() -> set[str]:
    """Every path any adopt can create: the scaffold of each preset, and the ratchet."""
    paths = {RATCHET[0]}
    for preset in PRESETS:
        paths.update(render(preset, "workspace"))
    return paths


def recovery(root: Path, tx_hash: str) -> tuple[str, list[dict[str, Any]]]:
    """The recovery plan's hash and its rows (path, operation, current hash)."""
    rows = []
    entries = _read(root, tx_hash)["created"]
    if gitcli.toplevel(root) == root.resolve():
        tracked = sorted(gitcli.tracked(root, [e["path"] for e in entries]))
        if tracked:  # adopt never commits, so what git tracks was there before it
            raise Refused(f"the adoption journal names a file git tracks: {tracked[0]}")
    for entry in entries:
        rel = entry["path"]
        if not os.path.lexists(root / rel):  # never written (or its folder is not one)
            rows.append({"path": rel, "operation": "no-op", "current_hash": None})
            continue
        try:
            dest = check_target(root, rel)
        except UnsafePath as exc:
            raise Refused(f"recovery destination is unsafe: {exc}") from exc
        current = _digest(dest.read_bytes())
        if current != entry["after_hash"]:
            raise Refused(f"recovery destination changed since the interrupted adopt: {rel}")
        rows.append({"path": rel, "operation": "delete-created", "current_hash": current})
    body = {"schema": RECOVERY_SCHEMA, "root": str(root), "transaction": tx_hash, "actions": rows}
    return plan_hash(body), rows


def recover(root: Path, tx_hash: str, approved: str | None) -> tuple[str, list[dict[str, Any]]]:
    """Apply the recovery plan a person approved by its hash."""
    rhash, rows = recovery(root, tx_hash)
    if approved is None:
        raise Refused("recovery apply requires --plan <hash> from the recovery dry-run")
    if approved != rhash:
        raise Refused(f"recovery plan hash mismatch: approved {approved}, current {rhash}")
    _delete(root, [r["path"] for r in rows if r["operation"] == "delete-created"])
    finish(root)
    return rhash, rows


def roll_back(root: Path, tx_hash: str) -> None:
    """After a failed apply in this process: the same way back, without asking."""
    _, rows = recovery(root, tx_hash)
    _delete(root, [r["path"] for r in rows if r["operation"] == "delete-created"])
    finish(root)


def _delete(root: Path, paths: list[str]) -> None:
    for rel in paths:
        (root / rel).unlink()
        parent = (root / rel).parent
        while parent != root:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
