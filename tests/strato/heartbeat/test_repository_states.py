"""Repository states a heartbeat must survive: detached HEAD, shallow clone, a rebase
stopped on a conflict. It proposes, and changes nothing of the person's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from strato.heartbeat import engine
from strato.proposals.settings import Settings
from tests.support.heartbeat import T0, commit_at
from tests.support.repos import git


def snapshot(root: Path) -> tuple[str, str, str]:
    return (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), git(root, "stash", "list"))


def test_detached_head(ws: Path) -> None:
    commit_at(ws, T0, "fix(db): one", {"db.py": "1"})
    commit_at(ws, T0, "fix(db): two", {"db.py": "2"})
    git(ws, "checkout", "-q", "--detach", "HEAD")
    before = snapshot(ws)
    result = engine.run(ws, Settings(), now=T0)
    assert result["counts"]["new_by_kind"]["playbook"] == 1 and snapshot(ws) == before


def test_shallow_clone_reads_the_history_it_has(ws: Path, tmp_path: Path) -> None:
    for n in range(5):
        commit_at(ws, T0, f"fix(db): bug {n}", {"db.py": str(n)})
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{ws}", str(clone)], check=True)
    result = engine.run(clone, Settings(), now=T0)
    assert result["commits"] == 2 and result["counts"]["new_by_kind"]["playbook"] == 1


def test_rebase_stopped_on_a_conflict(ws: Path) -> None:
    commit_at(ws, T0, "base", {"f.txt": "base\n"})
    git(ws, "checkout", "-q", "-b", "topic")
    commit_at(ws, T0, "topic", {"f.txt": "topic\n"})
    git(ws, "checkout", "-q", "-")
    commit_at(ws, T0, "main", {"f.txt": "main\n"})
    git(ws, "checkout", "-q", "topic")
    assert subprocess.run(["git", "rebase", "-q", "main"], cwd=ws, capture_output=True).returncode != 0
    before = snapshot(ws), (ws / "f.txt").read_text()
    engine.run(ws, Settings(), now=T0)
    assert (snapshot(ws), (ws / "f.txt").read_text()) == before
    assert (ws / ".git" / "rebase-merge").is_dir()  # the rebase is still the person's to finish
