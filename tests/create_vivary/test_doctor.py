"""``create-vivary doctor`` on our workspaces and on upstream ones (0.3.x full, 0.4.x thin)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from create_vivary.presets import PRESETS
from hooks import install as installer
from tests.support.cli import run_cli, run_json
from tests.support.repos import commit_all, git
from tests.support.requirements import missing
from tests.support.sides import served
from tests.support.workspaces import scaffold

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)

OLD_FULL = Path(os.environ.get("VIVARY_UPSTREAM03", Path(__file__).parents[2] / ".upstream03"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    scaffold(root, "--yes")
    return root


def doctor(root: Path, *args: str) -> tuple[int, dict[str, object]]:
    return run_json("create-vivary", "doctor", str(root), *args)


def test_a_fresh_workspace_is_healthy(ws: Path) -> None:
    code, out = doctor(ws)
    assert code == 0
    assert out["errors"] == [] and out["warnings"] == [] and out["repairs"] == []
    assert out["contract"] == "vivary-git"
    assert out["hooks"] == {"pre-commit": "installed", "pre-merge-commit": "installed",
                            "pre-push": "installed", "post-commit": "installed"}
    assert out["graph"] == {"nodes": 9, "edges": 24, "broken": 0}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_passes_our_doctor_and_create_vivary_0_4s(
    tmp_path: Path, upstream: Callable[[str], Path], preset: str
) -> None:
    root = tmp_path / preset
    assert run_cli("create-vivary", "init", str(root), "--preset", preset, "--yes",
                   "--commit").returncode == 0
    code, ours = doctor(root)
    assert (code, ours["errors"], ours["warnings"]) == (0, [], [])
    proc = served(upstream("create-vivary"), ["doctor", str(root), "--json"], Path.cwd())
    theirs = json.loads(proc.stdout)
    assert (proc.returncode, theirs["errors"], theirs["warnings"]) == (0, [], [])
    assert theirs["graph"]["broken"] == 0


def test_a_private_file_git_would_commit_is_an_error_repaired_safely(ws: Path) -> None:
    gitignore = ws / ".gitignore"
    gitignore.write_text(gitignore.read_text().replace("USER.md\n", ""))
    code, out = doctor(ws, "--repair")
    assert code == 1
    assert out["errors"] == ["private file not ignored by git: USER.md"]
    assert out["repair"]["mode"] == "dry-run"
    assert [a["kind"] for a in out["repair"]["actions"]] == ["gitignore"]
    assert "USER.md" not in gitignore.read_text()  # a dry run changes nothing
    code, out = doctor(ws, "--repair", "--yes")
    assert code == 0 and out["errors"] == []
    assert [a["status"] for a in out["repair"]["actions"]] == ["applied"]
    assert git(ws, "check-ignore", "USER.md").strip() == "USER.md"


def test_a_tracked_private_file_needs_a_person(ws: Path) -> None:
    git(ws, "add", "-f", "MEMORY.md")
    code, out = doctor(ws, "--repair", "--yes")
    assert code == 1
    assert out["errors"] == ["private file is tracked by git: MEMORY.md"]
    assert any(a["kind"] == "untrack" and a["status"] == "manual" for a in out["repair"]["actions"])


def test_graph_findings_are_errors(ws: Path) -> None:
    (ws / "changes/bad.md").write_text("---\nproject: x\nstatus: nope\nslice: s\n---\n# Bad\n")
    code, out = doctor(ws)
    assert code == 1
    assert len(out["errors"]) == 1 and "changes/bad.md:3: E103" in out["errors"][0]


def test_a_stale_hook_is_a_warning_with_a_safe_repair(ws: Path) -> None:
    installer.install(ws, ("pre-commit",), python="/old/venv/bin/python")
    code, out = doctor(ws)
    assert code == 0 and out["warnings"] == ["hook pre-commit is stale"]
    code, out = doctor(ws, "--repair", "--yes")
    assert out["warnings"] == [] and out["hooks"]["pre-commit"] == "installed"


def test_a_missing_baseline_file_is_added_back(ws: Path) -> None:
    (ws / "SOUL.md").unlink()
    (ws / ".agents/skills/loops/SKILL.md").unlink()
    code, out = doctor(ws, "--repair", "--yes")
    assert code == 0 and out["warnings"] == []
    assert (ws / "SOUL.md").read_text().startswith("# SOUL")
    assert git(ws, "status", "--porcelain") == ""


def test_not_a_workspace(repo_dir: Path, tmp_path: Path) -> None:
    code, out = doctor(repo_dir)
    assert code == 1 and "not a Vivary workspace" in out["errors"][0]
    proc = run_cli("create-vivary", "doctor", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_outside_a_repository_doctor_says_so_in_one_line(tmp_path: Path) -> None:
    """Not a report of "problems" followed by errors: one line, a usage error."""
    folder = tmp_path / "plain"
    folder.mkdir()
    proc = run_cli("create-vivary", "doctor", ".", cwd=folder)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"create-vivary: not a git repository: {folder} (run `git init` there, "
                           f"or `create-vivary adopt {folder}`, which does)\n")
    proc = run_cli("create-vivary", "doctor", ".", "--json", cwd=folder)
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert list(folder.iterdir()) == []


def _committed(root: Path) -> Path:
    if not (root / ".git").exists():
        git(root, "init", "-q")
    commit_all(root, "upstream scaffold")
    return root


def _assert_compatible(root: Path, contract: str) -> None:
    code, out = doctor(root)
    assert code == 0, out["errors"]
    assert out["contract"] == contract
    assert out["warnings"], "an upstream workspace lacks something of ours"
    assert len(out["repairs"]) >= 1
    before = sorted(git(root, "ls-files").split())
    code, out = doctor(root, "--repair", "--yes")
    assert code == 0
    assert out["warnings"] == ["coordination pack missing: claims cannot set assignee"]
    assert sorted(git(root, "ls-files").split()) == before  # repairs only add untracked files
    proc = run_cli("tropo", "check", "--root", str(root))
    assert proc.returncode == 0, proc.stdout


def test_upstream_0_3_full_scaffold_is_compatible(tmp_path: Path) -> None:
    exe = OLD_FULL / "bin" / "create-vivary"
    if not exe.is_file():
        missing(f"create-vivary 0.3.x not installed at {OLD_FULL}: run `make upstream`")
    root = tmp_path / "old"
    subprocess.run(
        [str(exe), "init", str(root), "--no-wizard", "--storage", "file", "--json"],
        check=True,
        capture_output=True,
    )
    _assert_compatible(_committed(root), "full-v0.3")


def test_upstream_0_4_thin_workspace_is_compatible(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    exe = upstream("create-vivary")
    root = tmp_path / "thin"
    subprocess.run(
        [str(exe), "init", str(root), "--auto", "--yes", "--json"], check=True, capture_output=True
    )
    shutil.rmtree(root / ".git", ignore_errors=True)
    _, out = doctor(_committed(root))
    hints = [r["path"] for r in out["repairs"] if r["kind"] == "coordination-pack"]
    assert hints == [".vivary/workspace.toml"]  # the file that holds this schema
    _assert_compatible(root, "thin-v0.3")


def test_a_tracked_private_file_with_its_rule_in_place_adds_no_duplicate_rule(ws: Path) -> None:
    git(ws, "add", "-f", "USER.md")
    before = (ws / ".gitignore").read_text()
    code, out = doctor(ws, "--repair", "--yes")
    assert code == 1 and out["errors"] == ["private file is tracked by git: USER.md"]
    assert (ws / ".gitignore").read_text() == before
    git(ws, "rm", "-q", "--cached", "USER.md")
    assert doctor(ws)[0] == 0
