"""A write plan: which files to create or overwrite, checked before anything is written."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from create_vivary.scaffold import plan_hash
from tropo.fs.rooted import UnsafePath, check_target, write_within

_PROJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,63}")


class Refused(Exception):
    """The command will not do what was asked; nothing was changed (exit 1)."""


@dataclass(frozen=True)
class FileAction:
    path: str
    action: str  # create | overwrite | unchanged | keep
    data: bytes

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "action": self.action, "bytes": len(self.data)}


def project_name(target: Path, given: str | None) -> str:
    """The project label written into nodes: given, or the folder name made safe."""
    if given is not None:
        if not _PROJECT.fullmatch(given):
            raise ValueError(f"invalid project name {given!r}: use letters, digits, . _ - space")
        return given
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(os.path.abspath(target)).name).strip("-._")
    return slug or "workspace"


def file_actions(root: Path, files: dict[str, bytes], overwrite: bool) -> list[FileAction]:
    """What writing ``files`` under ``root`` would do; refuses unsafe paths up front."""
    out = []
    for rel, data in sorted(files.items()):
        try:
            dest = check_target(root, rel)
        except UnsafePath as exc:
            raise Refused(str(exc)) from exc
        if not dest.exists():
            out.append(FileAction(rel, "create", data))
        elif dest.read_bytes() == data:
            out.append(FileAction(rel, "unchanged", data))
        else:
            out.append(FileAction(rel, "overwrite" if overwrite else "keep", data))
    return out


def actions_hash(actions: list[FileAction], **extra: object) -> str:
    return plan_hash({"files": {a.path: [a.action, a.data] for a in actions}, **extra})


def write(root: Path, actions: list[FileAction]) -> list[str]:
    """Write the files the plan creates or overwrites; returns their paths."""
    done = []
    for a in actions:
        if a.action in ("create", "overwrite"):
            write_within(root, a.path, a.data)
            done.append(a.path)
    return done
