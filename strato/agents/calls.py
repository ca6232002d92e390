"""One call of an agent: paced, run by :func:`strato.agents.process.run_process`, its
answer taken from the last JSON object it printed (unwrapped from the Claude CLI's
envelope, with the cost it reports), or the one-line reason it gave none. The caller
may refuse an answer it would not take (a run refuses one past its bounds): the call
has then failed, and its spend was real."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.agents.config import READ_ONLY, AgentSpec
from strato.agents.lastjson import last_json_object
from strato.agents.pacing import pace
from strato.agents.process import PROGRAM_NOT_FOUND, Finished, last_line, run_process

# the reason an agent call fails when its program is not there: final, never retried
AGENT_NOT_FOUND = "agent_not_found"

# why an agent's output may not be taken (``what`` names it in the reason), or None
Admit = Callable[[Any, str], str | None]


@dataclass(frozen=True)
class CallResult:
    output: Any  # the last JSON object printed, or None
    failure: str | None
    usage: dict[str, float]
    duration_ms: int


def call(agent: AgentSpec, prompt: str, cwd: Path, pacing_dir: Path | None = None, *,
         exit_zero: bool = False, sandbox: str = READ_ONLY, admit: Admit | None = None,
         on_start: Callable[[int], None] | None = None) -> CallResult:
    """Run the agent once in `cwd`: paced, bounded in time and in output kept. A working
    agent's last JSON object counts whatever its exit status; with ``exit_zero`` (a
    judge, whose answer grants trust) a non-zero exit is a failure even after printing
    one. `sandbox` fills a `{sandbox}` element of the agent's argv; `on_start` is told
    its process group as soon as it exists (a run registers it, so a cancel can stop it)."""
    if pacing_dir is not None and agent.min_interval_s > 0:
        pace(pacing_dir / f"{agent.name}.lock", agent.min_interval_s)
    done = run_process(agent.argv_for(prompt, sandbox), cwd, agent.timeout_s, on_start=on_start)
    return interpret(agent, done, exit_zero=exit_zero, admit=admit)


def interpret(agent: AgentSpec, done: Finished | str, *, exit_zero: bool = False,
              admit: Admit | None = None) -> CallResult:
    """What one finished agent process gave: its output and usage, or why it failed
    (shared by a call in this process and one a background run recorded on disk). An
    output `admit` refuses is a failure: it never reaches the caller."""
    if isinstance(done, str):
        return CallResult(None, start_failure(agent, done), {}, 0)
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
    if admit is not None and (refused := admit(output, f"agent {agent.name}'s output")) is not None:
        return CallResult(None, refused, usage, ms)
    return CallResult(output, None, usage, ms)


def start_failure(agent: AgentSpec, error: str) -> str:
    """Why the agent did not start, from :func:`run_process`'s start error: a program
    that is not there is `agent_not_found` (final: no retry could change it)."""
    if error.startswith(PROGRAM_NOT_FOUND):
        program = error.removeprefix(PROGRAM_NOT_FOUND).lstrip(": ")
        return (f"{AGENT_NOT_FOUND}: agent {agent.name}: no program {program!r} "
                "(install it or fix its argv in agents.toml)")
    return f"cannot start agent {agent.name}: {error}"


def agent_not_found(failure: object) -> bool:
    """Whether a call's failure is :func:`start_failure`'s missing program."""
    return isinstance(failure, str) and failure.startswith(f"{AGENT_NOT_FOUND}:")


def unwrap(obj: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """The Claude CLI wraps the answer (`{"type": "result", "result": "<text>"}`); take
    the JSON inside and its cost. Anything else is the output itself."""
    if obj.get("type") == "result" and isinstance(obj.get("result"), str):
        return last_json_object(obj["result"]), usage(obj)
    return obj, {}


def usage(obj: dict[str, Any]) -> dict[str, float]:
    """The cost and tokens the Claude CLI's envelope reports, where it reports them (an
    endpoint agent prints the same envelope: :mod:`strato.agents.endpointcall`)."""
    found: dict[str, float] = {}
    cost = obj.get("total_cost_usd")
    if isinstance(cost, int | float) and cost >= 0:
        found["usd"] = float(cost)
    tokens = obj.get("usage", {})
    if isinstance(tokens, dict):  # a total where one is given (an endpoint agent's), else the parts
        total = tokens.get("total_tokens")
        n = total if type(total) is int else sum(
            v for k, v in tokens.items() if k.endswith("tokens") and type(v) is int)
        if n:
            found["tokens"] = n
    return found


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


def judge_runner(spec: AgentSpec, cwd: Path, pacing_dir: Path | None = None,
                 admit: Admit | None = None) -> Any:
    """A judge for `judged` ensures: the judge agent answers `{holds, reason}`."""

    def judge(statement: str, stakes: str, output: Any) -> dict[str, Any]:
        prompt = (
            f"Judge whether this statement holds ({stakes} stakes): {statement}\n"
            f"Output under review: {json.dumps(output)}\n"
            'Respond with ONLY a JSON object {"holds": true|false, "reason": "..."}.'
        )
        res = call(spec, prompt, cwd, pacing_dir, exit_zero=True, admit=admit)
        spent = {"model": spec.model(), "usage": res.usage}  # an endpoint's model, else the judge's name
        if res.failure is not None or not isinstance(res.output, dict):
            return {"holds": False, "reason": res.failure or "judge gave no verdict", **spent}
        verdict = {"holds": res.output.get("holds") is True, "reason": str(res.output.get("reason", ""))}
        return {**verdict, **spent}

    return judge
