"""The MCP flow tools, independent of the MCP SDK: each takes validated arguments and returns
the JSON document the matching CLI command prints with ``--json``, computed by the same
functions. Expected failures raise :class:`ToolError` with the CLI's one-line message.
Guard and governed decisions are `guard_tools.py`, the typed graph `tropo_tools.py`."""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import Field

from strato.agentruns import service
from strato.agents import spectrust, trust
from strato.flow.speckit import SpeckitError, compile_tasks
from strato.flow.starts import commands
from strato.flow.validate import load_spec
from strato.mcp.registry import Args, Context, Document, NoArgs, Tool, ToolError, collector
from strato.runs.background import runner as background
from strato.runs.cli.lanes import check_view, lanes_view
from strato.runs.dispatch import agentgroups
from strato.runs.engine.state import RUN_TERMINAL, Refused
from strato.runs.views import documents as views
from strato.runs.views import wire

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


# --- flows: Stratum's request keys and answers (strato.mcp.contract); strato_* extras


def _spec_text(spec: Any) -> str | None:
    """A spec given as an object is written as JSON, which is YAML, so runs freeze text;
    anything else is no spec (None)."""
    if isinstance(spec, str):
        return spec
    return json.dumps(spec, indent=1) if isinstance(spec, dict) else None


NOT_A_SPEC = "spec must be an object or YAML text"


class ValidateArgs(Args):
    spec: Any = Field(description="The spec: an object, or YAML text.")


@tool("stratum_validate", ValidateArgs)
def validate(ctx: Context, a: ValidateArgs) -> Document:
    """Validate a Stratum v1 flow spec without running it: `valid`, or `invalid` with
    every structural error (or the first semantic one) as {code, path, message}."""
    text = _spec_text(a.spec)
    if text is None:
        error = {"code": "spec_not_an_object", "path": "", "message": NOT_A_SPEC}
        return {"status": "invalid", "errors": [error]}
    spec, errors = load_spec(text, ctx.runs().config.known)
    if spec is not None:
        return {"status": "valid"}
    return {"status": "invalid", "errors": [e.to_json() for e in errors]}


class CompileSpeckitArgs(Args):
    tasks_dir: str = Field(description="A spec-kit tasks folder, relative to the workspace.")
    flow_name: str = Field("tasks", description="The compiled flow's name.")


@tool("stratum_compile_speckit", CompileSpeckitArgs)
def compile_speckit(ctx: Context, a: CompileSpeckitArgs) -> Document:
    """`strato flow compile-speckit`: a folder of spec-kit `*.md` tasks inside the
    workspace as a v1 spec (`ok` with yaml, flow_name and one summary per step)."""
    where = ctx.within(a.tasks_dir)
    if where is None or not all(ctx.within(str(p)) for p in where.glob("*.md")):
        error = f"{a.tasks_dir!r} is outside the workspace {ctx.root} (or a task file in it is)"
        raise ToolError(f"invalid_tasks_dir: {error}", {"error_type": "invalid_tasks_dir", "message": error})
    try:
        return compile_tasks(where, a.flow_name).to_json()
    except SpeckitError as exc:
        doc = {"error_type": exc.error_type, "message": exc.message}
        raise ToolError(f"{exc.error_type}: {exc.message}", doc) from None


class PlanArgs(Args):
    spec: Any = Field(description="The spec: an object, or YAML text.")
    input: Any = Field(description="The entry flow's input (an object).")
    workspaceRoot: str | None = Field(
        None, description="The server's workspace or a folder in it (runs live in its repository)."
    )


def _inside(ctx: Context, where: str | None, key: str) -> None:
    if where is not None and ctx.within(where) is None:
        raise ToolError(f"invalid_workspace_root: {key} {where} is outside the workspace {ctx.root}",
                        {"error_type": "invalid_workspace_root", "message": f"{where} is outside {ctx.root}"})


def _plan_request(ctx: Context, a: PlanArgs) -> tuple[str, dict[str, Any]]:
    """The spec text and input of a plan request, or the refusal `stratum_plan` answers."""
    _inside(ctx, a.workspaceRoot, "workspaceRoot")
    text = _spec_text(a.spec)
    if text is None:
        raise Refused("spec_invalid", NOT_A_SPEC)
    if not isinstance(a.input, dict):
        raise Refused("INPUT_CONTRACT_INVALID", "input must be an object (the entry flow's input)")
    _consent(ctx, text)
    return text, a.input


def _consent(ctx: Context, text: str) -> None:
    """A spec from a request runs its commands only on a server the person started with
    `--allow-commands` (the spec is approved then); refused before anything is written
    otherwise. An invalid spec is left to the plan, which says why."""
    spec, _ = load_spec(text, ctx.runs().config.known)
    found = [] if spec is None else commands(spec)
    if not found:
        return
    if not ctx.allow_commands:
        raise Refused("untrusted", (
            f"this spec would run sh -c {shlex.quote(found[0])}, and this MCP server runs no "
            "command a client sends: the person who starts it allows that with "
            "`strato mcp --allow-commands` (or `strato mcp install --allow-commands`)"))
    assert spec is not None  # one approval per exact spec: runs of an earlier one keep theirs
    sha = trust.digest(spectrust.spec_bytes(text))
    spectrust.approve(ctx.root, f"mcp:{spec.entry}@{sha[:12]}", text)


@tool("stratum_plan", PlanArgs)
def plan(ctx: Context, a: PlanArgs) -> Document:
    """Start a run of the spec's entry flow (stored under refs/vivary/runs/): `ready` with
    the steps to do, each with its prompt (`do`) and contract."""
    runs = ctx.runs()
    return wire.runstate(runs, runs.plan(*_plan_request(ctx, a)).snap)


@tool("stratum_flow_run_bg", PlanArgs)
def run_bg(ctx: Context, a: PlanArgs) -> Document:
    """Start a run as stratum_plan does, driven by a detached runner (agents from
    .vivary/agents.toml do its steps): `running` with its runId at once; follow it with
    stratum_flow_bg_poll, stop it with stratum_flow_cancel_bg."""
    return {"status": "running", "runId": background.start(ctx.runs(), *_plan_request(ctx, a))}


class RunArgs(Args):
    runId: str


@tool("stratum_resume", RunArgs)
def resume(ctx: Context, a: RunArgs) -> Document:
    """Take a run up again (recorded as `resumed`) and answer it as it is now: due
    engine-dispatched fanouts run first, as `strato flow next`; a background run's
    runner is woken instead, and the answer is `running` while its fanout is in flight."""
    runs = ctx.runs()
    return wire.runstate(runs, background.take_up(runs, a.runId, "mcp"))


class StepResult(Args):
    output: Any = None
    failure: str | None = None
    usage: dict[str, Any] | None = None
    telemetry: dict[str, Any] | None = None


class StepDoneArgs(Args):
    runId: str
    stepId: str = Field(description="A ready step's id, or `<fanout>/<index>` for a consumer item.")
    result: StepResult = Field(description="{output?, failure?, usage?, telemetry?}")


def _result(r: StepResult) -> dict[str, Any]:
    return r.model_dump(exclude_unset=True)


@tool("stratum_step_done", StepDoneArgs)
def step_done(ctx: Context, a: StepDoneArgs) -> Document:
    """Report a ready step's result; the engine checks its contract and ensures and the
    answer is the run with what is ready next. It answers for the step's dispatch as it
    is now (a retry is a new dispatch: report it again)."""
    runs = ctx.runs()
    return wire.runstate(runs, runs.done(a.runId, a.stepId, None, _result(a.result), current=True).snap)


class TokenStepDoneArgs(StepDoneArgs):
    dispatchToken: str = Field(description="The token the step was handed out with.")
    generation: int | None = Field(None, description="The ready entry's generation.")
    contractDigest: str | None = Field(None, description="The ready entry's contractDigest.")
    revisionDigest: str | None = Field(None, description="The ready entry's revisionDigest.")


@tool("strato_step_done", TokenStepDoneArgs)
def token_step_done(ctx: Context, a: TokenStepDoneArgs) -> Document:
    """stratum_step_done that also names the dispatch it reports (its dispatchToken and,
    if given, the ready entry's generation and digests): a result for an issuance that
    was superseded (a retry, a revert, a cancel) is refused by each."""
    runs = ctx.runs()
    claims = a.model_dump(include={"generation", "contractDigest", "revisionDigest"}, exclude_none=True)
    done = runs.done(a.runId, a.stepId, a.dispatchToken, _result(a.result), claims)
    return wire.runstate(runs, done.snap)


class GateArgs(Args):
    runId: str
    stepId: str
    decision: str = Field(description="approve, revise, or kill (reject is kill).")


def _decide(ctx: Context, a: GateArgs, token: str | None, note: str | None) -> Document:
    runs = ctx.runs()
    decision = "kill" if a.decision == "reject" else a.decision
    outcome = runs.gate(a.runId, a.stepId, decision, token, note, via="mcp", client=ctx.client)
    background.wake(runs, outcome.snap.run_id)  # a background run carries on in its runner
    return wire.runstate(runs, outcome.snap)


class StratumGateArgs(GateArgs):
    gateToken: str | None = Field(None, description="The gate round's token (stale once decided).")
    rationale: str | None = Field(None, description="Why: recorded with the decision.")
    resolved_by: str | None = Field(None, description='"agent" (the only one an MCP client can be).')


@tool("stratum_gate_resolve", StratumGateArgs)
def gate_resolve(ctx: Context, a: StratumGateArgs) -> Document:
    """Decide the gate waiting now (or the round its `gateToken` names): approve, revise
    (re-run from its revise target) or kill (reject); refused unless `[gates] mcp =
    "resolve"` in .vivary/agents.toml (never for gates `[gates] person` reserves for a
    person). Recorded as resolved by the agent, with this client's name and the
    `rationale`; a `resolved_by` other than "agent" is refused (a person decides at a
    terminal: `strato flow gate`)."""
    if a.resolved_by not in (None, "agent"):
        message = (f"resolved_by {a.resolved_by!r}: over MCP a gate is decided by the agent; a person "
                   "decides at a terminal with `strato flow gate RUN STEP DECISION --resolved-by human`")
        raise Refused("resolved_by_not_agent", message)
    return _decide(ctx, a, a.gateToken, a.rationale)


class TokenGateArgs(GateArgs):
    gateToken: str = Field(description="The gate's token from its `ready` entry or strato_gates.")
    note: str | None = None


@tool("strato_gate_resolve", TokenGateArgs)
def token_gate_resolve(ctx: Context, a: TokenGateArgs) -> Document:
    """stratum_gate_resolve on the gate round it names (its gateToken: stale once the gate
    was decided or the run moved past it), with an optional note."""
    return _decide(ctx, a, a.gateToken, a.note)


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
    """Checkpoint a run's state under a label (a ref; the same label moves). Flow state
    only: no file changes."""
    return wire.committed(ctx.runs(), a.flow_id, a.label)


@tool("stratum_revert", CheckpointArgs)
def revert(ctx: Context, a: CheckpointArgs) -> Document:
    """Return a run to a checkpoint (state only: spend never rolls back, tokens rotate, no
    file changes): the run's state plus `reverted_to`."""
    return wire.reverted(ctx.runs(), a.flow_id, a.label)


class CancelArgs(Args):
    runId: str
    reason: str | None = None


@tool("strato_flow_cancel", CancelArgs)
def cancel(ctx: Context, a: CancelArgs) -> Document:
    """Cancel a run: its outstanding dispatch and gate tokens become stale; a background
    run's runner first stops the agents it started (the document of `strato flow cancel
    --json`); the agents a foreground engine elsewhere runs for it are stopped too."""
    runs = ctx.runs()
    view = background.cancel_view(runs, a.runId, "cli", a.reason)
    if view["status"] == "cancelled":
        agentgroups.stop_all(runs.repo, view["runId"])
    return view


def _unconfirmed(code: str, message: str, settled: bool, agents: dict[str, int]) -> None:
    """A cancel not confirmed is an error, never a note: what settled and which agents."""
    doc = {"error_type": code, "message": message, "flowSettled": settled, "agents": agents}
    raise ToolError(f"{code}: {message}", doc)


@tool("stratum_flow_cancel", CancelArgs)
def stratum_flow_cancel(ctx: Context, a: CancelArgs) -> Document:
    """Cancel a run in the foreground: the run is settled as cancelled (its outstanding
    dispatch and gate tokens go stale; a background run's runner stops first), then every
    agent run that declared this flow (`stratum_agent_run` with `flow` and a
    `cancellationId`) and every agent a foreground engine (`strato run`, a server
    driving the run's steps) is running for it has its process group stopped. `flowSettled`: the run is
    cancelled; `acknowledged`: and no claimed agent is left alive; `agents` counts
    them. A run that had already ended is not changed (`reason: already_<status>`); one
    already cancelled still has its agents stopped."""
    runs = ctx.runs()
    snap = runs.load(a.runId)
    before = snap.state["status"]
    if before not in RUN_TERMINAL:
        background.cancel_view(runs, snap.run_id, "mcp", a.reason)
    after = runs.load(snap.run_id)
    settled = after.state["status"] == "cancelled"
    none = {"claimed": 0, "reaped": 0, "gone": 0, "unresolved": 0}
    if settled:  # the agent runs that claimed the flow, and the agents its engine runs elsewhere
        claimed = service.stop_flow(ctx.agent_runs(), snap.run_id, "mcp")
        engines = agentgroups.stop_all(runs.repo, snap.run_id)
        agents = {k: claimed[k] + engines[k] for k in none}
    else:
        agents = none
    if not settled and before not in RUN_TERMINAL:  # a background runner still stopping it
        _unconfirmed("CANCELLATION_UNCONFIRMED", f"run {snap.run_id} is still {after.state['status']}",
                     False, agents)
    if agents["unresolved"]:
        _unconfirmed("CANCELLATION_TEARDOWN_TIMEOUT",
                     f"{agents['unresolved']} agent group(s) of run {snap.run_id} outlived the cancel",
                     True, agents)
    ledger = wire.ledger(runs.engine(after, judge=False))
    doc: Document = {"status": after.state["status"], "runId": snap.run_id, "flowSettled": settled,
                     "acknowledged": settled and not agents["unresolved"], "ledger": ledger, "agents": agents}
    return {**doc, "reason": f"already_{before}"} if before in RUN_TERMINAL else doc


@tool("stratum_audit", RunArgs)
def audit(ctx: Context, a: RunArgs) -> Document:
    """Every event of a run (Stratum's kinds, from the history of its ref), its steps and
    what it spent."""
    return wire.audit(ctx.runs(), a.runId)


class PollArgs(Args):
    runId: str
    cursor: int = Field(0, description="The event to start from: 0, or the last answer's nextCursor.")


@tool("stratum_flow_poll", PollArgs)
def flow_poll(ctx: Context, a: PollArgs) -> Document:
    """A run's events from `cursor` (at most 500; `nextCursor` is where the next page
    starts), its status, ledger and output or failure."""
    return wire.poll(ctx.runs(), a.runId, a.cursor)


@tool("strato_runs", NoArgs)
def list_runs(ctx: Context, a: NoArgs) -> Document:
    """Every run in the repository with its flow and status."""
    return views.list_view(ctx.runs())


@tool("strato_run_show", RunArgs)
def show(ctx: Context, a: RunArgs) -> Document:
    """A run's status, ready steps, gates, step statuses and checkpoints."""
    return views.show_view(ctx.runs(), a.runId)


class LanesArgs(Args):
    check: bool = Field(False, description="Replay the lanes' history against the runs it names instead.")


@tool("strato_lanes", LanesArgs)
def lanes(ctx: Context, a: LanesArgs) -> Document:
    """`strato lanes --json`: every verification lane (flow/step/agent) with its clean
    streak, verification rate, counts and last reset; with `check`, what `strato lanes
    --check --json` prints (`ok`, `findings`). Read-only."""
    return check_view(ctx.root) if a.check else lanes_view(ctx.root)


# our extras that answer exactly as a contract tool does (their requests say more)
ANSWERS_AS = {"strato_step_done": "stratum_step_done", "strato_gate_resolve": "stratum_gate_resolve"}

FLOW_TOOLS = frozenset(
    {
        "stratum_plan", "stratum_resume", "stratum_step_done", "strato_step_done", "stratum_gate_resolve",
        "strato_gate_resolve", "strato_gates", "stratum_commit", "stratum_revert", "strato_flow_cancel",
        "stratum_audit", "stratum_flow_poll", "strato_runs", "strato_run_show", "stratum_flow_cancel",
    }
)  # their documents may hold gate tokens
