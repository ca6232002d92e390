"""Every MCP tool, joined from the modules that define them, and the one way to call one.

A tool of Stratum's contract (:mod:`strato.mcp.contract`) is held to it here, in one
place: its request is checked against the bounds of :mod:`strato.runs.engine.bounds` and then
the contract's keys and types before anything runs, its errors are the contract's
`error` document (`{status: "error", error_type, message}`, plus what the tool's error
variant declares), and its answer is checked before it is sent; so are the answers and
errors of our extras that answer as one of them (`strato_step_done` as
`stratum_step_done`, ...). An answer that breaks the contract is a bug, reported as
one: no tool can drift from the surface a Stratum client reads without the server
saying so. Every other tool's request is held to the same bounds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from strato.guard.errors import GuardError
from strato.mcp import (
    agent_tools,
    bg_tools,
    contract,
    distill_tools,
    guard_tools,
    shapes,
    tools,
    tropo_tools,
    usage_tools,
)
from strato.mcp.registry import Context, Document, Tool, ToolError
from strato.runs.engine import bounds
from strato.runs.views import documents as views
from tropo.check import reports
from tropo.check.config import ConfigError
from tropo.git.repo import RevisionError
from tropo.git.snapshot import SourceError

TOOLS: dict[str, Tool] = {
    **tools.TOOLS, **guard_tools.TOOLS, **tropo_tools.TOOLS,
    **agent_tools.TOOLS, **distill_tools.TOOLS, **bg_tools.TOOLS, **usage_tools.TOOLS,
}


_CODE = re.compile(r"([a-z][a-z_]*): ")


class ContractBreach(AssertionError):
    """A contract tool produced an answer outside the contract (a bug in the server)."""


def input_schema(name: str) -> Document:
    """What `tools/list` advertises for tool ``name``: a contract tool's request as its
    contract declares it, every key (its model may take the rest as extras, as the guard
    tools do, so the model alone would hide them), with the model's description of a
    key where it gives one; any other tool's model."""
    model = TOOLS[name].input_schema()
    if name not in contract.CONTRACTS:
        return model
    schema = shapes.json_schema(contract.CONTRACTS[name].request)
    described = model.get("properties", {})
    for key, prop in schema["properties"].items():
        if "description" in described.get(key, {}):
            prop["description"] = described[key]["description"]
    return schema


def call(ctx: Context, name: str, arguments: Any) -> Document:
    """Validate ``arguments`` for tool ``name`` and run it."""
    if name not in TOOLS:
        message = f"unknown tool {name!r} (list the tools to see what exists)"
        raise ToolError(message, _extra_error(message, None))
    shaped = name if name in contract.CONTRACTS else tools.ANSWERS_AS.get(name)
    if shaped is None:
        try:
            return _run(ctx, name, arguments)
        except ToolError as exc:
            raise ToolError(str(exc), _extra_error(str(exc), exc.document)) from None
    try:
        doc = _run(ctx, name, arguments)
    except ToolError as exc:
        raise ToolError(str(exc), _error_answer(shaped, str(exc), exc.document)) from None
    if problems := contract.answer_violations(shaped, doc):
        raise ContractBreach(f"{name} answered outside the contract: {'; '.join(problems[:3])}")
    return doc


def _run(ctx: Context, name: str, arguments: Any) -> Document:
    spec = TOOLS[name]
    given = arguments if arguments is not None else {}
    if (too_big := bounds.problem(given, "the request", bounds.MAX_REQUEST_BYTES)) is not None:
        message = f"invalid arguments for {name}: {too_big}"
        raise ToolError(message, {"ok": False, "error": message, "code": too_big.code})
    if name in contract.CONTRACTS and (problems := contract.request_violations(name, given)):
        raise ToolError(f"invalid arguments for {name}: {problems[0]}")
    try:
        args = spec.args.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise ToolError(f"invalid arguments for {name}: {where}: {first['msg']}") from None
    with _expected_errors():
        doc = spec.handler(ctx, args)
        if name in tools.FLOW_TOOLS:
            doc = views.withhold_gate_tokens(doc, ctx.runs().config.gates)
        return doc


def _error_answer(name: str, message: str, document: Document | None) -> Document:
    """A contract tool's error as the contract's `error` document: the subsystem's code
    (or error type) and message, and only the extra keys the tool's error variant
    declares (`available` for a checkpoint that does not exist). A document that is one
    already (the guard's envelope, a failed agent run's poll answer) is kept as it is."""
    invalid = message.startswith("invalid arguments")
    got = document or ({"code": "invalid_arguments"} if invalid else {})
    if got.get("status") == "error":  # already a contract document (the guard's, an agent run's)
        return got
    error_type = got.get("error_type") or got.get("code") or "error"
    answer: Document = {"status": "error", "error_type": str(error_type)}
    answer["message"] = got.get("message", message)
    variant = contract.CONTRACTS[name].variant("error")
    declared = variant.body.keys() if variant is not None else {}
    return {**answer, **{k: v for k, v in got.items() if k in declared and k not in answer}}


def _extra_error(message: str, document: Document | None) -> Document:
    """The error of a tool outside the contracts: its own document, or the one our
    extras answer with (`{ok: false, error, code}`), never text alone."""
    if document is not None:
        return document
    named = _CODE.match(message)  # `invalid_workspace_root: ...` names its code
    code = named.group(1) if named else "error"
    code = "invalid_arguments" if message.startswith("invalid arguments") else code
    code = "unknown_tool" if message.startswith("unknown tool") else code
    return {"ok": False, "error": message, "code": code}


@contextmanager
def _expected_errors() -> Iterator[None]:
    """Translate each subsystem's expected errors into the CLI's message and document."""
    try:
        yield
    except views.EXPECTED_ERRORS as exc:
        _, message, payload = views.describe_error(exc)
        raise ToolError(message, {"ok": False, "error": message, **payload}) from None
    except GuardError as exc:
        raise ToolError(f"{exc.error_type}: {exc.message}", exc.envelope()) from None
    except ConfigError as exc:
        message = f"config error: {exc}"
        raise ToolError(message, {"ok": False, "error": message, "code": "config_error"}) from None
    except (SourceError, RevisionError, reports.UnknownNode) as exc:
        code = "unknown_node" if isinstance(exc, reports.UnknownNode) else "invalid_revision"
        raise ToolError(str(exc), {"ok": False, "error": str(exc), "code": code}) from None
