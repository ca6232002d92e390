"""Every MCP tool, joined from the modules that define them, and the one way to call one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from strato.guard.errors import GuardError
from strato.mcp import agent_tools, distill_tools, tools, usage_tools
from strato.mcp.registry import Context, Document, Tool, ToolError
from strato.runs import views
from tropo.check import reports
from tropo.check.config import ConfigError
from tropo.git.repo import RevisionError
from tropo.git.snapshot import SourceError

TOOLS: dict[str, Tool] = {
    **tools.TOOLS, **agent_tools.TOOLS, **distill_tools.TOOLS, **usage_tools.TOOLS
}


def call(ctx: Context, name: str, arguments: Any) -> Document:
    """Validate ``arguments`` for tool ``name`` and run it."""
    if name not in TOOLS:
        raise ToolError(f"unknown tool {name!r} (list the tools to see what exists)")
    spec = TOOLS[name]
    try:
        args = spec.args.model_validate(arguments if arguments is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise ToolError(f"invalid arguments for {name}: {where}: {first['msg']}") from None
    with _expected_errors():
        doc = spec.handler(ctx, args)
        if name in tools.FLOW_TOOLS:
            doc = views.withhold_gate_tokens(doc, ctx.runs().config.gates)
        return doc


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
        raise ToolError(f"config error: {exc}") from None
    except (SourceError, RevisionError, reports.UnknownNode) as exc:
        raise ToolError(str(exc)) from None

