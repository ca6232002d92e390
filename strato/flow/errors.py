"""Validation findings: `{code, path, message}` with Stratum's codes and paths."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NoReturn

# codes that mean "could not read a spec at all" (the CLI exits 2 for these)
UNREADABLE_CODES = frozenset({"SPEC_UNREADABLE", "YAML_INVALID"})


@dataclass(frozen=True)
class SpecError:
    code: str
    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.code} at {self.path or '<root>'}: {self.message}"


class FirstError(Exception):
    """Raised by the first finding of a validation stage: the first error wins, so the
    stages stop there and the caller reports this one."""

    def __init__(self, error: SpecError) -> None:
        super().__init__(str(error))
        self.error = error


def fail(code: str, path: str, message: str) -> NoReturn:
    raise FirstError(SpecError(code, path, message))


def format_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """`("flows", "main", "steps", 0, "do")` -> `flows.main.steps[0].do`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
