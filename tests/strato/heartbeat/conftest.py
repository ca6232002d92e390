"""Heartbeat fixtures: the scripted workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.heartbeat import scripted_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A clean workspace: a schema, one index linking one done change, a fresh STATE.md."""
    return scripted_workspace(tmp_path)
