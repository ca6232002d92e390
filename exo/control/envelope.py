"""The governed control envelope ``vivary.exo-control-request/v0``: read it, bound it,
check its fields, and answer with a result or a refusal document.

Everything in the request is the caller's, so it is bounded *before* it is walked
(size, depth, breadth, values visited) and refused whole on any unknown or missing
field, duplicate key, non-JSON constant or number without one lossless form.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from exo.control import evidence, ledger, tasks
from tropo.canonical import is_lossless, unique_keys

REQUEST_SCHEMA = "vivary.exo-control-request/v0"
RESULT_SCHEMA = "vivary.exo-control-result/v0"
REFUSAL_SCHEMA = "vivary.exo-control-refusal/v0"
MAX_REQUEST_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_COLLECTION = 10_000
MAX_STRING_BYTES = 1024 * 1024
MAX_VALUES = 100_000
INVALID_DOCUMENT = "invalid_request_document"
INVALID_VALUE = "invalid_json_value"
TOO_DEEP = "request_too_deeply_nested"
TOO_LARGE = "request_too_large"
UNBOUNDED = "request_work_unbounded"

_CLAIMS = frozenset({"claims"})
_TASK = frozenset({"task", "execution_log"})
#: operation -> (state fields, input fields allowed, input fields required)
OPERATIONS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "claim": (_CLAIMS, frozenset({"scope", "actor", "now", "authority_class", "lease"}),
              frozenset({"scope", "actor", "now"})),
    "release": (_CLAIMS, frozenset({"claim_id", "actor"}), frozenset({"claim_id", "actor"})),
    "expire_leases": (_CLAIMS, frozenset({"now"}), frozenset({"now"})),
    "dependencies": (frozenset({"tasks"}), frozenset({"task_id"}), frozenset({"task_id"})),
    "handoff": (_CLAIMS,
                frozenset({"claim_id", "receipt", "capsule", "from_actor", "to_actor",
                           "workspace_revision", "created_at", "to_authority_class"}),
                frozenset({"claim_id", "receipt", "capsule", "from_actor", "to_actor",
                           "workspace_revision", "created_at"})),
    "record_execution": (frozenset({"execution_log"}), frozenset({"receipt", "capsule"}),
                         frozenset({"receipt", "capsule"})),
    "complete": (_TASK, frozenset(), frozenset()),
    "task_view": (_TASK, frozenset(), frozenset()),
}


class DocumentError(Exception):
    """The request document is not one bounded JSON object; ``code`` says why."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def refusal(codes: list[str]) -> dict[str, Any]:
    return {"schema": REFUSAL_SCHEMA, "reason_codes": list(dict.fromkeys(codes))}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(document: bytes) -> Any:
    """The JSON value of ``document``: strict UTF-8, no duplicate keys, no NaN or
    Infinity, at most 1 MiB."""
    if len(document) > MAX_REQUEST_BYTES:
        raise DocumentError(TOO_LARGE)
    try:
        return json.loads(document.decode("utf-8"), object_pairs_hook=unique_keys,
                          parse_constant=_no_constant)
    except RecursionError as exc:
        raise DocumentError(TOO_DEEP) from exc
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise DocumentError(INVALID_DOCUMENT) from exc


def read(source: IO[bytes]) -> Any:
    """Parse at most one byte more than the limit from ``source``."""
    try:
        return parse(source.read(MAX_REQUEST_BYTES + 1))
    except OSError as exc:
        raise DocumentError(INVALID_DOCUMENT) from exc


def _children(item: list[Any] | dict[str, Any]) -> Iterator[Any]:
    if isinstance(item, list):
        yield from item
        return
    for key, value in item.items():
        yield key
        yield value


def bound_code(request: Any) -> str | None:
    """Why a JSON-like value is too big to walk, or not JSON at all: the first such
    value in document order, found without recursion."""
    visited = 0
    end: Any = object()
    stack: list[tuple[Iterator[Any], int]] = [(iter((request,)), 0)]
    while stack:
        items, depth = stack[-1]
        item: Any = next(items, end)
        if item is end:
            stack.pop()
            continue
        visited += 1
        if visited > MAX_VALUES:
            return UNBOUNDED
        if type(item) is str:
            if len(item.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES:
                return UNBOUNDED
            continue
        if item is None or type(item) in (bool, int, float):
            continue
        if type(item) not in (list, dict):
            return INVALID_VALUE
        if depth + 1 > MAX_DEPTH:
            return TOO_DEEP
        if len(item) > MAX_COLLECTION:
            return UNBOUNDED
        stack.append((_children(item), depth + 1))
    return None


def _field_codes(value: Any, allowed: frozenset[str], required: frozenset[str],
                 section: str) -> list[str]:
    if type(value) is not dict:
        return [f"invalid_{section}"]
    return ([f"missing_{section}_field:{f}" for f in sorted(required - set(value))]
            + [f"unknown_{section}_field:{f}" for f in sorted(set(value) - allowed)])


def envelope_codes(request: Any) -> list[str]:
    """Every envelope error of ``request`` (empty: it can be dispatched)."""
    if type(request) is not dict:
        return ["unknown_request_shape"]
    fields = set(request)
    top = frozenset({"schema", "operation", "state", "input"})
    codes = ([f"missing_field:{f}" for f in sorted(top - fields)]
             + [f"unknown_field:{f}" for f in sorted(fields - top)])
    if request.get("schema") != REQUEST_SCHEMA:
        codes.append("invalid_schema")
    operation = request.get("operation")
    if type(operation) is not str or operation not in OPERATIONS:
        codes.append("invalid_operation")
    if codes:
        return codes
    state, allowed, required = OPERATIONS[str(operation)]
    return (_field_codes(request["state"], state, state, "state")
            + _field_codes(request["input"], allowed, required, "input"))


def _dispatch(operation: str, state: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    if operation == "claim":
        return ledger.request_claim(state["claims"], given)
    if operation == "release":
        return ledger.release_claim(state["claims"], given["claim_id"], given["actor"])
    if operation == "expire_leases":
        return ledger.expire_leases(state["claims"], given["now"])
    if operation == "dependencies":
        return tasks.evaluate_dependencies(state["tasks"], given["task_id"])
    if operation == "handoff":
        return evidence.handoff(state["claims"], given)
    if operation == "record_execution":
        return evidence.record_execution(state["execution_log"], given["receipt"], given["capsule"])
    if operation == "complete":
        return tasks.complete(state["task"], state["execution_log"])
    return tasks.task_view(state["task"], state["execution_log"])


def answer(request: Any) -> dict[str, Any]:
    """The result or refusal document for one parsed request."""
    code = bound_code(request)
    if code is None and not is_lossless(request):
        code = INVALID_VALUE
    if code is not None:
        return refusal([code])
    codes = envelope_codes(request)
    if codes:
        return refusal(codes)
    operation = request["operation"]
    return {"schema": RESULT_SCHEMA, "operation": operation,
            "result": _dispatch(operation, request["state"], request["input"])}


def is_refused(document: dict[str, Any]) -> bool:
    """What ``--strict`` fails on: a refusal, a refused decision or any reason code."""
    if document["schema"] == REFUSAL_SCHEMA:
        return True
    result = document["result"]
    return result.get("decision") == "refused" or bool(result.get("reason_codes"))


def as_json(document: dict[str, Any]) -> str:
    """Compact, key-sorted, ASCII-escaped: the suite's ``--json`` bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def as_text(document: dict[str, Any]) -> list[str]:
    if document["schema"] == REFUSAL_SCHEMA:
        codes = document["reason_codes"]
        return ["exo control: refused" + (f": {', '.join(codes)}" if codes else "")]
    result = document["result"]
    codes = result.get("reason_codes", [])
    decision = result.get("decision")
    status = decision if type(decision) is str else ("refused" if codes else "ok")
    lines = [f"exo control: {document['operation']} {status}"]
    if codes:
        lines.append(f"reasons: {', '.join(codes)}")
    return lines
