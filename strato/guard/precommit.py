"""The guard's pre-commit check: a staged pin must name the notes this clone is at.

Refuses only what review would refuse later and the contributor can fix now: the
guard notes moved past the staged pin (or away from it). A staged pin naming notes
this clone has not fetched, or no pin at all (the project does not pin), passes.
"""

from __future__ import annotations

from pathlib import Path

from strato.guard import branchnotes, pin
from tropo.git import repo as gitrepo
from tropo.git.snapshot import SourceError, read_staged

REFUSED = ("stale", "diverged", "invalid")


def check(root: Path) -> list[str]:
    """The problem with the staged ``.vivary/guard/notes-tip``, if any (one line)."""
    repo = gitrepo.require(root)
    try:
        data = read_staged(repo, pin.PIN_PATH)
    except SourceError as exc:
        return [f"cannot read the staged {pin.PIN_PATH}: {exc}"]
    if data is None:
        return []
    staged = data[: pin.MAX_PIN].decode("utf-8", "replace").strip()
    state = pin.judge_at(repo, staged, branchnotes.current(repo))  # this branch's chain
    reason = state.reason("the staged pin")
    return [reason] if state.kind in REFUSED and reason is not None else []
