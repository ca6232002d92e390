"""`stratum_agent_run`, `stratum_agent_poll`, `stratum_cancel_agent_run`: Stratum's
request keys exactly, answers from :mod:`strato.agentruns.service` (its shapes)."""

from __future__ import annotations

from pathlib import Path

from strato.agentruns import service
from strato.agentruns.store import Store
from strato.agents import trust
from strato.agents.config import AgentConfigError
from strato.mcp.registry import Args, Context, Document, Tool, ToolError, collector

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class AgentRunArgs(Args):
    agent: str
    prompt: str
    cwd: str
    model: str | None = None
    sandboxMode: str | None = None
    background: bool = False


class AgentRunIdArgs(Args):
    runId: str


def _store(ctx: Context) -> Store:
    return Store(Path(ctx.repo().path))


@tool("stratum_agent_run", AgentRunArgs)
def agent_run(ctx: Context, a: AgentRunArgs) -> Document:
    """Run an agent of .vivary/agents.toml on a prompt in a folder of the workspace:
    to the end (`complete`), or detached with `background: true` (`bg_started`, then
    poll it). A failed foreground run is a tool error carrying the poll's `error`
    document. `model` is passed as VIVARY_AGENT_MODEL; the argv comes only from the
    user's own agents.toml or a `.vivary/agents.toml` they approved (`vivary trust`)."""
    try:
        doc = service.start(
            _store(ctx), ctx.root, a.agent, a.prompt, a.cwd, a.model, a.sandboxMode, a.background
        )
    except trust.Untrusted as exc:  # nothing ran: the agents file is not approved as it is
        raise ToolError(str(exc), {"ok": False, "error": str(exc), "code": "untrusted"}) from None
    except (AgentConfigError, trust.TrustError, service.AgentRunError) as exc:
        raise ToolError(str(exc)) from None
    if doc["status"] == "error":  # the surface has no error variant here: a tool error, with the poll's
        raise ToolError(f"agent run {doc['runId']} failed: {doc['reason']}", doc)
    return doc


@tool("stratum_agent_poll", AgentRunIdArgs)
def agent_poll(ctx: Context, a: AgentRunIdArgs) -> Document:
    """An agent run's state: the tail of its output and the events seen while it runs,
    its text, usage, exit code and telemetry once it ended."""
    return service.poll(_store(ctx), a.runId)


@tool("stratum_cancel_agent_run", AgentRunIdArgs)
def cancel_agent_run(ctx: Context, a: AgentRunIdArgs) -> Document:
    """Stop an agent run: its whole process group gets SIGTERM, then SIGKILL after a grace."""
    return service.cancel(_store(ctx), a.runId, by="mcp")
