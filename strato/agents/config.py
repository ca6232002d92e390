"""Which agents may run, and how each is called: argv templates from the user's own
`agents.toml` (in `$XDG_CONFIG_HOME/vivary/`) or from the workspace's
`.vivary/agents.toml` once the user approved its exact content (`vivary trust`,
docs/security.md), with each agent's timeout and pacing interval, and who may decide
gates (`[gates]`). Calling one: :mod:`strato.agents.calls`."""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.agents import endpoint, settings, trust

# `--` ends option parsing in both CLIs, so a prompt that starts with `-` stays a prompt
# `settings`: how `stratum_agent_run`'s per-call settings reach each CLI (strato/agents/settings.py)
BUILTIN: dict[str, dict[str, Any]] = {
    "claude": {
        "argv": ["claude", "-p", "--output-format", "json", "--", "{prompt}"], "timeout_s": 900,
        "settings": {
            "allowedTools": {"argv": ["--allowedTools", "{value}"]},
            "disallowedTools": {"argv": ["--disallowedTools", "{value}"]},
        },
    },
    "codex": {
        "argv": ["codex", "exec", "-s", "{sandbox}", "--", "{prompt}"], "timeout_s": 900,
        "settings": {
            "effort": {
                "argv": ["-c", 'model_reasoning_effort="{value}"'], "values": list(settings.CODEX_EFFORT),
            },
        },
    },
}
# `{sandbox}` in an argv: what the agent may write. Read-only in the workspace; an
# engine fanout item's own worktree is the agent's to write (it is merged back, or not)
READ_ONLY = "read-only"
WORKTREE_WRITE = "workspace-write"


WORKSPACE_FILE = ".vivary/agents.toml"
JUDGE = "[judge]"  # the key of the judge among the programs a file defines


class AgentConfigError(Exception):
    """`.vivary/agents.toml` is malformed (a configuration error: exit 2)."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    argv: tuple[str, ...]
    timeout_s: float = 900
    min_interval_s: float = 0
    endpoint: endpoint.Endpoint | None = None  # a model server, called by our own program in argv
    takes: Mapping[str, settings.Setting] = field(default_factory=dict)  # its per-call settings

    def argv_for(
        self, prompt: str, sandbox: str = READ_ONLY, given: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The command line for one call: `{prompt}` and `{sandbox}` filled in, and the
        words of the per-call settings ``given`` before the prompt (`SettingsError` for
        one this agent does not take)."""
        fill = {"{prompt}": prompt, "{sandbox}": sandbox}
        argv = [fill.get(a, a) for a in self.argv]
        extra = settings.words(self.name, self.takes, given or {})
        return settings.splice(argv, self.argv.index("{prompt}"), extra) if extra else argv

    def model(self) -> str:
        """What telemetry records as the model: an endpoint's configured model, else the
        agent's name (all that is known of a program's model)."""
        return self.endpoint.model if self.endpoint is not None else self.name


@dataclass(frozen=True)
class GatePolicy:
    """Who may decide gates, from `[gates]` in `.vivary/agents.toml` (committed, so an
    agent's own session cannot widen it without a visible change; widened only where the
    user approved it: :func:`committed_gate_policy`). `mcp = "resolve"` lets
    MCP clients see gate tokens and decide (recorded as the agent, with the client's
    name); the default `"view"` shows them waiting gates without tokens. `person` lists
    flows (`name`) or single gates (`flow.step`) that only a person at a terminal may
    decide, whatever `mcp` says."""

    mcp: str = "view"
    person: frozenset[str] = frozenset()

    def needs_person(self, flow: str, step: str) -> bool:
        return flow in self.person or f"{flow}.{step}" in self.person

    def mcp_may_resolve(self, flow: str, step: str) -> bool:
        return self.mcp == "resolve" and not self.needs_person(flow, step)


@dataclass(frozen=True)
class AgentsConfig:
    """The agents that may run (`agents`, `judge`), and the names an unapproved
    workspace file defines (`refused`: the refusal to give when one is asked for)."""

    agents: Mapping[str, AgentSpec]
    judge: AgentSpec | None
    gates: GatePolicy = GatePolicy()
    refused: Mapping[str, str] = field(default_factory=dict)

    @property
    def known(self) -> frozenset[str]:
        """Every agent name a spec may use: refused ones are refused when called."""
        return frozenset(self.agents) | frozenset(n for n in self.refused if n != JUDGE)

    def get(self, name: str) -> AgentSpec:
        if name in self.refused:
            raise trust.Untrusted(self.refused[name], name=WORKSPACE_FILE)
        if name not in self.agents:
            raise AgentConfigError(
                f"no agent {name!r} in .vivary/agents.toml: configure it as [agents.{name}] "
                "argv = [...] in your own agents.toml or an approved .vivary/agents.toml"
            )
        return self.agents[name]

    def trusted_judge(self) -> AgentSpec | None:
        """The judge, or the refusal when only an unapproved workspace file names one."""
        if JUDGE in self.refused:
            raise trust.Untrusted(self.refused[JUDGE], name=WORKSPACE_FILE)
        return self.judge


def _spec(name: str, table: Any) -> AgentSpec:
    if not isinstance(table, dict):
        raise AgentConfigError(f"[agents.{name}] must be a table")
    if "endpoint" in table:
        return _endpoint_spec(name, table)
    argv = table.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise AgentConfigError(f"{name}: argv must be a non-empty list of strings")
    if sum(a.count("{prompt}") for a in argv) != 1 or "{prompt}" not in argv:
        raise AgentConfigError(f"{name}: argv needs exactly one element that is exactly {{prompt}}")
    if sum(a.count("{sandbox}") for a in argv) > argv.count("{sandbox}") or argv.count("{sandbox}") > 1:
        raise AgentConfigError(f"{name}: {{sandbox}} may be one element, exactly {{sandbox}}")
    unknown = set(table) - {"argv", "timeout_s", "min_interval_s", "settings"}
    if unknown:
        raise AgentConfigError(f"{name}: unknown keys {sorted(unknown)}")
    try:
        takes = settings.parse(name, table.get("settings", {}))
    except settings.SettingsError as exc:
        raise AgentConfigError(str(exc)) from None
    if takes and settings.splice(argv, argv.index("{prompt}"), ["?"])[0] == "?":
        raise AgentConfigError(f"{name}: settings need the program before {{prompt}} in argv")
    timeout, interval = _numbers(name, table)
    return AgentSpec(name, tuple(argv), timeout, interval, takes=takes)


def _endpoint_spec(name: str, table: dict[str, Any]) -> AgentSpec:
    """A model server as an agent: its argv is our own call program (bounded a little
    past the call's own deadline, which ends it first with its reason)."""
    if "argv" in table:
        raise AgentConfigError(f"{name}: an agent has argv or endpoint, not both")
    try:
        ep = endpoint.parse(name, table)
    except endpoint.EndpointError as exc:
        raise AgentConfigError(str(exc)) from None
    _, interval = _numbers(name, table)
    return AgentSpec(name, ep.argv(), ep.timeout_s + endpoint.STARTUP_S, interval, ep)


def _numbers(name: str, table: dict[str, Any]) -> tuple[float, float]:
    """`timeout_s` and `min_interval_s`, checked."""
    numbers = {k: table.get(k, d) for k, d in (("timeout_s", 900), ("min_interval_s", 0))}
    for k, v in numbers.items():
        if type(v) not in (int, float) or v < 0 or (k == "timeout_s" and v == 0):
            raise AgentConfigError(f"{name}: {k} must be a positive number")
    return float(numbers["timeout_s"]), float(numbers["min_interval_s"])


def _read_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AgentConfigError(f"{path}: {exc}") from None
    unknown = set(table) - {"agents", "judge", "gates"}
    if unknown:
        raise AgentConfigError(f"{path}: unknown tables {sorted(unknown)}")
    if not isinstance(table.get("agents", {}), dict):
        raise AgentConfigError(f"{path}: [agents] must be a table")
    return table


def _programs(table: dict[str, Any]) -> dict[str, AgentSpec]:
    """The agents (and `judge`) a parsed file defines, each checked."""
    found = {name: _spec(name, t) for name, t in table.get("agents", {}).items()}
    if "judge" in table:
        found[JUDGE] = _spec("judge", table["judge"])
    return found


def programs_in(path: Path, data: bytes) -> dict[str, AgentSpec]:
    """The agents (and the judge, as :data:`JUDGE`) that ``data``, the bytes of an
    agents.toml at ``path``, would run: what a person reviews before approving it."""
    return _programs(_read_toml(path, data))


def _file(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise AgentConfigError(f"{path}: {exc.strerror}") from None


def load_config(root: Path) -> AgentsConfig:
    """The built-in templates, overlaid by the workspace's `.vivary/agents.toml` when the
    user approved its exact bytes, overlaid by the user's own `agents.toml`. An
    unapproved (or changed) workspace file runs nothing: the names it defines are
    refused, each with the line that says how to review and approve it."""
    programs = {name: _spec(name, t) for name, t in BUILTIN.items()}
    refused: dict[str, str] = {}
    gates: dict[str, Any] = {}
    path = root / WORKSPACE_FILE
    if (data := _file(path)) is not None:
        table = _read_toml(path, data)
        _gate_policy(table.get("gates", {}))  # checked whole; the policy in force is HEAD's
        found = _programs(table)
        try:
            trust.require_file(root, WORKSPACE_FILE, data, _runs(found))
            programs.update(found)
        except trust.Untrusted as exc:
            refused = {name: str(exc) for name in found}
    user = trust.config_dir() / "agents.toml"
    if (mine := _file(user)) is not None:
        table = _read_toml(user, mine)
        gates = table.get("gates", {})
        own = _programs(table)
        programs.update(own)
        refused = {n: why for n, why in refused.items() if n not in own}
    judge = programs.pop(JUDGE, None)  # `gates`: the user's own [gates], if any
    return AgentsConfig(programs, judge, _gate_policy(gates), refused)


def _runs(found: Mapping[str, AgentSpec]) -> str:
    """What a file would run, for a refusal: each program's first word."""
    if not found:
        return "no program"
    return ", ".join(sorted({
        f"a model at {spec.endpoint.url}" if spec.endpoint else shlex.quote(spec.argv[0])
        for spec in found.values()
    }))


def committed_gate_policy(root: Path, data: bytes | None, own: GatePolicy) -> GatePolicy:
    """Who may decide gates, from `[gates]` of the agents.toml committed at HEAD (`data`,
    None when none is), never the working tree's, where any agent can write, joined with
    the user's own `[gates]` (`own`). `person` only restricts, so HEAD's holds whoever
    committed it. `mcp = "resolve"` widens, and HEAD is whatever branch is checked out:
    it holds only from the user's own file or a committed file whose exact bytes the
    user approved (`vivary trust`)."""
    head = GatePolicy()
    if data is not None:
        try:
            table = tomllib.loads(data.decode("utf-8")).get("gates", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise AgentConfigError(f"committed .vivary/agents.toml: {exc}") from None
        head = _gate_policy(table)
    granted = own.mcp == "resolve" or (
        head.mcp == "resolve" and data is not None and trust.is_approved(root, "file", WORKSPACE_FILE, data)
    )
    return GatePolicy("resolve" if granted else "view", head.person | own.person)


def _gate_policy(table: Any) -> GatePolicy:
    if not isinstance(table, dict):
        raise AgentConfigError("[gates] must be a table")
    unknown = set(table) - {"mcp", "person"}
    if unknown:
        raise AgentConfigError(f"[gates]: unknown keys {sorted(unknown)}")
    mcp = table.get("mcp", "view")
    if mcp not in ("view", "resolve"):
        raise AgentConfigError('[gates] mcp must be "view" or "resolve"')
    person = table.get("person", [])
    if not isinstance(person, list) or not all(isinstance(p, str) and p for p in person):
        raise AgentConfigError("[gates] person must be a list of flow or flow.step names")
    return GatePolicy(mcp, frozenset(person))
