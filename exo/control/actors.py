"""Who may hold which authority: an exact ``{kind, id}`` actor, and only a human owns."""

from __future__ import annotations

from typing import Any

from exo.control.text import is_bounded_text

KINDS = frozenset({"human", "agent", "worker"})
CONTRIBUTOR = "contributor"
OWNER = "owner"
CLASSES = frozenset({CONTRIBUTOR, OWNER})
_MAX_ID_BYTES = 256


def is_exact(actor: Any) -> bool:
    """Exactly ``{kind, id}`` with a canonical id: no aliases, no metadata."""
    return (
        type(actor) is dict
        and set(actor) == {"kind", "id"}
        and isinstance(actor["kind"], str)
        and is_bounded_text(actor["id"], _MAX_ID_BYTES)
    )


def same(left: Any, right: Any) -> bool:
    return is_exact(left) and is_exact(right) and left == right


def copy(actor: dict[str, Any]) -> dict[str, Any]:
    return {"kind": actor["kind"], "id": actor["id"]}


def authority_codes(actor: Any, authority_class: Any) -> list[str]:
    """Why ``actor`` may not hold ``authority_class`` (empty: it may)."""
    if not is_exact(actor):
        return ["unknown_actor_shape"]
    if actor["kind"] not in KINDS:
        return ["unknown_actor_kind"]
    if not isinstance(authority_class, str) or authority_class not in CLASSES:
        return ["unknown_authority_class"]
    if authority_class == OWNER and actor["kind"] != "human":
        return ["workers_cannot_own"]
    return []
