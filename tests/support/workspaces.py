"""Workspaces scaffolded once per test process and copied for each test that asks: a
fresh `create-vivary init` costs a scaffold, a commit and its hooks, a copy costs a copy.

Only for tests that take the scaffold as their starting point; a test of `init` itself
runs it. `made_once` does the same for any other folder a test builds (a repository with
its remote, a key): built once per process, copied by each test; `copy_of` is that and the
copy in one call, the template kept in a folder of the process's own."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.support.console import run

_TEMPLATES: dict[tuple[str, ...], Path] = {}
_MADE: dict[str, Path] = {}  # what each process made once: a key, a workspace
_OWN: list[Path] = []  # the folder `copy_of` keeps its templates in, made on first use


def scaffold(dest: Path, *init_args: str) -> Path:
    """`dest`, a copy of `create-vivary init ws --commit INIT_ARGS...` made once per process."""
    key = tuple(init_args)
    template = _TEMPLATES.get(key)
    if template is None:
        top = Path(tempfile.mkdtemp(prefix="vivary-scaffold-"))
        # no heartbeat for the template's commit: a runner still writing its sidecar while
        # the template is copied made copies that failed, or differed from one another
        made = run("create-vivary", "init", "ws", "--commit", *init_args, cwd=top, env={"VIVARY_HEARTBEAT": "0"})
        if made.returncode != 0:
            raise AssertionError(f"create-vivary init failed: {made.stderr}")
        template = _TEMPLATES[key] = top / "ws"
    shutil.copytree(template, dest, symlinks=True)
    return dest


def made_once(name: str, where: Path, make: Callable[[Path], object]) -> Path:
    """``make(where / name)`` the first time this process asks for ``name``, a copy of it
    every time after: a fixture every test writes to, built once (copies keep tests apart).
    Made again when pytest removed it: mutmut runs several pytest sessions in one process."""
    if name not in _MADE or not _MADE[name].exists():
        make(where / name)
        _MADE[name] = where / name
    return _MADE[name]


def copy_of(name: str, dest: Path, make: Callable[[Path], object]) -> Path:
    """`dest`, a copy of the folder ``make(folder)`` builds, built the first time this
    process asks for ``name`` (outside every test's own folder, so no test sees it)."""
    if not _OWN:
        _OWN.append(Path(tempfile.mkdtemp(prefix="vivary-made-")))
        atexit.register(shutil.rmtree, _OWN[0], True)
    shutil.copytree(made_once(name, _OWN[0], make), dest, symlinks=True)
    return dest
