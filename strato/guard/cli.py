"""``strato guard``: the guard operations, shaped like Stratum's ``stratum guard``.

Ledger operations read one JSON object on stdin and print one JSON object; exit 0
applied, 1 refused or error, 2 usage. ``verify`` and ``review`` print reports.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from strato.agents.process import run_attached
from strato.guard import authz, consent, engine, lock, pin, store
from strato.guard.errors import GuardError
from strato.guard.review import error_markdown
from strato.guard.review import review as run_review
from strato.guard.verify import verify_repository
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Repository
from tropo.untrusted import visible

USAGE_ERRORS = frozenset(
    {"invalid_request", "invalid_config", "not_a_repository", "invalid_revision", "invalid_usage"}
)
MAX_STDIN = 4 * 1024 * 1024

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Any directory inside the workspace's git repository.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable keys).")


def _emit(obj: dict[str, Any]) -> None:
    click.echo(json.dumps(obj, sort_keys=True, separators=(",", ":")))


def _fail(exc: GuardError, markdown: bool = False) -> NoReturn:
    if markdown:
        click.echo(error_markdown(exc.error_type, exc.message), nl=False)
    else:
        _emit(exc.envelope())
    click.echo(f"strato guard: {exc.error_type}: {visible(exc.message)}", err=True)
    sys.exit(2 if exc.error_type in USAGE_ERRORS else 1)


def _repo(root: Path) -> Repository:
    try:
        return gitrepo.require(root)
    except gitrepo.NotARepository as exc:
        raise GuardError("not_a_repository", f"{exc}; pass --root inside the workspace") from exc


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


def _followed(repo: Repository, before: str | None) -> None:
    """When the command moved the notes ref, move the work tree's pin along and say so."""
    if gitrefs.read_ref(repo, store.REF) != before and (said := pin.follow(repo)) is not None:
        click.echo(f"strato guard: {said}", err=True)


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
            repo = _repo(root)
            before = gitrefs.read_ref(repo, store.REF)
            result = operation(repo, req)
            if (after := _AFTER.get(name)) is not None:
                after(repo, req)
        except GuardError as exc:
            _fail(exc)
        _emit(result)
        _followed(repo, before)
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
        payload, namespace = engine.authorization_request(_repo(root), _request())
    except GuardError as exc:
        _fail(exc)
    target = str(out) if out else "payload.json"
    command = authz.sign_command(namespace, target)
    if out is not None:
        out.write_bytes(payload.encode("utf-8"))
    if as_json:
        _emit({"payload": payload, "namespace": namespace, "command": command})
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
        payload, namespace = engine.authorization_request(_repo(root), _request())
    except GuardError as exc:
        _fail(exc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "payload.json"
        path.write_bytes(payload.encode("utf-8"))
        code, err = run_attached(
            ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, str(path)], quiet=True
        )
        sig = Path(str(path) + ".sig")
        if code != 0 or not sig.exists():
            _fail(GuardError("sign_failed", f"ssh-keygen -Y sign failed: {err.strip()}"))
        signature = sig.read_text()
    if as_json:
        _emit({"payload": payload, "namespace": namespace, "signature": signature})
    else:
        click.echo(signature, nl=False)


since_option = click.option(
    "--since",
    "since",
    multiple=True,
    metavar="REV",
    help="An earlier notes tip (e.g. the remote's) the ledger must still descend from.",
)


def _revs(repo: Repository, revs: tuple[str, ...]) -> list[str]:
    try:
        return [str(gitrepo.resolve_commit(repo, r).id) for r in revs]
    except gitrepo.RevisionError as exc:
        raise GuardError("invalid_revision", str(exc)) from exc


@guard.command("verify")
@root_option
@json_option
@since_option
def verify_command(root: Path, as_json: bool, since: tuple[str, ...]) -> None:
    """Re-check every ledger chain, step and signature; exit 1 on the first break.

    \b
    Example:
      strato guard verify --since refs/remotes/origin/notes/vivary/guard
    """
    try:
        repo = _repo(root)
        report = verify_repository(repo, since=_revs(repo, since))
    except GuardError as exc:
        _fail(exc)
    if as_json:
        _emit(report.to_json())
    elif report.ok:
        click.echo(f"guard ledgers ok: {report.resources} resources, {report.entries} entries")
    else:
        click.echo(f"guard ledger broken: {visible(report.breaks[0])}", err=True)
        for brk in report.breaks[1:]:
            click.echo(f"  also: {visible(brk)}", err=True)
    sys.exit(0 if report.ok else 1)


@guard.command("review")
@root_option
@json_option
@since_option
@click.option(
    "--base",
    required=True,
    metavar="REV",
    help="The target branch: its allowed signers are trusted.",
)
@click.option("--head", default="HEAD", show_default=True, metavar="REV", help="The change under review.")
@click.option(
    "--base-notes",
    metavar="REV",
    help="The notes commit the base's ledgers are at, from a ref the CI trusts "
    "(default: the one the base pins in .vivary/guard/notes-tip).",
)
@click.option("--markdown", is_flag=True, help="Print Markdown for a pull-request comment.")
def review_command(
    root: Path,
    as_json: bool,
    since: tuple[str, ...],
    base: str,
    head: str,
    base_notes: str | None,
    markdown: bool,
) -> None:
    """List ledger entries added since BASE with signer and status; exit 1 on any problem.

    New entries are the lines past the ledgers of the notes commit BASE pins; each is
    judged by BASE's allowed signers at the time of review.

    \b
    Example:
      git fetch origin '+refs/notes/vivary/guard:refs/notes/vivary/guard'
      strato guard review --base refs/remotes/origin/main --markdown > comment.md
    """
    try:
        repo = _repo(root)
        report = run_review(repo, base, head, since=_revs(repo, since), base_notes=base_notes)
    except gitrepo.RevisionError as exc:
        _fail(GuardError("invalid_revision", str(exc)), markdown and not as_json)
    except GuardError as exc:
        _fail(exc, markdown and not as_json)
    if as_json:
        _emit(report.to_json())
    elif markdown:
        click.echo(report.markdown(), nl=False)
    else:
        for row in report.rows:
            click.echo(
                visible(
                    f"{row.status:<6} {row.resource_id} line {row.line} {row.kind} "
                    f"{row.from_state}->{row.to_state} signer={row.signer or '-'}"
                )
            )
        click.echo(f"guard review {'ok' if report.ok else 'FAILED'}: {len(report.rows)} new entries")
        for brk in report.verify.breaks:
            click.echo(f"break: {visible(brk)}", err=True)
    sys.exit(0 if report.ok else 1)


@guard.command("pin")
@root_option
@json_option
@click.option("--check", is_flag=True, help="Write nothing; exit 1 (with the reason) unless the "
              "work tree's pin names the current notes commit.")
def pin_command(root: Path, as_json: bool, check: bool) -> None:
    """Write the current notes commit to .vivary/guard/notes-tip, to commit with the change.

    Review takes the ledgers of the notes commit the base branch pins as already
    accepted, so the head's pin must name the notes it adds. Guard writes move a pin the
    work tree already has forward by themselves, and the pre-commit hook refuses a
    staged pin the notes have moved past; this writes one by hand (and starts pinning).

    \b
    Examples:
      strato guard pin && git add .vivary/guard/notes-tip && git commit -m "guard: pin notes"
      strato guard pin --check --json
    """
    try:
        repo = _repo(root)
        if check:
            state = pin.judge(repo, pin.read_worktree(repo))
        else:
            tip = pin.write(repo)
    except GuardError as exc:
        _fail(exc)
    except gitrepo.NotARepository as exc:
        _fail(GuardError("not_a_repository", str(exc)))
    if not check:
        if as_json:
            _emit({"path": pin.PIN_PATH, "notes_tip": tip})
        else:
            click.echo(f"{pin.PIN_PATH}: {tip or pin.NONE}")
        return
    reason = state.reason()
    if as_json:
        _emit({"path": pin.PIN_PATH, "pinned": state.pinned, "notes_tip": state.tip,
               "state": state.kind, "current": reason is None, "reason": reason})
    elif reason is None:
        click.echo(f"{pin.PIN_PATH}: current ({state.tip or pin.NONE})")
    if reason is not None:
        click.echo(f"strato guard: pin not current: {reason}", err=True)
    sys.exit(0 if reason is None else 1)


@guard.command("unlock")
@root_option
@json_option
@click.option(
    "--min-age",
    type=click.FloatRange(min=0),
    default=lock.DEFAULT_MIN_AGE_S,
    show_default=True,
    help="Only a lock at least this many seconds old counts as left by a dead writer.",
)
def unlock_command(root: Path, as_json: bool, min_age: float) -> None:
    """Remove a notes-ref lock a killed writer left, if it is stale and every ledger verifies.

    Exit 0 when removed (or there was none), 1 when refused. Every decision is logged
    to .git/vivary/guard/unlock.log.

    \b
    Example:
      strato guard unlock --json
    """
    try:
        answer = lock.unlock(_repo(root), min_age)
    except GuardError as exc:
        _fail(exc)
    refused = answer["status"] == "refused"
    if as_json:
        _emit(answer)
    elif not refused:
        click.echo(f"{answer['status']}: {answer['lock']}")
    if refused:
        click.echo(f"strato guard: lock kept: {answer['reason']}", err=True)
    sys.exit(1 if refused else 0)


@guard.command("migrate-store")
@root_option
@json_option
def migrate_store_command(root: Path, as_json: bool) -> None:
    """Move every ledger kept in the older layout (the whole ledger as one note) to one
    blob per line, and write the running state (state/<anchor>) of every ledger that
    lacks it, in one notes commit; the bytes, and so every digest, stay the same.

    Idempotent: with nothing left to do it writes nothing. Safe beside other writers
    (compare-and-swap on the notes ref). Push the notes ref afterwards as usual.

    \b
    Example:
      strato guard migrate-store --json
      git push origin refs/notes/vivary/guard
    """
    try:
        repo = _repo(root)
        before = gitrefs.read_ref(repo, store.REF)
        answer = store.migrate(repo)
    except GuardError as exc:
        _fail(exc)
    _followed(repo, before)
    if as_json:
        _emit(answer)
    else:
        click.echo(
            f"{answer['status']}: {answer['migrated']} ledger(s) moved to line blobs, "
            f"{answer['states']} running state(s) written"
        )


@guard.command("trust")
@root_option
@json_option
@click.argument("resource")
@click.option("--show", is_flag=True, help="Write nothing; print the commands the policy would run "
              "and whether you approved it.")
@click.option("--revoke", is_flag=True, help="Take your approval of the resource's policy back.")
@click.option("--checksum", metavar="HEX", help="Approve only if the policy in force is still the one "
              "--show printed (its checksum): a fetch in between cannot swap it.")
def trust_command(root: Path, as_json: bool, resource: str, show: bool, revoke: bool,
                  checksum: str | None) -> None:
    """Approve the guard policy in force for RESOURCE, so its command predicates may run.

    A policy arrives with the notes ref, which anyone who can push may rewrite; its
    commands run only once you approved that exact policy (by its checksum) in this
    repository. Approvals live in your config directory, never in the repository.
    Exit 0 done, 1 refused, 2 usage.

    \b
    Examples:
      strato guard trust --show release:1.0     # what it would run, approved or not
      strato guard trust release:1.0            # approve exactly this policy
      strato guard trust --checksum HEX release:1.0   # only the policy --show showed
      strato guard trust --revoke release:1.0 --json
    """
    try:
        if show and revoke:
            raise GuardError("invalid_usage", "--show and --revoke exclude each other")
        if checksum is not None and (show or revoke or not re.fullmatch("[0-9a-f]{64}", checksum)):
            raise GuardError("invalid_usage", "--checksum takes the 64 hex digits --show printed, "
                             "and goes with approving alone")
        repo = _repo(root)
        pol = store.require(store.load(repo, resource)).policy
        where = gitrepo.workdir(repo)
        if checksum is not None and checksum != pol.checksum:
            raise GuardError("policy_changed", f"the policy of {visible(resource)} is "
                             f"{pol.checksum[:12]} now, not {checksum[:12]} as shown: "
                             "nothing approved; review it again")
        if revoke:
            done = consent.revoke(where, resource)
        elif not show:
            consent.approve(where, resource, pol)
        state = consent.status(where, resource, pol)
    except GuardError as exc:
        _fail(exc)
    found = consent.commands(pol)
    status = ("revoked" if done else "not_approved") if revoke else state
    if as_json:
        _emit({"resource_id": resource, "checksum": pol.checksum, "status": status,
               "approved": state == "approved", "commands": [c.to_json() for c in found]})
        return
    name = visible(resource)
    if revoke:
        click.echo(f"{name}: {'approval revoked' if done else 'nothing was approved'}")
        return
    click.echo(f"{name}: policy {pol.checksum} {state.replace('unapproved', 'not approved')}")
    for cmd in found:
        click.echo(f"  {visible(cmd.edge)} {visible(cmd.id) or '-'}: {cmd.shown()}")
    if not found:
        click.echo("  runs no command")
