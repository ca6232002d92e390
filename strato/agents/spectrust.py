"""What a spec would start, and whether the person chose it: a spec's shell commands
(`evaluate:` steps, fanout `pre_merge`) run only while its exact text is approved for
this repository (:mod:`strato.agents.trust`, kind ``spec``), and its agents and judge only
when :func:`strato.agents.config.load_config` trusts them. Approval comes from the person:
`strato run FILE` at their own prompt, or an MCP server they started with
`--allow-commands`; never from a run ref fetched from another clone or an MCP request.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

from strato.agents import trust
from strato.agents.config import AgentsConfig
from strato.flow.spec import DoStep, EvaluateStep, FanoutStep, JudgedEnsure, SetStep, Spec
from strato.runs.engine.state import Refused

HOW = ("run it at your own prompt with `strato run FILE` (that approves it), "
       "or start the MCP server with `strato mcp --allow-commands`")


def spec_bytes(text: str) -> bytes:
    """The bytes a run freezes as its `spec.yaml`: what an approval is of."""
    return text.encode()


def commands(spec: Spec) -> list[str]:
    """Every shell command the spec may run, in document order."""
    found: list[str] = []
    for flow in spec.flow_map.values():
        for step in flow.typed_steps:
            if isinstance(step, EvaluateStep):
                found.append(step.evaluate.command)
            elif isinstance(step, FanoutStep):
                found += step.fanout.pre_merge or []
    return found


def _ensured_steps(spec: Spec) -> Iterator[tuple[str | None, list[object]]]:
    """(agent, ensures) of every step and fanout stage: who runs it, what checks it."""
    for flow in spec.flow_map.values():
        for step in flow.typed_steps:
            if isinstance(step, DoStep):
                yield step.agent, list(step.ensure or [])
            elif isinstance(step, SetStep):
                yield None, list(step.ensure or [])
            elif isinstance(step, FanoutStep):
                for stage in step.fanout.steps:
                    yield stage.agent, list(stage.ensure or [])


def approve(root: Path, name: str, text: str) -> None:
    """The person consents to this exact spec (and the commands in it) running here."""
    trust.approve(root, "spec", name, spec_bytes(text))


def command_refusal(root: Path, text: str, command: str) -> str | None:
    """The one-line refusal to run ``command`` of the spec ``text``, None when approved."""
    if trust.is_approved_digest(root, "spec", trust.digest(spec_bytes(text))):
        return None
    return (f"this spec is not approved for this repository; it would run sh -c {shlex.quote(command)}. "
            f"To allow it, {HOW}")


def preflight(root: Path, spec: Spec, text: str, config: AgentsConfig) -> None:
    """Refuse (``Refused("untrusted")``) a spec that would start a program the person
    did not choose: an agent or judge of an unapproved agents file, or a command of a
    spec that is not approved. Called before anything is written."""
    judged = False
    for agent, ensures in _ensured_steps(spec):
        judged = judged or any(isinstance(e, JudgedEnsure) for e in ensures)
        if agent is not None and agent in config.refused:
            raise Refused("untrusted", config.refused[agent])
    try:
        if judged:
            config.trusted_judge()
    except trust.Untrusted as exc:
        raise Refused("untrusted", str(exc)) from None
    found = commands(spec)  # one approval covers them all: the first names the refusal
    if found and (refusal := command_refusal(root, text, found[0])) is not None:
        raise Refused("untrusted", refusal)
