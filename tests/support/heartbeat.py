"""Scripted histories for the heartbeat: real repositories, commit dates set by hand."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.support import console
from tests.support.repos import git, write_files
from tests.support.workspaces import made_once

DAY = 86400
T0 = 1_790_000_000  # a fixed clock: every test says how old each commit is

SCHEMA = """version = 1
[base]
derive = ["id", "title"]
allow_untyped = true
strict = false
[types.change]
folder = "changes"
required = { status = "enum:planned|active|done" }
optional = { related_changes = "ref-list" }
"""


def commit_at(root: Path, when: int, message: str, files: dict[str, str] | None = None) -> str:
    """Commit ``files`` (all changes) with author and committer dates ``when``."""
    if files:
        write_files(root, files)
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=root, env=env,
                   check=True)
    return git(root, "rev-parse", "HEAD").strip()


def scripted_workspace(tmp_path: Path) -> Path:
    """A clean workspace: a schema, one index linking one done change, a fresh STATE.md.
    Made once per process (inside a test, under its isolated git) and copied per test:
    its fixed dates make every build the same commit anyway."""
    root = tmp_path / "ws"
    template = made_once("heartbeat-ws", tmp_path.parent, _build)
    shutil.copytree(template, root, symlinks=True)
    return root


def _build(root: Path) -> None:
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("heartbeat-reports/\n")
    commit_at(root, T0, "init", {
        "tropo.toml": SCHEMA,
        "STATE.md": "# STATE: visible state\n\nCadence: weekly\nFocus: x\n",
        "STRATO.md": "# STRATO\n\nTiny.\n",
        "changes/index.md": "---\nstatus: done\nrelated_changes: [one]\n---\n# Changes\n",
        "changes/one.md": "---\nstatus: done\n---\n# One\n",
    })


def install(root: Path) -> None:
    """`vivary hooks install --hook post-commit`, in process: the hook git runs is the real one."""
    proc = console.run("vivary", "hooks", "install", "--hook", "post-commit", cwd=root)
    assert proc.returncode == 0, proc.stderr


def commit(root: Path, name: str) -> tuple[int, str]:
    (root / name).write_text(name)
    git(root, "add", name)
    proc = subprocess.run(["git", "commit", "-q", "-m", f"add {name}"], cwd=root, capture_output=True,
                          text=True, check=False,
                          env={**os.environ, "GIT_AUTHOR_DATE": f"@{T0} +0000",
                               "GIT_COMMITTER_DATE": f"@{T0} +0000"})
    return proc.returncode, git(root, "rev-parse", "HEAD").strip()
