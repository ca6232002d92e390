"""Workspace settings the guard obeys, read from HEAD (committed), never the environment.

``.vivary/guard/config.toml``::

    allow_commands = true        # command_exit_zero predicates run (default: off)
    command_timeout_s = 120
    require_signed_notes = true  # review: every new notes commit signed by a base key

``.vivary/agents.toml`` ``[judge] argv`` answers ``judged``/``verified`` predicates;
without one they fail closed.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from strato.guard.errors import GuardError
from tropo.git.revision import read_file
from tropo.git.types import Commit

CONFIG_PATH = ".vivary/guard/config.toml"
AGENTS_PATH = ".vivary/agents.toml"


@dataclass(frozen=True)
class GuardConfig:
    allow_commands: bool = False
    command_timeout_s: float = 120.0
    judge_argv: tuple[str, ...] | None = None
    judge_timeout_s: float = 900.0
    require_signed_notes: bool = False


def _toml(commit: Commit | None, path: str) -> dict[str, object]:
    data = read_file(commit, path)
    if data is None:
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GuardError("invalid_config", f"{path} at HEAD: {exc}") from exc


def _number(value: object, path: str, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise GuardError("invalid_config", f"{path}: {name} must be a positive number")
    return float(value)


def load(commit: Commit | None) -> GuardConfig:
    guard = _toml(commit, CONFIG_PATH)
    allow = guard.get("allow_commands", False)
    if not isinstance(allow, bool):
        raise GuardError("invalid_config", f"{CONFIG_PATH}: allow_commands must be true or false")
    signed = guard.get("require_signed_notes", False)
    if not isinstance(signed, bool):
        raise GuardError(
            "invalid_config", f"{CONFIG_PATH}: require_signed_notes must be true or false"
        )
    judge = _toml(commit, AGENTS_PATH).get("judge")
    argv = None
    judge_timeout = 900.0
    if isinstance(judge, dict):
        raw = judge.get("argv")
        if not isinstance(raw, list) or not raw or not all(isinstance(a, str) for a in raw):
            raise GuardError(
                "invalid_config", f"{AGENTS_PATH}: [judge] argv must be a list of strings"
            )
        argv = tuple(raw)
        judge_timeout = _number(judge.get("timeout_s"), AGENTS_PATH, "timeout_s", 900.0)
    return GuardConfig(
        allow_commands=allow,
        command_timeout_s=_number(
            guard.get("command_timeout_s"), CONFIG_PATH, "command_timeout_s", 120.0
        ),
        judge_argv=argv,
        judge_timeout_s=judge_timeout,
        require_signed_notes=signed,
    )
