"""The graph stays checked however commits arrive: clean merges (pre-merge-commit), and
commits that skipped pre-commit (--no-verify, rebase) at push, against a real bare remote."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import CHANGE, break_ref
from tests.support.repos import git
from tests.support.workspaces import made_once, scaffold

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)

EXTRA = "modules/extra.md"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def _pushed(top: Path) -> None:
    """A fresh coding workspace with its default hooks, main pushed to a bare origin, and a
    module ``extra`` that nothing refers to yet: ``top/ws`` and ``top/remote.git``."""
    top.mkdir()
    root = top / "ws"
    scaffold(root, "--auto", "--yes")
    (root / EXTRA).write_text("---\nproject: ws\nstatus: active\nmodule_area: x\n---\n# Extra\n")
    git(root, "add", EXTRA)
    git(root, "commit", "-q", "-m", "extra module")
    bare = top / "remote.git"
    git(top, "init", "-q", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "origin", "main")


@pytest.fixture
def ws(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`_pushed`, built once per process and copied: the copy's origin is its own bare copy."""
    template = made_once("hooks-graph", tmp_path_factory.getbasetemp(), _pushed)
    shutil.copytree(template, tmp_path, symlinks=True, dirs_exist_ok=True)
    root = tmp_path / "ws"
    git(root, "remote", "set-url", "origin", str(tmp_path / "remote.git"))
    return root


def _refer_to_extra(root: Path) -> None:
    text = (root / CHANGE).read_text()
    (root / CHANGE).write_text(text.replace("[codebase, agent-workspace]",
                                            "[codebase, agent-workspace, extra]"))
    git(root, "commit", "-q", "-am", "the change touches extra too")


def _drop_extra(root: Path) -> None:
    git(root, "rm", "-q", EXTRA)
    git(root, "commit", "-q", "-m", "extra is gone")


def test_a_clean_merge_that_breaks_a_ref_is_refused(ws: Path) -> None:
    """Each side is clean; together the change refers to a module that is gone."""
    assert (ws / ".git/hooks/pre-merge-commit").exists()
    git(ws, "checkout", "-q", "-b", "side")
    _refer_to_extra(ws)
    git(ws, "checkout", "-q", "main")
    _drop_extra(ws)
    before = git(ws, "rev-parse", "HEAD").strip()
    proc = _git(ws, "merge", "--no-edit", "side")
    assert proc.returncode != 0
    assert f"{CHANGE}:5:" in proc.stderr and "extra" in proc.stderr
    assert "merge refused: 1 finding(s)" in proc.stderr
    assert git(ws, "rev-parse", "HEAD").strip() == before


def test_a_no_verify_commit_is_refused_at_push_with_file_and_line(ws: Path) -> None:
    bare = ws.parent / "remote.git"
    pushed = git(bare, "rev-parse", "main").strip()
    break_ref(ws)
    git(ws, "commit", "-q", "--no-verify", "-am", "skipped the hook")
    proc = _git(ws, "push", "-q", "origin", "main")
    assert proc.returncode != 0
    assert f"graph: {CHANGE}:5: error W220" in proc.stderr and "no-such-module" in proc.stderr
    assert "(main at " in proc.stderr and "push refused: 1 problem(s)" in proc.stderr
    assert git(bare, "rev-parse", "main").strip() == pushed
    # A new branch with the same commit is caught too (judged against what origin has).
    assert _git(ws, "push", "-q", "origin", "main:refs/heads/topic").returncode != 0
    assert _git(bare, "rev-parse", "--verify", "-q", "topic").returncode != 0
    git(ws, "checkout", "-q", CHANGE)  # nothing pending; deleting a branch is never checked
    git(ws, "reset", "-q", "--hard", "HEAD~1")
    assert _git(ws, "push", "-q", "origin", "main:refs/heads/topic").returncode == 0
    assert _git(ws, "push", "-q", "origin", ":refs/heads/topic").returncode == 0


def test_a_rebased_commit_is_refused_at_push(ws: Path) -> None:
    """Rebase replays commits without pre-commit: the replayed tip breaks a ref."""
    git(ws, "checkout", "-q", "-b", "side")
    _refer_to_extra(ws)
    git(ws, "push", "-q", "origin", "side")  # clean on its own: accepted
    git(ws, "checkout", "-q", "main")
    _drop_extra(ws)
    git(ws, "push", "-q", "origin", "main")  # clean on its own: accepted
    git(ws, "checkout", "-q", "side")
    git(ws, "rebase", "-q", "main")
    proc = _git(ws, "push", "-q", "--force", "origin", "side")
    assert proc.returncode != 0 and f"{CHANGE}:5:" in proc.stderr and "extra" in proc.stderr
    assert "(side at " in proc.stderr
