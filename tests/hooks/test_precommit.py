"""The pre-commit hook on a real workspace: it checks what the commit would record."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import CHANGE, break_ref, run_cli
from tests.support.repos import git
from tests.support.workspaces import scaffold

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A fresh coding workspace, committed through its own hooks."""
    root = tmp_path / "ws"
    return scaffold(root, "--auto", "--yes")


def commit(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", "-m", "change", *args],
        cwd=cwd or root,
        capture_output=True,
        text=True,
        check=False,
    )


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def test_the_first_commit_went_through_the_hooks(ws: Path) -> None:
    assert git(ws, "log", "--format=%s").strip().startswith("Vivary workspace (coding")
    assert git(ws, "status", "--porcelain") == ""
    tracked = git(ws, "ls-files").split()
    assert "tropo.toml" in tracked and "USER.md" not in tracked and "MEMORY.md" not in tracked
    proc = run_cli("tropo", "check", "--root", str(ws), "--json")
    assert proc.returncode == 0 and '"findings": []' in proc.stdout


def test_a_broken_ref_is_refused_naming_file_and_line(ws: Path) -> None:
    before = head(ws)
    break_ref(ws)
    git(ws, "add", CHANGE)
    proc = commit(ws)
    assert proc.returncode != 0
    assert f"{CHANGE}:5:" in proc.stderr and "no-such-module" in proc.stderr
    assert "commit refused: 1 finding" in proc.stderr
    assert head(ws) == before
    fix = (ws / CHANGE).read_text().replace("[codebase, no-such-module]", "[codebase]")
    (ws / CHANGE).write_text(fix)
    git(ws, "add", CHANGE)
    assert commit(ws).returncode == 0
    assert head(ws) != before


def test_a_refusal_shows_the_documents_escape_sequences_as_text(ws: Path) -> None:
    """Issue 25: a finding quotes what the document says, which its author chose."""
    text = (ws / CHANGE).read_text()
    (ws / CHANGE).write_text(text.replace("[codebase, agent-workspace]", '[codebase, "x\\e]52;c;cm0=\\a\\u034f"]'))
    git(ws, "add", CHANGE)
    proc = commit(ws)
    assert proc.returncode != 0 and "U+034F" in proc.stderr, proc.stderr
    assert not [c for c in "\x1b\x07\u034f" if c in proc.stderr], proc.stderr


def test_only_the_staged_snapshot_counts(ws: Path) -> None:
    good = ws / "changes/second.md"
    good.write_text(
        "---\nproject: ws\nstatus: planned\nslice: two\nrelated_modules: [codebase]\n---\n# Two\n"
    )
    git(ws, "add", "changes/second.md")
    break_ref(ws)  # broken in the working tree only
    assert commit(ws).returncode == 0
    assert "second.md" in git(ws, "show", "--name-only", "HEAD")
    git(ws, "add", CHANGE)  # now the break is staged ...
    (ws / CHANGE).write_text(git(ws, "show", f"HEAD:{CHANGE}"))  # ... but not in the tree
    proc = commit(ws)
    assert proc.returncode != 0 and "no-such-module" in proc.stderr


def test_commit_all_checks_what_it_would_record(ws: Path) -> None:
    before = head(ws)
    break_ref(ws)  # not staged: only `commit -a` puts it in the commit
    proc = commit(ws, "-a")
    assert proc.returncode != 0 and "no-such-module" in proc.stderr
    assert head(ws) == before
    proc = commit(ws, "--", CHANGE)
    assert proc.returncode != 0 and "no-such-module" in proc.stderr
    assert head(ws) == before


def test_hooks_work_from_a_subdirectory(ws: Path) -> None:
    break_ref(ws)
    sub = ws / "modules" / "codebase"
    git(sub, "add", "../../" + CHANGE)
    proc = commit(ws, cwd=sub)
    assert proc.returncode != 0 and f"{CHANGE}:5:" in proc.stderr


def test_a_pre_existing_hook_still_runs_alongside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    hook = root / ".git/hooks/pre-commit"
    hook.write_text('#!/bin/sh\necho mine >> "$(git rev-parse --git-dir)/marks"\n')
    hook.chmod(0o755)
    proc = run_cli("create-vivary", "init", str(root), "--yes", "--commit", "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"pre-commit": "chained"' in proc.stdout
    assert (root / ".git/marks").read_text() == "mine\n"
    break_ref(root)
    proc = commit(root, "-a")
    assert proc.returncode != 0 and "no-such-module" in proc.stderr
    assert (root / ".git/marks").read_text() == "mine\nmine\n"


def test_a_missing_schema_refuses_the_commit(ws: Path) -> None:
    git(ws, "rm", "-q", "tropo.toml")
    proc = commit(ws)
    assert proc.returncode != 0 and "commit refused" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_workspace_cannot_shadow_the_hook_code(ws: Path) -> None:
    (ws / "hooks").mkdir()
    (ws / "hooks/__init__.py").write_text("raise SystemExit(99)\n")
    (ws / "bisect.py").write_text("raise SystemExit(98)\n")
    git(ws, "add", "hooks", "bisect.py")
    proc = commit(ws)
    assert proc.returncode == 0, proc.stderr


def refuse_staged(root: Path) -> list[str]:
    return [f"{len(git(root, 'diff', '--cached', '--name-only').split())} staged"]


def test_registered_checks_refuse_in_one_line_each(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from hooks import precommit, registry

    (ws / "x.txt").write_text("x\n")
    git(ws, "add", "x.txt")
    assert precommit.main(ws) == 0
    monkeypatch.setitem(registry.PRE_COMMIT, "zz", f"{__name__}:refuse_staged")
    assert precommit.main(ws, "merge") == 1
    assert capsys.readouterr().err == "vivary: merge refused: zz: 1 staged (or bypass once with --no-verify)\n"
