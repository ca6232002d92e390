"""MCP fixtures: a workspace with a small graph and a gated review spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.mcp import GATE_SPEC, GRAPH_FILES
from tests.support.repos import commit_all, write_files


@pytest.fixture
def workspace(repo_dir: Path) -> Path:
    write_files(repo_dir, {**GRAPH_FILES, "specs/review.yaml": GATE_SPEC})
    commit_all(repo_dir, "workspace")
    return repo_dir
