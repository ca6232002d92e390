"""The exo part of `make demo`: claim a work item atomically, then read the board."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def tour(ws: Path, run: Callable[[list[str]], None]) -> None:
    """Claim the first active change for one agent, show that a second agent is refused
    and that the board names the holder, then release it. ``ws`` is a committed
    workspace using the coordination pack; ``run`` prints and runs one command there."""
    item = min(p.stem for p in (ws / "changes").glob("*.md"))
    print(f"\n== exo: claim {item} (creates branch claim/{item}; the checkout is untouched)")
    run(["exo", "claim", item, "--agent", "@connie"])
    run(["exo", "claim", item, "--agent", "@dave"])  # refused, exit 1: names @connie
    run(["git", "log", "--oneline", "-1", f"claim/{item}"])
    run(["exo", "board"])
    run(["exo", "conflicts"])
    run(["exo", "release", item, "--agent", "@connie"])
