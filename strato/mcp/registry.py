"""What every MCP tool module shares: the argument base, the context, the error, and a
collector each module fills with its own tools (the server joins them in
:mod:`strato.mcp.dispatch`, so no tool module imports another)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from strato.agentruns.store import Store
from strato.runs.service import Runs
from tropo.git.repo import require
from tropo.git.types import Repository

Document = dict[str, Any]


class ToolError(Exception):
    """An expected failure: one line for people, and the CLI's JSON error document."""

    def __init__(self, message: str, document: Document | None = None) -> None:
        super().__init__(message)
        self.document = document


@dataclass(frozen=True)
class Context:
    """The workspace the server was started on; no tool reaches outside it."""

    root: Path
    client: str | None = None  # the MCP client's name from its handshake (a label, not a proof)
    # `strato mcp --allow-commands`: the person who started the server lets its clients
    # run the commands a spec carries (and guard command predicates); off, none runs
    allow_commands: bool = False

    def repo(self) -> Repository:
        return require(self.root)

    def within(self, where: str) -> Path | None:
        """`where` (relative to the workspace, or absolute) resolved, symlinks followed, if
        that is inside it; None if it is not, or is no path at all (a NUL byte)."""
        try:
            path = (self.root / where).resolve()
        except (ValueError, OSError):
            return None
        return path if path.is_relative_to(self.root.resolve()) else None

    def runs(self) -> Runs:
        return Runs(self.root)

    def agent_runs(self) -> Store:
        return Store(Path(self.repo().path))


class Args(BaseModel):
    """Tool arguments: strict JSON types, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class NoArgs(Args):
    """A tool that takes no arguments (any key is refused)."""


Handler = Callable[[Context, Any], Document]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    handler: Handler

    def input_schema(self) -> Document:
        return self.args.model_json_schema()


Register = Callable[[str, type[BaseModel]], Callable[[Handler], Handler]]


def collector(into: dict[str, Tool]) -> Register:
    """A ``@tool(name, Args)`` decorator that puts each handler into ``into``."""

    def tool(name: str, args: type[BaseModel]) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            into[name] = Tool(name, " ".join((fn.__doc__ or "").split()), args, fn)
            return fn

        return register

    return tool
