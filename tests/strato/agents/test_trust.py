"""`strato.agents.trust`, the store of approvals: exact bytes per repository (its real path) and
name, kept in the user's config folder; whole-or-nothing writes under a lock, so
concurrent approvals all stay and a damaged store approves nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from strato.agents import trust

AGENTS = b'[agents.mine]\nargv = ["python3", "-c", "print(1)", "{prompt}"]\n'
NAME = ".vivary/agents.toml"


def test_exact_bytes_are_approved_and_a_change_is_refused(repo_dir: Path) -> None:
    with pytest.raises(trust.Untrusted, match="not approved for this repository; it would run x"):
        trust.require_file(repo_dir, NAME, AGENTS, "x")
    row = trust.approve(repo_dir, "file", NAME, AGENTS)
    assert row.sha256 == trust.digest(AGENTS) and row.repository == str(repo_dir.resolve())
    trust.require_file(repo_dir, NAME, AGENTS, "x")
    assert trust.approved_bytes(row) == AGENTS
    with pytest.raises(trust.Untrusted, match="changed since you approved it") as caught:
        trust.require_file(repo_dir, NAME, AGENTS + b"#\n", "x")
    assert caught.value.name == NAME and "`vivary trust --show .vivary/agents.toml`" in str(caught.value)
    assert not trust.is_approved(repo_dir, "file", "other.toml", AGENTS)  # per name
    assert trust.revoke(repo_dir, "file", NAME) is True
    assert trust.revoke(repo_dir, "file", NAME) is False
    assert trust.approved(repo_dir, "file", NAME) is None


def test_specs_and_policies_are_approved_by_content(repo_dir: Path, tmp_path: Path) -> None:
    trust.approve(repo_dir, "spec", "flows/a.yaml", b"spec")
    assert trust.is_approved_digest(repo_dir, "spec", trust.digest(b"spec"))
    assert not trust.is_approved_digest(repo_dir, "guard-policy", trust.digest(b"spec"))
    other = tmp_path / "other"
    other.mkdir()
    assert not trust.is_approved_digest(other, "spec", trust.digest(b"spec"))  # per repository


def test_a_repository_is_its_real_path(repo_dir: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(repo_dir)
    trust.approve(link, "file", NAME, AGENTS)
    assert trust.is_approved(repo_dir, "file", NAME, AGENTS)


def test_a_moved_repository_is_asked_again_and_told_why(repo_dir: Path, tmp_path: Path) -> None:
    trust.approve(repo_dir, "file", NAME, AGENTS)
    moved = tmp_path / "moved"
    shutil.move(repo_dir, moved)
    with pytest.raises(trust.Untrusted) as caught:
        trust.require_file(moved, NAME, AGENTS, "x")
    assert f"approved at {repo_dir}, which is gone" in str(caught.value)
    repo_dir.mkdir()  # something else now lives at the old path: no hint, still refused
    with pytest.raises(trust.Untrusted) as caught:
        trust.require_file(moved, NAME, AGENTS, "x")
    assert "which is gone" not in str(caught.value)


def test_the_store_is_private_and_outside_the_repository(repo_dir: Path) -> None:
    trust.approve(repo_dir, "file", NAME, AGENTS)
    store = trust.config_dir() / "trust.json"
    assert trust.config_dir() == Path(os.environ["XDG_CONFIG_HOME"]) / "vivary"
    assert store.stat().st_mode & 0o777 == 0o600
    assert not store.resolve().is_relative_to(repo_dir.resolve())


def test_a_relative_xdg_config_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")  # the XDG spec: ignore it
    assert trust.config_dir() == Path.home() / ".config" / "vivary"


def test_a_symlinked_config_folder_holds_the_approvals(repo_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "dotfiles"
    elsewhere.mkdir()
    trust.config_dir().parent.mkdir(parents=True, exist_ok=True)
    trust.config_dir().symlink_to(elsewhere)
    trust.approve(repo_dir, "file", NAME, AGENTS)
    assert json.loads((elsewhere / "trust.json").read_text())["approvals"][0]["name"] == NAME
    assert (elsewhere / "trusted" / trust.digest(AGENTS)).read_bytes() == AGENTS
    assert trust.is_approved(repo_dir, "file", NAME, AGENTS)


@pytest.mark.parametrize("damaged", ["{", "[]", '{"version": 2, "approvals": []}', '{"version": 1}', "\xff"])
def test_a_damaged_store_approves_nothing_and_is_left_as_it_is(repo_dir: Path, damaged: str) -> None:
    store = trust.config_dir() / "trust.json"
    store.parent.mkdir(parents=True)
    store.write_text(damaged, encoding="latin-1")
    for call in (lambda: trust.approvals(repo_dir), lambda: trust.approve(repo_dir, "file", NAME, AGENTS),
                 lambda: trust.revoke(repo_dir, "file", NAME), lambda: trust.require_file(repo_dir, NAME, AGENTS, "x")):
        with pytest.raises(trust.TrustError) as caught:
            call()
        assert "\n" not in str(caught.value) and str(store) in str(caught.value)
    assert store.read_text(encoding="latin-1") == damaged
    assert not (trust.config_dir() / "trusted").exists()


def test_approvals_made_at_once_by_many_processes_all_stay(repo_dir: Path) -> None:
    code = "import sys; from pathlib import Path; from strato.agents import trust; " \
           "trust.approve(Path(sys.argv[1]), 'file', sys.argv[2], sys.argv[2].encode())"
    names = [f"f{i}.toml" for i in range(8)]
    procs = [subprocess.Popen([sys.executable, "-c", code, str(repo_dir), n]) for n in names]
    assert [p.wait() for p in procs] == [0] * len(names)
    assert sorted(a.name for a in trust.approvals(repo_dir)) == names
    assert all(trust.is_approved(repo_dir, "file", n, n.encode()) for n in names)
