"""Building a `vivary.strato-decision-request/v0` around a capsule, so the governed loop
can be run from a shell: `tropo find --governed Q > capsule.json`, then `strato
decide-request capsule.json --actor ID > request.json`, then `strato decide --governed
request.json`. The builder only copies what the capsule already says (its workspace
fingerprint and scope) and stamps the times; `decide` still checks everything."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from strato.decide.envelope import POLICY_VERSION, REQUEST_SCHEMA


class RequestBuildError(ValueError):
    """The capsule does not carry what a request copies from it."""


def _iso(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_request(
    capsule: Any,
    *,
    actor_id: str,
    actor_kind: str = "agent",
    authority: str = "contributor",
    project: str | None = None,
    now: datetime,
    limits: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A request for `capsule` made and decided at `now` (the capsule must be younger
    than five minutes by then, or `decide` answers `stale_capsule`)."""
    try:
        fingerprint = capsule["workspace"]["fingerprint"]
        scope = list(capsule["task"]["scope"])
    except (TypeError, KeyError) as exc:
        raise RequestBuildError(f"not a task capsule (no {exc})") from None
    if not scope or not all(isinstance(p, str) for p in scope):
        raise RequestBuildError("the capsule has no scope paths")
    stamp = _iso(now)
    return {
        "schema": REQUEST_SCHEMA,
        "policy_version": POLICY_VERSION,
        "actor": {"kind": actor_kind, "id": actor_id},
        "authority_class": authority,
        "workspace": {"fingerprint": fingerprint},
        "scope": {"project": project or PurePath(scope[0]).name or "workspace", "paths": scope},
        "requested_at": stamp,
        "decision_at": stamp,
        "state": {"turns_used": 0, "actions_used": 0},
        "limits": limits or {"max_turns": 8, "max_actions": 32},
        "capsule": capsule,
    }
