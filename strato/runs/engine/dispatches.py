"""Dispatches: every hand-out of work to an agent (a ready step, a consumer fanout item,
one agent call of an engine fanout item) is one dispatch with its own `dispatchId`,
kept in the run's `dispatches` table, which no revert rolls back. Its usage is debited
once: the first report (a `done` result's `usage`, a usage report, the engine's own
measure) moves the ledgers and is recorded as a `usage_debit` event with the run's next
`seq`; any later report for the same id changes nothing. A ready step the engine runs
itself is claimed for it (:func:`claim`) before its agent starts: from then on only the
engine's own measure of that dispatch counts, and an outside usage report or result
for it is refused (`engine_dispatch`), so no other client can debit it first with less.

A hand-out also carries what it was computed from, so a result can be checked against
more than its token: `generation` (how many times this step or item has been handed
out in the run), `contractDigest` (the step's or stage's spec and its output contract)
and `revisionDigest` (the run, the frozen spec, the issuance and the rendered inputs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strato.flow.spec import AnyStep, DoStep, FanoutStep, Spec, Stage
from strato.runs.engine.budgets import breach, overspent, task_ledgers
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.ledger import Ledger
from strato.runs.engine.state import Refused, new_token, now_iso
from tropo.canonical import fingerprint

TELEMETRY_KEYS = frozenset({"durationMs", "model", "effort"})
MAX_DURATION_MS = 10**10  # about 115 days: longer is a unit mistake, not a run
MAX_MODEL = 200
MAX_EFFORT = 64
# what a result may claim about the hand-out it answers, and the refusal for each
CLAIMS = {
    "dispatchId": "stale_dispatch",
    "generation": "stale_generation",
    "contractDigest": "contract_mismatch",
    "revisionDigest": "stale_revision",
}


def telemetry_errors(telemetry: Any) -> list[str]:
    """Why a reported `telemetry` object is malformed (empty = fine): Stratum's
    `{durationMs: number, model: string, effort?: string}`, bounded."""
    if not isinstance(telemetry, dict):
        return ["telemetry must be an object"]
    out = [f"telemetry.{k}: unknown key" for k in telemetry if k not in TELEMETRY_KEYS]
    ms: Any = telemetry.get("durationMs")
    if type(ms) not in (int, float) or not math.isfinite(ms) or not 0 <= ms <= MAX_DURATION_MS:
        out.append(f"telemetry.durationMs: must be a number from 0 to {MAX_DURATION_MS}")
    for key, limit, required in (("model", MAX_MODEL, True), ("effort", MAX_EFFORT, False)):
        value = telemetry.get(key)
        if value is None and not required:
            continue
        if not isinstance(value, str) or not 0 < len(value) <= limit or not value.isprintable():
            out.append(f"telemetry.{key}: must be printable text of 1 to {limit} characters")
    return out


def engine_telemetry(model: str, duration_ms: int) -> dict[str, Any]:
    """The engine's own telemetry for an agent call it made (``model``: the agent's
    `AgentSpec.model()`), made to pass `telemetry_errors` whatever the name."""
    name = "".join(ch for ch in model if ch.isprintable())[:MAX_MODEL] or "unknown"
    return {"durationMs": min(max(duration_ms, 0), MAX_DURATION_MS), "model": name}


def contract_digest(
    spec: Spec, step: DoStep | FanoutStep, stage: int | None = None, known: dict[Any, str] | None = None
) -> str:
    """The step's (or the fanout stage's) definition as frozen in the spec, ensures
    included, and the fields of the contract its output must meet; ``known`` keeps the
    digests of one spec revision (they follow from the spec alone)."""
    if known is None:
        return _contract_digest(spec, step, stage)
    if (step.id, stage) not in known:
        known[step.id, stage] = _contract_digest(spec, step, stage)
    return known[step.id, stage]


def _contract_digest(spec: Spec, step: DoStep | FanoutStep, stage: int | None) -> str:
    body: DoStep | Stage = step if isinstance(step, DoStep) else step.fanout.steps[stage or 0]
    part: dict[str, Any] = {"stepId": step.id, **({} if isinstance(step, DoStep) else {"stage": stage})}
    contract = dict(spec.contracts.get(body.out or "", {}))
    return fingerprint({**part, "spec": body.model_dump(mode="json", by_alias=True), "output": contract})


def inputs_digest(prompt: str, item: Any = None, prev: Any = None) -> str:
    """What a hand-out's work was rendered from: the prompt, and an item's value and
    its previous stage's output."""
    return fingerprint({"prompt": prompt, "item": item, "prev": prev})


def issue(
    ctx: RunContext,
    record: dict[str, Any],
    contract: str,
    inputs: str,
    holder: dict[str, Any] | None = None,
    dispatch_id: str | None = None,
) -> str:
    """Record one dispatch (`record`: `stepId`, `attempt`, `epoch`, `item?` with
    `itemIndex` and `stage`) with its generation; a `holder` (the step or item state
    handed out) gets a fresh token, the id, the generation and both digests. The table
    keeps only what a later usage report needs. Returns the dispatch id."""
    key = _key(record)
    generations: dict[str, int] = ctx.run.setdefault("generations", {})
    generation = generations[key] = generations.get(key, 0) + 1
    dispatch_id = dispatch_id or new_token()
    ctx.run.setdefault("dispatches", {})[dispatch_id] = {**record, "generation": generation}
    if holder is not None:
        revision = {
            "runId": ctx.run["id"],
            "spec": ctx.run["revisionDigest"],
            "dispatch": key,
            "epoch": record["epoch"],
            "attempt": record["attempt"],
            "generation": generation,
            "inputs": inputs,
        }
        holder.update(
            dispatchToken=new_token(),
            dispatchId=dispatch_id,
            generation=generation,
            contractDigest=contract,
            revisionDigest=fingerprint(revision),
        )
    return dispatch_id


def _key(record: Mapping[str, Any]) -> str:
    """What generations count: the step path, or `<step path>/<index>` for an item."""
    item = record.get("item")
    return str(record["stepId"]) + (f"/{item['itemIndex']}" if item else "")


def reissue(ctx: RunContext, holder: dict[str, Any]) -> None:
    """Hand a live step or item out again (a checkpoint restore): a new token, id and
    generation, so results for the earlier hand-out are stale by every check."""
    old = ctx.run.get("dispatches", {}).get(holder.get("dispatchId"))
    if old is None or "stepId" not in old:  # recorded before dispatch ids: rotate the token
        holder["dispatchToken"] = new_token()
        return
    kept = {k: old[k] for k in ("stepId", "attempt", "epoch", "item") if k in old}
    inputs = inputs_digest(holder["prompt"], holder.get("item"), holder.get("prev"))
    issue(ctx, kept, holder["contractDigest"], inputs, holder)


RESERVED = {"dispatches": 1}  # what each hand-out of work reserves in every ledger


def handed_out(ctx: RunContext, item_path: str, stage: int, attempt: int) -> None:
    """Record that a fanout item's stage attempt was handed out (a consumer item made
    ready) or started (an engine item's agent call), with the dispatch it reserved:
    `fanout_ledger_debit` (`source: dispatch`), then `fanout_item_dispatched`."""
    ctx.emit("fanout_ledger_debit", item_path, amount=dict(RESERVED), source="dispatch")
    ctx.emit("fanout_item_dispatched", item_path, stage=stage, attempt=attempt)


HANDOUT = ("dispatchId", "generation", "contractDigest", "revisionDigest")


def handout(holder: dict[str, Any]) -> dict[str, Any]:
    """What a ready entry shows of its dispatch."""
    return {k: holder[k] for k in HANDOUT if k in holder}


def take(holder: dict[str, Any]) -> str | None:
    """A result was accepted for the holder's hand-out: it is no longer out. Its id."""
    for key in ("dispatchToken", *HANDOUT[1:]):
        holder.pop(key, None)
    dispatch_id = holder.pop("dispatchId", None)
    return dispatch_id if isinstance(dispatch_id, str) else None


def check_claims(holder: dict[str, Any], path: str, claims: Mapping[str, Any]) -> None:
    """Refuse a result whose claims about its hand-out are not the current one's."""
    for key, code in CLAIMS.items():
        if key not in claims or claims[key] is None:
            continue
        claimed = claims[key]
        wanted = int if key == "generation" else str
        if type(claimed) is not wanted or claimed != holder.get(key):
            raise Refused(
                code,
                f"step result for {path} is stale: its {key} does not match the current "
                f"hand-out (generation {holder.get('generation', '?')})",
            )


@dataclass(frozen=True)
class Accepted:
    """A result taken for its hand-out: its usage (`reported`: the result had one) and
    telemetry, both checked, the dispatch it answers and who reported it (`step_done`,
    or `engine` for the engine's own agent calls)."""

    usage: dict[str, float]
    reported: bool
    telemetry: dict[str, Any] | None
    dispatch_id: str | None
    source: str

    def extra(self) -> dict[str, Any]:
        """What the attempt record keeps of them."""
        out: dict[str, Any] = {"usage": self.usage} if self.usage else {}
        if self.telemetry:
            out["telemetry"] = self.telemetry
        return {**out, **({"dispatchId": self.dispatch_id} if self.dispatch_id else {})}

    def settle(self, ctx: RunContext, ledgers: list[Ledger]) -> None:
        """Debit the usage once per dispatch (a usage report may have come first)."""
        if self.dispatch_id in ctx.run.get("dispatches", {}):
            if self.reported:
                debit(ctx, str(self.dispatch_id), self.usage, self.telemetry, self.source, ledgers)
            return
        spend = {k: v for k, v in self.usage.items() if k != "dispatches"}
        for ledger in ledgers:  # a run recorded before dispatch ids
            ledger.debit(spend)


def debit(
    ctx: RunContext,
    dispatch_id: str,
    usage: Mapping[str, float],
    telemetry: Mapping[str, Any] | None,
    source: str,
    ledgers: list[Ledger],
) -> bool:
    """Debit a dispatch's usage from `ledgers` unless it already was (False then);
    record it as `usage_debit` with the run's next `seq`."""
    record = ctx.run.get("dispatches", {})[dispatch_id]
    if "debitSeq" in record:
        return False
    seq = ctx.run["usageSeq"] = ctx.run.get("usageSeq", 0) + 1
    amount = {k: v for k, v in usage.items() if k != "dispatches"}
    for ledger in ledgers:
        ledger.debit(amount)
    tel = dict(telemetry or {})
    detail: dict[str, Any] = {
        "seq": seq,
        "dispatchId": dispatch_id,
        "source": source,
        "amount": amount,
        "model": tel.get("model", "unknown"),
        "durationMs": tel.get("durationMs", amount.get("ms", 0)),
        "epoch": record["epoch"],
        "attempt": record["attempt"],
        "reportedAt": now_iso(),
    }
    if "effort" in tel:
        detail["effort"] = tel["effort"]
    if "item" in record:
        detail["item"] = {**record["item"], "generation": record["generation"]}
    ctx.emit("usage_debit", record["stepId"], **detail)
    if "item" in record:  # the item's own view of what its ledgers were debited
        item_path = f"{record['stepId']}/{record['item']['itemIndex']}"
        ctx.emit("fanout_ledger_debit", item_path, amount=dict(amount), source=source)
    ctx.run["dispatches"][dispatch_id] = {"debitSeq": seq}  # the event has the rest
    return True


def claim(ctx: RunContext, path: str, st: dict[str, Any]) -> bool:
    """Claim the ready step `st`'s dispatch for the engine's own agent; False if it is
    the engine's already (nothing to write). One another client already reported usage
    for is left to that report (the spend was real) and the step is handed out anew for
    the engine, so the engine's measure always lands on a dispatch of its own."""
    record = ctx.run.get("dispatches", {}).get(st.get("dispatchId"))
    if record is None or record.get("by") == "engine":  # a run recorded before ids, or ours
        return False
    if "debitSeq" in record:
        again = {"stepId": path, "attempt": len(st["attempts"]) + 1, "epoch": st["epoch"]}
        issue(ctx, again, st["contractDigest"], inputs_digest(st["prompt"]), st)
        record = ctx.run["dispatches"][st["dispatchId"]]
    record["by"] = "engine"
    return True


def refuse_if_engines(ctx: RunContext, dispatch_id: Any) -> None:
    """`Refused` for an outside report (usage or result) of a dispatch the engine runs."""
    if ctx.run.get("dispatches", {}).get(dispatch_id, {}).get("by") == "engine":
        raise Refused(
            "engine_dispatch",
            f"dispatch {dispatch_id} is run by the engine itself: only its own measure of it counts",
        )


def report(
    ctx: RunContext, dispatch_id: str, usage: Mapping[str, float], telemetry: Mapping[str, Any] | None
) -> bool:
    """A usage report for any dispatch this run handed out, current or superseded, in a
    running or a finished run (spend is real either way). False: already debited. The
    ledgers debited are the step's and those above it (for a step of a subflow that has
    finished, its `run` step's and above); an overspent ledger ends what it covers while
    the dispatch is still out, and an overspent flow ledger ends a running run whatever
    the dispatch."""
    record = ctx.run.get("dispatches", {}).get(dispatch_id)
    if record is None:
        raise Refused("unknown_dispatch", f"no dispatch {dispatch_id!r} in run {ctx.run['id']}")
    if "debitSeq" in record:
        return False
    refuse_if_engines(ctx, dispatch_id)
    frame, step, st = _nearest(ctx, record["stepId"])
    ledgers = task_ledgers(frame, step, st)
    debit(ctx, dispatch_id, usage, telemetry, "usage_report", ledgers)
    if ctx.run["status"] != "running":
        return True
    holder = _live_holder(st, record, dispatch_id)
    if holder is not None:
        if overspent(ctx, frame, step, st, ledgers) and holder is not st:
            holder.update(status="failed", failure="budget exhausted")
            holder.pop("dispatchToken", None)
    elif ledgers[0].over():
        breach(ctx, frame, step, st, ledgers[0], ledgers[0].over())
    return True


def _nearest(ctx: RunContext, path: str) -> tuple[Frame, AnyStep, dict[str, Any]]:
    """The step at `path`, or the `run` step of the nearest subflow above it that is
    still live (a finished subflow's frame is gone; its `run` step keeps its ledger)."""
    while True:
        try:
            return ctx.locate(path)
        except Refused:
            path = path.rpartition("/")[0]
            if not path:
                raise


def _live_holder(st: dict[str, Any], record: dict[str, Any], dispatch_id: str) -> dict[str, Any] | None:
    """The step or item state that still has this dispatch out, if any."""
    holder: dict[str, Any] | None = st
    if "item" in record:
        items = st.get("fanout", {}).get("items", [])
        index = record["item"]["itemIndex"]
        holder = items[index] if st["status"] == "running" and index < len(items) else None
    if holder is not None and holder.get("status") == "ready" and holder.get("dispatchId") == dispatch_id:
        return holder
    return None
