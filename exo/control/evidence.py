"""Handoff and execution recording: the coordination half of each.

Both operations end in verifying a Task Capsule and an Execution Receipt. That check
lives in strato, which exo may not import, so each runs every check the suite makes
*before* the evidence (ledger, holder, lease, log) and then refuses with
``evidence_not_verifiable`` rather than accept evidence it has not verified.
"""

from __future__ import annotations

from typing import Any

from exo.control import actors, ledger, tasks
from exo.control.text import instant_ms

NOT_VERIFIABLE = "evidence_not_verifiable"


def _refused(code: str) -> dict[str, Any]:
    return {"decision": "refused", "reason_codes": [code], "handoff": None}


def _sender_code(claims: Any, claim_id: Any, sender: Any, created_at: Any) -> str | None:
    at = instant_ms(created_at)
    if at is None:
        return "unknown_handoff_created_at_shape"
    code = ledger.ledger_code(claims)
    if code is not None:
        return code
    held = next((c for c in claims if c["claim_id"] == claim_id), None)
    if held is None:
        return ledger.CLAIM_NOT_FOUND
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


def handoff(claims: Any, given: dict[str, Any]) -> dict[str, Any]:
    """Refuse a handoff the sender, the ledger or the lease already rules out; past
    those, refuse as not verifiable here."""
    code = _sender_code(claims, given["claim_id"], given["from_actor"], given["created_at"])
    return _refused(code or NOT_VERIFIABLE)


def record_execution(log: Any) -> dict[str, Any]:
    """Refuse an unusable execution log; past that, refuse as not verifiable here."""
    code = tasks.log_code(log)
    kept = list(log) if type(log) is list else []
    return {"edges": kept, "added": [], "reason_codes": [code or NOT_VERIFIABLE]}
