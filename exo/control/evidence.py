"""Handoff and execution recording: the two operations that end in evidence.

Both take a Task Capsule and an Execution Receipt from the caller, so neither is
believed: the capsule must recompute its own id and fingerprint, and the receipt must
verify against that exact capsule (tropo's verifiers, the one owner of those rules)
before a handoff is bound or an execution edge is recorded.
"""

from __future__ import annotations

from typing import Any

from exo.control import actors, ledger, scope, tasks
from exo.control.text import instant_ms, is_trimmed
from tropo.canonical import canonicalize, deterministic_id, is_lossless
from tropo.governed.capsule import is_intact
from tropo.governed.receipt import verify_receipt

UNKNOWN_CAPSULE = "unknown_capsule_shape"
UNKNOWN_RECEIPT = "unknown_receipt_shape"
_CHECK_REQUIRED = frozenset({"name", "command", "outcome"})
_CHECK_FIELDS = _CHECK_REQUIRED | {"detail"}


def _refused(code: str) -> dict[str, Any]:
    return {"decision": "refused", "reason_codes": [code], "handoff": None}


def _sender_code(held: dict[str, Any], sender: Any, at: float) -> str | None:
    """Why ``sender`` may not hand off ``held`` at ``at``: not its live holder."""
    denied = actors.authority_codes(sender, actors.CONTRIBUTOR)
    if denied:
        return denied[0]
    if not actors.same(held["actor"], sender):
        return ledger.NOT_CLAIM_HOLDER
    if ledger.valid_ms(held["created_at"]) > at:
        return ledger.LEASE_NOT_LIVE
    if ledger.expired_at(held["lease"], at):
        return ledger.LEASE_EXPIRED
    if not ledger.live_at(held["lease"], at):
        return ledger.LEASE_NOT_LIVE
    return None


def _evidence_code(held: dict[str, Any], receipt: Any, capsule: Any, at: float) -> str | None:
    """Why the capsule and receipt do not show the holder's work under this claim."""
    if not is_intact(capsule):
        return UNKNOWN_CAPSULE
    problems = verify_receipt(receipt, capsule)
    if problems:
        return "receipt_capsule_mismatch" if "capsule_binding_mismatch" in problems else UNKNOWN_RECEIPT
    made = instant_ms(receipt["created_at"])
    if made is None:
        return UNKNOWN_RECEIPT
    if made > at:
        return "receipt_created_after_handoff"
    started = ledger.valid_ms(held["created_at"])
    if held["lease"] is not None:
        started = max(started, ledger.valid_ms(held["lease"]["granted_at"]))
    if made < started:
        return "receipt_predates_claim"
    if receipt["runtime"]["actor"] != held["actor"]["id"]:
        return "receipt_actor_mismatch"
    return None


def handoff(claims: Any, given: dict[str, Any]) -> dict[str, Any]:
    """Bind a record of the holder handing its claim's evidence to another actor. The
    claim ledger itself is not changed: a handoff is a record, not a transfer."""
    at = instant_ms(given["created_at"])
    if at is None:
        return _refused("unknown_handoff_created_at_shape")
    code = ledger.ledger_code(claims)
    if code is not None:
        return _refused(code)
    held = next((c for c in claims if c["claim_id"] == given["claim_id"]), None)
    if held is None:
        return _refused(ledger.CLAIM_NOT_FOUND)
    receipt, capsule = given["receipt"], given["capsule"]
    code = (_sender_code(held, given["from_actor"], at)
            or _evidence_code(held, receipt, capsule, at))
    if code is not None:
        return _refused(code)
    revision = given["workspace_revision"]
    if not is_trimmed(revision) or revision != capsule["workspace"]["fingerprint"]:
        return _refused("workspace_revision_mismatch")
    authority = given.get("to_authority_class")
    authority = held["authority_class"] if authority is None else authority
    denied = actors.authority_codes(given["to_actor"], authority)
    if denied:
        return _refused(denied[0])
    record = {
        "claim": held["claim_id"], "scope": scope.normalize(held["scope"]),
        "holder": actors.copy(held["actor"]), "lease": ledger.copy_lease(held["lease"]),
        "claim_created_at": held["created_at"], "from": actors.copy(given["from_actor"]),
        "to": actors.copy(given["to_actor"]), "to_authority_class": authority,
        "capsule": {"id": capsule["capsule_id"], "fingerprint": capsule["fingerprint"]},
        "receipt": {"id": receipt["receipt_id"], "fingerprint": receipt["fingerprint"],
                    "created_at": receipt["created_at"]},
        "workspace_revision": revision, "created_at": given["created_at"],
    }
    bound = {"handoff_id": deterministic_id("handoff", record), "claim_id": record["claim"],
             "scope": record["scope"], "holder": record["holder"], "lease": record["lease"],
             "claim_created_at": record["claim_created_at"], "from_actor": record["from"],
             "to_actor": record["to"], "to_authority_class": authority,
             "capsule": record["capsule"], "receipt": record["receipt"],
             "workspace_revision": revision, "created_at": record["created_at"]}
    return {"decision": "bound", "reason_codes": [], "handoff": bound}


def _is_check(check: Any) -> bool:
    return (type(check) is dict and _CHECK_REQUIRED <= set(check) <= _CHECK_FIELDS
            and is_trimmed(check["name"]) and is_trimmed(check["command"])
            and isinstance(check["outcome"], str) and check["outcome"] in tasks.OUTCOMES
            and ("detail" not in check or is_lossless(check["detail"])))


def derive_edges(receipt: Any, capsule: Any) -> tuple[list[dict[str, Any]], str | None]:
    """One evidence edge per check of a receipt that verifies against ``capsule``."""
    if not is_intact(capsule):
        return [], UNKNOWN_CAPSULE
    checks = receipt.get("checks") if type(receipt) is dict else None
    if type(checks) is list and len(checks) > tasks.MAX_EDGES:
        return [], tasks.EXECUTION_UNBOUNDED
    if verify_receipt(receipt, capsule) or not all(_is_check(c) for c in receipt["checks"]):
        return [], UNKNOWN_RECEIPT
    return [{"edge_id": tasks.edge_id(receipt["fingerprint"], check["name"], position),
             "kind": "check", "receipt_id": receipt["receipt_id"],
             "receipt_fingerprint": receipt["fingerprint"], "capsule_id": capsule["capsule_id"],
             "capsule_fingerprint": capsule["fingerprint"], "position": position,
             "name": check["name"], "command": check["command"], "outcome": check["outcome"],
             "detail": check.get("detail")}
            for position, check in enumerate(receipt["checks"])], None


def record_execution(log: Any, receipt: Any, capsule: Any) -> dict[str, Any]:
    """Append the receipt's edges to the caller's log: an exact replay adds nothing,
    and an id already recorded with other evidence refuses the whole append."""
    kept = list(log) if type(log) is list else []
    code = tasks.log_code(log)
    edges: list[dict[str, Any]] = []
    if code is None:
        edges, code = derive_edges(receipt, capsule)
    if code is not None:
        return {"edges": kept, "added": [], "reason_codes": [code]}
    recorded = {edge["edge_id"]: canonicalize(edge) for edge in kept}
    added = []
    for edge in edges:
        body = canonicalize(edge)
        previous = recorded.setdefault(edge["edge_id"], body)
        if previous != body:
            return {"edges": kept, "added": [], "reason_codes": [tasks.EDGE_IDENTITY_CONFLICT]}
        if previous is body:
            added.append(edge)
    if len(kept) + len(added) > tasks.MAX_EDGES:
        return {"edges": kept, "added": [], "reason_codes": [tasks.EXECUTION_UNBOUNDED]}
    return {"edges": [*kept, *added], "added": added, "reason_codes": []}
