"""The heartbeat's scripted workspace, shared: candidates are staged beside its proposals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.heartbeat import scripted_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The heartbeat's workspace: a schema, one index linking one done change, a fresh STATE.md."""
    return scripted_workspace(tmp_path)
