"""Compute receipt and gate verdicts for many cases in one interpreter: vivary-core's when
it is importable (the oracle's Python), else ours. Reads a JSON list of ``{"gate",
"capsule", "receipt"?}`` on stdin; prints a JSON list of ``[receipt_verdict,
gate_verdict]`` (a case without ``receipt`` passes none)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def _verifiers() -> tuple[Callable[..., Any], Callable[..., Any]]:
    try:
        from vivary_core.verify_receipt import verify_receipt_integrity
        from vivary_core.verify_sufficiency import evaluate_gate_sufficiency
    except ImportError:
        from tropo.governed.gate import evaluate
        from tropo.governed.receipt import receipt_verdict

        def gate(*, gate: Any, capsule: Any, **receipt: Any) -> Any:
            return evaluate(gate, capsule, *receipt.values())

        return (lambda *, receipt, capsule: receipt_verdict(receipt, capsule)), gate
    return verify_receipt_integrity, evaluate_gate_sufficiency


def main() -> None:
    receipt_of, gate_of = _verifiers()
    out = []
    for case in json.load(sys.stdin):
        given = {"receipt": case["receipt"]} if "receipt" in case else {}
        out.append([receipt_of(receipt=case.get("receipt"), capsule=case["capsule"]),
                    gate_of(gate=case["gate"], capsule=case["capsule"], **given)])
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
