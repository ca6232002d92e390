"""``create-vivary record``: add one typed record that real work earned, bound to the
Task Capsule that work ran on.

A thin workspace starts empty and gains records one at a time, each proposed from a
complete Markdown file and the capsule (``tropo find --governed``) of the workspace as
it is now. The plan's hash covers the record's path, the bytes before and after, and
the capsule's identity; ``--yes --plan HASH`` writes only that plan, only while the
capsule still describes the workspace, and takes the write back if doctor then fails.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from create_vivary.plan import Refused
from create_vivary.scaffold import plan_hash
from create_vivary.thin import CONTRACT, digest
from tropo.canonical import unique_keys
from tropo.check import document as docmod
from tropo.check.config import THIN_CONFIG, ConfigError
from tropo.check.frontmatter import parse
from tropo.check.workspace import open_workspace
from tropo.fs.rooted import UnsafePath, check_target, write_within
from tropo.governed.capsule import SCHEMA as CAPSULE_SCHEMA
from tropo.governed.capsule import is_intact
from tropo.governed.capsule_graph import graph_fingerprint, records_from_graph, snapshot_fingerprint

FOLDERS = {"modules": "module", "changes": "change", "decisions": "decision",
           "verification": "verification", "gates": "gate"}
NAME = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?\.md")
MAX_BYTES = 256 * 1024
USAGE = "record path must be <modules|changes|decisions|verification|gates>/<slug>.md"


def destination(record: str) -> str:
    parts = record.split("/")
    if len(parts) != 2 or parts[0] not in FOLDERS or not NAME.fullmatch(parts[1]):
        raise Refused(USAGE)
    return f".vivary/records/{record}"


def read_bounded(path: Path, what: str) -> bytes:
    """A regular, non-symlink file of at most MAX_BYTES, read through one descriptor."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"{what} must be a readable regular non-symlink file: {path}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            raise Refused(f"{what} must be a regular file no larger than {MAX_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise Refused(f"{what} must be no larger than {MAX_BYTES} bytes")
    return data


def capsule_binding(root: Path, path: Path) -> dict[str, str]:
    """The capsule's identity, once it is intact, scoped to this workspace, and about the
    workspace as it is now (a capsule compiled before any change is stale)."""
    try:
        capsule = json.loads(read_bounded(path, "record capsule").decode("utf-8"),
                             object_pairs_hook=unique_keys)
    except (UnicodeError, ValueError, RecursionError) as exc:
        raise Refused(f"record capsule must be one JSON object: {exc}") from exc
    if not isinstance(capsule, dict) or capsule.get("schema") != CAPSULE_SCHEMA:
        raise Refused(f"record capsule must be a {CAPSULE_SCHEMA} (tropo find --governed)")
    if not is_intact(capsule):
        raise Refused("record capsule integrity verification failed")
    if capsule["task"]["scope"] != [os.path.realpath(root)]:
        raise Refused("record capsule was compiled for another workspace")
    ws = open_workspace(root)
    now = (snapshot_fingerprint(ws.snapshot.fingerprint())
           or graph_fingerprint(records_from_graph(ws.graph())))
    if capsule["workspace"]["fingerprint"] != now:
        raise Refused("record capsule is stale or belongs to a different workspace state")
    return {"id": capsule["capsule_id"], "fingerprint": capsule["fingerprint"],
            "workspace_fingerprint": now}


def validate(root: Path, rel: str, text: str) -> None:
    """The record must be a clean document of its folder's type under the workspace's schema."""
    ws = open_workspace(root)
    folder = rel.rpartition("/")[0]
    try:
        cfg = ws.schema.for_dir(folder)
        type_name = cfg.type_for(folder, ws.root_name)
    except ConfigError as exc:
        raise Refused(f"record could not be validated against the workspace schema: {exc}") from exc
    doc = docmod.analyze(rel, parse(text), docmod.Plan.of(cfg, type_name), ws.root_name,
                         lambda: (None, None))
    expected = FOLDERS[rel.split("/")[-2]]
    errors = [f"{f.code} {f.message}" for f in doc.findings]
    if doc.type != expected or errors:
        detail = "; ".join(errors[:5]) or f"expected type {expected!r}, resolved {doc.type!r}"
        raise Refused(f"record source is not a valid typed record: {detail}")


@dataclass(frozen=True)
class RecordPlan:
    root: Path
    source: Path
    path: str
    action: str
    before_hash: str | None
    after: bytes
    capsule: dict[str, str]

    @property
    def payload(self) -> dict[str, Any]:
        return {"contract": CONTRACT, "action": self.action, "path": self.path,
                "before_hash": self.before_hash, "after_hash": digest(self.after),
                "capsule": self.capsule}

    @property
    def hash(self) -> str:
        return plan_hash(self.payload)

    def as_json(self) -> dict[str, Any]:
        return {**self.payload, "root": str(self.root), "source": str(self.source),
                "plan_hash": self.hash}


def plan(target: Path, record: str, source: Path, capsule: Path,
         healthy: Callable[[Path], list[str]]) -> RecordPlan:
    """Everything ``record`` would write, checked; ``healthy(root)`` is doctor's verdict."""
    root = target.absolute()
    if not root.is_dir() or not (root / THIN_CONFIG).is_file():
        raise Refused("record target must be an existing thin Vivary workspace "
                      f"({THIN_CONFIG}, contract {CONTRACT})")
    problems = healthy(root)
    if problems:
        raise Refused("record target must be healthy before planning a write: " + "; ".join(problems))
    rel = destination(record)
    binding = capsule_binding(root, capsule)
    src = source.absolute()
    after = read_bounded(src, "record source")
    try:
        text = after.decode("utf-8")
    except UnicodeError as exc:
        raise Refused("record source must be UTF-8") from exc
    if not text.strip() or "\x00" in text:
        raise Refused("record source must contain nonempty UTF-8 Markdown")
    try:
        dest = check_target(root, rel)
    except UnsafePath as exc:
        raise Refused(str(exc)) from exc
    before = read_bounded(dest, "record destination") if dest.exists() else None
    if before == after:
        raise Refused("record already matches the proposed content; no write is needed")
    validate(root, rel, text)
    return RecordPlan(root, src, rel, "update" if before is not None else "create",
                      digest(before) if before is not None else None, after, binding)


def apply(p: RecordPlan, approved: str | None, healthy: Callable[[Path], list[str]]) -> None:
    """Write the plan, rebuilt just now, only when it is the one approved: a source, a
    destination or a workspace that moved since the dry run changes the hash."""
    if approved is None:
        raise Refused("record apply requires --plan <hash> from the approved dry-run")
    if approved != p.hash:
        raise Refused(f"record plan hash mismatch: approved {approved}, current {p.hash}")
    dest = p.root / p.path
    before = dest.read_bytes() if dest.exists() else None
    write_within(p.root, p.path, p.after)
    problems = healthy(p.root)
    if problems:
        if before is None:
            dest.unlink()
            for folder in (dest.parent, dest.parent.parent):
                try:
                    folder.rmdir()
                except OSError:
                    break
        else:
            write_within(p.root, p.path, before)
        raise Refused("doctor failed after record apply (rolled back): " + "; ".join(problems))
