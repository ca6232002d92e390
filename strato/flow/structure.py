"""Validation stage 1: the structural pass. Model validation reports every issue; this
module maps pydantic's error types and locations onto Stratum's codes and paths
(`E2_UNKNOWN_FIELD`, `E2_CONSTRUCT_MIX`, `E2_FIELD_FOR_KIND`, `E2_RESERVED_FIELD`,
otherwise `SCHEMA_INVALID`)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from strato.flow.errors import SpecError, format_path
from strato.flow.refs import child
from strato.flow.spec import BUILTIN_AGENTS, RESERVED_KEYS, STEP_FIELDS, Spec

_MEMBER = re.compile(r"(int|float|str|bool|constrained-\w+|literal\[.*\]|function-.*|\[key\])\Z")
_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown field",
}


def structural_errors(
    data: Any, agents: Collection[str] = BUILTIN_AGENTS
) -> tuple[Spec | None, list[SpecError]]:
    """Validate the raw document's shape; all issues, in document order. `agents` are
    the names a step's `agent:` may use."""
    errors = _reserved_keys(data)
    try:
        spec = Spec.model_validate(data, context={"agents": frozenset(agents)})
    except ValidationError as exc:
        reserved = {e.path for e in errors}
        mapped = [_map(data, err) for err in exc.errors()]
        return None, errors + _dedupe([e for e in mapped if e.path not in reserved])
    return (None, errors) if errors else (spec, [])


def _dedupe(errors: list[SpecError]) -> list[SpecError]:
    """Union alternatives fail once each at the same place; report the place once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for err in errors:
        if (err.code, err.path) not in seen:
            seen.add((err.code, err.path))
            out.append(err)
    return out


def _real_loc(data: Any, loc: tuple[str | int, ...]) -> list[str | int]:
    """Follow a pydantic location through the raw document, dropping union tags and
    member names so the path names only keys that the author wrote (or must write)."""
    parts: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if _is_tag(loc, i) or (isinstance(part, str) and _MEMBER.match(part)):
            continue
        # a missing key is still named; nothing below it exists
        node = child(node, part)[1]
        parts.append(part)
    return parts


def _is_tag(loc: tuple[str | int, ...], i: int) -> bool:
    """Position i holds a discriminated-union tag: after a step index (flows.F.steps[n])
    or after an ensure index."""
    if i < 2 or not isinstance(loc[i - 1], int):
        return False
    owner = loc[i - 2]
    return owner == "ensure" or (owner == "steps" and i == 4 and loc[0] == "flows")


def _map(data: Any, err: ErrorDetails) -> SpecError:
    loc = tuple(err["loc"])
    parts = _real_loc(data, loc)
    path = format_path(parts)
    kind = err["type"]
    if kind == "E2_CONSTRUCT_MIX":
        return SpecError(kind, path, err["msg"])
    if kind == "extra_forbidden":
        key = parts[-1] if parts else ""
        if _is_step_loc(loc) and key in STEP_FIELDS:
            return SpecError(
                "E2_FIELD_FOR_KIND", path, f"{key!r} is not allowed on a {loc[4]} step"
            )
        return SpecError("E2_UNKNOWN_FIELD", path, f"unknown field {key!r}")
    message = _MESSAGES.get(kind, err["msg"])
    if parts == ["version"]:
        message = "version must be the number 1 (not a string, not a v0.x version)"
    if kind == "missing" and parts[-1:] in (["out"], ["with"]) and len(loc) > 4:
        message = f"{parts[-1]} is required for {loc[4]}"
    return SpecError("SCHEMA_INVALID", path, message)


def _is_step_loc(loc: tuple[str | int, ...]) -> bool:
    """An extra key directly on a flow step: ("flows", F, "steps", n, tag, key)."""
    return len(loc) == 6 and loc[0] == "flows" and loc[2] == "steps" and isinstance(loc[3], int)


def _reserved_keys(data: Any) -> list[SpecError]:
    """`__proto__`/`constructor`/`prototype` as own keys of contracts, contract fields,
    flow inputs and carry blocks (names that would corrupt a JavaScript object)."""
    out: list[SpecError] = []
    if not isinstance(data, dict):
        return out
    maps: list[tuple[tuple[str | int, ...], Any]] = [(("contracts",), data.get("contracts"))]
    contracts = data.get("contracts")
    if isinstance(contracts, dict):
        maps += [(("contracts", name), fields) for name, fields in contracts.items()]
    flows = data.get("flows")
    if isinstance(flows, dict):
        for name, flow in flows.items():
            if isinstance(flow, dict):
                maps += [((("flows", name, key)), flow.get(key)) for key in ("input", "carry")]
    for where, mapping in maps:
        if isinstance(mapping, dict):
            out += [
                SpecError(
                    "E2_RESERVED_FIELD", format_path((*where, key)), f"{key!r} is a reserved name"
                )
                for key in mapping
                if key in RESERVED_KEYS
            ]
    return out
