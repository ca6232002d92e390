"""The words a run's state is written in: step and run statuses, the refusal every
operation raises, fresh step and scope records, and the tokens handed out.

A run is plain JSON (the `run.json` of each transition); every module of the engine
reads and writes it with these names, so they live below all of them.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from strato.flow.spec import Flow
from tropo.fs.private import Refusal

TERMINAL = frozenset({"succeeded", "failed", "skipped"})
ACTIVE = frozenset({"ready", "running", "waiting_gate"})
RUN_TERMINAL = frozenset({"completed", "failed", "budget_exhausted", "cancelled"})
RESOLVERS = ("human", "agent", "system")  # who decided a gate (kept in its history)
# refusals that mean "the request itself is wrong" (the CLI exits 2 for these)
USAGE_CODES = frozenset(
    {"INPUT_CONTRACT_INVALID", "invalid_run_id", "invalid_label", "invalid_cursor", "invalid_usage",
     "invalid_telemetry", "too_deep", "too_large", "unknown_remote"}
)


class Refused(Refusal):
    """An operation that does not apply to the run as it is (stale token, wrong step,
    finished run, ...). `code` is stable for `--json` output."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_token() -> str:
    return str(uuid.uuid4())


def fresh_step(epoch: int = 0) -> dict[str, Any]:
    return {"status": "pending", "attempts": [], "epoch": epoch, "spent": {}}


def new_scope(name: str, flow: Flow, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "flow": name,
        "input": inputs,
        "rounds": 0,
        "steps": {s.id: fresh_step() for s in flow.typed_steps},
    }


def token_holders(st: dict[str, Any]) -> list[dict[str, Any]]:
    """A step's state and its consumer fanout items: where live tokens are kept."""
    return [st, *st.get("fanout", {}).get("items", [])]
