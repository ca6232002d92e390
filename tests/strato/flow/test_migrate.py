"""`migrate --check` classifies v0.x constructs and never emits YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from strato.flow.migrate import RULES, check, render_text

LEGACY = Path(__file__).parent / "fixtures" / "legacy_v02.yaml"


def test_legacy_spec_findings() -> None:
    report = check(LEGACY.read_text())
    found = {f["id"]: f for f in report.findings}
    assert report.version == "0.2"
    assert set(found) == {
        "function-infer",
        "function-compute",
        "function-gate",
        "inline",
        "iterate",
        "parallel-dispatch",
        "pipeline-when",
        "subflow",
        "depends-on",
        "skip-if",
        "score-accumulate",
        "decompose-dependencies",
        "parallel-unsupported",
        "pipeline-nested",
        "pipeline-exit",
        "gate-policy",
        "workflow-block",
        "missing-max-rounds",
        "next",
        "on-fail",
        "ensure-expressions",
        "contracts",
        "flow-output",
    }
    assert found["skip-if"]["status"] == "supported"
    assert found["skip-if"]["paths"] == ["flows.main.steps[1].skip_if"]
    assert found["parallel-unsupported"]["paths"] == [
        "flows.main.steps[4].parallel_dispatch.merge",
        "flows.main.steps[4].parallel_dispatch.capture_diff",
    ]
    assert found["function-infer"]["paths"] == ["functions.classify", "flows.main.steps[0]"]
    assert report.has_unsupported
    # findings come in table order: supported, then unsupported, then diagnostic
    order = [r.id for r in RULES]
    ids = [f["id"] for f in report.findings]
    assert ids == sorted(ids, key=order.index)


def test_a_fully_supported_spec() -> None:
    text = (
        'version: "0.3"\nflows:\n  main:\n    max_rounds: 2\n    steps:\n'
        "      - id: a\n        intent: go\n      - id: b\n        intent: next\n"
        "        depends_on: [a]\n"
    )
    report = check(text)
    assert [f["id"] for f in report.findings] == ["inline", "max-rounds", "depends-on"]
    assert not report.has_unsupported


@pytest.mark.parametrize(
    "text", ["version: 1\nflows: {}\n", "version: '0.9'\n", "- a list\n", "key: [\n", ""]
)
def test_unreadable_inputs(text: str) -> None:
    report = check(text)
    assert [f["id"] for f in report.findings] == ["unreadable"]
    assert report.findings[0]["status"] == "diagnostic"
    assert report.has_unsupported


def test_text_report_is_report_only() -> None:
    text = render_text(check(LEGACY.read_text()), "legacy.yaml")
    lines = text.splitlines()
    assert lines[1] == "report-only: no YAML was emitted or translated"
    assert "- [SUPPORTED] skip_if -> when (inverted)" in lines
    assert "    at: flows.main.steps[1].skip_if" in lines
    assert "version: 1" not in text
