"""The heartbeat's knobs, read from git config in one call (repository, then user).

Thresholds live under ``vivary.heartbeat.*`` (e.g. ``vivary.heartbeat.staleDays``); the
on/off switch is :mod:`strato.proposals.switch`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from strato.proposals.switch import enabled_in
from tropo.git import gitcli


@dataclass(frozen=True)
class Settings:
    enabled: bool = True
    stale_days: int = 30  # an active work item untouched this long is stale
    claim_idle_days: int = 14  # a claim branch with no commit this long is idle
    gate_wait_hours: int = 24  # a run waiting at a gate this long needs a decision
    guard_stuck_days: int = 7  # a guard resource in a non-terminal state this long is stuck
    strato_token_budget: int = 1500  # the always-on STRATO.md (tokens ~ chars / 4)
    fix_repeats: int = 2  # a class of bug fixed this many times earns a playbook row
    duplicate_min_chars: int = 160  # paragraphs shorter than this are never duplicates
    skill_window_days: int = 30  # transcripts older than this are not mined
    distill_tokens: int = 8000  # the [agents.distill] model step's budget per run (0: off)
    debounce_ms: int = 300  # the detached runner waits this long for a burst to end


def load(root: Path) -> Settings:
    """Settings for the repository at ``root``; a malformed number keeps its default."""
    found = gitcli.config_matching(root, r"^vivary\.heartbeat(\..*)?$")
    values: dict[str, Any] = {}  # field name -> int, checked above
    enabled = enabled_in(found)
    for f in fields(Settings):
        if f.name == "enabled":
            continue
        raw = found.get("vivary.heartbeat." + f.name.replace("_", "").lower())
        if raw is not None and raw.strip().isdigit():
            values[f.name] = int(raw)
    return replace(Settings(enabled=enabled), **values)
