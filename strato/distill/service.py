"""Where transcripts are, and the three things asked of them: stats, top, extract."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.distill import miner, model, skill, transcripts
from strato.proposals import settings, store
from strato.proposals.proposal import Proposal
from tropo.git import gitcli
from tropo.redact import redact

DAY = 86400


@dataclass(frozen=True)
class Sources:
    """The transcript folders to read. ``everywhere``: keep calls made in any directory
    (a multi-project scan), not only those inside the repository."""

    claude: list[Path]
    codex: list[Path]
    everywhere: bool = False


def default_projects_root() -> Path:
    """Claude Code's folder of project folders (``CLAUDE_CONFIG_DIR`` honoured)."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects"


def all_projects(projects_root: Path, codex: list[Path]) -> Sources:
    """Stratum's ``--all --projects-root``: every project folder under ``projects_root``
    at once, each call counted wherever it was made."""
    folders = sorted(p for p in projects_root.iterdir() if p.is_dir() and not p.is_symlink())
    return Sources(folders, codex, everywhere=True)


def default_sources(root: Path) -> Sources:
    """Claude Code's project folder for ``root`` and Codex's sessions folder (both
    honour their tools' own ``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME``)."""
    codex_home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    project = transcripts.claude_project_dir(default_projects_root().parent, root)
    return Sources([project], [codex_home / "sessions"])


def scan(root: Path, sources: Sources, window_days: int | None,
         now: float | None = None) -> tuple[list[miner.Workflow], transcripts.Stats]:
    stats = transcripts.Stats()
    now = time.time() if now is None else now
    since = now - window_days * DAY if window_days is not None else None
    calls = transcripts.read_all(sources.claude, sources.codex, None if sources.everywhere else root, stats)
    found = miner.workflows(miner.sessions(calls, since))
    return found, stats


def skill_proposals(root: Path, sources: Sources, min_count: int, window_days: int | None,
                    now: float | None = None) -> list[Proposal]:
    found, _ = scan(root, sources, window_days, now)
    head = gitcli.head_oid(root)
    return [skill.proposal(w, head) for w in miner.candidates(found, min_count)]


def stats_document(root: Path, sources: Sources, min_count: int,
                   window_days: int | None) -> dict[str, Any]:
    """What ``stats`` answers: the reader's counts and how many workflows and
    candidates they give; stages nothing."""
    found, stats = scan(root, sources, window_days)
    return {**stats.as_dict(), "workflows": len(found),
            "candidates": len(miner.candidates(found, min_count)), "applied": False}


def top_document(root: Path, sources: Sources, window_days: int | None, limit: int) -> dict[str, Any]:
    """What ``top`` answers: the ``limit`` most repeated workflows (their steps, tool names
    a transcript chose, redacted); stages nothing."""
    found, _ = scan(root, sources, window_days)
    rows = [{"steps": [redact(s) for s in w.steps], "count": w.count, "sessions": w.sessions}
            for w in found[:limit]]
    return {"workflows": rows, "applied": False}


def extract(root: Path, sources: Sources, min_count: int, window_days: int | None,
            now: float | None = None, write: bool = True) -> list[dict[str, Any]]:
    """Stage the candidates beside the heartbeat's proposals (the only writer here);
    the new ones go through the optional model step (:mod:`strato.distill.model`).
    With ``write`` false, the same answer with the outcome staging would have, and
    nothing written (MCP's default)."""
    side = store.sidecar(root)
    day = store.today(time.time() if now is None else now)
    out: list[dict[str, Any]] = []
    for p in skill_proposals(root, sources, min_count, window_days, now):
        out.append({"id": p.id, "revision": p.revision, "title": p.title, "files": sorted(p.files),
                    "outcome": store.offer(side, p, day) if write else store.outcome(side, p)})
    if not write:
        return out
    fresh = [str(c["id"]) for c in out if c["outcome"] in ("new", "revised")]
    done = model.rewrite_new(root, fresh, settings.load(root).distill_tokens)
    for c in out:
        c["rewritten"] = c["id"] in done.rewritten
    return out
