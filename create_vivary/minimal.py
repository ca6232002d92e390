"""``create-vivary init --minimal``: create-vivary 0.4.3's init, the thin-v0.3 seed.

Only a new or empty folder is seeded (an existing workspace is adopted instead, even
with ``--force``, as in 0.4.3). Every refusal comes before the first write; the seed is
written whole and checked by doctor, and taken back file by file if anything fails, so
a refused or failed init leaves the folder as it found it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from create_vivary import thin
from create_vivary.plan import Refused
from tropo.fs.rooted import UnsafePath, check_target, write_within


def resolve_target(target: Path) -> Path:
    """The absolute target; a symlink on the way (as given) is refused."""
    absolute = target if target.is_absolute() else Path.cwd() / target
    here = Path(absolute.anchor)
    for part in absolute.parts[1:]:
        here = here / part
        if here.is_symlink():
            raise Refused(f"refusing to scaffold through symlinked target path or junction: {here}")
        if not here.exists():
            break
    return absolute.resolve(strict=False)


def check_empty(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise Refused(f"init target is not a directory: {root}")
    if root.exists():
        try:
            with os.scandir(root) as listing:
                first = next(listing, None)
        except OSError as exc:
            raise Refused(f"cannot inspect init target: {exc.strerror}: {root}") from exc
        if first is not None:
            raise Refused("init requires a new or empty directory; use create-vivary adopt "
                          "for every existing workspace, including thin workspaces")


def _file_in_parent_position(root: Path) -> Path | None:
    for parent in (root, *root.parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


@dataclass(frozen=True)
class SeedPlan:
    root: Path
    files: dict[str, bytes]  # workspace path -> bytes, in the order they are written


def plan(target: Path, preset: str, adapters: tuple[str, ...], active_context: str | None,
         choice: thin.Storage, project: str | None = None) -> SeedPlan:
    """Everything init would write; raises before any write."""
    root = resolve_target(target)
    check_empty(root)
    try:
        files = thin.seed(project or thin.project_of(root), preset, adapters, active_context)
    except thin.SeedError as exc:
        raise Refused(str(exc)) from exc
    blocker = _file_in_parent_position(root)
    if blocker is not None:
        raise Refused(f"refusing to scaffold because a destination parent path is a file: {blocker}")
    files |= thin.config_files(choice, always_storage=False)
    files[".gitignore"] = thin.with_memory_rules(files[".gitignore"], choice.memory) or files[".gitignore"]
    for rel in files:
        try:
            check_target(root, rel)
        except UnsafePath as exc:
            raise Refused(str(exc)) from exc
    return SeedPlan(root, files)


def _missing_dirs(root: Path, files: dict[str, bytes]) -> list[Path]:
    """The folders writing ``files`` will create, the target and those inside it, so a
    rollback removes exactly those."""
    wanted = {root}
    for rel in files:
        wanted.update((root / rel).parents)
    return sorted((d for d in wanted if not d.exists()), key=lambda d: len(d.parts))


def apply(p: SeedPlan, check: Callable[[], None] | None = None) -> list[str]:
    """Write the seed, then ``check`` it; on any failure remove what this run made."""
    absent = [d for d in reversed(p.root.parents) if not d.exists()]
    if absent:  # only the target itself is made, never the folders it would sit in
        raise Refused(f"safe destination ancestor does not exist: {absent[0]}")
    made = _missing_dirs(p.root, p.files)
    written: list[Path] = []
    try:
        p.root.mkdir(exist_ok=True)
        for rel, data in p.files.items():
            written.append(write_within(p.root, rel, data))
        if check is not None:
            check()
    except BaseException as exc:
        _take_back(written, made)
        if isinstance(exc, OSError):
            raise Refused(f"init failed and rolled back: {exc.strerror or exc}: "
                          f"{exc.filename or p.root}") from exc
        raise
    return list(p.files)


def _take_back(written: list[Path], made: list[Path]) -> None:
    for path in reversed(written):
        with contextlib.suppress(OSError):
            path.unlink()
    for folder in sorted(made, key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()
