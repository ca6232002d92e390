"""What a check says: findings, the summary of a whole workspace, and strict grading.

Kept free of parsing and git so that a warm ``tropo check`` answered from the results
cache imports nothing heavier than this.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

INFO = "info"  # advice: never graded up, never fails a check or a hook


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    level: str
    code: str
    message: str

    def render(self) -> str:
        loc = f"{self.path}:{self.line}" if self.line else self.path
        return f"{loc}: {self.level} {self.code}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "level": self.level,
                "code": self.code, "message": self.message}


def grade(findings: list[Finding], strict: bool) -> list[Finding]:
    """The findings as reported: in strict mode every warning fails, so it is an error."""
    return [replace(f, level="error") if strict and f.level == "warning" else f for f in findings]


def failing(findings: list[Finding]) -> list[Finding]:
    """The findings that fail a check: all but info."""
    return [f for f in findings if f.level != INFO]


@dataclass(frozen=True)
class Summary:
    """What ``check`` of a whole workspace says, small enough to keep per snapshot."""

    checked: int
    clean: int
    findings: list[Finding]

    def graded(self, strict: bool) -> list[Finding]:
        return grade(self.findings, strict)
