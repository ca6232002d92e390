"""Agent-run fixtures: a workspace whose agents are small Python scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agents import agent_workspace


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    yield from agent_workspace(repo_dir)
