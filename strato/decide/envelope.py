"""The strict decision-request envelope `vivary.strato-decision-request/v0`.

Every field is named here and nothing else passes, so no free-form text (say
`"status": "approved"`) can stand in for a human gate. Validation returns reason
codes in the order Vivary's strato reports them; an empty list means the request may
be decided.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

from tropo.governed.bounds import nonblank
from tropo.governed.capsule import is_capsule, is_intact
from tropo.governed.freshness import MAX_AGE, age_code, parse_instant, receipt_codes
from tropo.governed.paths import is_absolute_root, same_roots

REQUEST_SCHEMA = "vivary.strato-decision-request/v0"
POLICY_VERSION = "vivary.strato-policy/v0"
#: The identity a decision echoes back; a refusal echoes none of it.
ECHOED_FIELDS = (
    "policy_version",
    "actor",
    "authority_class",
    "workspace",
    "scope",
    "requested_at",
    "decision_at",
)
ALLOWED_FIELDS = frozenset({"schema", *ECHOED_FIELDS, "capsule", "receipt", "verdict", "state", "limits"})
ACTOR_KINDS = frozenset({"human", "agent", "worker"})
AUTHORITY_CLASSES = frozenset({"contributor", "owner"})
_MAX_ACTOR_ID_BYTES = 256


def _canonical_actor_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and bool(value)
        and value == value.strip()
        and len(value.encode("utf-8", "surrogatepass")) <= _MAX_ACTOR_ID_BYTES
        and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
        and unicodedata.normalize("NFC", value) == value
        and all(unicodedata.category(ch)[0] != "C" for ch in value)
    )


def authority_codes(actor: dict[str, Any], authority_class: Any) -> list[str]:
    """Why this actor may not hold the authority class; only a human may be owner."""
    if not (isinstance(actor["kind"], str) and _canonical_actor_id(actor["id"])):
        return ["unknown_actor_shape"]
    if actor["kind"] not in ACTOR_KINDS:
        return ["unknown_actor_kind"]
    if not isinstance(authority_class, str) or authority_class not in AUTHORITY_CLASSES:
        return ["unknown_authority_class"]
    if authority_class == "owner" and actor["kind"] != "human":
        return ["workers_cannot_own"]
    return []


def _counters(value: Any, names: frozenset[str]) -> bool:
    return (
        isinstance(value, dict)
        and set(value) <= names
        and all(type(v) is int and v >= 0 for v in value.values())
    )


def _identity_codes(request: dict[str, Any]) -> list[str]:
    codes = []
    if request.get("schema") != REQUEST_SCHEMA:
        codes.append("invalid_schema")
    if request.get("policy_version") != POLICY_VERSION:
        codes.append("invalid_policy_version")
    actor = request.get("actor")
    if isinstance(actor, dict) and set(actor) == {"kind", "id"} and nonblank(actor["id"]):
        codes.extend(authority_codes(actor, request.get("authority_class")))
    else:
        codes.append("invalid_actor")
    workspace = request.get("workspace")
    if not (
        isinstance(workspace, dict)
        and set(workspace) == {"fingerprint"}
        and nonblank(workspace["fingerprint"])
    ):
        codes.append("invalid_workspace")
    return codes


def _scope_paths(request: dict[str, Any]) -> list[str] | None:
    scope = request.get("scope")
    if not (
        isinstance(scope, dict)
        and set(scope) == {"project", "paths"}
        and nonblank(scope["project"])
        and isinstance(scope["paths"], list)
        and scope["paths"]
        and all(nonblank(path) and is_absolute_root(path) for path in scope["paths"])
    ):
        return None
    return list(scope["paths"])


def _capsule_codes(request: dict[str, Any], scope: list[str] | None) -> list[str]:
    capsule = request.get("capsule")
    codes = []
    if not is_capsule(capsule):
        return ["invalid_capsule"]
    assert isinstance(capsule, dict)
    workspace = request.get("workspace")
    claimed = workspace.get("fingerprint") if isinstance(workspace, dict) else None
    if not is_intact(capsule):
        codes.append("capsule_fingerprint_mismatch")
    elif nonblank(claimed) and claimed != capsule["workspace"]["fingerprint"]:
        codes.append("workspace_mismatch")
    if scope is not None and not same_roots(scope, capsule["task"].get("scope")):
        codes.append("scope_mismatch")
    return codes


def _observed_at(request: dict[str, Any]) -> datetime | None:
    capsule = request.get("capsule")
    workspace = capsule.get("workspace") if isinstance(capsule, dict) else None
    return parse_instant(workspace.get("observed_at")) if isinstance(workspace, dict) else None


def _clock_codes(decided: datetime | None, now: datetime | None) -> list[str]:
    """With a trusted clock, `decision_at` must be the recent past: a caller can
    neither date a decision ahead nor back-date one to keep evidence fresh."""
    if now is None:
        return []
    return age_code(decided, now, "decision_from_future", "stale_decision")


def validate(request: Any, now: datetime | None = None) -> list[str]:
    """Reason codes refusing the request, in Vivary's order; `[]` when decidable."""
    if not isinstance(request, dict):
        return ["unknown_request_shape"]
    codes = []
    if not all(isinstance(field, str) for field in request):
        codes.append("invalid_field_name")
    codes.extend(
        f"unknown_field:{field}"
        for field in sorted(f for f in request if isinstance(f, str) and f not in ALLOWED_FIELDS)
    )
    codes.extend(_identity_codes(request))
    scope = _scope_paths(request)
    if scope is None:
        codes.append("invalid_scope")

    requested = parse_instant(request.get("requested_at"))
    decided = parse_instant(request.get("decision_at"))
    if requested is None:
        codes.append("invalid_requested_at")
    if decided is None:
        codes.append("invalid_decision_at")
    codes.extend(age_code(requested, decided, "request_from_future", "stale_request"))
    codes.extend(_clock_codes(decided, now))

    codes.extend(_capsule_codes(request, scope))
    observed = _observed_at(request)
    if observed is None:
        codes.append("invalid_capsule_observed_at")
    elif requested is not None and observed > requested:
        codes.append("capsule_observed_after_request")
    elif decided is not None and decided - observed > MAX_AGE:
        codes.append("stale_capsule")

    if "verdict" in request and "receipt" not in request:
        codes.append("verdict_requires_receipt")
    codes.extend(receipt_codes(request.get("receipt"), observed, decided))
    for field, names, code in (
        ("state", frozenset({"turns_used", "actions_used"}), "invalid_state"),
        ("limits", frozenset({"max_turns", "max_actions"}), "invalid_limits"),
    ):
        if field in request and not _counters(request[field], names):
            codes.append(code)
    return codes
