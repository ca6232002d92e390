"""How a finding reads, and strict grading: the lines ``tropo check`` prints."""

from __future__ import annotations

from tropo.check.findings import Finding, Summary, grade


def test_a_finding_with_a_line_is_located_by_path_and_line() -> None:
    found = Finding("changes/a.md", 3, "error", "E101", "missing field status")
    assert found.render() == "changes/a.md:3: error E101: missing field status"


def test_a_finding_about_the_whole_file_names_only_the_path() -> None:
    """Line 0 means no line (a file-level finding): no ``:0`` to jump to."""
    found = Finding("changes/a.md", 0, "warning", "W201", "file is empty")
    assert found.render() == "changes/a.md: warning W201: file is empty"


def test_strict_grading_turns_warnings_and_only_warnings_into_errors() -> None:
    findings = [Finding("a.md", 1, "warning", "W1", "w"), Finding("b.md", 2, "error", "E1", "e"),
                Finding("c.md", 0, "info", "I1", "i")]
    assert grade(findings, strict=False) == findings
    assert [f.level for f in grade(findings, strict=True)] == ["error", "error", "info"]
    assert Summary(3, 1, findings).graded(True) == grade(findings, True)
