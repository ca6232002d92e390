"""Commit chains under refs, read through tropo.git.chains, checked against git itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tropo.git.chains import commits_since, ref_names
from tropo.git.repo import require


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.name", "T")
    git(tmp_path, "config", "user.email", "t@example.com")
    for n in range(3):
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", f"c{n}\n\nbody {n}")
    git(tmp_path, "checkout", "-q", "-b", "side", "HEAD~1")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "side")
    git(tmp_path, "checkout", "-q", "main")
    git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge", "side")
    return tmp_path


def test_the_walk_is_gits_topological_order_with_full_messages(repo_dir: Path) -> None:
    repo = require(repo_dir)
    head = git(repo_dir, "rev-parse", "HEAD")
    walked = commits_since(repo, head)
    assert [c for c, _ in walked] == git(repo_dir, "rev-list", "--topo-order", "HEAD").split()
    assert walked[-1][1] == "c0\n\nbody 0\n"


def test_the_walk_stops_at_what_was_seen(repo_dir: Path) -> None:
    repo = require(repo_dir)
    head, seen = git(repo_dir, "rev-parse", "HEAD"), git(repo_dir, "rev-parse", "main~1")
    expected = git(repo_dir, "rev-list", "--topo-order", "HEAD", f"^{seen}").split()
    assert [c for c, _ in commits_since(repo, head, seen)] == expected
    assert commits_since(repo, head, head) == []


def test_ref_names_lists_only_the_prefix_sorted(repo_dir: Path) -> None:
    for name in ("refs/vivary/runs/b/head", "refs/vivary/runs/a/head", "refs/vivary/other"):
        git(repo_dir, "update-ref", name, "HEAD")
    assert ref_names(require(repo_dir), "refs/vivary/runs/") == [
        "refs/vivary/runs/a/head",
        "refs/vivary/runs/b/head",
    ]
