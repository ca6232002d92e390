"""The stdio transport: the MCP SDK around :mod:`strato.mcp.tools`. Importing this module
needs the optional ``mcp`` package; nothing else in strato does."""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import replace
from importlib.metadata import version
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from strato.mcp import stdin
from strato.mcp.dispatch import TOOLS, call, input_schema
from strato.mcp.registry import Context, ToolError

INSTRUCTIONS = (
    "Flows, gates, guard ledgers, governed decisions and the typed graph of one git "
    "workspace. Consumer mode: stratum_plan (or stratum_resume) lists ready steps, each "
    "with a dispatchToken; do the step's work, then report it with stratum_step_done "
    "and that token. Decide gates with stratum_gate_resolve and the gateToken."
)


def _text_content(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def build(ctx: Context) -> Server[Any]:
    """A server whose tools act on the workspace at ``ctx.root`` only."""
    listing = [
        types.Tool(name=t.name, description=t.description, input_schema=input_schema(t.name))
        for t in TOOLS.values()
    ]

    async def list_tools(_: Any, __: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(request: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = replace(ctx, client=_client_name(request))
        try:  # in a worker thread, so the connection stays responsive during git work
            doc = await anyio.to_thread.run_sync(call, caller, params.name, params.arguments)
        except ToolError as exc:
            return types.CallToolResult(
                content=_text_content(str(exc)), structured_content=exc.document, is_error=True
            )
        except Exception as exc:  # a bug: the host gets one line, stderr the traceback
            traceback.print_exc(file=sys.stderr)
            message = f"internal error in {params.name}: {type(exc).__name__}: {exc}"
            return types.CallToolResult(content=_text_content(message), is_error=True)
        content = _text_content(json.dumps(doc, sort_keys=True))
        return types.CallToolResult(content=content, structured_content=doc)

    return Server(
        "strato", version=version("vivary-git"), instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool,
    )


def _client_name(request: Any) -> str:
    """The client's name and version as its handshake gave them: recorded with a gate it
    decides, so the history says which host acted (the client chooses these bytes, so
    they label the decision; they never grant anything)."""
    params = getattr(getattr(request, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "unknown client")[:100]
    version = str(getattr(info, "version", "") or "")[:50]
    return f"{name} {version}".strip()


def serve(ctx: Context) -> None:
    """Serve on stdin/stdout until the client closes the connection (stdin read through
    :mod:`strato.mcp.stdin`, so a line too deep for the SDK's parser is still answered)."""
    server = build(ctx)

    async def main() -> None:
        with stdin.claimed() as wire:
            lines = anyio.wrap_file(cast(TextIO, wire))  # it reads only by `readline`
            async with stdio_server(stdin=lines) as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
