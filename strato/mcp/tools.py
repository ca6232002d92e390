"""The MCP tools, independent of the MCP SDK: each takes validated arguments and returns
the JSON document the matching CLI command prints with ``--json``, computed by the same
functions. Expected failures raise :class:`ToolError` with the CLI's one-line message."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strato.decide.decision import Refusal, decide
from strato.flow.validate import load_spec
from strato.guard import authz
from strato.guard import engine as guard_engine
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from strato.mcp.registry import Args, Context, Document, NoArgs, Tool, ToolError, collector
from strato.runs import views
from tropo.check import reports
from tropo.check.workspace import Workspace, open_workspace
from tropo.git.repo import NotARepository, RevisionError, resolve_commit
from tropo.git.snapshot import Source

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


# --- flows (Stratum's tool names and argument names)


def _spec_text(spec: dict[str, Any] | str) -> str:
    """A spec given as an object is written as JSON, which is YAML, so runs freeze text."""
    return spec if isinstance(spec, str) else json.dumps(spec, indent=1)


class ValidateArgs(Args):
    spec: dict[str, Any] | str = Field(description="The spec: an object, or YAML text.")


@tool("stratum_validate", ValidateArgs)
def validate(ctx: Context, a: ValidateArgs) -> Document:
    """Validate a Stratum v1 flow spec without running it: {valid} or {valid: false, errors}."""
    spec, errors = load_spec(_spec_text(a.spec), ctx.runs().config.agents)
    if spec is not None:
        return {"valid": True}
    return {"valid": False, "errors": [e.to_json() for e in errors]}


class PlanArgs(Args):
    spec: dict[str, Any] | str = Field(description="The spec: an object, or YAML text.")
    input: dict[str, Any] = Field(default_factory=dict, description="The entry flow's input.")
    runId: str | None = Field(None, description="Name the run (letters, digits, dashes).")


@tool("stratum_plan", PlanArgs)
def plan(ctx: Context, a: PlanArgs) -> Document:
    """Start a run of the spec's entry flow (stored under refs/vivary/runs/) and return its
    ready steps, each with the dispatchToken to report its result with."""
    runs = ctx.runs()
    return views.outcome_view(runs, runs.plan(_spec_text(a.spec), a.input, a.runId))


class RunArgs(Args):
    runId: str


@tool("stratum_resume", RunArgs)
def resume(ctx: Context, a: RunArgs) -> Document:
    """A run's ready steps (with dispatch tokens) and waiting gates, as `strato flow next`."""
    return views.next_view(ctx.runs(), a.runId)


class StepDoneArgs(Args):
    runId: str
    stepId: str
    dispatchToken: str
    result: dict[str, Any] = Field(description="{output, failure?, usage?, telemetry?}")
    generation: int | None = Field(None, description="The ready entry's generation.")
    contractDigest: str | None = Field(None, description="The ready entry's contractDigest.")
    revisionDigest: str | None = Field(None, description="The ready entry's revisionDigest.")


@tool("stratum_step_done", StepDoneArgs)
def step_done(ctx: Context, a: StepDoneArgs) -> Document:
    """Report a step's result with the dispatch token it was handed (and, to be refused
    if the step was handed out again since, its generation and digests); the engine
    checks the contract and ensures and returns the run with what is ready next."""
    runs = ctx.runs()
    claims = a.model_dump(include={"generation", "contractDigest", "revisionDigest"}, exclude_none=True)
    return views.outcome_view(runs, runs.done(a.runId, a.stepId, a.dispatchToken, a.result, claims))


class GateArgs(Args):
    runId: str
    stepId: str
    decision: Literal["approve", "revise", "kill", "reject"]
    gateToken: str = Field(description="The gate's token from stratum_resume or strato_gates.")
    note: str | None = None


@tool("stratum_gate_resolve", GateArgs)
def gate_resolve(ctx: Context, a: GateArgs) -> Document:
    """Decide a waiting gate: approve, revise (re-run from its revise target) or kill
    (reject); refused when the token is stale, and unless `[gates] mcp = "resolve"` in
    .vivary/agents.toml (never for gates it reserves for a person). Recorded as resolved
    by the agent, with this client's name."""
    runs = ctx.runs()
    decision = "kill" if a.decision == "reject" else a.decision
    outcome = runs.gate(a.runId, a.stepId, decision, a.gateToken, a.note, via="mcp", client=ctx.client)
    return views.outcome_view(runs, outcome)


@tool("strato_gates", NoArgs)
def gates(ctx: Context, a: NoArgs) -> Document:
    """Every gate waiting for a decision, in every running run; a gate's token only where
    the workspace lets MCP clients decide it."""
    return {"gates": ctx.runs().gates()}


class CheckpointArgs(Args):
    flow_id: str = Field(description="The run id.")
    label: str


@tool("stratum_commit", CheckpointArgs)
def commit(ctx: Context, a: CheckpointArgs) -> Document:
    """Checkpoint a run's current state under a label (a ref; the same label moves)."""
    return views.commit_view(ctx.runs(), a.flow_id, a.label)


@tool("stratum_revert", CheckpointArgs)
def revert(ctx: Context, a: CheckpointArgs) -> Document:
    """Return a run to a checkpoint (state only: spend never rolls back; tokens rotate)."""
    runs = ctx.runs()
    return views.outcome_view(runs, runs.revert(a.flow_id, a.label))


class CancelArgs(Args):
    runId: str
    reason: str | None = None


@tool("stratum_flow_cancel", CancelArgs)
def cancel(ctx: Context, a: CancelArgs) -> Document:
    """Cancel a run: its outstanding dispatch and gate tokens become stale."""
    runs = ctx.runs()
    return views.outcome_view(runs, runs.cancel(a.runId, a.reason))


@tool("stratum_audit", RunArgs)
def audit(ctx: Context, a: RunArgs) -> Document:
    """Every event of a run, read from the history of its ref, with steps and spend."""
    return ctx.runs().audit(a.runId)


@tool("strato_runs", NoArgs)
def list_runs(ctx: Context, a: NoArgs) -> Document:
    """Every run in the repository with its flow and status."""
    return views.list_view(ctx.runs())


@tool("strato_run_show", RunArgs)
def show(ctx: Context, a: RunArgs) -> Document:
    """A run's status, ready steps, gates, step statuses and checkpoints."""
    return views.show_view(ctx.runs(), a.runId)


FLOW_TOOLS = frozenset(
    {
        "stratum_plan", "stratum_resume", "stratum_step_done", "stratum_gate_resolve",
        "strato_gates", "stratum_commit", "stratum_revert", "stratum_flow_cancel",
        "stratum_audit", "strato_runs", "strato_run_show",
    }
)  # their documents may hold gate tokens


# --- guard: the request object is the tool's arguments, as on `strato guard`'s stdin


class GuardArgs(BaseModel):
    """Stratum's guard request; the guard itself refuses unknown or mistyped fields."""

    model_config = ConfigDict(extra="allow", strict=True)
    resource_id: str


def _guard_request(ctx: Context, a: BaseModel) -> Document:
    req = a.model_dump()
    where = req.get("workspace_root")
    if isinstance(where, str) and not Path(where).resolve().is_relative_to(ctx.root):
        raise ToolError(f"invalid_workspace_root: {where} is outside the workspace {ctx.root}")
    return req


def _guard_tool(operation: str) -> None:
    op = guard_engine.OPERATIONS[operation]

    def handler(ctx: Context, a: GuardArgs) -> Document:
        return op(ctx.repo(), _guard_request(ctx, a))

    handler.__doc__ = f"`strato guard {operation}`: {op.__doc__} Answers with Stratum's guard JSON."
    tool("stratum_guard_" + operation.replace("-", "_"), GuardArgs)(handler)


for _operation in guard_engine.OPERATIONS:
    _guard_tool(_operation)


class AuthorizeArgs(GuardArgs):
    kind: Literal["override", "migrate"]


@tool("strato_guard_authorize", AuthorizeArgs)
def guard_authorize(ctx: Context, a: AuthorizeArgs) -> Document:
    """The exact payload a person signs (ssh-keygen -Y sign) to authorize an override or
    migrate now, its namespace and the command."""
    payload, namespace = guard_engine.authorization_request(ctx.repo(), _guard_request(ctx, a))
    command = authz.sign_command(namespace, "payload.json")
    return {"payload": payload, "namespace": namespace, "command": command}


class VerifyArgs(Args):
    since: list[str] = Field(default_factory=list, description="Earlier notes tips to descend from.")


@tool("strato_guard_verify", VerifyArgs)
def guard_verify(ctx: Context, a: VerifyArgs) -> Document:
    """Re-check every guard ledger's hash chain, steps and signatures."""
    repo = ctx.repo()
    try:
        since = [str(resolve_commit(repo, r).id) for r in a.since]
    except RevisionError as exc:
        raise GuardError("invalid_revision", str(exc)) from exc
    return verify_repository(repo, since=since).to_json()


# --- governed decisions


class DecideArgs(Args):
    request: dict[str, Any] = Field(description="A vivary.strato-decision-request document.")


@tool("strato_decide", DecideArgs)
def decide_tool(ctx: Context, a: DecideArgs) -> Document:
    """`strato decide --governed`: act, request_gate, stop or blocked, as a
    vivary.strato-decision/v0 document; a malformed or stale request is refused."""
    result = decide(a.request)
    if isinstance(result, Refusal):
        raise ToolError(f"request refused: {', '.join(result.reason_codes)}", result.document())
    return result.document()


# --- the typed graph


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
    return reports.graph(ws, ws.graph())


class BlastArgs(SourceArgs):
    id: str
    depth: int | None = Field(None, ge=1, description="Stop after this many hops.")


@tool("tropo_blast", BlastArgs)
def blast(ctx: Context, a: BlastArgs) -> Document:
    """`tropo blast`: what a change to a document could touch (everything that
    transitively refs it)."""
    ws = _workspace(ctx, a)
    return reports.blast(ws, ws.graph(), a.id, a.depth)
