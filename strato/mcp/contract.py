"""Stratum's MCP wire contract as data: every tool's request and response shapes and every
run event's payload, written in the reference's own shape language (surface version 6,
events version 7) and parsed once, with one pure check, :func:`violations`. The server
checks each request and answer of a contract tool against it, and the contract test
checks each answer and event, so neither can drift from the other.

Shape language: leaf types ``number|string|boolean|object|array|null|any``, unions with
``|``, ``A[]`` for an array of A, a key ending in ``?`` is optional, nested objects
inline, a key without a type is ``any`` unless :data:`BARE` names its type. A response
is a variant: ``status`` (``type`` for an event) equals the variant's name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LEAVES = frozenset({"number", "string", "boolean", "object", "array", "null", "any"})

# a key the reference writes without a type has the type it gives that key elsewhere
BARE = {
    "runId": "string",
    "stepId": "string",
    "flow_id": "string",
    "label": "string",
    "guard_id": "string",
    "checksum": "string",
    "error_type": "string",
    "message": "string",
}


@dataclass(frozen=True)
class Leaf:
    name: str


@dataclass(frozen=True)
class Union:
    options: tuple[Shape, ...]


@dataclass(frozen=True)
class ArrayOf:
    item: Shape


@dataclass(frozen=True)
class Field:
    name: str
    shape: Shape
    optional: bool


@dataclass(frozen=True)
class Obj:
    fields: tuple[Field, ...]

    def plus(self, other: Obj) -> Obj:
        return Obj(self.fields + other.fields)

    def keys(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}


@dataclass(frozen=True)
class Variant:
    """One response (``tag="status"``) or event kind (``tag="type"``)."""

    tag: str
    name: str
    body: Obj


Shape = Leaf | Union | ArrayOf | Obj | Variant


# --- the parser of the reference's shape language

_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\[\])|(.))")


class _Parser:
    def __init__(self, text: str, names: Mapping[str, Shape]) -> None:
        self.tokens = [
            m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text) if m.group().strip()
        ]
        self.pos = 0
        self.names = names

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, want: str | None = None) -> str:
        token = self.peek()
        if token is None or (want is not None and token != want):
            raise ValueError(f"shape: expected {want or 'a token'} at {self.pos}, got {token!r}")
        self.pos += 1
        return token

    def shape(self) -> Shape:
        options = [self.array()]
        while self.peek() == "|":
            self.take("|")
            options.append(self.array())
        return options[0] if len(options) == 1 else Union(tuple(options))

    def array(self) -> Shape:
        out = self.primary()
        while self.peek() == "[]":
            self.take("[]")
            out = ArrayOf(out)
        return out

    def primary(self) -> Shape:
        token = self.take()
        if token == "{":
            return self.obj()
        if token in LEAVES:
            return Leaf(token)
        if token in self.names:
            return self.names[token]
        raise ValueError(f"shape: unknown type {token!r}")

    def obj(self) -> Obj:
        fields: list[Field] = []
        while self.peek() != "}":
            name = self.take()
            optional = self.peek() == "?"
            if optional:
                self.take("?")
            if self.peek() == ":":
                self.take(":")
                shape = self.shape()
            else:
                shape = Leaf(BARE.get(name, "any"))
            fields.append(Field(name, shape, optional))
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return Obj(tuple(fields))


def parse(text: str, names: Mapping[str, Shape] | None = None) -> Shape:
    """The shape ``text`` writes, with ``names`` (the abbreviations) resolved."""
    p = _Parser(text, names or {})
    out = p.shape()
    if p.peek() is not None:
        raise ValueError(f"shape: trailing {p.peek()!r} in {text!r}")
    return out


def _obj(text: str, names: Mapping[str, Shape]) -> Obj:
    shape = parse(text, names)
    if not isinstance(shape, Obj):
        raise ValueError(f"shape: {text!r} is not an object")
    return shape


# --- the abbreviations

ABBREVIATIONS: dict[str, Shape] = {}
for _name, _text in [
    ("LEDGER", "{spent: object, budget?: object}"),
    ("FAILURE", "{attempt: number, reason: string}"),
    ("TELEMETRY", "{durationMs: number, model: string, effort?: string}"),
    ("BG", "{status: string, cancelRequested: boolean, pendingGates: array, gateStepId?: string}"),
    ("ERR", "{error_type: string, message: string}"),
]:
    ABBREVIATIONS[_name] = parse(_text, ABBREVIATIONS)

RUNSTATE_TEXT = {
    "ready": "{runId, ready: array, ledger: LEDGER}",
    "running": "{runId, ledger: LEDGER}",
    "completed": "{runId, output: any, ledger: LEDGER}",
    "failed": "{runId, failure: FAILURE, ledger: LEDGER}",
    "budget_exhausted": "{runId, failure: FAILURE, ledger: LEDGER}",
}


_EACH = "each RUNSTATE variant plus "


def _variants(text: str) -> tuple[Variant, ...]:
    """``a: {..}; b / c: {..}; RUNSTATE; each RUNSTATE variant plus k: T`` as variants."""
    out: list[Variant] = []
    for part in _split(text, ";"):
        if part == "RUNSTATE" or part.startswith(_EACH):
            plus = _obj("{" + part[len(_EACH) :] + "}", ABBREVIATIONS) if part != "RUNSTATE" else Obj(())
            out.extend(
                Variant("status", name, _obj(body, ABBREVIATIONS).plus(plus))
                for name, body in RUNSTATE_TEXT.items()
            )
            continue
        names, _, body = part.partition(":")
        obj = _obj(body.strip(), ABBREVIATIONS)
        out.extend(Variant("status", n.strip(), obj) for n in names.split("/"))
    return tuple(out)


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


@dataclass(frozen=True)
class ToolContract:
    name: str
    request: Obj
    responses: tuple[Variant, ...]

    def variant(self, status: str) -> Variant | None:
        return next((v for v in self.responses if v.name == status), None)

    @property
    def statuses(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.responses)


_CHECKPOINT_ERROR = "error: {error_type, message, available?: array}"
_RUN_EVENTS = "{runId, events: array, nextCursor: number, ledger: LEDGER, output?: any, failure?: object"
_ENDED = "running / completed / failed / budget_exhausted"

_TOOLS_TEXT: list[tuple[str, str, str]] = [
    ("stratum_validate", "{spec: any}", "valid: {}; invalid: {errors: array}"),
    (
        "stratum_compile_speckit",
        "{tasks_dir: string, flow_name?: string}",
        "ok: {yaml: string, flow_name: string, steps: array}; error: ERR",
    ),
    ("stratum_plan", "{spec: any, input: any, workspaceRoot?: string}", "RUNSTATE"),
    (
        "stratum_step_done",
        "{runId: string, stepId: string, result: {output?: any, failure?: string, "
        "usage?: object, telemetry?: TELEMETRY}}",
        "RUNSTATE",
    ),
    ("stratum_resume", "{runId: string}", "RUNSTATE"),
    ("stratum_gate_resolve", "{runId: string, stepId: string, decision: string}", "RUNSTATE"),
    (
        "stratum_commit",
        "{flow_id: string, label: string}",
        "committed: {flow_id, label, step_number: number, current_step_id: string|null, checkpoints: array}; "
        + _CHECKPOINT_ERROR,
    ),
    (
        "stratum_revert",
        "{flow_id: string, label: string}",
        "each RUNSTATE variant plus reverted_to: string; " + _CHECKPOINT_ERROR,
    ),
    (
        "stratum_audit",
        "{runId: string}",
        f"{_ENDED}: {{runId, events: array, steps: object, flowSpent: object, output?: any}}",
    ),
    ("stratum_flow_poll", "{runId: string, cursor?: number}", f"{_ENDED}: {_RUN_EVENTS}}}"),
    ("stratum_flow_run_bg", "{spec: any, input: any, workspaceRoot?: string}", "running: {runId: string}"),
    ("stratum_flow_bg_poll", "{runId: string, cursor?: number}", f"{_ENDED}: {_RUN_EVENTS}, bg: BG}}"),
    (
        "stratum_flow_cancel_bg",
        "{runId: string}",
        "running: {}; completed: {}; failed: {}; budget_exhausted: {}; cancelled: {}",
    ),
    (
        "stratum_agent_run",
        "{agent: string, prompt: string, cwd: string, model?: string, sandboxMode?: string, "
        "background?: boolean}",
        "complete: {text: string, usage: object, telemetry: TELEMETRY}; "
        "bg_started: {runId: string, pid: number, streamPath: string}",
    ),
    (
        "stratum_agent_poll",
        "{runId: string}",
        "not_found: {runId}; running: {runId, textTail: string, eventsSeen: number, streamPath: string}; "
        "complete: {runId, text: string, usage: object, exitCode: number, telemetry: TELEMETRY}; "
        "error: {runId, textTail: string, stderrTail: string, reason?: string, exitCode?: number, "
        "eventsSeen?: number, streamPath?: string, telemetry?: TELEMETRY}",
    ),
    (
        "stratum_cancel_agent_run",
        "{runId: string}",
        "cancelled: {runId}; already_complete: {runId}; already_error: {runId}; not_found: {runId}",
    ),
    (
        "stratum_guard_register",
        "{resource_id: string, graph: object, edge_predicates: object, initial: string, "
        "terminal?: array|null, stakes?: object|null, workspace_root?: string|null}",
        "registered: {guard_id: string, checksum: string}; exists: {guard_id, checksum}; error: ERR",
    ),
    (
        "stratum_guard_transition",
        "{resource_id: string, from_state: string, to_state: string, artifacts: object, "
        "modified_files?: array|null, idempotency_key?: string|null, resolved_by?: string}",
        "applied / refused / replayed: {verdict: object, ledger_ref: string, current_state: string}; "
        "error: ERR",
    ),
    (
        "stratum_guard_override",
        "{resource_id: string, from_state: string, to_state: string, override_token: string, "
        "rationale: string, resolved_by?: string}",
        "deviation: {ledger_ref: string, current_state: string, rationale: string}; error: ERR",
    ),
    (
        "stratum_guard_migrate",
        "{resource_id: string, new_graph: object, new_edge_predicates: object, "
        "override_token: string, rationale: string, new_terminal?: array|null, new_stakes?: object|null}",
        "migrated: {checksum: string, graph_version: number, ledger_ref: string, rationale: string}; "
        "error: ERR",
    ),
    (
        "stratum_guard_history",
        "{resource_id: string}",
        "success: {resource_id: string, current_state: string, graph_version: number, ledger: array}; "
        "error: ERR",
    ),
]


TOOLS: dict[str, ToolContract] = {
    name: ToolContract(name, _obj(req, ABBREVIATIONS), _variants(resp)) for name, req, resp in _TOOLS_TEXT
}

# --- run events: each is {at: string, type: KIND} plus the payload

_EVENTS_TEXT: list[tuple[str, str]] = [
    ("planned", "{}"),
    (
        "ready",
        "{stepId, detail: {attempt: number, lessons?: string[], lessonsSuppressed?: {revisionId, reason}[]}}",
    ),
    (
        "result",
        "{stepId, detail: {attempt: number, result?: any, failure?: FAILURE, "
        "iterate?: {iteration: number, max: number}}}",
    ),
    (
        "judged",
        "{stepId, detail: {statement, holds: boolean, reason, stakes, model, "
        "usage: {tokens: number, usd: number}, itemIndex?: number, stage?: number}}",
    ),
    ("routed", "{stepId, detail: {target: string, failure: FAILURE}}"),
    ("skipped", "{stepId, detail?: {reason?: string}}"),
    ("resumed", "{}"),
    ("completed", "{detail: {output: any}}"),
    ("failed", "{detail: FAILURE}"),
    ("budget_exhausted", "{detail: FAILURE}"),
    ("gate_waiting", "{stepId}"),
    ("gate_resolved", "{stepId, detail: {decision: string, target: string|null}}"),
    ("fanout_item_ready", "{stepId, detail: {itemIndex: number, lessons?, lessonsSuppressed?}}"),
    (
        "fanout_item_dispatched",
        "{stepId, detail: {itemIndex, stage, attempt: number, lessons?, lessonsSuppressed?}}",
    ),
    (
        "fanout_attempt_result",
        "{stepId, detail: {itemIndex, stage, attempt, success: boolean, failure?: {kind, reason}}}",
    ),
    ("fanout_item_skipped", "{stepId, detail: {itemIndex, stage}}"),
    ("fanout_ledger_debit", "{stepId, detail: {itemIndex, amount: object, source?: string}}"),
    ("fanout_merge", "{stepId, detail: {itemIndex, success: boolean, reason?: string}}"),
    (
        "usage_debit",
        "{stepId?, detail: {seq: number, dispatchId: string, source: string, amount: object, "
        "model: string, effort?: string, durationMs: number, epoch?: number, attempt?: number, "
        "item?: {itemIndex, stage, generation}, split?: {input, output, cacheRead?, cacheCreation?}, "
        "usdSource?: string, reportedAt?: string}}",
    ),
    (
        "step_reset",
        "{stepId, detail: {reason, reset: {stepId, fromEpoch, toEpoch}[], subflowsDropped: string[]}}",
    ),
    ("checkpoint_reverted", "{detail: {label, receiptsAtRevert: number, stepsRestored: string[]}}"),
    (
        "carry_updated",
        "{stepId?, detail: {name, reason, provenance: {kind, sourceStep?, sourceEpoch?, gate?, "
        "gateToken?, round?, at}}}",
    ),
    ("flow_cancelled", "{detail: {by: string, reason?: string, burned: {steps: string[], items: number}}}"),
    (
        "sandbox_policy",
        "{stepId, detail: {attempt, itemIndex?, stage?, policy: object, provenance: object, "
        "fullAccessAuthorization?: {layer, source}}}",
    ),
]

_EVENT_BASE = _obj("{at: string}", {})
EVENTS: dict[str, Variant] = {
    kind: Variant("type", kind, _EVENT_BASE.plus(_obj(payload, ABBREVIATIONS)))
    for kind, payload in _EVENTS_TEXT
}


# --- the check


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _show(shape: Shape) -> str:
    if isinstance(shape, Leaf):
        return shape.name
    if isinstance(shape, Union):
        return "|".join(_show(o) for o in shape.options)
    if isinstance(shape, ArrayOf):
        return _show(shape.item) + "[]"
    return "object"


def violations(doc: Any, shape: Shape, where: str = "") -> list[str]:
    """Every way ``doc`` breaks ``shape``: a wrong type, an unknown or missing key, a
    ``status``/``type`` other than the variant's name; empty when it conforms."""
    at = where or "the document"
    if isinstance(shape, Variant):
        if not isinstance(doc, dict):
            return [f"{at}: expected object, got {_kind(doc)}"]
        found = (
            []
            if doc.get(shape.tag) == shape.name
            else [f"{at}: {shape.tag} is {doc.get(shape.tag)!r}, not {shape.name!r}"]
        )
        rest = {k: v for k, v in doc.items() if k != shape.tag}
        return found + violations(rest, shape.body, where)
    if isinstance(shape, Leaf):
        ok = shape.name == "any" or _kind(doc) == shape.name
        return [] if ok else [f"{at}: expected {shape.name}, got {_kind(doc)}"]
    if isinstance(shape, Union):
        if any(not violations(doc, o, where) for o in shape.options):
            return []
        return [f"{at}: expected {_show(shape)}, got {_kind(doc)}"]
    if isinstance(shape, ArrayOf):
        if not isinstance(doc, list):
            return [f"{at}: expected array, got {_kind(doc)}"]
        return [v for i, item in enumerate(doc) for v in violations(item, shape.item, f"{where}[{i}]")]
    if not isinstance(doc, dict):
        return [f"{at}: expected object, got {_kind(doc)}"]
    fields = shape.keys()
    prefix = f"{where}." if where else ""
    out = [f"{prefix}{key}: undeclared key" for key in doc if key not in fields]
    for name, f in fields.items():
        if name not in doc:
            if not f.optional:
                out.append(f"{prefix}{name}: missing")
            continue
        out.extend(violations(doc[name], f.shape, prefix + name))
    return out


def answer_violations(tool: str, doc: Any) -> list[str]:
    """How ``doc`` breaks every response of ``tool``: checked against the variant its
    ``status`` names (a status that names none is itself the violation)."""
    contract = TOOLS[tool]
    status = doc.get("status") if isinstance(doc, dict) else None
    variant = contract.variant(status) if isinstance(status, str) else None
    if variant is None:
        return [f"status {status!r} is none of {tool}'s responses ({', '.join(contract.statuses)})"]
    return violations(doc, variant)


def request_violations(tool: str, arguments: Any) -> list[str]:
    return violations(arguments, TOOLS[tool].request, "arguments" if not isinstance(arguments, dict) else "")


def event_violations(event: Any) -> list[str]:
    """How a run event breaks the payload its ``type`` names."""
    kind = event.get("type") if isinstance(event, dict) else None
    variant = EVENTS.get(kind) if isinstance(kind, str) else None
    if variant is None:
        return [f"event type {kind!r} is not a run event kind of the reference"]
    return violations(event, variant)


# The document of a contract tool's error (an MCP tool error, `isError`): the tool's own
# `error` variant where it has one; a foreground `stratum_agent_run` that fails carries
# the `error` of `stratum_agent_poll` (its own surface lists none); every other tool the
# reference's ERR with its status.
TOOL_ERROR = Variant("status", "error", _obj("{error_type: string, message: string}", {}))


def error_violations(tool: str, doc: Any) -> list[str]:
    """How the document of a tool error of ``tool`` breaks the error shape it has."""
    owner = "stratum_agent_poll" if tool == "stratum_agent_run" else tool
    variant = TOOLS[owner].variant("error") if owner in TOOLS else None
    return violations(doc, variant or TOOL_ERROR)
