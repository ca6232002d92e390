"""The agents file a bench writes into its scratch workspace, approved as a user would
approve it (`vivary trust`), with the approval kept in the scratch folder: a bench never
writes to the user's own configuration."""

from __future__ import annotations

import os
from pathlib import Path

from strato.agents import trust

AGENTS = ".vivary/agents.toml"


def write_agents(root: Path, text: str) -> None:
    """Write ``.vivary/agents.toml`` in ``root`` and approve its bytes, with this process's
    config folder (and so its children's) moved beside ``root``."""
    os.environ["XDG_CONFIG_HOME"] = str(root.parent / "bench-config")
    path = root / AGENTS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    trust.approve(root, "file", AGENTS, path.read_bytes())
