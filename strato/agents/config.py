"""Calling agents: argv templates from the user's own `agents.toml` (in
`$XDG_CONFIG_HOME/vivary/`) or from the workspace's `.vivary/agents.toml` once the user
approved its exact content (`vivary trust`, docs/security.md); one subprocess per call
with a timeout and a process-group kill, output read with a bound, the step result taken
from the last JSON object printed, and a per-agent pacing interval that holds across
processes (a lock under `.git/vivary`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import signal
import subprocess
import threading
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.agents import trust
from strato.agents.lastjson import last_json_object
from strato.runs.engine import bounds

MAX_KEPT = 1 << 20  # keep the last MiB of stdout: the result is at the end
# `--` ends option parsing in both CLIs, so a prompt that starts with `-` stays a prompt
BUILTIN: dict[str, dict[str, Any]] = {
    "claude": {"argv": ["claude", "-p", "--output-format", "json", "--", "{prompt}"], "timeout_s": 900},
    "codex": {"argv": ["codex", "exec", "-s", "{sandbox}", "--", "{prompt}"], "timeout_s": 900},
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

    def argv_for(self, prompt: str, sandbox: str = READ_ONLY) -> list[str]:
        """The command line for one call: `{prompt}` and `{sandbox}` filled in."""
        fill = {"{prompt}": prompt, "{sandbox}": sandbox}
        return [fill.get(a, a) for a in self.argv]


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
            raise AgentConfigError(f"no agent {name!r} in .vivary/agents.toml")
        return self.agents[name]

    def trusted_judge(self) -> AgentSpec | None:
        """The judge, or the refusal when only an unapproved workspace file names one."""
        if JUDGE in self.refused:
            raise trust.Untrusted(self.refused[JUDGE], name=WORKSPACE_FILE)
        return self.judge


def _spec(name: str, table: Any) -> AgentSpec:
    if not isinstance(table, dict):
        raise AgentConfigError(f"[agents.{name}] must be a table")
    argv = table.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise AgentConfigError(f"{name}: argv must be a non-empty list of strings")
    if sum(a.count("{prompt}") for a in argv) != 1 or "{prompt}" not in argv:
        raise AgentConfigError(f"{name}: argv needs exactly one element that is exactly {{prompt}}")
    if sum(a.count("{sandbox}") for a in argv) > argv.count("{sandbox}") or argv.count("{sandbox}") > 1:
        raise AgentConfigError(f"{name}: {{sandbox}} may be one element, exactly {{sandbox}}")
    unknown = set(table) - {"argv", "timeout_s", "min_interval_s"}
    if unknown:
        raise AgentConfigError(f"{name}: unknown keys {sorted(unknown)}")
    numbers = {k: table.get(k, d) for k, d in (("timeout_s", 900), ("min_interval_s", 0))}
    for k, v in numbers.items():
        if type(v) not in (int, float) or v < 0 or (k == "timeout_s" and v == 0):
            raise AgentConfigError(f"{name}: {k} must be a positive number")
    return AgentSpec(name, tuple(argv), float(numbers["timeout_s"]), float(numbers["min_interval_s"]))


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
    return ", ".join(sorted({shlex.quote(spec.argv[0]) for spec in found.values()}))


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


@dataclass(frozen=True)
class CallResult:
    output: Any  # the last JSON object printed, or None
    failure: str | None
    usage: dict[str, float]
    duration_ms: int


@dataclass(frozen=True)
class Finished:
    """A subprocess that ran to the end or was killed at its timeout."""

    returncode: int | None  # None: timed out and killed
    stdout: str  # the last MiB
    stderr_tail: str
    duration_ms: int


def run_process(
    argv: list[str], cwd: Path, timeout_s: float, stdin: bytes | None = None,
    on_start: Callable[[int], None] | None = None,
    on_exit: Callable[[], None] | None = None,
) -> Finished | str:
    """Run argv in its own process group, bounded in time and in output kept; a string
    when it cannot be started. The group is killed when the process ends or times out:
    children it left behind would otherwise hold its pipes open forever. `on_start` is
    told the group's id as soon as it exists (a background run records it to stop it);
    `on_exit` is called once the group is killed, before its pipes are drained (a
    background dispatch stops there what left the group and may hold them open)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return str(exc.strerror or exc)
    if on_start is not None:
        on_start(proc.pid)
    out, err = _Tail(), _Tail(4096)
    readers = [
        threading.Thread(target=t.drain, args=(s,), daemon=True)
        for t, s in ((out, proc.stdout), (err, proc.stderr))
    ]
    if stdin is not None:  # written from a thread: a child that never reads cannot block us
        readers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
    for r in readers:
        r.start()
    code: int | None
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        code = None
    _kill_group(proc)
    if on_exit is not None:
        on_exit()
    for r in readers:
        r.join()
    ms = int((time.monotonic() - started) * 1000)
    return Finished(code, out.text(), err.text().strip(), ms)


def _feed(stream: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, OSError):
        stream.write(data)
        stream.close()


def last_line(text: str) -> str:
    return (text.strip().splitlines()[-1:] or [""])[0][:200]


def call(agent: AgentSpec, prompt: str, cwd: Path, pacing_dir: Path | None = None, *,
         exit_zero: bool = False, sandbox: str = READ_ONLY) -> CallResult:
    """Run the agent once in `cwd`: paced, bounded in time and in output kept. A working
    agent's last JSON object counts whatever its exit status; with ``exit_zero`` (a
    judge, whose answer grants trust) a non-zero exit is a failure even after printing
    one. `sandbox` fills a `{sandbox}` element of the agent's argv."""
    if pacing_dir is not None and agent.min_interval_s > 0:
        pace(pacing_dir / f"{agent.name}.lock", agent.min_interval_s)
    return interpret(agent, run_process(agent.argv_for(prompt, sandbox), cwd, agent.timeout_s),
                     exit_zero=exit_zero)


def interpret(agent: AgentSpec, done: Finished | str, *, exit_zero: bool = False) -> CallResult:
    """What one finished agent process gave: its output and usage, or why it failed
    (shared by a call in this process and one a background run recorded on disk). An
    output past :mod:`strato.runs.engine.bounds` is a failure: it never enters the run."""
    if isinstance(done, str):
        return CallResult(None, f"cannot start agent {agent.name}: {done}", {}, 0)
    ms = done.duration_ms
    if done.returncode is None:
        return CallResult(None, f"agent {agent.name} timed out after {agent.timeout_s:g}s", {}, ms)
    found = last_json_object(done.stdout)
    if done.returncode != 0 and (found is None or exit_zero):
        tail = last_line(done.stderr_tail)
        return CallResult(None, f"agent {agent.name} exited {done.returncode}: {tail}", {}, ms)
    if found is None:
        return CallResult(None, f"agent {agent.name} printed no JSON object", {}, ms)
    output, usage = unwrap(found)
    too_big = bounds.problem({"output": output}, f"agent {agent.name}'s output", bounds.MAX_RESULT_BYTES)
    if too_big is not None:  # the call failed, and its spend was real
        return CallResult(None, str(too_big), usage, ms)
    return CallResult(output, None, usage, ms)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class _Tail:
    """Keeps only the last `limit` bytes of a stream, so megabytes cannot pile up."""

    def __init__(self, limit: int = MAX_KEPT) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.dropped = 0

    def drain(self, stream: Any) -> None:
        while chunk := stream.read(65536):
            self.buf += chunk
            if len(self.buf) > 2 * self.limit:
                self.dropped += len(self.buf) - self.limit
                del self.buf[: len(self.buf) - self.limit]
        stream.close()

    def text(self) -> str:
        return bytes(self.buf[-self.limit :]).decode("utf-8", errors="replace")


def unwrap(obj: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """The Claude CLI wraps the answer (`{"type": "result", "result": "<text>"}`); take
    the JSON inside and its cost. Anything else is the output itself."""
    if obj.get("type") == "result" and isinstance(obj.get("result"), str):
        usage: dict[str, float] = {}
        cost = obj.get("total_cost_usd")
        if isinstance(cost, int | float) and cost >= 0:
            usage["usd"] = float(cost)
        tokens = obj.get("usage", {})
        if isinstance(tokens, dict):
            n = sum(v for k, v in tokens.items() if k.endswith("tokens") and type(v) is int)
            if n:
                usage["tokens"] = n
        return last_json_object(obj["result"]), usage
    return obj, {}


def agent_prompt(entry: dict[str, Any]) -> str:
    """The task text handed to an agent: the rendered `do`, the contract to answer in,
    and the previous failure when this is a retry."""
    parts = [entry["do"]]
    if entry.get("contract"):
        fields = ", ".join(f"{k}: {v}" for k, v in entry["contract"].items())
        parts.append(
            f"Respond with ONLY a minified JSON object matching this contract (field: type): {fields}"
        )
    if entry.get("previousFailure"):
        parts.append(
            f"Your previous attempt failed: {entry['previousFailure']['reason']}\n"
            "Correct the problem and try again."
        )
    return "\n\n".join(parts)


def pace(lock_path: Path, interval: float) -> None:
    """Wait until `interval` seconds have passed since the previous call to this agent
    from any process; the lock file holds the last call's wall-clock start."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        try:
            last = float(fh.read().strip() or 0)
        except ValueError:
            last = 0.0
        wait = last + interval - time.time()
        if wait > 0:
            time.sleep(wait)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{time.time():.6f}")
        fh.flush()


def judge_runner(spec: AgentSpec, cwd: Path, pacing_dir: Path | None = None) -> Any:
    """A judge for `judged` ensures: the judge agent answers `{holds, reason}`."""

    def judge(statement: str, stakes: str, output: Any) -> dict[str, Any]:
        prompt = (
            f"Judge whether this statement holds ({stakes} stakes): {statement}\n"
            f"Output under review: {json.dumps(output)}\n"
            'Respond with ONLY a JSON object {"holds": true|false, "reason": "..."}.'
        )
        res = call(spec, prompt, cwd, pacing_dir, exit_zero=True)
        spent = {"model": spec.name, "usage": res.usage}  # the judge agent, as .vivary/agents.toml names it
        if res.failure is not None or not isinstance(res.output, dict):
            return {"holds": False, "reason": res.failure or "judge gave no verdict", **spent}
        verdict = {"holds": res.output.get("holds") is True, "reason": str(res.output.get("reason", ""))}
        return {**verdict, **spent}

    return judge
