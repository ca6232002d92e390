"""`tropo check`, `tropo graph` and `tropo blast` as tools: the typed graph of the
workspace (its working tree, its index, or a commit), answered as the CLI's ``--json``."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import Field

from strato.mcp.registry import Args, Context, Document, Tool, ToolError, collector
from tropo.check import reports
from tropo.check.workspace import Workspace, open_workspace
from tropo.git.repo import NotARepository
from tropo.git.snapshot import Source

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class SourceArgs(Args):
    staged: bool = Field(False, description="Read the index: what a commit would record.")
    rev: str | None = Field(None, description="Read the workspace as this commit has it.")


def _workspace(ctx: Context, a: SourceArgs) -> Workspace:
    if a.staged and a.rev:
        raise ToolError("staged and rev exclude each other")
    source = Source.index() if a.staged else Source.at(a.rev) if a.rev else Source.worktree()
    try:
        ws = open_workspace(ctx.root, source)
    except NotARepository as exc:
        raise ToolError(str(exc)) from None
    ws.schema  # noqa: B018 - surface config errors here, as one line
    return ws


class CheckArgs(SourceArgs):
    paths: list[str] | None = Field(None, description="Workspace-relative files or folders.")
    lenient: bool = Field(False, description="Warnings do not fail the check.")


def _selector(path: str) -> str:
    """A workspace-relative path that stays inside the workspace."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not path.strip():
        raise ToolError(f"{path}: give a path relative to the workspace, without '..'")
    return pure.as_posix()


@tool("tropo_check", CheckArgs)
def check(ctx: Context, a: CheckArgs) -> Document:
    """`tropo check`: documents against the schema; refs resolve against the whole workspace."""
    ws = _workspace(ctx, a)
    selectors = None if a.paths is None else [_selector(p) for p in a.paths]
    return reports.check(ws, selectors, lenient=a.lenient).as_dict()


@tool("tropo_graph", SourceArgs)
def graph(ctx: Context, a: SourceArgs) -> Document:
    """`tropo graph`: documents as nodes, ref fields as edges."""
    ws = _workspace(ctx, a)
    return reports.graph(str(ws.root), ws.graph())


class BlastArgs(SourceArgs):
    id: str
    depth: int | None = Field(None, ge=1, description="Stop after this many hops.")


@tool("tropo_blast", BlastArgs)
def blast(ctx: Context, a: BlastArgs) -> Document:
    """`tropo blast`: what a change to a document could touch (everything that
    transitively refs it)."""
    ws = _workspace(ctx, a)
    return reports.blast(ws, ws.graph(), a.id, a.depth)
