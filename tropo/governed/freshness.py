"""How old evidence may be when it is used: the instants a governed request carries and the
five-minute window every governed verb (``strato decide``, ``tropo verify``) applies to a
capsule observation or a receipt, so the two verbs cannot disagree about "stale"."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

#: Capsule observations and receipts older than this at the moment of use are stale.
MAX_AGE = timedelta(seconds=300)


def parse_instant(value: Any) -> datetime | None:
    """A timezone-aware ISO-8601 instant (`Z` accepted), or None."""
    if not (isinstance(value, str) and value.strip()):
        return None
    try:
        instant = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else None


def age_code(earlier: datetime | None, later: datetime | None, future: str, stale: str) -> list[str]:
    """``[future]`` when ``earlier`` is after ``later``, ``[stale]`` when it is more than
    :data:`MAX_AGE` before it, else nothing (and nothing when either is unknown)."""
    if earlier is None or later is None:
        return []
    if earlier > later:
        return [future]
    return [stale] if later - earlier > MAX_AGE else []


def receipt_codes(receipt: Any, observed: datetime | None, used_at: datetime | None) -> list[str]:
    """Why a receipt's ``created_at`` cannot be used at ``used_at`` for a capsule observed
    at ``observed``: unparsable, before the observation, in the future, or stale."""
    if not isinstance(receipt, dict) or "created_at" not in receipt:
        return []
    created = parse_instant(receipt["created_at"])
    if created is None:
        return ["invalid_receipt_created_at"]
    if observed is not None and created < observed:
        return ["receipt_precedes_capsule"]
    return age_code(created, used_at, "receipt_from_future", "stale_receipt")
