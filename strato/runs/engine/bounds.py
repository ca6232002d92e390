"""How deep and how large a JSON value may be where it enters a run: the one owner of
the bound on every MCP request (:mod:`strato.mcp.dispatch`), on every step result
written into a run (`Runs.done`, whoever reports it: MCP, `strato flow done`, the
engine) and on a run's input. Every later walk of a stored value (the contract and
ensure checks, the expression bindings, canonical JSON, the event rebuild) then meets
only values this small, and a value past a bound is refused before anything is written.

The walk is iterative, so a value of any depth is measured without recursion, and the
size is that of the compact JSON text the run would store."""

from __future__ import annotations

import json
from typing import Any

from strato.runs.engine.state import Refused

MAX_DEPTH = 64  # levels of arrays/objects: far past any real result, well under every walk's limit
MAX_RESULT_BYTES = 1024 * 1024  # a step result (or a run's input) as stored in each transition
# one request: an MCP call's arguments, or the JSON text a CLI option reads (a spec may be 16 MiB)
MAX_REQUEST_BYTES = 16 * 1024 * 1024


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How many levels of arrays and objects ``value`` nests (a scalar is 0), counted
    up to ``limit + 1``: past that the exact figure is never needed."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if not isinstance(node, list):
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level) for child in node)
    return deepest


def size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON text (call it on a value of bounded depth)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8", "surrogatepass"))


def problem(value: Any, what: str, max_bytes: int) -> Refused | None:
    """Why ``value`` may not enter (as the refusal to raise), or None if it may."""
    if depth(value) > MAX_DEPTH:
        return Refused("too_deep", f"{what} nests deeper than {MAX_DEPTH} levels of arrays and objects")
    if size(value) > max_bytes:
        return Refused("too_large", f"{what} is larger than {_mib(max_bytes)} as JSON")
    return None


def agent_output(output: Any, what: str) -> str | None:
    """Why an agent's output may not become a step result (its call then failed: a
    retry may do better), or None: :func:`strato.agents.calls.interpret` asks."""
    too_big = problem({"output": output}, what, MAX_RESULT_BYTES)
    return None if too_big is None else str(too_big)


def check(value: Any, what: str, max_bytes: int = MAX_RESULT_BYTES) -> None:
    """Refuse ``value`` (``too_deep`` or ``too_large``) unless it is within the bounds."""
    if (refusal := problem(value, what, max_bytes)) is not None:
        raise refusal


def loads(text: str, what: str, max_bytes: int = MAX_REQUEST_BYTES) -> Any:
    """JSON text (at most :data:`MAX_REQUEST_BYTES`) parsed and checked: text nested past
    Python's own parser's recursion limit is refused as ``too_deep`` like any other
    too-deep value, never a traceback; text that is not JSON raises
    `json.JSONDecodeError` as usual."""
    if len(text) > MAX_REQUEST_BYTES:
        raise Refused("too_large", f"{what} is larger than {_mib(MAX_REQUEST_BYTES)}")
    try:
        value = json.loads(text)
    except RecursionError:
        raise Refused(
            "too_deep", f"{what} nests deeper than {MAX_DEPTH} levels of arrays and objects"
        ) from None
    check(value, what, max_bytes)
    return value


def _mib(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n} bytes"
