"""The governed decision: a request in, a `vivary.strato-decision/v0` or a
`vivary.strato-decision-refusal/v0` out. Advisory and stateless; nothing is persisted.

This is the Python API the CLI, the flow engine and the MCP server share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strato.decide.envelope import ECHOED_FIELDS, POLICY_VERSION, validate
from strato.decide.policy import next_step
from tropo.canonical import DuplicateKeyError, unique_keys

DECISION_SCHEMA = "vivary.strato-decision/v0"
REFUSAL_SCHEMA = "vivary.strato-decision-refusal/v0"
_GATING = frozenset({"blocked", "request_gate"})


class RequestDocumentError(ValueError):
    """The request text is not one JSON document we can read."""


@dataclass(frozen=True)
class Refusal:
    """The envelope failed: the reasons, and no identity echoed back."""

    reason_codes: tuple[str, ...]
    decision: str = field(default="blocked", init=False)

    def document(self) -> dict[str, Any]:
        return {
            "schema": REFUSAL_SCHEMA,
            "policy_version": POLICY_VERSION,
            "decision": self.decision,
            "reason_codes": list(self.reason_codes),
            "budget": None,
            "gate": None,
        }

    def exit_code(self, strict: bool = False) -> int:
        return 2


@dataclass(frozen=True)
class Decision:
    """A valid envelope's policy outcome: `act`, `request_gate`, `stop` or `blocked`."""

    echo: dict[str, Any]
    decision: str
    reason_codes: tuple[str, ...]
    budget: dict[str, Any] | None
    gate: dict[str, Any] | None

    def document(self) -> dict[str, Any]:
        return {
            "schema": DECISION_SCHEMA,
            **self.echo,
            "decision": self.decision,
            "reason_codes": list(self.reason_codes),
            "budget": self.budget,
            "gate": self.gate,
        }

    def exit_code(self, strict: bool = False) -> int:
        """0 for advice; with `strict`, 1 when core blocks or asks for a gate."""
        return 1 if strict and self.decision in _GATING else 0


def decide(request: Any, now: datetime | None = None) -> Decision | Refusal:
    """Validate the envelope, then ask the loop policy. `now`, when given, is a
    trusted clock that `decision_at` must not run ahead of nor lag by over 300 s."""
    try:
        codes = validate(request, now)
        if codes:
            return Refusal(tuple(codes))
        policy_args: dict[str, Any] = {
            "state": request.get("state"),
            "limits": request.get("limits"),
        }
        for name in ("receipt", "verdict"):
            if name in request:
                policy_args[name] = request[name]
        outcome = next_step(request["capsule"], **policy_args)
    except RecursionError:
        return Refusal(("request_too_deeply_nested",))
    return Decision(
        echo={name: request[name] for name in ECHOED_FIELDS},
        decision=outcome["decision"],
        reason_codes=tuple(outcome["reason_codes"]),
        budget=outcome["budget"],
        gate=outcome["gate"],
    )


def load_request(text: str) -> Any:
    """Parse one JSON request. Duplicate keys are refused rather than letting the
    last one silently win; deep nesting surfaces as RecursionError."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKeyError as error:
        raise RequestDocumentError(str(error)) from error
    except json.JSONDecodeError as error:
        raise RequestDocumentError(f"not JSON: {error}") from error
