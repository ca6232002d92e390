"""Guard fixtures: a workspace with one commit, a real ssh-keygen key. Each is made once
per process and copied for every test (what a test writes stays its own)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.guard import Key, Workspace, copy_key, make_key
from tests.support.repos import git
from tests.support.workspaces import made_once


def _workspace(root: Path) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    Workspace(root, root.parent).commit({"README.md": "# ws\n"}, "initial")


@pytest.fixture
def ws(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    # made inside a test, so under tests/conftest.py's isolated git identity and HOME
    template = made_once("guard-ws", tmp_path_factory.getbasetemp(), _workspace)
    root = tmp_path / "ws"
    shutil.copytree(template, root, symlinks=True)
    return Workspace(root, tmp_path)


@pytest.fixture
def key(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Key:
    template = made_once("guard-key", tmp_path_factory.getbasetemp(), lambda d: (d.mkdir(), make_key(d)))
    return copy_key(template, tmp_path / "keys")
