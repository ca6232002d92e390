"""The adoption journal file both adopt paths keep: one place, one way to write it, read
it back within a size limit, drop it, and approve the recovery plan drawn from it.

What a journal holds is the adopt path's own format (``journal.py`` for a full adopt,
``thin_journal.py`` for ``adopt --minimal``, create-vivary 0.4.3's: both stay readable, since
an interrupted adopt of either kind may be waiting in someone's tree). Where it lives, how it
is written, where each file it names stands now, and how a recovery is approved are the
same for both, so they live here.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Literal

from create_vivary.plan import Refused
from create_vivary.thin import digest
from tropo.fs.rooted import UnsafePath, check_target, write_within

PATH = ".vivary/runtime/adopt-journal.json"
MAX_BYTES = 1024 * 1024


def present(root: Path) -> bool:
    """Whether an adopt left a journal (a link there counts: it is not ours to step past)."""
    journal = root / PATH
    return journal.exists() or journal.is_symlink()


def write(root: Path, body: dict[str, Any]) -> None:
    write_within(root, PATH, (json.dumps(body, sort_keys=True, indent=2) + "\n").encode())


def load(journal: Path, name: str) -> Any:
    """The JSON a journal file holds, refused past :data:`MAX_BYTES` or unreadable;
    ``name`` is how the adopt path's messages call it."""
    if journal.stat().st_size > MAX_BYTES:
        raise Refused(f"{name} exceeds the recovery size limit")
    try:
        return json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError) as exc:
        raise Refused(f"{name} is unreadable: {exc}") from exc


def remove_folders(root: Path) -> None:
    """Drop the journal's folders once empty (a person's files in them keep them)."""
    for folder in (root / ".vivary/runtime", root / ".vivary"):
        with contextlib.suppress(OSError):
            folder.rmdir()


def approve_recovery(rhash: str, approved: str | None) -> None:
    """A recovery runs only as the plan a person approved by its hash."""
    if approved is None:
        raise Refused("recovery apply requires --plan <hash> from the recovery dry-run")
    if approved != rhash:
        raise Refused(f"recovery plan hash mismatch: approved {approved}, current {rhash}")


def standing(root: Path, rel: str, before: bytes | None,
             afters: set[str]) -> tuple[Literal["gone", "before", "after"], str | None]:
    """Where a file the journal names stands, with its digest: gone (adopt created it and
    it is not there), holding the bytes from before adopt, or holding what adopt wrote
    (one of ``afters``). Anything else changed since and is refused, so a recovery never
    touches a byte a person wrote: a link or a folder in its place, a file gone that adopt
    only changed, other bytes."""
    try:
        path = check_target(root, rel)
    except UnsafePath as exc:
        raise Refused(str(exc)) from exc
    if not path.exists():  # a dangling link included: nothing of adopt's is there
        if before is not None:
            raise Refused(f"recovery destination is missing: {rel}")
        return "gone", None
    if path.is_symlink() or not path.is_file():
        raise Refused(f"recovery destination is unsafe: {rel}")
    current = path.read_bytes()
    if before is not None and current == before:
        return "before", digest(current)
    if digest(current) in afters:
        return "after", digest(current)
    raise Refused(f"recovery destination changed: {rel}")
