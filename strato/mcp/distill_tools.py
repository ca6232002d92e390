"""`stratum_distill` (Stratum's argument names) and the heartbeat's read-only tools, on
top of :mod:`strato.distill.service` and :mod:`strato.proposals.store`.

`apply` and `reject` are deliberately not tools: installing a skill or dismissing a
proposal is a person's decision, taken with `strato heartbeat apply|reject` at a
terminal, never by the agent whose transcripts proposed it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from strato.distill import service
from strato.mcp.registry import Args, Context, Document, NoArgs, Tool, ToolError, collector
from strato.proposals import store

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class DistillArgs(Args):
    workspace_root: str = Field(description="The workspace candidates are staged in: the server's root "
                                            "or a folder inside it.")
    mode: Literal["extract", "top", "stats"] = "extract"
    project_dir: str | None = Field(None, description="A Claude Code project folder under "
                                                      "~/.claude/projects/ (default: the workspace's, and "
                                                      "Codex's sessions).")
    min_count: int = Field(3, ge=2, description="Occurrences a workflow needs, across at least two sessions.")
    window_days: int | None = Field(None, ge=1, description="Only calls this recent.")
    n: int = Field(10, ge=1, description="mode top: how many workflows.")
    write: bool = Field(False, description="mode extract: stage the candidates in the sidecar "
                                           "(false: only report what would be staged).")


class ProposalArgs(Args):
    id: str


def claude_projects() -> Path:
    """The one folder `project_dir` may name a folder of (Claude Code's own rule for
    its configuration folder)."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects"


def _sources(ctx: Context, a: DistillArgs) -> service.Sources:
    """Transcripts are read only from Claude Code's projects folder and Codex's sessions
    folder: the caller picks a project, not an arbitrary path (symlinks resolved first)."""
    where = Path(a.workspace_root)
    if not (ctx.root / where).resolve().is_relative_to(ctx.root):
        raise ToolError(f"invalid_workspace_root: {a.workspace_root} is outside the workspace {ctx.root}")
    if a.project_dir is None:
        return service.default_sources(ctx.root)
    allowed = claude_projects().resolve()
    folder = (ctx.root / Path(a.project_dir).expanduser()).resolve()  # relative: from the root
    if not folder.is_relative_to(allowed):
        raise ToolError(f"invalid_project_dir: {a.project_dir} is not a folder under {allowed}")
    if not folder.is_dir():
        raise ToolError(f"invalid_project_dir: no such transcript folder: {a.project_dir}")
    return service.Sources([folder], [])


@tool("stratum_distill", DistillArgs)
def distill(ctx: Context, a: DistillArgs) -> Document:
    """`strato distill`: find workflows repeated in this workspace's agent transcripts
    (Claude Code, Codex). `mode: extract` answers the SKILL.md candidates of each
    workflow seen `min_count` times across two sessions, staged in the private sidecar
    only with `write: true`; `top` and `stats` stage nothing. Nothing is ever installed:
    a person runs `strato heartbeat apply ID`."""
    bad = "invalid arguments for stratum_distill"
    if a.write and a.mode != "extract":
        raise ToolError(f"{bad}: write: only mode extract stages (not {a.mode})")
    if "n" in a.model_fields_set and a.mode != "top":
        raise ToolError(f"{bad}: n: only mode top takes it (not {a.mode})")
    sources = _sources(ctx, a)
    value: dict[str, Any]
    if a.mode == "stats":
        value = service.stats_document(ctx.root, sources, a.min_count, a.window_days)
    elif a.mode == "top":
        value = service.top_document(ctx.root, sources, a.window_days, a.n)
    else:
        staged = service.extract(ctx.root, sources, a.min_count, a.window_days, write=a.write)
        value = {"candidates": staged, "applied": False, "written": a.write}
    return {"mode": a.mode, **value}


@tool("strato_heartbeat_status", NoArgs)
def heartbeat_status(ctx: Context, a: NoArgs) -> Document:
    """`strato heartbeat status`: the staged proposals (skills, playbook rows, memory
    lines, hygiene) and their decisions. Read-only; deciding is `strato heartbeat
    apply|reject` by a person, not a tool."""
    return store.summary(store.sidecar(ctx.root))


@tool("strato_heartbeat_show", ProposalArgs)
def heartbeat_show(ctx: Context, a: ProposalArgs) -> Document:
    """`strato heartbeat show ID`: one proposal, its evidence and the exact files
    `apply` would write. Read-only."""
    try:
        return store.get(store.sidecar(ctx.root), a.id)
    except store.UnknownProposal as exc:
        raise ToolError(str(exc)) from None
