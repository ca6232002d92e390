"""Capsules compiled from graph records: deterministic, bounded, and accepted by both
our integrity check and vivary_core's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import governed as b
from tests.support.oracle import run_upstream
from tropo.governed.capsule import is_intact
from tropo.governed.capsule_graph import compile_capsule, graph_fingerprint

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-core): -m "not slow" leaves it out

UPSTREAM_VERIFY = """
import json, sys
from vivary_core.capsule_compile import verify_task_capsule_integrity
from vivary_core.verify_receipt import verify_receipt_integrity
pairs = json.load(sys.stdin)
print(json.dumps([
    [verify_task_capsule_integrity(c),
     verify_receipt_integrity(receipt=r, capsule=c)["outcome"] if r else None]
    for c, r in pairs
]))
"""


def _records(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"note-{i}",
            "type": "note" if i % 3 else None,
            "path": f"notes/note-{i}.md",
            "title": f"Note {i} about caching" if i % 2 else "",
            "fields": {
                "status": "active",
                "due": dt.date(2026, 1, 1 + i % 28),
                "n": i / 3,
                "tags": ["a", "ü"],
                "big": 2**60,
            },
            "body": "text",
            "edges": [{"field": "refs", "dst": f"note-{i + 1}", "broken": i == count - 1}],
        }
        for i in range(count)
    ]


VARIANTS: dict[str, Callable[[], dict[str, Any]]] = {
    "baseline": lambda: b.capsule(),
    "unknowns-and-truncation": lambda: compile_capsule(
        _records(12), question="Why is caching slow?", root="/ws/", observed_at=b.T0, max_claims=5
    ),
    "empty-budget": lambda: compile_capsule(
        _records(2), question="x", root="/ws", observed_at=b.T0, max_claims=0
    ),
    "no-records": lambda: compile_capsule([], question="Anything?", root="/", observed_at=b.T0),
}


@pytest.mark.parametrize("make", VARIANTS.values(), ids=VARIANTS.keys())
def test_compiled_capsules_are_intact(make: Callable[[], dict[str, Any]]) -> None:
    capsule = make()
    assert is_intact(capsule)
    assert make() == capsule, "same records, same capsule"


def test_capsules_and_receipts_pass_upstream_integrity(upstream: Callable[[str], Path]) -> None:
    pairs = []
    for make in VARIANTS.values():
        capsule = make()
        pairs.append([capsule, b.receipt(capsule) if capsule["required_checks"] else None])
    upstream_result = run_upstream(upstream("python"), UPSTREAM_VERIFY, pairs)
    assert upstream_result == [[True, "verified"]] * len(pairs)


def test_budget_cut_is_ranked_and_listed() -> None:
    capsule = VARIANTS["unknowns-and-truncation"]()
    claims = capsule["claims"]
    assert len(claims) == 5
    assert {c["selection"]["tier"] for c in claims} == {"question_match"}
    assert claims[0]["fact"] == "type"
    (omission,) = capsule["omissions"]
    total = 12 + 6 + 12 * 5 + 11  # types, titles (odd ids), five fields each, unbroken edges
    assert omission["kind"] == "claims_over_budget"
    assert omission["omitted_count"] == total - 5
    assert len(omission["omitted"]) == 16 and omission["truncated"] is True
    assert capsule["unknowns"] == [
        {
            "checkout": "note-11",
            "path": "/ws/notes/note-11.md",
            "fact": "edge:refs",
            "reason": "broken_ref:note-12",
        }
    ]
    assert capsule["task"] == {"question": "Why is caching slow?", "scope": ["/ws"]}


def test_graph_fingerprint_ignores_read_order_and_sees_edits() -> None:
    records = _records(4)
    assert graph_fingerprint(records) == graph_fingerprint(list(reversed(records)))
    edited = [dict(r) for r in records]
    edited[0]["body"] = "changed"
    assert graph_fingerprint(edited) != graph_fingerprint(records)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"question": "  "}, "blank"),
        ({"root": "relative/path"}, "absolute"),
        ({"root": "/ws/../etc"}, "absolute"),
        ({"max_claims": 2**53}, "max_claims"),
        ({"max_claims": -1}, "max_claims"),
    ],
)
def test_bad_inputs_raise(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"question": "q", "root": "/ws", "observed_at": b.T0, **kwargs}
    with pytest.raises(ValueError, match=message):
        compile_capsule([], **args)
