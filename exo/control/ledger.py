"""The claim ledger: claim, release and lease expiry as pure transitions.

The caller owns the ledger, so nothing in it is trusted: every active claim must
recompute its own id from its body, hold its authority, be live at its creation and
overlap no other claim, or the whole ledger is refused. ``claim`` is the only
transition that writes authority; release and expiry only remove entries.
"""

from __future__ import annotations

from typing import Any

from exo.control import actors, scope
from exo.control.text import instant_ms, is_bounded_text
from tropo.canonical import deterministic_id

FIELDS = frozenset({"claim_id", "scope", "actor", "authority_class", "lease", "status",
                    "created_at"})
MAX_CLAIMS = 10_000
MAX_TOTAL_PATHS = 10_000
_MAX_ID_BYTES = 256

UNKNOWN_CLAIM_SHAPE = "unknown_claim_shape"
LEDGER_SCOPE_CONFLICT = "claim_ledger_scope_conflict"
UNKNOWN_REQUEST_SHAPE = "unknown_request_shape"
UNKNOWN_NOW_SHAPE = "unknown_now_shape"
UNKNOWN_LEASE_SHAPE = "unknown_lease_shape"
LEASE_EXPIRED = "lease_expired"
LEASE_NOT_LIVE = "lease_not_live"
CLAIM_NOT_FOUND = "claim_not_found"
NOT_CLAIM_HOLDER = "not_claim_holder"


def valid_ms(instant: str) -> float:
    """The time of an instant already validated."""
    found = instant_ms(instant)
    assert found is not None, instant
    return found


def is_valid_lease(lease: Any) -> bool:
    """None (no lease) or exactly ``{granted_at, expires_at}``, expiring no earlier
    than granted."""
    if lease is None:
        return True
    if type(lease) is not dict or set(lease) != {"granted_at", "expires_at"}:
        return False
    granted, expires = instant_ms(lease["granted_at"]), instant_ms(lease["expires_at"])
    return granted is not None and expires is not None and expires >= granted


def expired_at(lease: dict[str, str] | None, now: float) -> bool:
    return lease is not None and valid_ms(lease["expires_at"]) <= now


def live_at(lease: dict[str, str] | None, now: float) -> bool:
    """A lease is live exactly while ``granted_at <= now < expires_at``."""
    return lease is None or valid_ms(lease["granted_at"]) <= now < valid_ms(lease["expires_at"])


def copy_lease(lease: dict[str, str] | None) -> dict[str, str] | None:
    return None if lease is None else {"granted_at": lease["granted_at"],
                                       "expires_at": lease["expires_at"]}


def claim_id(body: dict[str, Any]) -> str:
    """The id a claim's body determines (so a caller cannot mint or swap ids)."""
    return deterministic_id("claim", {k: body[k] for k in
                                      ("scope", "actor", "authority_class", "lease",
                                       "created_at")})


def _is_active_claim(claim: Any) -> bool:
    if not (
        type(claim) is dict
        and set(claim) == FIELDS
        and is_bounded_text(claim["claim_id"], _MAX_ID_BYTES)
        and scope.is_valid(claim["scope"])
        and claim["scope"] == scope.normalize(claim["scope"])
        and claim["status"] == "active"
        and is_valid_lease(claim["lease"])
        and instant_ms(claim["created_at"]) is not None
        and not actors.authority_codes(claim["actor"], claim["authority_class"])
    ):
        return False
    return live_at(claim["lease"], valid_ms(claim["created_at"])) and claim["claim_id"] == claim_id(claim)


def ledger_code(claims: Any) -> str | None:
    """Why the caller's ledger cannot be used, or None."""
    if type(claims) is not list or len(claims) > MAX_CLAIMS:
        return UNKNOWN_CLAIM_SHAPE
    total = 0
    seen: set[str] = set()
    for claim in claims:
        if not _is_active_claim(claim):
            return UNKNOWN_CLAIM_SHAPE
        total += len(claim["scope"]["paths"])
        if total > MAX_TOTAL_PATHS or claim["claim_id"] in seen:
            return UNKNOWN_CLAIM_SHAPE
        seen.add(claim["claim_id"])
    if not scope.pairwise_disjoint([claim["scope"] for claim in claims]):
        return LEDGER_SCOPE_CONFLICT
    return None


def _claim_result(decision: str, codes: list[str], claims: list[Any],
                  claim: dict[str, Any] | None = None,
                  conflicts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"decision": decision, "reason_codes": codes, "claim": claim, "claims": claims,
            "conflicts": conflicts or []}


def _clock_code(claims: list[dict[str, Any]], lease: Any, now: float) -> str | None:
    """Why ``now`` cannot grant: the requested lease is not live, or the ledger still
    holds an expired or not-yet-live claim (expire first)."""
    if lease is not None and not live_at(lease, now):
        return LEASE_EXPIRED if expired_at(lease, now) else LEASE_NOT_LIVE
    if any(expired_at(claim["lease"], now) for claim in claims):
        return LEASE_EXPIRED
    if any(not live_at(claim["lease"], now) or valid_ms(claim["created_at"]) > now
           for claim in claims):
        return LEASE_NOT_LIVE
    return None


def request_claim(claims: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Grant ``request`` (``scope, actor, now`` and optional ``authority_class, lease``)
    unless the ledger, the request, the clock or an overlapping claim refuses it."""
    if type(claims) is not list:
        return _claim_result("refused", [UNKNOWN_CLAIM_SHAPE], [])
    code = ledger_code(claims)
    if code is None and instant_ms(request["now"]) is None:
        code = UNKNOWN_NOW_SHAPE
    if code is None and not scope.is_valid(request["scope"]):
        code = UNKNOWN_REQUEST_SHAPE
    lease = request.get("lease")
    if code is None and not is_valid_lease(lease):
        code = UNKNOWN_LEASE_SHAPE
    if code is not None:
        return _claim_result("refused", [code], list(claims))
    authority_class = request.get("authority_class", actors.CONTRIBUTOR)
    denied = actors.authority_codes(request["actor"], authority_class)
    if denied:
        return _claim_result("refused", denied, list(claims))
    now = valid_ms(request["now"])
    code = _clock_code(claims, lease, now)
    wanted = scope.normalize(request["scope"])
    total = sum(len(claim["scope"]["paths"]) for claim in claims) + len(wanted["paths"])
    if code is None and (len(claims) >= MAX_CLAIMS or total > MAX_TOTAL_PATHS):
        code = "claim_work_unbounded"
    if code is not None:
        return _claim_result("refused", [code], list(claims))
    hits = [claims[i] for i in scope.overlapping(wanted, [c["scope"] for c in claims])]
    if hits:
        return _claim_result("refused", ["scope_conflict"], list(claims), conflicts=[
            {"claim_id": c["claim_id"], "actor": actors.copy(c["actor"]),
             "scope": scope.normalize(c["scope"])} for c in hits])
    claim: dict[str, Any] = {"scope": wanted, "actor": actors.copy(request["actor"]),
                             "authority_class": authority_class, "lease": copy_lease(lease),
                             "status": "active", "created_at": request["now"]}
    claim["claim_id"] = claim_id(claim)
    return _claim_result("granted", [], [*claims, claim], claim=claim)


def release_claim(claims: Any, wanted_id: Any, actor: Any) -> dict[str, Any]:
    """Remove one active claim, only at its exact holder's request."""
    def result(decision: str, codes: list[str], kept: list[Any]) -> dict[str, Any]:
        return {"decision": decision, "reason_codes": codes, "claims": kept}

    if type(claims) is not list:
        return result("refused", [UNKNOWN_CLAIM_SHAPE], [])
    code = ledger_code(claims)
    if code is None and not is_bounded_text(wanted_id, _MAX_ID_BYTES):
        code = UNKNOWN_REQUEST_SHAPE
    if code is not None:
        return result("refused", [code], list(claims))
    denied = actors.authority_codes(actor, actors.CONTRIBUTOR)
    if denied:
        return result("refused", denied, list(claims))
    held = next((c for c in claims if c["claim_id"] == wanted_id), None)
    if held is None:
        return result("refused", [CLAIM_NOT_FOUND], list(claims))
    if not actors.same(held["actor"], actor):
        return result("refused", [NOT_CLAIM_HOLDER], list(claims))
    return result("released", [], [c for c in claims if c["claim_id"] != wanted_id])


def expire_leases(claims: Any, now: Any) -> dict[str, Any]:
    """The ledger without the claims whose lease has expired at ``now``."""
    if type(claims) is not list:
        return {"claims": [], "expired": [], "reason_codes": [UNKNOWN_CLAIM_SHAPE]}
    code = ledger_code(claims)
    if code is None and instant_ms(now) is None:
        code = UNKNOWN_NOW_SHAPE
    if code is not None:
        return {"claims": list(claims), "expired": [], "reason_codes": [code]}
    at = valid_ms(now)
    return {
        "claims": [c for c in claims if not expired_at(c["lease"], at)],
        "expired": [{"claim": c, "reason_codes": [LEASE_EXPIRED]}
                    for c in claims if expired_at(c["lease"], at)],
        "reason_codes": [],
    }
