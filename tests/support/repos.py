"""Real git repositories for tests: the `git` program run in a folder, files written and
committed. The git environment itself (HOME, identity) is isolated by tests/conftest.py."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real git binary and return its stdout."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write each relative path's text below `root`, making folders as needed."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit_all(root: Path, message: str = "commit") -> str:
    """Stage everything and commit it; the new commit's id."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()
