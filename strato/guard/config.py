"""Workspace settings the guard obeys, read from HEAD (committed), never the environment.

``.vivary/guard/config.toml``::

    allow_commands = true        # command_exit_zero predicates may be used (default: off)
    command_timeout_s = 120
    require_signed_notes = true  # review: every new notes commit signed by a base key

``allow_commands`` only ever refuses: HEAD is whatever branch is checked out, so it
cannot grant a command; a policy's commands also need the user's approval of that
policy (:mod:`strato.guard.consent`). The judge of ``judged``/``verified`` predicates
is not a setting here: it comes from the trusted agents loader
(:func:`strato.agents.config.load_config`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from strato.guard.errors import GuardError
from tropo.git.snapshot import read_file
from tropo.git.types import Commit

CONFIG_PATH = ".vivary/guard/config.toml"


@dataclass(frozen=True)
class GuardConfig:
    allow_commands: bool = False
    command_timeout_s: float = 120.0
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
    return GuardConfig(
        allow_commands=allow,
        command_timeout_s=_number(
            guard.get("command_timeout_s"), CONFIG_PATH, "command_timeout_s", 120.0
        ),
        require_signed_notes=signed,
    )
