"""``create-vivary init`` end to end: real folders, real git, real hooks."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from create_vivary.presets import PRESETS
from tests.support.cli import CHANGE, run_cli, run_json
from tests.support.console import BIN
from tests.support.repos import git
from tests.support.sides import served


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_dry_run_prints_a_stable_plan_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    code, first = run_json("create-vivary", "init", str(target), "--dry-run")
    assert code == 0 and first["mode"] == "dry-run"
    assert first["plan_hash"].startswith("sha256:")
    assert {f["action"] for f in first["files"]} == {"create"}
    assert first["git_init"] is True
    assert not target.exists()
    _, second = run_json("create-vivary", "init", str(target), "--dry-run")
    assert second["plan_hash"] == first["plan_hash"]
    _, other = run_json("create-vivary", "init", str(target), "--dry-run", "--preset", "writing")
    assert other["plan_hash"] != first["plan_hash"]
    text = run_cli("create-vivary", "init", str(target), "--dry-run").stdout
    assert first["plan_hash"] in text and "create    tropo.toml" in text


def test_auto_init_writes_repo_hooks_and_keeps_private_files_out_of_git(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    code, out = run_json("create-vivary", "init", str(target), "--auto", "--yes")
    assert code == 0 and out["ok"] and out["mode"] == "applied"
    assert out["hooks"] == {"pre-commit": "written", "pre-merge-commit": "written", "pre-push": "written",
                            "post-commit": "written"}
    assert (target / ".git").is_dir()
    assert len(out["written"]) == len(out["files"]) == len(_tree(target))
    ignored = git(target, "check-ignore", "USER.md", "MEMORY.md", ".vivary/private/x.md").split()
    assert ignored == ["USER.md", "MEMORY.md", ".vivary/private/x.md"]
    assert git(target, "status", "--porcelain", "--", "USER.md") == ""
    assert "README.md" in git(target, "status", "--porcelain")


def test_non_empty_folder_is_refused_without_force(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    target.mkdir()
    (target / "notes.md").write_text("mine")
    proc = run_cli("create-vivary", "init", str(target), "--auto", "--yes")
    assert proc.returncode == 1
    assert "not empty" in proc.stderr and "--force" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _tree(target) == {"notes.md": b"mine"}
    assert not (target / ".git").exists()


def test_force_overwrites_scaffold_files_only(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    assert run_cli("create-vivary", "init", str(target), "--yes").returncode == 0
    (target / "STATE.md").write_text("edited\n")
    (target / "mine.txt").write_text("mine\n")
    code, plan = run_json("create-vivary", "init", str(target), "--force", "--dry-run")
    actions = {f["path"]: f["action"] for f in plan["files"]}
    assert actions["STATE.md"] == "overwrite" and actions["README.md"] == "unchanged"
    assert plan["git_init"] is False
    code, _ = run_json("create-vivary", "init", str(target), "--force", "--yes")
    assert code == 0
    assert (target / "STATE.md").read_text().startswith("# STATE")
    assert (target / "mine.txt").read_text() == "mine\n"


def test_symlinks_in_the_target_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "ws"
    target.mkdir()
    (target / "modules").symlink_to(outside)
    proc = run_cli("create-vivary", "init", str(target), "--force", "--yes")
    assert proc.returncode == 1 and "symlink: modules" in proc.stderr
    assert list(outside.iterdir()) == []
    assert os.listdir(target) == ["modules"]
    link = tmp_path / "link"
    link.symlink_to(outside)
    proc = run_cli("create-vivary", "init", str(link), "--yes")
    assert proc.returncode == 1 and "not a real directory" in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--preset", "nope"], "Invalid value"),
        (["--project", "../x"], "invalid project name"),
    ],
)
def test_bad_input_is_a_usage_error(tmp_path: Path, args: list[str], needle: str) -> None:
    proc = run_cli("create-vivary", "init", str(tmp_path / "ws"), "--yes", *args)
    assert proc.returncode == 2 and needle in proc.stderr
    assert not (tmp_path / "ws").exists()


def test_scaffold_passes_the_upstream_checker(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    tropo = upstream("tropo")
    for preset in sorted(PRESETS):
        target = tmp_path / preset
        proc = run_cli("create-vivary", "init", str(target), "--yes", "--preset", preset)
        assert proc.returncode == 0, proc.stderr
        proc = served(tropo, ["check", "--root", str(target), "--json"], Path.cwd())
        assert proc.returncode == 0, proc.stdout
        assert '"findings": []' in proc.stdout
        ours = run_cli("tropo", "check", "--root", str(target), "--json")
        assert ours.returncode == 0 and '"findings": []' in ours.stdout


def test_first_commit_works_without_a_git_identity(tmp_path: Path) -> None:
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    target = tmp_path / "ws"
    proc = subprocess.run(
        [str(BIN / "create-vivary"), "init", str(target), "--yes", "--commit"],
        env={**env, "EMAIL": ""},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert git(target, "log", "--format=%an <%ae>").strip() == "vivary <vivary@localhost>"


def test_init_dot_names_the_project_after_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "my-notes"
    root.mkdir()
    assert run_cli("create-vivary", "init", ".", "--yes", cwd=root).returncode == 0
    assert "project: my-notes\n" in (root / CHANGE).read_text()

def test_a_symlink_on_the_way_is_refused(tmp_path: Path) -> None:
    """Issue 13: `init a/link/ws` with `a/link` a symlink wrote a workspace elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "link").symlink_to(elsewhere)
    for target, cwd in (("a/link/ws", tmp_path), (str(tmp_path / "a/link/deeper/ws"), None)):
        for extra in (["--yes"], ["--dry-run"]):
            proc = run_cli("create-vivary", "init", target, *extra, cwd=cwd)
            assert proc.returncode == 1, proc.stderr
            assert "link is a symlink on the way" in proc.stderr and "Traceback" not in proc.stderr
    assert list(elsewhere.iterdir()) == []
    real = run_cli("create-vivary", "init", str(elsewhere / "ws"), "--yes")
    assert real.returncode == 0, real.stderr
