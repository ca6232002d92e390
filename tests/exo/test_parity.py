"""board, conflicts and roles print exactly what vivary-exo 0.3 prints on the same
workspace, in text and JSON (run both side by side; skipped loudly without the oracle)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.coordination import write_workspace
from tests.support.repos import commit_all, git
from tests.support.sides import run_side

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-exo): -m "not slow" leaves it out

EXO = "exo"  # ours, by its console script's name
COMMANDS = [["board"], ["conflicts"], ["roles"]]


def _out(exe: Path | str, args: list[str], root: Path) -> tuple[int, str]:
    """The oracle's script (a path) or ours (`exo`), run as tests/support/sides.py runs them."""
    proc = run_side(exe, [*args, "--root", str(root)], Path.cwd())
    return proc.returncode, proc.stdout


def _assert_same(upstream: Callable[[str], Path], root: Path) -> None:
    oracle = upstream("exo")
    for args in COMMANDS:
        for extra in ([], ["--json"]):
            ours, theirs = _out(EXO, args + extra, root), _out(oracle, args + extra, root)
            assert ours == theirs, (args + extra, ours[1], theirs[1])


@pytest.mark.parametrize("coordination", [True, False])
def test_same_output_as_vivary_exo(
    repo_dir: Path, upstream: Callable[[str], Path], coordination: bool
) -> None:
    write_workspace(repo_dir, coordination)
    commit_all(repo_dir)
    _assert_same(upstream, repo_dir)


def test_same_output_after_a_tree_claim_and_edits(
    repo_dir: Path, upstream: Callable[[str], Path]
) -> None:
    write_workspace(repo_dir)
    commit_all(repo_dir)
    # vivary-exo records a claim in the working tree; both must then read it the same.
    proc = subprocess.run([str(upstream("exo")), "claim", "bravo", "--agent", "@zed",
                           "--root", str(repo_dir)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    (repo_dir / "changes/delta.md").write_text("---\nstatus: active\nmodules: [api]\n---\n")
    (repo_dir / "changes/kilo.md").write_text("---\nstatus: active\ngates: [human]\n---\n")
    _assert_same(upstream, repo_dir)


def test_same_output_with_no_work_items(repo_dir: Path, upstream: Callable[[str], Path]) -> None:
    (repo_dir / "tropo.toml").write_text("version = 1\n")
    (repo_dir / "notes.md").write_text("# Notes\n")
    commit_all(repo_dir)
    _assert_same(upstream, repo_dir)


def test_same_output_on_a_create_vivary_workspace(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    root = tmp_path / "cv"
    subprocess.run([str(upstream("create-vivary")), "init", str(root), "--preset", "coding",
                    "--no-wizard", "--storage", "file", "--json"], capture_output=True,
                   check=True)
    git(root, "init", "-q")
    commit_all(root)
    _assert_same(upstream, root)
