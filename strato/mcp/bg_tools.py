"""Following and stopping background flow runs over MCP, in the shapes of Stratum's
`stratum_flow_bg_poll` and `stratum_flow_cancel_bg` (`stratum_flow_run_bg` is a plan,
beside `stratum_plan` in :mod:`strato.mcp.tools`): the run goes on in a detached runner
(see `strato.runs.background.runner`), so a client may disconnect, and a restarted server polls
and cancels the same run from its ref."""

from __future__ import annotations

from pydantic import Field

from strato.mcp.registry import Args, Context, Document, Tool, collector
from strato.runs.background import runner as background
from strato.runs.engine.state import RUN_TERMINAL

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


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
