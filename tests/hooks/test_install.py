"""The installer against real repositories: chaining, core.hooksPath, idempotence."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hooks import install as installer
from hooks.scripts import DEFAULT_HOOKS
from tests.support.cli import CHANGE, break_ref, run_cli, run_json
from tests.support.console import BIN
from tests.support.repos import commit_all, git, write_files
from tests.support.workspaces import scaffold

MARK_HOOK = '#!/bin/sh\necho "$0 ran" >> "$(git rev-parse --show-toplevel)/.git/marks"\n'


def _hook(root: Path, name: str, text: str, hooks: str = ".git/hooks") -> Path:
    path = root / hooks / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_install_writes_executable_hooks_and_is_idempotent(repo_dir: Path) -> None:
    code, out = run_json("vivary", "hooks", "install", "--root", str(repo_dir))
    assert code == 0
    assert out["hooks"] == {"pre-commit": "written", "pre-merge-commit": "written", "pre-push": "written",
                            "post-commit": "written"}
    hook = repo_dir / ".git/hooks/pre-commit"
    assert hook.stat().st_mode & stat.S_IXUSR
    first = hook.read_bytes()
    code, out = run_json("vivary", "hooks", "install", "--root", str(repo_dir))
    assert out["hooks"] == {"pre-commit": "unchanged", "pre-merge-commit": "unchanged", "pre-push": "unchanged",
                            "post-commit": "unchanged"}
    assert hook.read_bytes() == first
    code, out = run_json("vivary", "hooks", "status", "--root", str(repo_dir))
    assert code == 0
    assert [h["state"] for h in out["hooks"]] == ["installed"] * 4


def test_status_tells_absent_foreign_and_stale(repo_dir: Path) -> None:
    code, out = run_json("vivary", "hooks", "status", "--root", str(repo_dir))
    assert code == 1
    assert [h["state"] for h in out["hooks"]] == ["absent"] * 4
    _hook(repo_dir, "pre-commit", "#!/bin/sh\nexit 0\n")
    installer.install(repo_dir, ("pre-push",), python="/somewhere/else/python")
    code, out = run_json("vivary", "hooks", "status", "--root", str(repo_dir))
    assert code == 1
    assert [h["state"] for h in out["hooks"]] == ["foreign", "absent", "stale", "absent"]
    code, out = run_json("vivary", "hooks", "install", "--root", str(repo_dir))
    assert out["hooks"] == {"pre-commit": "chained", "pre-merge-commit": "written",
                            "pre-push": "written", "post-commit": "written"}
    code, out = run_json("vivary", "hooks", "status", "--root", str(repo_dir))
    assert code == 0
    assert [(h["state"], h["chained"]) for h in out["hooks"]] == [
        ("installed", True),
        ("installed", False),
        ("installed", False),
        ("installed", False),
    ]


def test_existing_hook_keeps_running_and_uninstall_restores_it(repo_dir: Path) -> None:
    original = _hook(repo_dir, "post-commit", MARK_HOOK)
    assert run_cli("vivary", "hooks", "install", "--hook", "post-commit", cwd=repo_dir).returncode == 0
    assert "vivary-hook" in original.read_text()
    write_files(repo_dir, {"a.txt": "a\n"})
    commit_all(repo_dir)
    assert (repo_dir / ".git/marks").read_text().count("ran") == 1
    proc = run_cli("vivary", "hooks", "uninstall", "--json", cwd=repo_dir)
    assert '"post-commit": "restored"' in proc.stdout
    assert original.read_text() == MARK_HOOK
    assert not (repo_dir / ".git/hooks/post-commit.vivary-chained").exists()


def test_a_failing_chained_hook_refuses_the_commit(repo_dir: Path) -> None:
    _hook(repo_dir, "pre-push", "#!/bin/sh\necho nope >&2\nexit 3\n")
    bare = repo_dir.parent / "remote.git"
    git(repo_dir.parent, "init", "-q", "--bare", str(bare))
    git(repo_dir, "remote", "add", "origin", str(bare))
    installer.install(repo_dir, ("pre-push",))
    write_files(repo_dir, {"a.txt": "a\n"})
    commit_all(repo_dir)
    proc = run_git_push(repo_dir)
    assert proc.returncode != 0
    assert "nope" in proc.stderr and "chained hook" in proc.stderr
    assert git(bare, "branch", "--list") == ""


def run_git_push(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", "origin", "main"], cwd=root, capture_output=True, text=True)


def test_core_hooks_path_is_respected(repo_dir: Path) -> None:
    git(repo_dir, "config", "core.hooksPath", ".githooks")
    _hook(repo_dir, "pre-commit", "#!/bin/sh\nexit 0\n", hooks=".githooks")
    _code, out = run_json("vivary", "hooks", "install", cwd=repo_dir)
    assert out["hooks"]["pre-commit"] == "chained"
    assert (repo_dir / ".githooks/pre-commit.vivary-chained").is_file()
    assert "vivary-hook" in (repo_dir / ".githooks/pre-push").read_text()
    assert not (repo_dir / ".git/hooks/pre-push").exists()
    run_cli("vivary", "hooks", "uninstall", cwd=repo_dir)
    assert sorted(os.listdir(repo_dir / ".githooks")) == ["pre-commit"]


def test_conflicting_chain_slot_is_refused_and_nothing_changes(repo_dir: Path) -> None:
    _hook(repo_dir, "pre-commit", "#!/bin/sh\nexit 0\n")
    _hook(repo_dir, "pre-commit.vivary-chained", "#!/bin/sh\nexit 1\n")
    before = sorted(os.listdir(repo_dir / ".git/hooks"))
    proc = run_cli("vivary", "hooks", "install", cwd=repo_dir)
    assert proc.returncode == 1
    assert "merge them by hand" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(os.listdir(repo_dir / ".git/hooks")) == before


def test_outside_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("vivary", "hooks", "status", "--root", str(tmp_path))
    assert proc.returncode == 2
    assert "not a git work tree" in proc.stderr


@pytest.mark.parametrize("cmd", ["install", "uninstall", "status"])
def test_help_has_an_example(cmd: str) -> None:
    assert "Example:" in run_cli("vivary", "hooks", cmd, "--help").stdout


def test_uninstall_restores_a_chained_hook_even_if_ours_was_deleted(repo_dir: Path) -> None:
    _hook(repo_dir, "pre-commit", MARK_HOOK)
    installer.install(repo_dir, ("pre-commit",))
    (repo_dir / ".git/hooks/pre-commit").unlink()
    assert installer.uninstall(repo_dir, ("pre-commit",)) == ["restored"]
    assert (repo_dir / ".git/hooks/pre-commit").read_text() == MARK_HOOK


def _path_without_vivary() -> str:
    """This process's PATH less every folder that holds a `vivary` (git and sh stay)."""
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not (Path(d) / "vivary").exists())


def _gone_venv_hook(repo_dir: Path, tmp_path: Path) -> Path:
    """Install pre-commit from a virtualenv's Python, then remove that virtualenv."""
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.symlink_to(sys.executable)
    installer.install(repo_dir, ("pre-commit",), python=str(python))
    python.unlink()
    venv.rmdir()
    return python


def _commit(repo_dir: Path, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=repo_dir, capture_output=True,
                          text=True, check=False, env={**os.environ, "PATH": path})


def test_a_removed_virtualenv_and_no_vivary_on_path_refuse_with_the_fix(repo_dir: Path, tmp_path: Path) -> None:
    """Issue 13: after the installing virtualenv was removed, every commit failed with
    `exec: .../bin/python: not found`. With no `vivary` on PATH either, no check can run,
    so the commit is refused (a strict check never passes by being absent), in one line."""
    write_files(repo_dir, {"tropo.toml": "version = 1\n", "a.txt": "a\n"})
    git(repo_dir, "add", "-A")
    python = _gone_venv_hook(repo_dir, tmp_path)
    proc = _commit(repo_dir, _path_without_vivary())
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"vivary: pre-commit hook: its Python {python} is gone and no `vivary` is on PATH; "
        "run `vivary hooks install` (or bypass once with --no-verify)"]
    code, out = run_json("vivary", "hooks", "status", "--root", str(repo_dir), "--hook",
                         "pre-commit")
    assert code == 1 and out["hooks"][0]["state"] == "stale"
    assert "is gone; " in out["hooks"][0]["problem"]
    assert out["hooks"][0]["problem"].endswith("; run `vivary hooks install` (or bypass once with --no-verify)")
    text = run_cli("vivary", "hooks", "status", "--root", str(repo_dir), "--hook", "pre-commit")
    assert f"its Python {python} is gone" in text.stdout
    assert run_cli("vivary", "hooks", "install", "--root", str(repo_dir)).returncode == 0
    assert _commit(repo_dir, _path_without_vivary()).returncode == 0


def test_a_removed_virtualenv_falls_back_to_the_vivary_on_path(tmp_path: Path) -> None:
    """Issue 26: the hooks outlive their venv. The `vivary` on PATH (here this test's
    own) runs the same check: a broken ref is still refused, a clean commit goes through."""
    repo_dir = tmp_path / "ws"
    scaffold(repo_dir, "--auto", "--yes")
    break_ref(repo_dir)
    git(repo_dir, "add", "-A")
    python = _gone_venv_hook(repo_dir, tmp_path)
    path = f"{BIN}{os.pathsep}{_path_without_vivary()}"
    refused = _commit(repo_dir, path)
    assert refused.returncode == 1 and "no-such-module" in refused.stderr, refused.stderr
    git(repo_dir, "checkout", "HEAD", "--", CHANGE)
    write_files(repo_dir, {"notes.txt": "clean\n"})
    git(repo_dir, "add", "-A")
    assert _commit(repo_dir, path).returncode == 0
    status = subprocess.run([str(BIN / "vivary"), "hooks", "status", "--root", str(repo_dir), "--hook", "pre-commit"],
                            capture_output=True, text=True, check=False, env={**os.environ, "PATH": path})
    assert f"its Python {python} is gone; it runs {BIN / 'vivary'} instead;" in status.stdout


def test_a_vivary_in_the_work_tree_is_never_the_fallback(repo_dir: Path, tmp_path: Path) -> None:
    """With `.` on PATH, `command -v vivary` would find a file the repository holds: the
    hook would run code the commit's author chose. Only an absolute PATH entry counts."""
    write_files(repo_dir, {"tropo.toml": "version = 1\n"})
    _hook(repo_dir, "vivary", '#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/.git/pwned"\nexit 0\n', hooks=".")
    git(repo_dir, "add", "-A")
    python = _gone_venv_hook(repo_dir, tmp_path)
    proc = _commit(repo_dir, f".{os.pathsep}{_path_without_vivary()}")
    assert proc.returncode == 1 and not (repo_dir / ".git/pwned").exists()
    assert proc.stderr.startswith(f"vivary: pre-commit hook: its Python {python} is gone and no `vivary` is on PATH")


def test_the_lifecycle_doc_names_the_hooks_installed_by_default() -> None:
    """docs/lifecycle.md once said post-commit was installed only on request; it is a default."""
    doc = (Path(__file__).parents[2] / "docs" / "lifecycle.md").read_text()
    line = next(p for p in doc.split("\n- ") if p.startswith("**Default hooks**"))
    named = line.split(":", 1)[1].split("(", 1)[0].replace(" and ", ", ").split(",")
    assert tuple(n.strip() for n in named) == DEFAULT_HOOKS
    assert "on request" not in line
