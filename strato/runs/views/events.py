"""A run's history as Stratum's run events (events version 7): the engine's events, read
from the commit messages of the run's ref, rewritten into the reference's kinds and
payloads. Pure: the caller walks the history and reads a commit's state on request
(only for the events whose payload the state holds: a run's output, its failure).

An engine fanout item's agent call is made ready and handed out in one transition (op
`fanout_dispatch`, before the agent starts): its `fanout_item_ready` is that commit's,
sent before the dispatch's `fanout_ledger_debit` as a consumer item's is, so both modes
send one sequence (docs/runs.md, "Fanout (engine dispatch)").

The engine records more than the reference has kinds for; those events stay in `strato
flow audit` and are not sent: `subflow_started`, `fanout_started`, `fanout_item_done`,
`fanout_pre_merge`, the `routed` of a gate decision (its `gate_resolved` already
names the target), and a lane's `verified` and `skipped` decisions on judged ensures (the
step was not skipped; `strato lanes` and the audit show them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Event = dict[str, Any]
StateAt = Callable[[str], dict[str, Any]]

# kinds the engine emits already in the reference's payload shape (usage and sandbox
# records are written for the wire)
AS_IS = frozenset({"usage_debit", "sandbox_policy"})


def project(chain: Iterable[tuple[str, dict[str, Any]]], state_at: StateAt) -> list[Event]:
    """Every wire event of the transitions in ``chain`` ((commit, transition), oldest
    first), in order."""
    projector = _Projector(state_at)
    out: list[Event] = []
    for commit, transition in chain:
        engine_call = transition.get("op") == "fanout_dispatch"
        for ev in transition.get("events", []):
            if engine_call and ev.get("type") == "fanout_ledger_debit":
                out += projector(commit, {**ev, "type": "fanout_item_ready"})
            out += projector(commit, ev)
    return out


def _failure(value: Any, attempt: int = 0) -> dict[str, Any]:
    """A FAILURE ``{attempt, reason}`` from the engine's failure record or reason."""
    if isinstance(value, dict):
        got = value.get("attempt")
        return {"attempt": got if isinstance(got, int) else attempt, "reason": str(value.get("reason", ""))}
    return {"attempt": attempt, "reason": str(value)}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _names(value: Any) -> list[str]:
    """Step paths recorded as a list (runs recorded before they were kept a count: none)."""
    return [str(s) for s in value] if isinstance(value, list) else []


def _item(path: str) -> tuple[str, int] | None:
    """``<fanout>/<index>`` as (fanout path, index); None for a step's path."""
    head, _, tail = path.rpartition("/")
    return (head, int(tail)) if head and tail.isdigit() else None


class _Projector:
    """Walks the events in order, remembering what later payloads need (the attempt and
    stage an item is at, how many results have been recorded)."""

    def __init__(self, state_at: StateAt) -> None:
        self.state_at = state_at
        self.item_attempt: dict[str, tuple[int, int]] = {}  # item path -> (stage, attempt)
        self.receipts = 0

    def __call__(self, commit: str, ev: dict[str, Any]) -> list[Event]:
        kind, at = str(ev.get("type", "")), str(ev.get("at", ""))
        step = ev.get("stepId")
        d = _dict(ev.get("detail"))
        base: Event = {"at": at, "type": kind}
        if kind in AS_IS:
            return [{**base, **{k: v for k, v in ev.items() if k in ("stepId", "detail")}}]
        if kind in ("planned", "resumed"):  # who resumed it stays in the audit
            return [base]
        if kind in ("completed", "failed", "budget_exhausted"):
            state = self.state_at(commit)
            if kind == "completed":
                return [{**base, "detail": {"output": state.get("output")}}]
            return [{**base, "detail": _failure(state.get("failure") or d)}]
        if not isinstance(step, str):
            return self._run_level(base, kind, d)
        base["stepId"] = step
        item = _item(step)
        if item is not None:
            return self._item(base, kind, d, step, item)
        return self._step(base, kind, d)

    def _run_level(self, base: Event, kind: str, d: dict[str, Any]) -> list[Event]:
        if kind == "checkpoint_reverted":
            restored = {
                "label": str(d.get("label", "")),
                "receiptsAtRevert": self.receipts,
                "stepsRestored": _names(d.get("stepsRestored")),
            }
            return [{**base, "detail": restored}]
        if kind == "flow_cancelled":
            burned = _dict(d.get("burned"))
            detail: dict[str, Any] = {
                "by": str(d.get("by", "cli")),
                "burned": {"steps": _names(burned.get("steps")), "items": _int(burned.get("items"), 0)},
            }
            if isinstance(d.get("reason"), str):
                detail["reason"] = d["reason"]
            return [{**base, "detail": detail}]
        if kind == "carry_updated":
            return [{**base, "detail": _carry(d)}]
        return []

    def _step(self, base: Event, kind: str, d: dict[str, Any]) -> list[Event]:
        attempt = _int(d.get("attempt"), 0)
        if kind == "ready":
            return [{**base, "detail": {"attempt": attempt}}]
        if kind == "result":
            self.receipts += 1
            detail: dict[str, Any] = {"attempt": attempt}
            if d.get("success") is False:
                detail["failure"] = _failure(d.get("reason", ""), attempt)
            if isinstance(d.get("iterate"), dict):
                detail["iterate"] = {k: d["iterate"].get(k) for k in ("iteration", "max")}
            return [{**base, "detail": detail}]
        if kind == "skipped":
            if d.get("check") == "judged":  # a lane skipped a judge, not the step: ours only
                return []
            return [
                {**base, **({"detail": {"reason": d["reason"]}} if isinstance(d.get("reason"), str) else {})}
            ]
        if kind == "judged":
            return [{**base, "detail": _judged(d)}]
        if kind == "routed":
            if "failure" not in d:  # a gate's routing: its gate_resolved names the target
                return []
            return [
                {**base, "detail": {"target": str(d.get("target", "")), "failure": _failure(d["failure"])}}
            ]
        if kind == "gate_waiting":
            return [base]
        if kind == "gate_resolved":
            target = d.get("target")
            return [{**base, "detail": {"decision": str(d.get("decision", "")), "target": target}}]
        if kind == "step_reset":
            reset = [
                {"stepId": r.get("stepId"), "fromEpoch": r.get("fromEpoch"), "toEpoch": r.get("toEpoch")}
                for r in d.get("reset", [])
                if isinstance(r, dict)
            ]
            dropped = [str(s) for s in d.get("subflowsDropped", [])]
            return [
                {**base, "detail": {"reason": d.get("reason"), "reset": reset, "subflowsDropped": dropped}}
            ]
        if kind == "fanout_merge":
            return [
                {**base, "detail": {"itemIndex": i, "success": True}}
                for i in d.get("items", [])
                if isinstance(i, int)
            ]
        if kind == "carry_updated":
            return [{**base, "detail": _carry(d)}]
        return []

    def _item(
        self, base: Event, kind: str, d: dict[str, Any], path: str, item: tuple[str, int]
    ) -> list[Event]:
        fanout, index = item
        base["stepId"] = fanout
        stage = _int(d.get("stage"), self.item_attempt.get(path, (0, 0))[0])
        if kind == "fanout_item_ready":
            attempt = _int(d.get("attempt"), 1)
            self.item_attempt[path] = (stage, attempt)
            return [{**base, "detail": {"itemIndex": index}}]
        if kind == "fanout_item_dispatched":
            attempt = _int(d.get("attempt"), 1)
            self.item_attempt[path] = (stage, attempt)
            return [{**base, "detail": {"itemIndex": index, "stage": stage, "attempt": attempt}}]
        if kind == "fanout_ledger_debit":
            debit: dict[str, Any] = {"itemIndex": index, "amount": _dict(d.get("amount"))}
            if isinstance(d.get("source"), str):
                debit["source"] = d["source"]
            return [{**base, "detail": debit}]
        if kind == "fanout_item_skipped":
            return [{**base, "detail": {"itemIndex": index, "stage": stage}}]
        if kind == "fanout_attempt_result":
            self.receipts += 1
            attempt = self.item_attempt.get(path, (stage, 1))[1]
            detail: dict[str, Any] = {"itemIndex": index, "stage": stage, "attempt": attempt}
            detail["success"] = d.get("success") is True
            if d.get("success") is not True:
                detail["failure"] = {"kind": "result", "reason": str(d.get("reason") or "")}
            return [{**base, "detail": detail}]
        if kind == "judged":
            return [{**base, "detail": {**_judged(d), "itemIndex": index, "stage": stage}}]
        return []


def _judged(d: dict[str, Any]) -> dict[str, Any]:
    usage = _dict(d.get("usage"))
    return {
        "statement": d.get("statement"),
        "holds": d.get("holds") is True,
        "reason": d.get("reason"),
        "stakes": d.get("stakes"),
        "model": d.get("model", "unreported"),  # runs judged before the model was recorded
        "usage": {"tokens": usage.get("tokens", 0), "usd": usage.get("usd", 0)},
    }


# a gate token is never sent in an event (the reference allows one; the policy of
# strato.runs.views.documents.withhold_gate_tokens decides who sees tokens)
_PROVENANCE = ("kind", "sourceStep", "sourceEpoch", "gate", "round", "at")


def _carry(d: dict[str, Any]) -> dict[str, Any]:
    provenance = _dict(d.get("provenance"))
    kept = {k: v for k, v in provenance.items() if k in _PROVENANCE}
    kept.setdefault("kind", d.get("reason"))
    kept.setdefault("at", "")
    return {"name": d.get("name"), "reason": d.get("reason"), "provenance": kept}
