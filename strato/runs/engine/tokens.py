"""What a dispatch costs in context before it is sent: each load it is given (the
rendered task, the contract to answer in, the previous failure on a retry) costed in
estimated tokens with tropo's estimator (the one `tropo find` packets are trimmed by),
and the tightest `budget.context` above the step, which refuses an oversized prompt
before any agent sees it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strato.flow.spec import DoStep
from strato.runs.engine.context import Frame
from tropo.review.retrieval import estimate_tokens


def loads(
    task: str, contract: Mapping[str, str] | None, previous: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """Every context load of one dispatch with its estimated tokens, in prompt order."""
    out = [{"kind": "task", "tokens": estimate_tokens(task)}]
    if contract:
        out.append({"kind": "contract", "tokens": estimate_tokens(dict(contract))})
    if previous:
        out.append({"kind": "previousFailure", "tokens": estimate_tokens(previous.get("reason", ""))})
    return out


def limit(frame: Frame, step: DoStep) -> tuple[int, str] | None:
    """The tightest context budget over the step and every scope above it, and whose."""
    found = [(ledger.budget.context, ledger.level) for ledger in frame.ledgers
             if ledger.budget is not None and ledger.budget.context is not None]
    if step.budget is not None and step.budget.context is not None:
        found.append((step.budget.context, "task"))
    return min(found) if found else None


def costed(
    contracts: Mapping[str, Mapping[str, str]], frame: Frame, step: DoStep, st: dict[str, Any], task: str
) -> tuple[dict[str, Any], str | None]:
    """The dispatch's context record, and why it is refused (None: it fits)."""
    contract = contracts.get(step.out) if step.out else None
    items = loads(task, contract, st.get("previousFailure"))
    total = sum(i["tokens"] for i in items)
    record: dict[str, Any] = {"loads": items, "tokens": total}
    bound = limit(frame, step)
    if bound is None:
        return record, None
    record["budget"] = {"context": bound[0], "level": bound[1]}
    if total <= bound[0]:
        return record, None
    return record, f"{bound[1]} context budget refused the dispatch: ~{total} tokens > {bound[0]}"
