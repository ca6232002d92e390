"""Background flow runs over MCP, in the shapes of Stratum's `stratum_flow_run_bg`,
`stratum_flow_bg_poll` and `stratum_flow_cancel_bg`: the run goes on in a detached
runner (see `strato.runs.background`), so a client may disconnect, and a restarted
server polls and cancels the same run from its ref."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from strato.mcp.registry import Args, Context, Document, Tool, ToolError, collector
from strato.runs import background
from strato.runs.state import RUN_TERMINAL

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class RunBgArgs(Args):
    spec: dict[str, Any] | str = Field(description="The spec: an object, or YAML text.")
    input: dict[str, Any] = Field(description="The entry flow's input.")
    workspaceRoot: str | None = Field(None, description="The workspace (this server's, or a folder in it).")


@tool("stratum_flow_run_bg", RunBgArgs)
def run_bg(ctx: Context, a: RunBgArgs) -> Document:
    """Start a run of the spec's entry flow driven by a detached runner: answers at
    once with its runId; follow it with stratum_flow_bg_poll."""
    if a.workspaceRoot is not None and not _inside(ctx.root, a.workspaceRoot):
        raise ToolError(f"invalid_workspace_root: {a.workspaceRoot} is outside the workspace {ctx.root}")
    text = a.spec if isinstance(a.spec, str) else json.dumps(a.spec, indent=1)
    return {"status": "running", "runId": background.start(ctx.runs(), text, a.input)}


def _inside(root: Path, where: str) -> bool:
    path = Path(where)
    return (path if path.is_absolute() else root / path).resolve().is_relative_to(root.resolve())


class PollArgs(Args):
    runId: str
    cursor: int = Field(0, ge=0, description="Events already read: the last answer's nextCursor.")


@tool("stratum_flow_bg_poll", PollArgs)
def bg_poll(ctx: Context, a: PollArgs) -> Document:
    """A background run's events from `cursor`, its ledger, output or failure, and `bg`:
    the runner's status, whether a cancel was asked, and the gates waiting for a person.
    A run whose runner died gets a new one."""
    return background.poll(ctx.runs(), a.runId, a.cursor)


class CancelBgArgs(Args):
    runId: str


@tool("stratum_flow_cancel_bg", CancelBgArgs)
def cancel_bg(ctx: Context, a: CancelBgArgs) -> Document:
    """Cancel a background run: its runner stops the agents it started (their process
    groups) and records flow_cancelled. Answers `cancelled` once it has, the run's own
    status if it had already ended, `running` if the runner is still stopping it."""
    runs = ctx.runs()
    snap = runs.load(a.runId)
    if snap.state["status"] in RUN_TERMINAL:
        return {"status": snap.state["status"]}
    return {"status": background.cancel(runs, snap.run_id, "mcp")}
