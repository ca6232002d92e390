"""Deciding whether a step's output is done: the `out` contract, then each `ensure` in
order (expressions, file predicates, judged statements), then `iterate.until`. Pure
except for reading files inside the jail and asking the configured judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.flow import types as ty
from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate_predicate
from strato.flow.expr.files import file_contains, file_exists
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render
from strato.flow.spec import (
    Ensure,
    ExprEnsure,
    FileContainsEnsure,
    FileExistsEnsure,
    JudgedEnsure,
    Spec,
)

DEFAULT_ATTEMPTS = 2  # tries per step or fanout stage when the spec gives no `attempts`

# statement, stakes, output -> {"holds": bool, "reason": str, ...}
Judge = Callable[[str, str, Any], Mapping[str, Any]]


@dataclass
class Verdict:
    """First failure reason (None = passed) and what judged ensures said on the way."""

    reason: str | None = None
    judged: list[dict[str, Any]] = field(default_factory=list)


def contract_errors(spec: Spec, contract: str | None, output: Any) -> list[str]:
    if contract is None:
        return []
    return ty.check_object(output, spec.contracts.get(contract, {}), spec.contracts)


def check(
    spec: Spec,
    contract: str | None,
    ensures: list[Ensure] | None,
    output: Any,
    bindings: Mapping[str, Any],
    scope: Scope,
    root: Path | None,
    judge: Judge | None,
    skip: frozenset[int] = frozenset(),
) -> Verdict:
    """Contract, then ensures in order (but those in `skip`: judged ones a lane's
    verification rate sampled out); the first failure wins."""
    verdict = Verdict()
    errors = contract_errors(spec, contract, output)
    if errors:
        verdict.reason = f"output breaks contract {contract}: {'; '.join(errors[:5])}"
        return verdict
    context = {**bindings, "result": output}
    for i, ensure in enumerate(ensures or []):
        if i in skip:
            continue
        verdict.reason = _ensure(ensure, i, context, scope, root, judge, verdict)
        if verdict.reason is not None:
            break
    return verdict


def _ensure(
    ensure: Ensure,
    i: int,
    context: Mapping[str, Any],
    scope: Scope,
    root: Path | None,
    judge: Judge | None,
    verdict: Verdict,
) -> str | None:
    try:
        if isinstance(ensure, ExprEnsure):
            ok = evaluate_predicate(ensure.expr, context, root)
            return None if ok else f"ensure[{i}] failed: {ensure.expr}"
        if isinstance(ensure, FileExistsEnsure):
            path = str(render(ensure.file_exists, scope))
            return None if file_exists(root, path) else f"ensure[{i}] failed: file {path} does not exist"
        if isinstance(ensure, FileContainsEnsure):
            path = str(render(ensure.file_contains.path, scope))
            text = str(render(ensure.file_contains.text, scope))
            ok = file_contains(root, path, text)
            return None if ok else f"ensure[{i}] failed: file {path} does not contain {text!r}"
    except ExprError as exc:
        return f"ensure[{i}] failed: {exc}"
    except (Unresolved, RefSyntaxError) as exc:
        return f"ensure[{i}] failed: {exc}"
    assert isinstance(ensure, JudgedEnsure)
    return _judged(ensure, i, context.get("result"), judge, verdict)


def _judged(ensure: JudgedEnsure, i: int, output: Any, judge: Judge | None, verdict: Verdict) -> str | None:
    statement, stakes = ensure.judged.statement, ensure.judged.stakes
    model, usage = "none", {"tokens": 0, "usd": 0}  # no judge ran: nothing was spent
    if judge is None:
        holds, reason = False, "no judge configured (judged ensures fail closed)"
    else:
        try:
            answer = judge(statement, stakes, output)
            holds = answer.get("holds") is True
            reason = str(answer.get("reason", ""))
            model = str(answer.get("model", "unreported"))
            spent = answer.get("usage")
            usage = {k: spent.get(k, 0) if isinstance(spent, dict) else 0 for k in ("tokens", "usd")}
        except Exception as exc:  # a judge that breaks must not pass anything
            holds, reason = False, f"judge failed: {exc}"
    said = {"statement": statement, "holds": holds, "reason": reason, "stakes": stakes}
    verdict.judged.append({**said, "model": model, "usage": usage})
    return None if holds else f"ensure[{i}] judged false: {statement} ({reason})"


def until_holds(until: str, output: Any, bindings: Mapping[str, Any], root: Path | None) -> str | None:
    """None when `iterate.until` holds, else why not."""
    try:
        ok = evaluate_predicate(until, {**bindings, "result": output}, root)
    except ExprError as exc:
        return f"iterate.until failed: {exc}"
    return None if ok else f"iterate.until not met: {until}"
