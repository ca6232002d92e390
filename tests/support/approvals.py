"""Approving what a test's workspace would run, the way a user does with `vivary trust`:
the exact bytes as they are now, recorded in the test's own config directory."""

from __future__ import annotations

from pathlib import Path

from strato.agents import spectrust, trust
from strato.agents.config import WORKSPACE_FILE


def approve_agents(root: Path) -> None:
    """Approve the workspace's `.vivary/agents.toml` as it is now (`vivary trust`)."""
    trust.approve(root, "file", WORKSPACE_FILE, (root / WORKSPACE_FILE).read_bytes())


def approve_spec(root: Path, text: str, name: str = "spec.yaml") -> None:
    """Approve a spec's commands as `strato run FILE` at the person's prompt does."""
    spectrust.approve(root, name, text)
