"""`stratum_agent_run`, `stratum_agent_poll`, `stratum_cancel_agent_run`: Stratum's
request keys exactly, answers from :mod:`strato.agentruns.service` (its shapes); and
`stratum_judge`, the judge of `judged` ensures asked directly."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from strato.agentruns import service
from strato.agents import settings, trust
from strato.agents.calls import judge_runner
from strato.agents.config import AgentConfigError
from strato.mcp.registry import Args, Context, Document, Tool, ToolError, collector
from strato.runs.engine import bounds

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


class FlowRef(Args):
    runId: str
    stepId: str | None = None
    itemIndex: int | None = None


class AgentRunArgs(Args):
    agent: str
    prompt: str
    cwd: str
    model: str | None = None
    sandboxMode: str | None = None
    background: bool = False
    effort: str | None = Field(None, description="Passed as the agent's settings.effort says (else refused).")
    allowedTools: list[str] | None = None
    disallowedTools: list[str] | None = None
    thinking: bool | None = None
    cancellationId: str | None = Field(None, description="A fresh UUID: this foreground run's id.")
    peerLabel: str | None = Field(None, description="A background run's display label.")
    flow: FlowRef | None = Field(None, description="The flow run it works for (needs cancellationId).")


class AgentRunIdArgs(Args):
    runId: str


@tool("stratum_agent_run", AgentRunArgs)
def agent_run(ctx: Context, a: AgentRunArgs) -> Document:
    """Run an agent of .vivary/agents.toml on a prompt in a folder of the workspace:
    to the end (`complete`), or detached with `background: true` (`bg_started`, then
    poll it). A failed foreground run is a tool error carrying the poll's `error`
    document. `model` is passed as VIVARY_AGENT_MODEL; the argv comes only from the
    user's own agents.toml or a `.vivary/agents.toml` they approved (`vivary trust`)."""
    flow = a.flow.model_dump(exclude_none=True) if a.flow is not None else None
    if flow is not None:  # a run of this repository (or `run_not_found`), by its own id
        flow["runId"] = ctx.runs().load(flow["runId"]).run_id
    given = a.model_dump(include=set(settings.NAMES), exclude_none=True)
    extras = service.Extras(given, a.cancellationId, flow, a.peerLabel)
    try:
        doc = service.start(
            ctx.agent_runs(), ctx.root, a.agent, a.prompt, a.cwd, a.model, a.sandboxMode, a.background, extras
        )
    except trust.Untrusted as exc:  # nothing ran: the agents file is not approved as it is
        raise ToolError(str(exc), {"ok": False, "error": str(exc), "code": "untrusted"}) from None
    except (AgentConfigError, trust.TrustError) as exc:
        raise ToolError(str(exc), {"error_type": "agent_unavailable", "message": str(exc)}) from None
    except service.AgentRunError as exc:
        raise ToolError(str(exc), {"error_type": "refused", "message": str(exc)}) from None
    if doc["status"] == "error":  # the surface has no error variant here: a tool error, with the poll's
        raise ToolError(f"agent run {doc['runId']} failed: {doc['reason']}", doc)
    return doc


@tool("stratum_agent_poll", AgentRunIdArgs)
def agent_poll(ctx: Context, a: AgentRunIdArgs) -> Document:
    """An agent run's state: the tail of its output and the events seen while it runs,
    its text, usage, exit code and telemetry once it ended."""
    return service.poll(ctx.agent_runs(), a.runId)


@tool("stratum_cancel_agent_run", AgentRunIdArgs)
def cancel_agent_run(ctx: Context, a: AgentRunIdArgs) -> Document:
    """Stop an agent run: its whole process group gets SIGTERM, then SIGKILL after a grace."""
    return service.cancel(ctx.agent_runs(), a.runId, by="mcp")


class JudgeArgs(Args):
    statement: str
    output: Any
    stakes: Literal["cheap", "default", "paranoid"] = "default"


@tool("stratum_judge", JudgeArgs)
def judge(ctx: Context, a: JudgeArgs) -> Document:
    """Ask the `[judge]` of the trusted agents config whether `statement` holds of
    `output`, as a `judged` ensure does: `judged {holds, reason, stakes, model, usage}`.
    No judge configured, or only one in an agents file you have not approved: refused,
    and nothing runs."""
    runs = ctx.runs()
    try:
        spec = runs.config.trusted_judge()
    except trust.Untrusted as exc:
        raise ToolError(str(exc), {"error_type": "untrusted", "message": str(exc)}) from None
    if spec is None:
        message = "no [judge] in your agents.toml or an approved .vivary/agents.toml"
        raise ToolError(f"no_judge: {message}", {"error_type": "no_judge", "message": message})
    said = judge_runner(spec, ctx.root, runs.pacing_dir, bounds.agent_output)(a.statement, a.stakes, a.output)
    spent = said.get("usage") or {}
    usage = {k: spent.get(k, 0) for k in ("tokens", "usd")}
    return {"status": "judged", "holds": said["holds"], "reason": said["reason"], "stakes": a.stakes,
            "model": said["model"], "usage": usage}
