"""What a spec would start, and whether the person chose it: a spec's shell commands
(`evaluate:` steps, fanout `pre_merge`) run only while its exact text is approved for
this repository (:mod:`strato.agents.trust`, kind ``spec``), and its agents and judge only
when :func:`strato.agents.config.load_config` trusts them. Approval comes from the person:
`strato run FILE` at their own prompt, or an MCP server they started with
`--allow-commands`; never from a run ref fetched from another clone or an MCP request.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from strato.agents import trust
from strato.agents.config import AgentsConfig

HOW = ("run it at your own prompt with `strato run FILE` (that approves it), "
       "or start the MCP server with `strato mcp --allow-commands`")


def spec_bytes(text: str) -> bytes:
    """The bytes a run freezes as its `spec.yaml`: what an approval is of."""
    return text.encode()


def approve(root: Path, name: str, text: str) -> None:
    """The person consents to this exact spec (and the commands in it) running here."""
    trust.approve(root, "spec", name, spec_bytes(text))


def command_refusal(root: Path, text: str, command: str) -> str | None:
    """The one-line refusal to run ``command`` of the spec ``text``, None when approved."""
    if trust.is_approved_digest(root, "spec", trust.digest(spec_bytes(text))):
        return None
    return (f"this spec is not approved for this repository; it would run sh -c {shlex.quote(command)}. "
            f"To allow it, {HOW}")


def refusal(root: Path, text: str, config: AgentsConfig, agents: Sequence[str], judged: bool,
            commands: Sequence[str]) -> str | None:
    """Why the spec ``text`` may not start what it would (its step ``agents``, its judge
    when ``judged``, its ``commands``: :func:`strato.flow.starts.starts`), or None: an
    agent or judge of an unapproved agents file, or a command of a spec that is not
    approved. The caller refuses (``untrusted``) before anything is written."""
    for agent in agents:
        if agent in config.refused:
            return config.refused[agent]
    try:
        if judged:
            config.trusted_judge()
    except trust.Untrusted as exc:
        return str(exc)
    # one approval covers them all: the first names the refusal
    return command_refusal(root, text, commands[0]) if commands else None
