"""``adopt --minimal --yes``: apply a thin adoption plan under create-vivary 0.4.3's
journal, and take an interrupted one back (``--recover``).

Before the first change the journal ``.vivary/runtime/adopt-journal.json`` (schema
``vivary.adopt-journal.v3``) holds the approved payload and, per action, the bytes
that were there before; it is rewritten after each action. The journal sits under a
path the ``.gitignore`` block ignores, so when ``.gitignore`` itself changes it is
changed first, with a marker line naming the plan: a crash before the journal exists
is still recoverable from that marker. Either tool recovers the other's journal.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from create_vivary import journal_file, prejournal, presets, thin
from create_vivary.plan import Refused
from create_vivary.thin import digest
from create_vivary.thin_adopt import (
    ThinPlan,
    appended,
    approval_hash,
    declared_active_context,
    identity,
)
from tropo.fs.rooted import UnsafePath, check_target, write_within

SCHEMA = "vivary.adopt-journal.v3"
RECOVERY_SCHEMA = "vivary.adopt-recovery-plan.v1"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
APPROVAL_KEYS = {"contract", "target", "preset", "adapters", "capabilities", "creates", "patches",
                 "adapter_replacements", "kept"}
ACTION_KEYS = {"path", "kind", "existed", "before", "before_hash", "after_hash", "transient_after_hash"}


def _actions(p: ThinPlan) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rel, data in (p.creates | p.adapter_creates).items():
        rows.append({"kind": "create", "path": rel, "before": None, "after": data})
    for patch in p.patches:
        before = (p.root / patch["path"]).read_bytes()
        rows.append({"kind": "patch", "path": patch["path"], "before": before,
                     "after": before + patch["inserted_text"].encode()})
    for r in p.replacements:
        rows.append({"kind": "replace", "path": r["path"], "before": (p.root / r["path"]).read_bytes(),
                     "after": r["data"]})
    rows.sort(key=lambda a: (a["path"] != ".gitignore", a["path"]))
    if rows and rows[0]["path"] == ".gitignore":
        rows[0]["transient"] = prejournal.marked(rows[0]["after"], rows[0]["before"], p.hash)
    for row in rows:
        row["after_hash"] = digest(row["after"])
        row["transient_after_hash"] = digest(row["transient"]) if "transient" in row else None
    return rows


def _journal(p: ThinPlan, actions: list[dict[str, Any]], phase: str, completed: int) -> dict[str, Any]:
    def row(a: dict[str, Any]) -> dict[str, Any]:
        before = a["before"]
        return {"path": a["path"], "kind": a["kind"], "existed": before is not None,
                "before": base64.b64encode(before).decode("ascii") if before is not None else None,
                "before_hash": digest(before) if before is not None else None,
                "after_hash": a["after_hash"], "transient_after_hash": a["transient_after_hash"]}
    return {"schema": SCHEMA, "plan_hash": p.hash, "approval": p.payload(), "phase": phase,
            "completed": completed, "actions": [row(a) for a in actions]}


def refuse_if_unfinished(root: Path) -> None:
    if journal_file.present(root):
        raise Refused("unfinished adoption journal exists; recover it before applying a new plan")


def apply(p: ThinPlan, approved: str | None, problems: Callable[[Path], list[str]]) -> None:
    """Carry out the plan a person approved by its hash; ``problems`` is the doctor
    that must pass after it. Any failure puts every file back as it was."""
    if approved is None:
        raise Refused("apply requires --plan <hash> from the approved dry-run")
    if approved != p.hash:
        raise Refused(f"plan hash mismatch: approved {approved}, current {p.hash}")
    if p.conflicts:
        raise Refused("adoption plan has conflicts: " + ", ".join(c["path"] for c in p.conflicts))
    refuse_if_unfinished(p.root)
    actions = _actions(p)
    body = _journal(p, actions, "planned", 0)
    try:
        if not actions or "transient" not in actions[0]:
            journal_file.write(p.root, body)
        for index, action in enumerate(actions):
            _act(p.root, action)
            if "transient" in action:  # the journal's own folder is ignored only now
                journal_file.write(p.root, body)
                write_within(p.root, action["path"], action["after"])
            body |= {"phase": "applying", "completed": index + 1}
            journal_file.write(p.root, body)
        errors = problems(p.root)
        if errors:
            raise Refused("Doctor failed after apply: " + "; ".join(errors))
        (p.root / journal_file.PATH).unlink()
    except Exception as exc:
        try:
            _undo(p.root, actions)
        except Refused as failed:  # say both: what went wrong, and what could not be put back
            raise Refused(f"{exc}; {failed}") from exc
        if isinstance(exc, Refused):
            raise
        raise Refused(f"adoption failed and rolled back: {exc}") from exc


def _act(root: Path, action: dict[str, Any]) -> None:
    path, rel = root / action["path"], action["path"]
    if action["kind"] == "create":
        if path.exists() or path.is_symlink():
            raise Refused(f"planned create appeared before apply: {rel}")
    elif path.is_symlink() or not path.is_file():
        raise Refused(f"planned patch became unsafe: {rel}")
    elif path.read_bytes() != action["before"]:
        raise Refused(f"planned patch input changed: {rel}")
    write_within(root, rel, action.get("transient", action["after"]))


def _afters(action: dict[str, Any]) -> set[str]:
    return {h for h in (action["after_hash"], action.get("transient_after_hash")) if h}


def _undo(root: Path, actions: list[dict[str, Any]]) -> None:
    """Put back what the journal says was there, last action first, touching only
    files that still hold what adopt wrote; then drop the journal."""
    failures = []
    for action in reversed(actions):
        path, before = root / action["path"], action["before"]
        try:
            check_target(root, action["path"])
            if before is None:
                if not path.exists():
                    continue
                if path.is_symlink() or not path.is_file():
                    raise Refused("created destination changed type")
                if digest(path.read_bytes()) not in _afters(action):
                    raise Refused("created destination changed after apply")
                path.unlink()
            else:
                if not path.exists() or path.is_symlink() or not path.is_file():
                    raise Refused("modified destination is missing or unsafe")
                current = path.read_bytes()
                if current == before:
                    continue
                if digest(current) not in _afters(action):
                    raise Refused("modified destination changed after apply")
                write_within(root, action["path"], before)
        except (OSError, Refused, UnsafePath) as exc:
            failures.append(f"{action['path']}: {exc}")
    if failures:
        raise Refused("rollback failed: " + "; ".join(failures))
    try:
        journal = check_target(root, journal_file.PATH)  # no link on the way: nothing outside is touched
    except UnsafePath:
        return
    if journal.is_file():
        journal.unlink()
    journal_file.remove_folders(root)


def _prejournal(root: Path, tx_hash: str) -> list[dict[str, Any]] | None:
    """The ``.gitignore`` change of an apply that stopped before its journal existed."""
    path = root / ".gitignore"
    if path.is_symlink() or not path.is_file():
        return None
    data = path.read_bytes()
    found = prejournal.PATTERN.search(data)
    if found is None:
        if prejournal.PREFIX.encode() in data:
            raise Refused("pre-journal adoption marker is malformed")
        return None
    if found.group(1).decode() != tx_hash:
        raise Refused(f"recovery hash mismatch: pre-journal {found.group(1).decode()}, requested {tx_hash}")
    existed, size, clean = found.group(2) == b"1", int(found.group(4)), data[:found.start()]
    if size > len(clean):
        raise Refused("pre-journal adoption marker has an invalid input size")
    before = clean[:size]
    if (digest(before) if existed else "none") != found.group(3).decode() or (not existed and before):
        raise Refused("pre-journal adoption input hash does not match")
    block = thin.gitignore_block(declared_active_context(root))
    if clean != (before + appended(before, block).encode() if existed else block.encode()):
        raise Refused("pre-journal adoption privacy replacement changed unexpectedly")
    return [{"kind": "patch" if existed else "create", "path": ".gitignore",
             "before": before if existed else None, "after_hash": digest(clean),
             "transient_after_hash": digest(data)}]


def _journalled(root: Path, tx_hash: str) -> list[dict[str, Any]]:
    try:
        journal = check_target(root, journal_file.PATH)  # a link anywhere on the way is not ours to read
    except UnsafePath as exc:
        raise Refused("no safe adoption journal exists to recover") from exc
    if not journal.is_file():
        raise Refused("no safe adoption journal exists to recover")
    return _validated(root, journal_file.load(journal, "adoption journal"), tx_hash)


def _validated(root: Path, body: Any, tx_hash: str) -> list[dict[str, Any]]:
    """The journal's actions, each checked against the approval it carries: only the
    seed's own paths, the approved before and after bytes, this very folder."""
    if not isinstance(body, dict) or body.get("schema") != SCHEMA:
        raise Refused("adoption journal schema is not supported")
    if body.get("plan_hash") != tx_hash:
        raise Refused(f"recovery hash mismatch: journal {body.get('plan_hash')}, requested {tx_hash}")
    approval = body.get("approval")
    if not isinstance(approval, dict) or set(approval) != APPROVAL_KEYS:
        raise Refused("adoption journal approval payload is malformed")
    if approval["contract"] != thin.CONTRACT:
        raise Refused("adoption journal approval contract is not supported")
    if approval["target"] != identity(root):
        raise Refused("adoption journal is bound to a different workspace root")
    if approval_hash(approval) != tx_hash:
        raise Refused("adoption journal approval hash does not match")
    adapters, capabilities = approval["adapters"], approval["capabilities"]
    if (approval["preset"] not in presets.PRESETS or not isinstance(adapters, list)
            or not isinstance(capabilities, list)):
        raise Refused("adoption journal approval policy is malformed")
    if not all(isinstance(a, str) for a in adapters) or adapters != sorted(set(adapters)) \
            or set(adapters) - set(thin.ADAPTERS):
        raise Refused("adoption journal approval adapters are malformed")
    if capabilities not in ([], ["cocoindex-code"]):
        raise Refused("adoption journal approval capabilities are malformed")
    expected = _approved_actions(root, approval)
    rows = body.get("actions")
    if not isinstance(rows, list) or not rows:
        raise Refused("adoption journal has no recoverable actions")
    if len(rows) != len(expected):
        raise Refused("adoption journal actions do not match the approved plan")
    completed = body.get("completed")
    if body.get("phase") not in ("planned", "applying"):
        raise Refused("adoption journal progress is malformed")
    if not isinstance(completed, int) or not 0 <= completed <= len(rows):
        raise Refused("adoption journal progress exceeds the action count")
    return [_checked_row(row, expected, tx_hash) for row in rows]


def _approved_actions(root: Path, approval: dict[str, Any]) -> dict[str, dict[str, Any]]:
    active = approval["capabilities"][0] if approval["capabilities"] else None
    seed = thin.seed(root.name or "vivary-workspace", approval["preset"], tuple(approval["adapters"]), None)
    seed[".gitignore"] = thin.gitignore_block(active).encode()
    blocks = {"AGENTS.md": thin.agents_block(), ".gitignore": thin.gitignore_block(active)}
    out: dict[str, dict[str, Any]] = {}
    lists = [approval[k] for k in ("creates", "patches", "adapter_replacements", "kept")]
    if not all(isinstance(rows, list) for rows in lists):
        raise Refused("adoption journal approval actions are malformed")
    if sum(len(rows) for rows in lists) > 32:
        raise Refused("adoption journal approval exceeds the action limit")
    for row in approval["creates"]:
        if not isinstance(row, dict) or set(row) != {"path", "content_hash"}:
            raise Refused("adoption journal approved create is malformed")
        rel = row["path"]
        if rel not in seed or row["content_hash"] != digest(seed[rel]) or rel in out:
            raise Refused("adoption journal approved create is not canonical")
        out[rel] = {"kind": "create", "before_hash": None, "after": seed[rel]}
    for row in approval["patches"]:
        if not isinstance(row, dict) or set(row) != {"path", "before_hash", "anchor", "inserted_text"}:
            raise Refused("adoption journal approved patch is malformed")
        if row["path"] not in blocks or row["anchor"] != "eof" or row["path"] in out:
            raise Refused("adoption journal approved patch is not canonical")
        out[row["path"]] = {"kind": "patch", "before_hash": row["before_hash"], "block": blocks[row["path"]],
                            "inserted_text": row["inserted_text"]}
    paths = {thin.ADAPTERS[a] for a in approval["adapters"]}
    for row in approval["adapter_replacements"]:
        if not isinstance(row, dict) or set(row) != {"path", "before_hash", "content_hash"}:
            raise Refused("adoption journal approved replacement is malformed")
        rel = row["path"]
        if rel not in paths or row["content_hash"] != digest(seed[rel]) or rel in out:
            raise Refused("adoption journal approved replacement is not canonical")
        out[rel] = {"kind": "replace", "before_hash": row["before_hash"], "after": seed[rel]}
    kept: set[str] = set()
    for row in approval["kept"]:
        if not isinstance(row, dict) or set(row) != {"path", "content_hash"}:
            raise Refused("adoption journal approved kept input is malformed")
        if row["path"] not in seed or row["path"] in out or row["path"] in kept:
            raise Refused("adoption journal approved kept input is not canonical")
        if not isinstance(row["content_hash"], str) or not DIGEST.fullmatch(row["content_hash"]):
            raise Refused("adoption journal approved kept hash is malformed")
        kept.add(row["path"])
    return out


def _checked_row(row: Any, expected: dict[str, dict[str, Any]], tx_hash: str) -> dict[str, Any]:
    if not isinstance(row, dict) or set(row) != ACTION_KEYS:
        raise Refused("adoption journal action is malformed")
    want = expected.get(row["path"])
    if want is None or row["kind"] != want["kind"]:
        raise Refused("adoption journal action is outside the approved plan")
    expected.pop(row["path"])  # each approved path once
    try:
        before = base64.b64decode(row["before"], validate=True) if row["before"] is not None else None
    except (ValueError, TypeError) as exc:
        raise Refused("adoption journal backup is malformed") from exc
    if not isinstance(row["existed"], bool) or row["existed"] != (before is not None):
        raise Refused("adoption journal backup presence is malformed")
    before_hash = digest(before) if before is not None else None
    if row["before_hash"] != before_hash or want["before_hash"] != before_hash:
        raise Refused("adoption journal backup hash does not match approval")
    if want["kind"] == "patch":
        inserted = appended(before or b"", want["block"])
        if want["inserted_text"] != inserted:
            raise Refused("adoption journal patch text does not match approval")
        after = (before or b"") + inserted.encode()
    else:
        after = want["after"]
    if row["after_hash"] != digest(after):
        raise Refused("adoption journal destination hash does not match approval")
    transient = row["transient_after_hash"]
    if row["path"] == ".gitignore":
        if transient != digest(prejournal.marked(after, before, tx_hash)):
            raise Refused("adoption journal privacy transition is not canonical")
    elif transient is not None:
        raise Refused("adoption journal has an unexpected transient destination")
    return {"kind": row["kind"], "path": row["path"], "before": before, "after_hash": row["after_hash"],
            "transient_after_hash": transient}


def recovery(root: Path, tx_hash: str) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The recovery plan's hash, its rows, and the actions it undoes."""
    journal = root / journal_file.PATH
    actions = _journalled(root, tx_hash) if journal.exists() else _prejournal(root, tx_hash)
    if actions is None:
        raise Refused("no safe adoption journal exists to recover")
    rows = []
    for action in actions:
        rel, before = action["path"], action["before"]
        state, current_hash = journal_file.standing(root, rel, before, _afters(action))
        operation = "no-op" if state != "after" else "delete-created" if before is None else "restore"
        rows.append({"path": rel, "operation": operation, "current_hash": current_hash,
                     "restore_hash": digest(before) if before is not None else None})
    body = {"schema": RECOVERY_SCHEMA, "target": identity(root), "transaction_plan_hash": tx_hash,
            "actions": rows}
    return approval_hash(body), rows, actions


def recover(root: Path, tx_hash: str, approved: str | None) -> tuple[str, list[dict[str, Any]]]:
    rhash, rows, actions = recovery(root, tx_hash)
    journal_file.approve_recovery(rhash, approved)
    _undo(root, actions)
    return rhash, rows
