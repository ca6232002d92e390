"""Guard fixtures: a workspace with one commit, a real ssh-keygen key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.guard import Key, Workspace, make_key


@pytest.fixture
def ws(repo_dir: Path, tmp_path: Path) -> Workspace:
    space = Workspace(repo_dir, tmp_path)
    space.commit({"README.md": "# ws\n"}, "initial")
    return space


@pytest.fixture
def key(tmp_path: Path) -> Key:
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    return make_key(keys)
