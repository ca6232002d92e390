"""Drive the real `strato mcp` server through the SDK's own client: in this process over
the SDK's memory streams (what most tests prove is a tool's answer, and a server process
costs ~0.9 s of CPU, most of it importing the SDK), or as a subprocess over stdio where
the transport and the command line are what a test proves (`stdio=True`)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.memory import create_client_server_memory_streams

from strato.mcp.registry import Context
from strato.mcp.server import build
from tropo.git.repo import require, workdir

GATE_SPEC = """\
version: 1
contracts:
  Draft:
    text: string
    score: number
flows:
  entry: reviewed
  reviewed:
    input:
      topic: string
    output:
      from: "${work.output}"
      contract: Draft
    max_rounds: 3
    steps:
      - id: work
        do: "Write about ${input.topic}"
        agent: codex
        out: Draft
        ensure:
          - expr: "result.score >= 0.8"
        attempts: 2
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
          max_rounds: 3
"""

GRAPH_FILES = {
    "tropo.toml": """\
version = 1
[base]
derive = ["id", "title", "created", "updated"]
allow_untyped = true

[types.module]
folder = "modules"
optional = { depends_on = "ref-list" }
""",
    "modules/core.md": "---\n---\n# Core\n",
    "modules/api.md": "---\ndepends_on: [core]\n---\n# API\n",
    "modules/web.md": "---\ndepends_on: [api]\n---\n# Web\n",
}


class Session:
    """A connected client with helpers that decode the JSON documents tools return."""

    def __init__(self, session: ClientSession) -> None:
        self.raw = session

    async def call(self, name: str, arguments: Any = None) -> types.CallToolResult:
        return await self.raw.call_tool(name, arguments)

    async def ok(self, name: str, arguments: Any = None) -> dict[str, Any]:
        result = await self.call(name, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        doc = json.loads(text)
        assert result.structured_content == doc
        return doc  # type: ignore[no-any-return]

    async def error(self, name: str, arguments: Any = None) -> tuple[str, dict[str, Any] | None]:
        result = await self.call(name, arguments)
        assert result.is_error, result
        text = result.content[0].text  # type: ignore[union-attr]
        assert "\n" not in text and "Traceback" not in text
        return text, result.structured_content


Scenario = Callable[[Session], Awaitable[None]]


def run_server(root: Path, scenario: Scenario, *extra: str, stdio: bool = False) -> None:
    """Run the scenario against `strato mcp --root ROOT [EXTRA]`: the server `strato mcp`
    builds for those options, in this process, or started as a real process (``stdio``)."""
    if stdio:
        anyio.run(_over_stdio, root, scenario, extra)
    else:
        anyio.run(_in_process, root, scenario, extra)


async def _over_stdio(root: Path, scenario: Scenario, extra: tuple[str, ...]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strato.cli", "mcp", "--root", str(root), *extra],
        env=dict(os.environ),
        cwd=str(root.parent),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await scenario(Session(session))


async def _in_process(root: Path, scenario: Scenario, extra: tuple[str, ...]) -> None:
    """The server `strato mcp` would serve (the same Context from the same options),
    connected to the SDK's client through its memory streams."""
    assert set(extra) <= {"--allow-commands"}, f"not an option this runner knows: {extra}"
    ctx = Context(workdir(require(root)).resolve(), allow_commands="--allow-commands" in extra)
    server = build(ctx)
    async with create_client_server_memory_streams() as (client, served), anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.run(*served, server.create_initialization_options()))
        async with ClientSession(*client) as session:
            await session.initialize()
            await scenario(Session(session))
        tg.cancel_scope.cancel()


class Wire:
    """`strato mcp` as a process spoken to in raw JSON-RPC lines, every read bounded."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "strato.cli", "mcp", "--root", str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def handshake(self) -> None:
        """`initialize` (as id 1) and `initialized`, as a client opens a session."""
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert self.answer()["id"] == 1
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=120)  # a hang is a loud failure
        except queue.Empty:
            raise AssertionError("strato mcp gave no answer within 120 s") from None
        doc: dict[str, Any] = json.loads(line)
        return doc

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()  # the server stops at the end of its input
        self.proc.wait(timeout=60)
        return self.proc.stderr.read().decode()
