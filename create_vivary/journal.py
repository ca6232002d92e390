"""The adoption journal: what an interrupted ``adopt`` wrote, so it can be taken back.

Before its first write, ``adopt`` records the approved plan's hash and, for every file
it will create, the digest of the bytes it will write. A finished adopt removes the
journal; a failed one takes its files back itself. A crash (power loss, kill -9) leaves
the journal, and ``adopt --recover PLAN_HASH`` plans the way back: each file still
holding exactly what adopt wrote is deleted, one that is gone is nothing to do, and one
that changed since is refused, so recovery never deletes a byte a person wrote. An
adapter adopt replaced (an older release's generated file) is put back the same way:
its old bytes are rebuilt from the release its marker named and must match the digest
recorded. The recovery plan has its own hash, applied only with ``--yes --plan
<recovery-hash>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from create_vivary import adapters, journal_file, thin
from create_vivary.plan import FileAction, Refused
from create_vivary.presets import PRESETS
from create_vivary.scaffold import RATCHET, plan_hash, render
from create_vivary.thin import digest
from tropo.fs.rooted import write_within
from tropo.git import gitcli

SCHEMA = "vivary-git.adopt-journal/v1"
RECOVERY_SCHEMA = "vivary-git.adopt-recovery/v1"


def refuse_if_unfinished(root: Path) -> None:
    if journal_file.present(root):
        raise Refused(f"an unfinished adoption journal exists ({journal_file.PATH}); recover it first: "
                      f"`create-vivary adopt {root} --recover <its plan hash>`")


def begin(root: Path, tx_hash: str, created: list[FileAction], *, git_init: bool,
          replaced: list[adapters.Projection] | None = None) -> None:
    refuse_if_unfinished(root)
    body = {"schema": SCHEMA, "plan_hash": tx_hash, "git_init": git_init,
            "created": [{"path": a.path, "after_hash": digest(a.data)} for a in created],
            "replaced": [{"path": r.path, "adapter": r.adapter, "before": r.before,
                          "after_hash": digest(r.data)} for r in replaced or []]}
    journal_file.write(root, body)


def finish(root: Path) -> None:
    (root / journal_file.PATH).unlink()
    journal_file.remove_folders(root)


def _read(root: Path, tx_hash: str) -> dict[str, Any]:
    journal = root / journal_file.PATH
    if journal.is_symlink() or not journal.is_file():
        raise Refused("no adoption journal to recover: nothing was interrupted")
    body = journal_file.load(journal, "the adoption journal")
    entries = body.get("created") if isinstance(body, dict) else None
    if (body.get("schema") != SCHEMA or not isinstance(entries, list)
            or not all(isinstance(e, dict) and isinstance(e.get("path"), str)
                       and isinstance(e.get("after_hash"), str) for e in entries)):
        raise Refused("the adoption journal is malformed; nothing was changed")
    replaced = body.setdefault("replaced", [])
    if not isinstance(replaced, list) or not all(_replaced_entry(e) for e in replaced):
        raise Refused("the adoption journal is malformed; nothing was changed")
    if body.get("plan_hash") != tx_hash:
        raise Refused(f"the adoption journal is for plan {body.get('plan_hash')}, not {tx_hash}")
    foreign = sorted({e["path"] for e in entries} - adoptable())
    if foreign:  # a journal is a file in the tree: it may name only what adopt writes
        raise Refused(f"the adoption journal names a path adopt never writes: {foreign[0]}")
    return dict(body)


def _replaced_entry(entry: Any) -> bool:
    """A replaced adapter as adopt records it: its own path, the older release that
    generated it, and the digest of what adopt wrote."""
    return (isinstance(entry, dict) and entry.get("adapter") in thin.ADAPTERS
            and entry.get("path") == thin.ADAPTERS[entry["adapter"]]
            and isinstance(entry.get("before"), str) and isinstance(entry.get("after_hash"), str)
            and adapters.older_release(thin.adapter_doc(entry["adapter"], entry["before"]).encode(),
                                       entry["adapter"]) == entry["before"])


def adoptable() -> set[str]:
    """Every path any adopt can create: the scaffold of each preset, the ratchet and
    the adapters."""
    paths = {RATCHET[0], *thin.ADAPTERS.values()}
    for preset in PRESETS:
        paths.update(render(preset, "workspace"))
    return paths


def recovery(root: Path, tx_hash: str) -> tuple[str, list[dict[str, Any]]]:
    """The recovery plan's hash and its rows (path, operation, current hash)."""
    rows = []
    body = _read(root, tx_hash)
    entries = body["created"]
    if gitcli.toplevel(root) == root.resolve():
        tracked = sorted(gitcli.tracked(root, [e["path"] for e in entries]))
        if tracked:  # adopt never commits, so what git tracks was there before it
            raise Refused(f"the adoption journal names a file git tracks: {tracked[0]}")
    for entry in entries:
        if not os.path.lexists(root / entry["path"]):  # never written (or its folder is not one)
            rows.append({"path": entry["path"], "operation": "no-op", "current_hash": None})
            continue
        state, current = journal_file.standing(root, entry["path"], None, {entry["after_hash"]})
        rows.append({"path": entry["path"], "operation": "no-op" if state == "gone" else "delete-created",
                     "current_hash": current})
    rows += [_restore_row(root, entry) for entry in body["replaced"]]
    body = {"schema": RECOVERY_SCHEMA, "root": str(root), "transaction": tx_hash, "actions": rows}
    return plan_hash(body), rows


def _restore_row(root: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """Put back a replaced adapter when it holds what adopt wrote; already back is
    nothing to do; anything else changed since and is refused."""
    before = thin.adapter_doc(entry["adapter"], entry["before"]).encode()
    state, current = journal_file.standing(root, entry["path"], before, {entry["after_hash"]})
    if state == "before":
        return {"path": entry["path"], "operation": "no-op", "current_hash": current}
    return {"path": entry["path"], "operation": "restore-replaced", "current_hash": current,
            "restore": entry["before"], "adapter": entry["adapter"]}


def _undo(root: Path, rows: list[dict[str, Any]]) -> None:
    _delete(root, [r["path"] for r in rows if r["operation"] == "delete-created"])
    for row in rows:
        if row["operation"] == "restore-replaced":
            write_within(root, row["path"], thin.adapter_doc(row["adapter"], row["restore"]).encode())


def recover(root: Path, tx_hash: str, approved: str | None) -> tuple[str, list[dict[str, Any]]]:
    """Apply the recovery plan a person approved by its hash."""
    rhash, rows = recovery(root, tx_hash)
    journal_file.approve_recovery(rhash, approved)
    _undo(root, rows)
    finish(root)
    return rhash, rows


def roll_back(root: Path, tx_hash: str) -> None:
    """After a failed apply in this process: the same way back, without asking."""
    _, rows = recovery(root, tx_hash)
    _undo(root, rows)
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
