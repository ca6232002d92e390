"""The per-call settings Stratum's `stratum_agent_run` names (`effort`, `allowedTools`,
`disallowedTools`, `thinking`), and how each becomes words of an agent's command line.

An agent supports a setting only where its trusted config says how to pass it
(`[agents.NAME.settings] effort = {argv = ["--effort", "{value}"], values = [...]}`):
a request that gives a setting the agent has no words for, or a value outside the
listed `values`, is refused before anything runs (Stratum's rule: an unsupported
provider setting is an error, never ignored). The words come from the config; a request
chooses only the `{value}` inside them, never a program or a word of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NAMES = ("effort", "allowedTools", "disallowedTools", "thinking")
VALUE = "{value}"

# Stratum's effort levels per provider, for the built-in templates
CLAUDE_EFFORT = ("low", "medium", "high", "xhigh", "max")
CODEX_EFFORT = ("minimal", "low", "medium", "high", "xhigh")


class SettingsError(ValueError):
    """A settings table that is malformed (config) or a request it refuses."""


@dataclass(frozen=True)
class Setting:
    argv: tuple[str, ...]
    values: tuple[str, ...] | None = None  # None: any value of the setting's type


def parse(agent: str, table: Any) -> dict[str, Setting]:
    """`[agents.NAME.settings]` checked: known names only, each `{argv, values?}`."""
    if not isinstance(table, dict):
        raise SettingsError(f"{agent}: settings must be a table")
    out: dict[str, Setting] = {}
    for name, spec in table.items():
        where = f"{agent}: settings.{name}"
        if name not in NAMES:
            raise SettingsError(f"{where}: unknown setting (known: {', '.join(NAMES)})")
        if not isinstance(spec, dict) or not set(spec) <= {"argv", "values"}:
            raise SettingsError(f"{where} must be a table with argv and optional values")
        argv, values = spec.get("argv"), spec.get("values")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise SettingsError(f"{where}: argv must be a non-empty list of strings")
        if any("{prompt}" in a or "{sandbox}" in a for a in argv):
            raise SettingsError(f"{where}: argv may hold {VALUE}, not {{prompt}} or {{sandbox}}")
        if values is not None and not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
            raise SettingsError(f"{where}: values must be a list of strings")
        out[name] = Setting(tuple(argv), None if values is None else tuple(sorted(set(values))))
    return out


def _text(name: str, value: Any) -> str:
    if name == "thinking":
        if not isinstance(value, bool):
            raise SettingsError("thinking must be true or false")
        return "true" if value else "false"
    if name in ("allowedTools", "disallowedTools"):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SettingsError(f"{name} must be a list of tool names")
        return ",".join(value)
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{name} must be a non-empty string")
    return value


def words(agent: str, known: Mapping[str, Setting], given: Mapping[str, Any]) -> list[str]:
    """The command-line words for the settings a request gives, in :data:`NAMES` order;
    :class:`SettingsError` for one the agent does not take or a value it does not list."""
    out: list[str] = []
    for name in NAMES:
        if name not in given or given[name] is None:
            continue
        setting = known.get(name)
        if setting is None:
            raise SettingsError(
                f"agent {agent!r} does not take {name}: its agents.toml entry has no "
                f"settings.{name} (add one to pass it, or leave {name} out)"
            )
        text = _text(name, given[name])
        if setting.values is not None and text not in setting.values:
            takes = ", ".join(setting.values)
            raise SettingsError(f"agent {agent!r} takes {name} {takes}, not {text!r}")
        out.extend(a.replace(VALUE, text) for a in setting.argv)
    return out


def splice(argv: Sequence[str], prompt_at: int, extra: Sequence[str]) -> list[str]:
    """``argv`` with ``extra`` before the prompt (and before a `--` just before it, which
    ends option parsing)."""
    at = prompt_at - 1 if prompt_at > 0 and argv[prompt_at - 1] == "--" else prompt_at
    return [*argv[:at], *extra, *argv[at:]]
