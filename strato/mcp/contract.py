"""Stratum's MCP wire contract as data: every tool's request and response shapes and every
run event's payload, written in the reference's own shape language (surface version 6,
events version 7) and parsed once, with one pure check, :func:`shapes.violations`. The server
checks each request and answer of a contract tool against it, and the contract test
checks each answer and event, so neither can drift from the other.

The shape language, its parser and the check are `shapes.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strato.mcp.shapes import (
    Obj,
    Shape,
    Variant,
    parse,
    parse_object,
    split_outside_braces,
    violations,
)

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
    for part in split_outside_braces(text, ";"):
        if part == "RUNSTATE" or part.startswith(_EACH):
            extra = "{" + part[len(_EACH) :] + "}"
            plus = parse_object(extra, ABBREVIATIONS) if part != "RUNSTATE" else Obj(())
            out.extend(
                Variant("status", name, parse_object(body, ABBREVIATIONS).plus(plus))
                for name, body in RUNSTATE_TEXT.items()
            )
            continue
        names, _, body = part.partition(":")
        obj = parse_object(body.strip(), ABBREVIATIONS)
        out.extend(Variant("status", n.strip(), obj) for n in names.split("/"))
    return tuple(out)


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


# The Stratum seed (its README) names more than the surface file: request keys the surface
# lacks, and tools with their answers. Each is held to these shapes as the reference's are.
_SEED_REQUEST_KEYS = {
    "stratum_gate_resolve": "{gateToken?: string, rationale?: string, resolved_by?: string}",
    "stratum_agent_run": (
        "{effort?: string, allowedTools?: array, disallowedTools?: array, thinking?: boolean, "
        "cancellationId?: string, peerLabel?: string, "
        "flow?: {runId: string, stepId?: string, itemIndex?: number}}"
    ),
}
_AGENTS = "{claimed: number, reaped: number, gone: number, unresolved: number}"
_SEED_TOOLS_TEXT: list[tuple[str, str, str]] = [
    (
        "stratum_flow_cancel",
        "{runId: string, reason?: string}",
        "cancelled / completed / failed / budget_exhausted: {runId, flowSettled: boolean, "
        f"acknowledged: boolean, reason?: string, ledger: LEDGER, agents: {_AGENTS}}}; "
        f"error: {{error_type, message, flowSettled?: boolean, agents?: {_AGENTS}}}",
    ),
    (
        "stratum_guard_upgrade",
        "{resource_id: string, new_graph: object, new_edge_predicates?: object, rationale: string, "
        "new_terminal?: array|null, new_stakes?: object|null}",
        "migrated / unchanged: {checksum: string, graph_version: number, ledger_ref?: string, "
        "rationale: string}; error: ERR",
    ),
    (
        "stratum_guard_apply_upgrade",
        "{resource_id: string, descriptor_id: string}",
        "applied / unchanged: {checksum: string, graph_version: number, ledger_ref?: string, "
        "descriptor_id: string}; error: ERR",
    ),
    (
        "stratum_judge",
        "{statement: string, output: any, stakes?: string}",
        "judged: {holds: boolean, reason: string, stakes: string, model: string, "
        "usage: {tokens: number, usd: number}}; error: ERR",
    ),
]


def _request(name: str, text: str) -> Obj:
    request = parse_object(text, ABBREVIATIONS)
    extra = _SEED_REQUEST_KEYS.get(name)
    return request.plus(parse_object(extra, ABBREVIATIONS)) if extra else request


TOOLS: dict[str, ToolContract] = {
    name: ToolContract(name, _request(name, req), _variants(resp)) for name, req, resp in _TOOLS_TEXT
}
SEED_TOOLS: dict[str, ToolContract] = {
    name: ToolContract(name, _request(name, req), _variants(resp)) for name, req, resp in _SEED_TOOLS_TEXT
}
# every tool held to a contract: the reference's and the seed's
CONTRACTS: dict[str, ToolContract] = {**TOOLS, **SEED_TOOLS}

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

_EVENT_BASE = parse_object("{at: string}", {})
EVENTS: dict[str, Variant] = {
    kind: Variant("type", kind, _EVENT_BASE.plus(parse_object(payload, ABBREVIATIONS)))
    for kind, payload in _EVENTS_TEXT
}


def answer_violations(tool: str, doc: Any) -> list[str]:
    """How ``doc`` breaks every response of ``tool``: checked against the variant its
    ``status`` names (a status that names none is itself the violation)."""
    contract = CONTRACTS[tool]
    status = doc.get("status") if isinstance(doc, dict) else None
    variant = contract.variant(status) if isinstance(status, str) else None
    if variant is None:
        return [f"status {status!r} is none of {tool}'s responses ({', '.join(contract.statuses)})"]
    return violations(doc, variant)


def request_violations(tool: str, arguments: Any) -> list[str]:
    where = "arguments" if not isinstance(arguments, dict) else ""
    return violations(arguments, CONTRACTS[tool].request, where)


def event_violations(event: Any) -> list[str]:
    """How a run event breaks the payload its ``type`` names."""
    kind = event.get("type") if isinstance(event, dict) else None
    variant = EVENTS.get(kind) if isinstance(kind, str) else None
    if variant is None:
        return [f"event type {kind!r} is not a run event kind of the reference"]
    return violations(event, variant)


# The document of a contract tool's error (an MCP tool error, `isError`): the tool's own
# `error` variant where it has one; a foreground `stratum_agent_run` that fails carries
# the `error` of `stratum_agent_poll` (its own surface lists none); every other tool, and
# a refusal of an agent-run tool's request (no run: no `runId`), the reference's ERR with
# its status.
TOOL_ERROR = Variant("status", "error", parse_object("{error_type: string, message: string}", {}))
POLL_ERROR = next(v for v in TOOLS["stratum_agent_poll"].responses if v.name == "error")


def error_violations(tool: str, doc: Any) -> list[str]:
    """How the document of a tool error of ``tool`` breaks the error shape it has."""
    if tool in ("stratum_agent_run", "stratum_agent_poll"):  # their `error` is a run's end
        ran = isinstance(doc, dict) and "runId" in doc  # not a refusal of the request
        return violations(doc, POLL_ERROR if ran else TOOL_ERROR)
    variant = CONTRACTS[tool].variant("error") if tool in CONTRACTS else None
    return violations(doc, variant or TOOL_ERROR)
