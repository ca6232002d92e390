"""The CI recipe for the graph check, run exactly as docs/lifecycle.md prints it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import CHANGE, break_ref, run_cli
from tests.support.console import BIN
from tests.support.repos import git
from tests.support.workspaces import scaffold

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)

DOC = Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md"


def recipe() -> str:
    section = DOC.read_text().split("## CI recipe for the graph check", 1)[1]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found is not None, "the recipe's sh block is missing"
    return found.group(1)


def _run_recipe(ci: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BASE_BRANCH": "main", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["sh", "-ec", recipe()], cwd=ci, env=env, capture_output=True,
                          text=True, check=False)


def test_the_documented_recipe_catches_what_no_verify_skipped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scaffold(ws, "--auto", "--yes")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(ws, "remote", "add", "origin", str(bare))
    git(ws, "push", "-q", "origin", "main")
    git(ws, "checkout", "-q", "-b", "pr")
    break_ref(ws)
    git(ws, "commit", "-q", "--no-verify", "-am", "skips the hooks")
    git(ws, "push", "-q", "--no-verify", "origin", "pr")  # skips pre-push too
    ci = tmp_path / "ci"  # what a CI runner has: a fresh clone at the PR's head
    git(tmp_path, "clone", "-q", "--branch", "pr", str(bare), str(ci))
    proc = _run_recipe(ci)
    assert proc.returncode == 1, proc.stderr
    assert f"{CHANGE}:5: error W220" in proc.stdout and "1 finding(s) at HEAD (strict" in proc.stdout
    git(ci, "checkout", "-q", "origin/main")
    clean = _run_recipe(ci)
    assert clean.returncode == 0 and "0 finding(s)" in clean.stdout, clean.stderr
    missing = run_cli("vivary", "hooks", "check", "--base", "origin/nope", "--root", str(ci))
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        "vivary: origin/nope: not a commit here (fetch it first)"]


def test_a_pushed_tag_named_like_the_base_cannot_pass_a_broken_graph(tmp_path: Path) -> None:
    """Issue 25, reproduction 5: a tag ``origin/main`` on a commit that says
    ``mode = "ratchet"`` and already carries the PR's findings. git reads the short name
    as the tag (it only warns), so ``--base origin/main`` judged the broken graph by the
    attacker's base and passed it. The short name is now refused; the recipe's full ref
    judges by the real base."""
    ws = tmp_path / "ws"
    scaffold(ws, "--auto", "--yes")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(ws, "remote", "add", "origin", str(bare))
    git(ws, "push", "-q", "origin", "main")
    git(ws, "checkout", "-q", "-b", "pr")
    break_ref(ws)
    git(ws, "commit", "-q", "--no-verify", "-am", "breaks the graph")
    git(ws, "checkout", "-q", "-b", "attack")
    (ws / ".vivary").mkdir(exist_ok=True)
    (ws / ".vivary" / "hooks.toml").write_text('mode = "ratchet"\n')
    git(ws, "add", ".vivary/hooks.toml")
    git(ws, "commit", "-q", "--no-verify", "-m", "the same findings, already accepted")
    git(ws, "tag", "origin/main")
    git(ws, "push", "-q", "--no-verify", "origin", "pr", "refs/tags/origin/main")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--branch", "pr", str(bare), str(ci))
    assert git(ci, "rev-parse", "origin/main").strip() == git(ws, "rev-parse", "attack").strip()

    old = run_cli("vivary", "hooks", "check", "--base", "origin/main", "--head", "HEAD", "--root", str(ci))
    assert old.returncode == 2, old.stdout + old.stderr  # was 0: the attacker's base passed it
    assert old.stdout == "" and old.stderr.splitlines() == [
        "vivary: 'origin/main' is ambiguous (refs/tags/origin/main, refs/remotes/origin/main): "
        "pass the full ref you mean"]
    assert "refs/remotes/origin/$BASE_BRANCH" in recipe()
    proc = _run_recipe(ci)
    assert proc.returncode == 1, proc.stderr
    assert "1 finding(s) at HEAD (strict" in proc.stdout
