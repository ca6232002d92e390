"""Verification lanes: how much clean evidence a (flow, step, agent) lane has earned,
and from it whether one output's costly checks (a judge model, a test command) run.

The rule, in full: a lane verifies every output until it has `TRUST_AFTER` clean
verifications in a row; each further streak of `TRUST_AFTER` clean ones halves the rate,
down to `FLOOR` (never zero). A failure, an override, or a change of the step's spec or
of the agent's configuration (their digests) resets the lane to full verification.
Whether one output is checked is a pure function of (run id, step path, epoch, attempt,
nonce) and the rate, so an audit recomputes every decision from the evidence recorded
beside it (`replay`). The nonce is drawn by the engine once the output exists and is
recorded with the decision: everything else in the seed is known to the agent before it
answers, and an agent that could compute its own draw would know when it is unwatched.
Everything here is pure: the lanes live in the repository (`strato.runs.lanes.store`) and
the engine applies this rule (`strato.runs.engine.verification`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TRUST_AFTER = 5  # clean verifications in a row before a lane may skip any check
FLOOR = 0.125  # the lowest rate a lane decays to: one output in eight is still checked
RULE = {"trustAfter": TRUST_AFTER, "floor": FLOOR, "decay": "halve per further streak"}


@dataclass(frozen=True)
class Lane:
    """One lane: a step of a flow as done by one agent (`command` for an evaluate step)."""

    flow: str
    step: str
    agent: str

    @property
    def key(self) -> str:
        return f"{self.flow}/{self.step}/{self.agent}"


def digest(value: Any) -> str:
    """A short stable digest of a JSON value (a step's spec, an agent's configuration)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rate(streak: int) -> float:
    """The share of outputs verified after `streak` clean verifications in a row."""
    if streak < TRUST_AFTER:
        return 1.0
    return max(FLOOR, 0.5 ** (streak // TRUST_AFTER))


def draw(run_id: str, path: str, epoch: int, attempt: int, nonce: str) -> float:
    """A number in [0, 1) fixed by the output's identity and its nonce: anyone with the
    recorded evidence recomputes the same number."""
    seed = f"{run_id}\0{path}\0{epoch}\0{attempt}\0{nonce}".encode()
    return int.from_bytes(hashlib.sha256(seed).digest()[:8], "big") / 2**64


def standing(
    record: Mapping[str, Any] | None, spec_digest: str, config_digest: str
) -> tuple[int, str | None]:
    """The lane's clean streak as it applies now, and why it counts as reset (None: it
    does not); a record written for another spec or agent configuration counts for 0."""
    if record is None:
        return 0, "new lane"
    if record.get("specDigest") != spec_digest:
        return 0, "step spec changed"
    if record.get("configDigest") != config_digest:
        return 0, "agent configuration changed"
    return int(record.get("clean", 0)), None


@dataclass(frozen=True)
class Decision:
    """Whether one output's costly checks run, with the evidence that decided it."""

    verify: bool
    reason: str
    evidence: dict[str, Any]


def decide(
    lane: Lane,
    record: Mapping[str, Any] | None,
    digests: tuple[str, str],
    seed: tuple[str, str, int, int],
    nonce: str,
) -> Decision:
    """Run or skip the costly checks of the output `seed` names (run id, step path,
    epoch, attempt) in `lane`, whose stored record is `record`."""
    streak, reset = standing(record, *digests)
    run_id, path, epoch, attempt = seed
    share = rate(streak)
    number = draw(run_id, path, epoch, attempt, nonce)
    evidence = {
        "lane": lane.key,
        "runId": run_id,
        "epoch": epoch,
        "attempt": attempt,
        "nonce": nonce,
        "streak": streak,
        "rate": share,
        "draw": number,
        "specDigest": digests[0],
        "configDigest": digests[1],
        **RULE,
        **({"resetBy": reset} if reset else {}),
    }
    if share >= 1.0:
        why = f"lane not yet trusted ({streak} of {TRUST_AFTER} clean)"
        return Decision(True, why, evidence)
    if number < share:
        return Decision(True, f"sampled: draw {number:.4f} < rate {share:g}", evidence)
    return Decision(False, f"verification sampled out: draw {number:.4f} >= rate {share:g}", evidence)


def replay(step_path: str, evidence: Mapping[str, Any]) -> bool:
    """Recompute a recorded decision from its evidence alone: True if the checks had
    to run. An audit compares this with what the run did (`verified` or `skipped`)."""
    if evidence.get("trustAfter") != TRUST_AFTER or evidence.get("floor") != FLOOR:
        raise ValueError("the decision was made under another rule")
    share = rate(int(evidence["streak"]))
    epoch, attempt = int(evidence["epoch"]), int(evidence["attempt"])
    number = draw(str(evidence["runId"]), step_path, epoch, attempt, str(evidence["nonce"]))
    if share != evidence["rate"] or number != evidence["draw"]:
        raise ValueError("the recorded rate or draw does not follow from the evidence")
    return share >= 1.0 or number < share


# --- folding evidence into the lanes

KINDS = ("clean", "failure", "override", "skipped")


def fold(lanes: dict[str, dict[str, Any]], item: Mapping[str, Any]) -> None:
    """Apply one piece of evidence (`kind` one of KINDS) to the lanes, in place."""
    key = str(item["lane"])
    flow, step, agent = key.split("/", 2)
    record = lanes.get(key)
    streak, reset = standing(record, str(item["specDigest"]), str(item["configDigest"]))
    if record is None:
        record = {"flow": flow, "step": step, "agent": agent, "clean": 0, "verified": 0,
                  "skipped": 0, "failures": 0, "resets": 0, "lastReset": None}
        lanes[key] = record
    elif reset is not None and int(record.get("clean", 0)):
        _reset(record, reset, item)
    record.update(specDigest=item["specDigest"], configDigest=item["configDigest"], clean=streak)
    kind = item["kind"]
    if kind == "skipped":
        record["skipped"] += 1
    elif kind == "clean":
        record["verified"] += 1
        record["clean"] += 1
    else:
        if kind == "failure":
            record["verified"] += 1 if item.get("checked") else 0
            record["failures"] += 1
        _reset(record, f"{kind}: {item.get('reason', '')}".strip().rstrip(":"), item)
    record["rate"] = rate(record["clean"])
    record["updatedAt"] = item.get("at")


def _reset(record: dict[str, Any], reason: str, item: Mapping[str, Any]) -> None:
    record["clean"] = 0
    record["resets"] += 1
    where = {k: item[k] for k in ("runId", "stepId", "attempt", "at") if k in item}
    record["lastReset"] = {"reason": reason[:300], **where}


@dataclass
class LaneBook:
    """What one engine operation knows of the lanes: their records as read when it
    started, each agent's configuration digest, and the evidence it produced (the
    service folds that into the repository once the run's transition has landed)."""

    records: Mapping[str, Mapping[str, Any]]
    configs: Mapping[str, str]
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def resets(self) -> list[dict[str, Any]]:
        """Evidence that only lowers trust: safe to record before the run moves."""
        return [e for e in self.evidence if e["kind"] in ("failure", "override")]

    def gains(self) -> list[dict[str, Any]]:
        return [e for e in self.evidence if e["kind"] not in ("failure", "override")]
