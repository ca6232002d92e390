"""Who chose a guard command: a policy's ``command_exit_zero`` predicates run only while
the user has approved that exact policy for this repository (docs/guard.md, "Who
chooses a guard command").

A policy lives in the ledger on ``refs/notes/vivary/guard``, which anyone with push
access can rewrite and every contributor fetches, so its bytes decide nothing by
themselves. The approval is kept by :mod:`strato.agents.trust` in the user's own config
directory, by resource, over the policy's canonical bytes (whose sha256 is the checksum
the ledger records): another policy, even one edge more, is a new question. A person
approves by registering the policy at their own terminal (``strato guard register``) or
with ``strato guard trust RESOURCE`` after reading what it would run (``--show``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from strato.agents import trust
from strato.guard.errors import GuardError
from strato.guard.policy import Policy
from strato.guard.predicates import parse_call
from tropo.untrusted import visible

KIND = "guard-policy"


@dataclass(frozen=True)
class Command:
    """One ``command_exit_zero`` predicate: the edge it guards and the argv it runs."""

    edge: str
    id: str
    argv: tuple[str, ...]

    def shown(self) -> str:
        """The argv as a shell would read it, every hidden character made visible."""
        return visible(shlex.join(self.argv))

    def to_json(self) -> dict[str, object]:
        return {"edge": self.edge, "id": self.id, "argv": list(self.argv)}


def commands(policy: Policy, edge: str | None = None) -> list[Command]:
    """The commands ``policy`` runs, on every edge or on ``edge`` only. A statement that
    does not parse runs nothing (it fails as evidence), so it is not listed."""
    found = []
    for key in sorted(policy.edge_predicates):
        if edge is not None and key != edge:
            continue
        src, dst = key.split("->")
        for pred in policy.predicates(src, dst):
            if not pred.trusted:
                continue
            try:
                call = parse_call(pred.statement)
            except GuardError:
                continue
            if call.name == "command_exit_zero" and isinstance(call.args[0], list):
                found.append(Command(key, pred.id, tuple(call.args[0])))
    return found


def runs(found: list[Command]) -> str:
    """What a list of commands would run, for one line of text."""
    return "; ".join(c.shown() for c in found) if found else "no command"


def status(root: Path, resource_id: str, policy: Policy) -> str:
    """``approved`` (exactly this policy), ``changed`` (another one was) or ``unapproved``."""
    try:
        row = trust.approved(root, KIND, resource_id)
    except trust.TrustError as exc:
        raise GuardError("invalid_config", str(exc)) from None
    if row is None:
        return "unapproved"
    return "approved" if row.sha256 == trust.digest(policy.canonical_bytes) else "changed"


def approve(root: Path, resource_id: str, policy: Policy) -> None:
    """Record that the person approves exactly ``policy`` for ``resource_id`` here."""
    try:
        trust.approve(root, KIND, resource_id, policy.canonical_bytes)
    except trust.TrustError as exc:
        raise GuardError("invalid_config", str(exc)) from None


def approve_registered(root: Path, resource_id: str, policy: Policy) -> list[Command]:
    """Approve a policy its registrant chose (at their terminal, or through an MCP server
    started with ``--allow-commands``) when it runs commands; the commands it may run."""
    found = commands(policy)
    if found:
        approve(root, resource_id, policy)
    return found


def revoke(root: Path, resource_id: str) -> bool:
    try:
        return trust.revoke(root, KIND, resource_id)
    except trust.TrustError as exc:
        raise GuardError("invalid_config", str(exc)) from None


def trust_command(resource_id: str, *flags: str) -> str:
    return shlex.join(["strato", "guard", "trust", *flags, resource_id])


def require(root: Path, resource_id: str, policy: Policy, edge: str) -> None:
    """Refuse (``policy_untrusted``) unless the commands of ``edge`` may run: none, or
    the policy in force is exactly the one the person approved for this resource."""
    found = commands(policy, edge)
    if not found:
        return
    state = status(root, resource_id, policy)
    if state == "approved":
        return
    why = "changed since you approved it" if state == "changed" else "not approved in this repository"
    name = visible(resource_id)
    raise GuardError(
        "policy_untrusted",
        f"the guard policy of {name} ({policy.checksum[:12]}) is {why}; {edge} would run "
        f"{runs(found)}. Review it with `{visible(trust_command(resource_id, '--show'))}`, "
        f"then approve it with `{visible(trust_command(resource_id))}`",
    )
