"""``strato guard``: the guard operations, shaped like Stratum's ``stratum guard``.

Ledger operations read one JSON object on stdin and print one JSON object; exit 0
applied, 1 refused or error, 2 usage. ``verify`` and ``review`` print reports.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from strato.agents.process import run_attached
from strato.guard import authz, consent, engine, store
from strato.guard.checks_cli import descriptors_command, review_command, verify_command
from strato.guard.errors import GuardError
from strato.guard.team_cli import merge_pins_command, reappend_command, sync_command
from strato.guard.terminal import entered, json_option, pin_followed, refuse, repo_of, root_option
from strato.guard.upkeep_cli import migrate_store_command, pin_command, trust_command, unlock_command
from tropo.console import CANONICAL, print_json
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Repository
from tropo.untrusted import visible

MAX_STDIN = 4 * 1024 * 1024


def _request() -> dict[str, Any]:
    if sys.stdin.isatty():
        raise GuardError("invalid_request", "pipe one JSON object on stdin (see --help)")
    text = sys.stdin.read(MAX_STDIN + 1)
    if len(text) > MAX_STDIN:
        raise GuardError("invalid_request", "the request on stdin is larger than 4 MiB")
    try:
        req = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also numbers of over 4,300 digits
        raise GuardError("invalid_request", f"stdin is not one JSON object: {exc}") from exc
    if not isinstance(req, dict):
        raise GuardError("invalid_request", "stdin must hold one JSON object")
    return req


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def guard() -> None:
    """Guarded state machines with ledgers in git notes and signed overrides.

    \b
    Example:
      echo '{"resource_id":"feat:1","graph":{"draft":["done"]},"initial":"draft",
             "terminal":["done"]}' | strato guard register
    """


def _approve_registered(repo: Repository, req: dict[str, Any]) -> None:
    """Registering a policy at one's own terminal approves it, as `strato run FILE` does
    a spec: the person named these bytes."""
    rid = req["resource_id"]
    found = consent.approve_registered(gitrepo.workdir(repo), rid, engine.requested_policy(req))
    if found:
        click.echo(
            f"strato guard: approved the policy of {visible(rid)} in this repository; "
            f"it may run {consent.runs(found)}",
            err=True,
        )


_AFTER: dict[str, Callable[[Repository, dict[str, Any]], None]] = {"register": _approve_registered}


def _stdin_command(
    name: str,
    operation: Callable[[Repository, dict[str, Any]], dict[str, Any]],
    example: str,
) -> None:
    @guard.command(name, help=f"{(operation.__doc__ or '').strip()}\n\n\b\nExample:\n  {example}")
    @root_option
    @json_option
    @click.option(
        "--signature",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Read `authorization` from this file (ssh-keygen's .sig) instead of the JSON.",
    )
    def command(root: Path, as_json: bool, signature: Path | None) -> None:
        # Output is always one JSON object; --json is accepted for uniformity.
        try:
            req = _request()
            if signature is not None:
                req.setdefault("authorization", signature.read_text(errors="replace"))
            repo = repo_of(root)
            entered(repo)
            before = gitrefs.read_ref(repo, store.REF)
            result = operation(repo, req)
            if (after := _AFTER.get(name)) is not None:
                after(repo, req)
        except GuardError as exc:
            refuse(exc)
        print_json(result, CANONICAL)
        pin_followed(repo, before)
        sys.exit(1 if result.get("status") == "refused" else 0)


_RID = '"resource_id":"feat:1"'
_EXAMPLES = {
    "register": f"""echo '{{{_RID},"graph":{{"draft":["done"]}},"initial":"draft",
        "terminal":["done"],"edge_predicates":{{"draft->done":
        [{{"id":"ok","statement":"server_file_exists(\\"OK\\")"}}]}}}}' | strato guard register""",
    "transition": f"""echo '{{{_RID},"from_state":"draft","to_state":"done"}}'
        | strato guard transition""",
    "override": f"""echo '{{{_RID},"from_state":"draft","to_state":"done",
        "rationale":"hotfix"}}' | strato guard override --signature payload.json.sig""",
    "migrate": f"""echo '{{{_RID},"new_graph":{{"draft":["done"]}},"new_terminal":["done"],
        "rationale":"reset"}}' | strato guard migrate --signature payload.json.sig""",
    "upgrade": f"""echo '{{{_RID},"new_graph":{{"draft":["done","parked"]}},
        "new_terminal":["done"],"rationale":"add parking"}}' | strato guard upgrade""",
    "apply-upgrade": f"""echo '{{{_RID},"descriptor_id":"allow-parking"}}'
        | strato guard apply-upgrade""",
    "history": f"""echo '{{{_RID}}}' | strato guard history""",
}


for _name, _op in engine.OPERATIONS.items():
    _stdin_command(_name, _op, _EXAMPLES[_name])


@guard.command()
@root_option
@json_option
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the payload, byte for byte, to this file (for ssh-keygen).",
)
def authorize(root: Path, as_json: bool, out: Path | None) -> None:
    """Print the exact payload to sign for an override or migrate, and how to sign it.

    The payload binds the ledger head, so it is valid for one step only.

    \b
    Example:
      echo '{"kind":"override","resource_id":"feat:1","from_state":"draft",
             "to_state":"done","rationale":"hotfix"}' | strato guard authorize --out payload.json
      ssh-keygen -Y sign -f ~/.ssh/id_ed25519 -n stratum-guard-override payload.json
    """
    try:
        payload, namespace = engine.authorization_request(repo_of(root), _request())
    except GuardError as exc:
        refuse(exc)
    target = str(out) if out else "payload.json"
    command = authz.sign_command(namespace, target)
    if out is not None:
        out.write_bytes(payload.encode("utf-8"))
    if as_json:
        print_json({"payload": payload, "namespace": namespace, "command": command}, CANONICAL)
        return
    click.echo(payload)
    click.echo(f"namespace: {namespace}", err=True)
    click.echo(f"sign the payload (no trailing newline) with: {command}", err=True)


@guard.command()
@root_option
@json_option
@click.option(
    "--key",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Your private SSH key (ssh-keygen asks for its passphrase).",
)
def sign(root: Path, as_json: bool, key: Path) -> None:
    """Build the payload like `authorize` and sign it with ssh-keygen; print the signature.

    \b
    Example:
      echo '{"kind":"override","resource_id":"feat:1","from_state":"draft",
             "to_state":"done","rationale":"hotfix"}' | strato guard sign --key ~/.ssh/id_ed25519
    """
    try:
        payload, namespace = engine.authorization_request(repo_of(root), _request())
    except GuardError as exc:
        refuse(exc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "payload.json"
        path.write_bytes(payload.encode("utf-8"))
        code, err = run_attached(
            ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, str(path)], quiet=True
        )
        sig = Path(str(path) + ".sig")
        if code != 0 or not sig.exists():
            refuse(GuardError("sign_failed", f"ssh-keygen -Y sign failed: {err.strip()}"))
        signature = sig.read_text()
    if as_json:
        print_json({"payload": payload, "namespace": namespace, "signature": signature}, CANONICAL)
    else:
        click.echo(signature, nl=False)


guard.add_command(verify_command)
guard.add_command(review_command)
guard.add_command(pin_command)
guard.add_command(unlock_command)
guard.add_command(migrate_store_command)
guard.add_command(trust_command)
guard.add_command(descriptors_command)
guard.add_command(merge_pins_command)
guard.add_command(sync_command)
guard.add_command(reappend_command)
