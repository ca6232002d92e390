"""``create-vivary init --minimal``: the thin seed, its refusals (one line, the suite's
exit codes, nothing changed), ``--commit`` on top, and our presets untouched by it."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from create_vivary import thin
from tests.support.cli import run_cli
from tests.support.console import BIN
from tests.support.repos import git
from tests.support.requirements import missing
from tests.support.trees import tree


def _unwritable(tmp_path: Path) -> Path:
    """A folder whose parent refuses new entries, for root as for anyone else."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro / "ws"
    try:
        os.rmdir(tempfile.mkdtemp(dir="/sys"))
    except OSError:
        return Path("/sys/vivary-test-ws")
    missing("no read-only place to init into (/sys is writable here)")


def test_the_seed_is_five_files_and_a_skill_per_adapter(tmp_path: Path) -> None:
    proc = run_cli("create-vivary", "init", str(tmp_path / "ws"), "--minimal", "--adapter", "claude",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["contract"], report["files"], report["adapters"]) == ("thin-v0.3", 6, ["claude"])
    files = sorted(p.relative_to(tmp_path / "ws").as_posix()
                   for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert files == [".claude/skills/vivary/SKILL.md", ".gitignore", ".vivary/context.md",
                     ".vivary/workspace.toml", "AGENTS.md", "STATE.md"]
    assert not (tmp_path / "ws" / ".git").exists()  # 0.4.3's init makes no repository


def test_dry_run_writes_nothing_and_counts_the_configs(tmp_path: Path) -> None:
    proc = run_cli("create-vivary", "init", str(tmp_path / "ws"), "--minimal", "--storage", "cloud",
                   "--memory", "local", "--dry-run")
    assert (proc.returncode, proc.stdout.strip()) == (
        0, f"create-vivary: would write 7 file(s) to {tmp_path / 'ws'}")
    assert list(tmp_path.iterdir()) == []


def test_minimal_commit_makes_a_repository_with_our_hooks(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    proc = run_cli("create-vivary", "init", str(ws), "--minimal", "--commit", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["commit"] == git(ws, "rev-parse", "HEAD").strip()
    assert set(report["hooks"]) >= {"pre-commit", "pre-push"}
    assert sorted(git(ws, "ls-files").split()) == [".gitignore", ".vivary/context.md",
                                                   ".vivary/workspace.toml", "AGENTS.md", "STATE.md"]
    doctor = run_cli("create-vivary", "doctor", str(ws), "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["errors"] == []


def test_our_presets_are_still_the_default(tmp_path: Path) -> None:
    assert run_cli("create-vivary", "init", str(tmp_path / "ws"), "--yes").returncode == 0
    assert (tmp_path / "ws" / "tropo.toml").is_file() and (tmp_path / "ws" / ".git").is_dir()


@pytest.mark.parametrize("option", [["--adapter", "claude"], ["--memory", "local"],
                                    ["--storage", "cloud"], ["--no-wizard"],
                                    ["--active-context", "cocoindex-code"]])
def test_a_seed_option_without_minimal_is_a_usage_error(tmp_path: Path, option: list[str]) -> None:
    proc = run_cli("create-vivary", "init", str(tmp_path / "ws"), *option)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--minimal" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def _refusal(tmp_path: Path, target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    before = tree(tmp_path)
    proc = run_cli("create-vivary", "init", str(target), "--minimal", *args)
    assert tree(tmp_path) == before, "a refused init changed the tree"
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    return proc


def test_a_non_empty_folder_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.md").write_text("# mine\n")
    for extra in ([], ["--force"]):
        proc = _refusal(tmp_path, tmp_path / "ws", *extra)
        assert proc.returncode == 1 and "create-vivary adopt" in proc.stderr


def test_a_file_where_the_folder_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").write_text("a file\n")
    assert _refusal(tmp_path, tmp_path / "ws").returncode == 1
    assert _refusal(tmp_path, tmp_path / "ws" / "inner").returncode == 1


def test_a_missing_parent_and_a_symlink_on_the_way_are_refused(tmp_path: Path) -> None:
    assert "ancestor does not exist" in _refusal(tmp_path, tmp_path / "a" / "ws").stderr
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert "symlink" in _refusal(tmp_path, tmp_path / "link" / "ws").stderr


def test_an_unwritable_place_is_refused_and_rolled_back(tmp_path: Path) -> None:
    target = _unwritable(tmp_path)
    proc = _refusal(tmp_path, target)
    assert proc.returncode == 1 and "rolled back" in proc.stderr
    assert not target.exists()


def test_unknown_and_repeated_adapters(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    unknown = run_cli("create-vivary", "init", str(ws), "--minimal", "--adapter", "cursor")
    assert unknown.returncode == 2 and "'cursor' is not one of" in unknown.stderr
    twice = _refusal(tmp_path, ws, "--adapter", "claude", "--adapter", "claude")
    assert twice.returncode == 1 and "only once" in twice.stderr
    coding_only = _refusal(tmp_path, ws, "--preset", "writing", "--active-context", "cocoindex-code")
    assert coding_only.returncode == 1 and "coding preset" in coding_only.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_failed_doctor_after_writing_takes_the_seed_back(tmp_path: Path) -> None:
    """The seed is checked once written, and anything failing then undoes the init: here
    git, which doctor asks about the ignore rules, cannot read its configuration."""
    ws = tmp_path / "ws"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(tmp_path / "broken.gitconfig")}
    (tmp_path / "broken.gitconfig").write_text("[core\n")
    proc = subprocess.run([str(BIN / "create-vivary"), "init", str(ws), "--minimal"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert not ws.exists()


def test_the_memory_rules_are_the_only_difference_from_0_4_3s_gitignore() -> None:
    plain = thin.seed("ws", "coding", (), None)[".gitignore"].decode()
    assert plain.startswith("# >>> vivary private/runtime >>>")
    assert "memory/*" in thin.MEMORY_RULES and "memory/*" not in plain


def test_our_preset_init_refuses_an_unwritable_place_in_one_line_too(tmp_path: Path) -> None:
    target = _unwritable(tmp_path)
    before = tree(tmp_path)
    proc = run_cli("create-vivary", "init", str(target), "--yes")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert tree(tmp_path) == before and not target.exists()
