"""The user's own `$XDG_CONFIG_HOME/vivary/evals.toml`: the one place an eval's commands
(`[scorers.NAME]`) and the promotion gate (`[promotion]`) come from. Never the task set,
the fixture or the repository: those name a scorer, the person chose what it runs."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from strato.agents import trust

FILE = "evals.toml"


class EvalConfigError(Exception):
    """The user's evals.toml is malformed (a configuration error: exit 2)."""


def path() -> Path:
    return trust.config_dir() / FILE


def table() -> dict[str, Any]:
    """The file's tables (empty when there is no file)."""
    where = path()
    if not where.is_file():
        return {}
    try:
        found = tomllib.loads(where.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise EvalConfigError(f"{where}: {exc}") from None
    if unknown := set(found) - {"scorers", "promotion"}:
        raise EvalConfigError(f"{where}: unknown tables {sorted(unknown)}")
    return found


def number(row: dict[str, Any], key: str, default: float, where: str, *, positive: bool = True) -> float:
    """A number of a table, checked: a bool or text is an error, so is <= 0 when `positive`."""
    value = row.get(key, default)
    if type(value) not in (int, float) or (positive and value <= 0) or value < 0:
        raise EvalConfigError(f"{path()}: {where} {key} must be a {'positive ' if positive else ''}number")
    return float(value)
