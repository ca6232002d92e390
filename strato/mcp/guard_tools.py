"""The tools that rule on an action: `strato guard`'s operations (the request object is the
tool's arguments, as on its stdin; Stratum's five guard tools answer with its guard JSON)
and `strato decide --governed`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strato.decide.decision import Refusal, decide
from strato.guard import authz, consent
from strato.guard import engine as guard_engine
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from strato.mcp import contract
from strato.mcp.registry import Args, Context, Document, Tool, ToolError, collector
from tropo.git.repo import RevisionError, resolve_commit

TOOLS: dict[str, Tool] = {}
tool = collector(TOOLS)


# --- guard


class GuardArgs(BaseModel):
    """Stratum's guard request; the guard itself refuses unknown or mistyped fields (and
    the contract's request check runs first for Stratum's five guard tools)."""

    model_config = ConfigDict(extra="allow", strict=True)
    resource_id: str


def _guard_request(ctx: Context, a: BaseModel) -> Document:
    req = a.model_dump()
    where = req.get("workspace_root")
    if isinstance(where, str) and ctx.within(where) is None:
        raise ToolError(f"invalid_workspace_root: {where} is outside the workspace {ctx.root}")
    if "override_token" in req:  # Stratum's name for what authorizes it: here a person's signature
        req["authorization"] = req.pop("override_token")
    return req


# the engine's answer names that Stratum's surface calls otherwise
_GUARD_STATUS = {
    "stratum_guard_override": {"applied": "deviation"},
    "stratum_guard_history": {"ok": "success"},
}


def _guard_answer(name: str, doc: Document, req: Document) -> Document:
    """The guard's answer as the contract's variant of it: Stratum's status name and only
    the keys it declares (the digests and signer `strato guard` adds stay at the CLI)."""
    status = str(doc["status"])
    status = _GUARD_STATUS.get(name, {}).get(status, status)
    variant = contract.CONTRACTS[name].variant(status)
    if variant is None:
        return doc  # not a variant of the contract: the dispatch's check refuses it
    answer = {**doc, "status": status, **({"rationale": req["rationale"]} if "rationale" in req else {})}
    return {k: v for k, v in answer.items() if k == "status" or k in variant.body.keys()}  # noqa: SIM118 - Obj.keys()


def _guard_register(ctx: Context, req: Document) -> Document:
    """A policy's commands are programs the client chose: registered only when the server
    was started with ``--allow-commands``, which then approves the policy (docs/guard.md)."""
    pol = guard_engine.requested_policy(req)
    if (found := consent.commands(pol)) and not ctx.allow_commands:
        raise GuardError(
            "command_execution_disabled",
            f"the policy would run {consent.runs(found)}; an MCP client may register a guard "
            "command only when the server was started with `strato mcp --allow-commands`",
        )
    doc = guard_engine.register(ctx.repo(), req)
    consent.approve_registered(ctx.root, req["resource_id"], pol)
    return doc


def _guard_tool(operation: str, name: str) -> None:
    op = guard_engine.OPERATIONS[operation]
    shaped = name in contract.CONTRACTS

    def handler(ctx: Context, a: GuardArgs) -> Document:
        req = _guard_request(ctx, a)
        doc = _guard_register(ctx, req) if operation == "register" else op(ctx.repo(), req)
        return _guard_answer(name, doc, req) if shaped else doc

    says = "Stratum's guard JSON" if shaped else f"`strato guard {operation} --json`'s document"
    handler.__doc__ = f"`strato guard {operation}`: {op.__doc__} Answers with {says}."
    tool(name, GuardArgs)(handler)


for _operation in guard_engine.OPERATIONS:
    _suffix = _operation.replace("-", "_")
    _stratum = "stratum_guard_" + _suffix
    if _stratum in contract.CONTRACTS:  # the names the reference or the seed gives
        _guard_tool(_operation, _stratum)
    if _stratum in contract.SEED_TOOLS or _stratum not in contract.CONTRACTS:
        _guard_tool(_operation, "strato_guard_" + _suffix)  # our twin, kept as it was


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
