"""An Ozone gate verdict `vivary.gate-verdict/v0`, accepted only as extra evidence:
its fingerprint, typed fields and bindings must hold, and a verdict can add reasons
to gate but never waive one the receipt shows.
"""

from __future__ import annotations

from typing import Any

from tropo.canonical import fingerprint
from tropo.governed.bounds import count_at_least, nonempty
from tropo.governed.capsule import body

SCHEMA = "vivary.gate-verdict/v0"
_COUNTS = ("unresolved_conflicts", "unresolved_unknowns", "claims_total")


def _intact(verdict: Any) -> bool:
    if not isinstance(verdict, dict) or verdict.get("schema") != SCHEMA:
        return False
    claimed = verdict.get("fingerprint")
    if not (isinstance(claimed, str) and claimed.startswith("sha256:")):
        return False
    try:
        return fingerprint(body(verdict, "fingerprint")) == claimed
    except (TypeError, RecursionError):
        return False


def _failing_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and nonempty(entry.get("name"))
        and entry.get("expected") == "passed"
        and entry.get("actual") in ("failed", "skipped", "missing")
    )


def _well_typed(verdict: dict[str, Any]) -> bool:
    outcome = verdict.get("outcome")
    if outcome not in ("sufficient", "insufficient", "refused"):
        return False
    if not nonempty(verdict.get("gate")) and not (outcome == "refused" and verdict.get("gate") is None):
        return False
    codes = verdict.get("reason_codes")
    if not (isinstance(codes, list) and all(map(nonempty, codes)) and len(codes) == len(set(codes))):
        return False
    failing = verdict.get("failing_checks", [])
    if not (isinstance(failing, list) and all(map(_failing_entry, failing))):
        return False
    counts = {field: verdict.get(field) for field in _COUNTS}
    if any(value is not None and not count_at_least(value, 0) for value in counts.values()):
        return False
    verified = verdict.get("claims_verified")
    if verified is not None and not (
        count_at_least(verified, 0)
        and counts["claims_total"] is not None
        and verified <= counts["claims_total"]
    ):
        return False
    receipt_outcome = verdict.get("receipt_outcome")
    if receipt_outcome not in (None, "verified", "insufficient", "refused"):
        return False
    if outcome == "sufficient":
        return (
            "failing_checks" in verdict
            and not codes
            and not failing
            and all(value is not None for value in counts.values())
            and receipt_outcome == "verified"
        )
    return bool(codes)


def _binds(verdict: dict[str, Any], capsule: dict[str, Any], receipt: dict[str, Any]) -> bool:
    bound = verdict.get("capsule")
    return (
        isinstance(bound, dict)
        and bound.get("id") == capsule["capsule_id"]
        and bound.get("fingerprint") == capsule["fingerprint"]
        and verdict.get("receipt_id") == receipt["receipt_id"]
    )


def _projection_agrees(verdict: dict[str, Any], capsule: dict[str, Any], receipt: dict[str, Any]) -> bool:
    """A sufficient verdict's counts must match what the capsule and receipt show,
    since anyone can recompute a verdict fingerprint."""
    if verdict.get("outcome") != "sufficient":
        return True
    claims = capsule["claims"]
    if verdict.get("claims_total") != len(claims):
        return False
    verified = verdict.get("claims_verified")
    if verified is None:
        return True
    receipt_ids = receipt.get("claims_verified")
    receipt_ids = receipt_ids if isinstance(receipt_ids, list) else []
    in_receipt = sum(
        isinstance(claim, dict) and isinstance(claim.get("id"), str) and claim["id"] in receipt_ids
        for claim in claims
    )
    return bool(verified == len(claims) and verified == in_receipt)


def verdict_problem(verdict: Any, capsule: dict[str, Any], receipt: dict[str, Any]) -> str | None:
    """The gate reason that makes a verdict unusable, or None when it may be read."""
    if not _intact(verdict) or not _well_typed(verdict):
        return "verdict_integrity_mismatch"
    if not _binds(verdict, capsule, receipt):
        return "verdict_binding_mismatch"
    if not _projection_agrees(verdict, capsule, receipt):
        return "verdict_integrity_mismatch"
    return None
