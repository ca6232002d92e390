"""Workspaces scaffolded once per test process and copied for each test that asks: a
fresh `create-vivary init` costs a scaffold, a commit and its hooks, a copy costs a copy.

Only for tests that take the scaffold as their starting point; a test of `init` itself
runs it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.support.console import run

_TEMPLATES: dict[tuple[str, ...], Path] = {}
_BUILT: dict[str, Path] = {}


def scaffold(dest: Path, *init_args: str) -> Path:
    """`dest`, a copy of `create-vivary init ws --commit INIT_ARGS...` made once per process."""
    key = tuple(init_args)
    template = _TEMPLATES.get(key)
    if template is None:
        top = Path(tempfile.mkdtemp(prefix="vivary-scaffold-"))
        made = run("create-vivary", "init", "ws", "--commit", *init_args, cwd=top)
        if made.returncode != 0:
            raise AssertionError(f"create-vivary init failed: {made.stderr}")
        template = _TEMPLATES[key] = top / "ws"
    shutil.copytree(template, dest, symlinks=True)
    return dest


def built(dest: Path, key: str, build: Callable[[Path], object]) -> Path:
    """`dest` (which may exist) filled with a copy of what `build(folder)` made in an empty
    folder, once per process for each `key`. Absolute paths recorded inside (a remote's
    url) still name the first folder: the caller points them at the copy."""
    template = _BUILT.get(key)
    if template is None:
        template = Path(tempfile.mkdtemp(prefix=f"vivary-built-{key}-"))
        build(template)
        _BUILT[key] = template
    shutil.copytree(template, dest, symlinks=True, dirs_exist_ok=True)
    return dest
