"""`.vivary/hooks.toml` with `mode = "ratchet"`: on a workspace adopted with old findings,
hooks refuse only new ones; the mode is taken from the base revision, not the commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.repos import git
from tests.support.workspaces import scaffold

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)

OLD = "changes/old.md"
CLEAN = "modules/codebase/index.md"
OLD_TEXT = "---\nproject: ws\nstatus: planned\nrelated_modules: [gone, gone]\n---\n# Old\n"


def _commit(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", "edit", *args], cwd=root,
                          capture_output=True, text=True, check=False)


def _edit_line(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))
    git(root, "add", rel)


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    """A workspace whose history already holds two findings (committed past the hooks)."""
    root = tmp_path / "ws"
    scaffold(root, "--auto", "--yes")
    (root / OLD).write_text(OLD_TEXT)
    git(root, "add", OLD)
    git(root, "commit", "-q", "--no-verify", "-m", "old findings")
    return root


def test_strict_is_the_default_and_a_commit_cannot_loosen_its_own_check(messy: Path) -> None:
    _edit_line(messy, CLEAN, "# Codebase", "# Codebase, renamed")
    assert _commit(messy).returncode == 1  # strict: the old findings refuse every commit
    (messy / ".vivary").mkdir(exist_ok=True)
    (messy / ".vivary/hooks.toml").write_text('mode = "ratchet"\n')
    git(messy, "add", ".vivary/hooks.toml")
    proc = _commit(messy)
    assert proc.returncode == 1 and "3 finding(s)" in proc.stderr  # HEAD says strict


def test_ratchet_refuses_only_new_findings(messy: Path) -> None:
    (messy / ".vivary").mkdir(exist_ok=True)
    (messy / ".vivary/hooks.toml").write_text('mode = "ratchet"\n')
    git(messy, "add", ".vivary/hooks.toml")
    git(messy, "commit", "-q", "--no-verify", "-m", "hooks: ratchet")
    bare = messy.parent / "remote.git"
    git(messy.parent, "init", "-q", "--bare", str(bare))
    git(messy, "remote", "add", "origin", str(bare))
    git(messy, "push", "-q", "--no-verify", "origin", "main")
    # Old work under a new branch name has nothing new: the remote already has it all.
    assert subprocess.run(["git", "push", "-q", "origin", "main:refs/heads/copy"], cwd=messy,
                          check=False).returncode == 0
    # A one-line edit to a clean file commits, and pushes.
    _edit_line(messy, CLEAN, "# Codebase", "# Codebase, renamed")
    assert _commit(messy).returncode == 0
    assert subprocess.run(["git", "push", "-q", "origin", "main"], cwd=messy,
                          check=False).returncode == 0
    # Old findings may move lines.
    _edit_line(messy, OLD, "status: planned\n", "status: planned\nslice: moved down\n")
    assert _commit(messy).returncode == 0, "line moves of old findings are not new"
    # A new broken ref in a clean file is refused, naming only it.
    _edit_line(messy, CLEAN, "related_changes: [local-ci-baseline]",
               "related_changes: [local-ci-baseline, nowhere]")
    proc = _commit(messy)
    assert proc.returncode == 1 and "commit refused: 1 new finding(s)" in proc.stderr
    assert f"{CLEAN}:" in proc.stderr and "nowhere" in proc.stderr and OLD not in proc.stderr
    git(messy, "checkout", "-q", "HEAD", "--", CLEAN)
    # A third copy of an old finding is one new finding.
    _edit_line(messy, OLD, "[gone, gone]", "[gone, gone, gone]")
    proc = _commit(messy)
    assert proc.returncode == 1 and "1 new finding(s)" in proc.stderr
    # At push, new is judged against the remote's tip: a skipped hook is caught there.
    git(messy, "commit", "-q", "--no-verify", "-m", "skipped")
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=messy,
                          capture_output=True, text=True, check=False)
    assert push.returncode == 1 and push.stderr.count(f"graph: {OLD}:") == 1


def test_a_bad_mode_is_one_line(messy: Path) -> None:
    (messy / ".vivary").mkdir(exist_ok=True)
    (messy / ".vivary/hooks.toml").write_text('mode = "lenient"\n')
    git(messy, "add", ".vivary/hooks.toml")
    git(messy, "commit", "-q", "--no-verify", "-m", "bad mode")
    _edit_line(messy, CLEAN, "# Codebase", "# Codebase, renamed")
    proc = _commit(messy)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"vivary: commit refused: .vivary/hooks.toml at {git(messy, 'rev-parse', 'HEAD')[:12]}: "
        "mode must be one of strict, ratchet, not 'lenient'"]
