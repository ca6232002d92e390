"""Budgets: a ledger is a declared limit and what has been spent against it. A
dispatch is reserved before it is handed out (refused if any ledger would go over);
reported usage is settled afterwards and always recorded, even past the limit."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strato.flow.spec import Budget

KEYS = ("usd", "tokens", "dispatches", "ms")


@dataclass
class Ledger:
    level: str  # flow | subflow | task
    budget: Budget | None
    spent: dict[str, float]

    def limits(self) -> dict[str, float]:
        if self.budget is None:
            return {}
        return {k: v for k in KEYS if (v := getattr(self.budget, k)) is not None}

    def blocking(self, amount: Mapping[str, float]) -> list[str]:
        """The keys that would go over their limit if `amount` were debited."""
        limits = self.limits()
        return [k for k, lim in limits.items() if self.spent.get(k, 0) + amount.get(k, 0) > lim]

    def can_debit(self, amount: Mapping[str, float]) -> bool:
        return not self.blocking(amount)

    def over(self) -> list[str]:
        """The keys already spent past their limit (settled usage may overshoot)."""
        return self.blocking({})

    def debit(self, amount: Mapping[str, float]) -> None:
        for k, v in amount.items():
            if v:
                total = self.spent.get(k, 0) + v
                self.spent[k] = round(total, 9) if isinstance(total, float) else total


def usage_errors(usage: Any) -> list[str]:
    """Why a reported `usage` object is malformed (empty = fine)."""
    if not isinstance(usage, dict):
        return ["usage must be an object"]
    out = [f"usage.{k}: unknown key" for k in usage if k not in KEYS]
    for k, v in usage.items():
        ok = type(v) in (int, float) and math.isfinite(v) and v >= 0
        if k in KEYS and not ok:
            out.append(f"usage.{k}: must be a finite number >= 0")
    return out
