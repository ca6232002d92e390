"""`strato guard pin | unlock | migrate-store | trust`: keeping the repository's guard
state (the pinned notes tip, a stale writer lock, the store's layout, the approval of a
resource's policy)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from strato.guard import branchnotes, consent, lock, pin, store
from strato.guard.errors import GuardError
from strato.guard.terminal import entered, json_option, pin_followed, refuse, repo_of, root_option
from tropo.console import CANONICAL, print_json
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.untrusted import visible


@click.command("pin")
@root_option
@json_option
@click.option("--check", is_flag=True, help="Write nothing; exit 1 (with the reason) unless the "
              "work tree's pin names the current notes commit.")
@click.option("--from", "source", default="origin", show_default=True, metavar="REMOTE|local",
              help="Pin what REMOTE's copy of the base branch pins (as last fetched), or `local`: "
              "this clone's notes tip, for a branch whose review will judge it.")
@click.option("--base", metavar="BRANCH", help="The base branch --from REMOTE reads (default: "
              "the branch checked out).")
def pin_command(root: Path, as_json: bool, check: bool, source: str, base: str | None) -> None:
    """Write a notes commit to .vivary/guard/notes-tip, to commit with the change.

    Review takes the ledgers of the notes commit the base branch pins as already
    accepted and judges every line the head's pinned notes add. By default this pins
    what the remote's base already pins (`none` if nothing), never entries no review has
    seen; `--from local` pins this clone's notes for a branch under review. Either way
    notes that fail `verify` are refused. Guard writes move a pin the work tree already
    has forward by themselves.

    \b
    Examples:
      strato guard pin && git add .vivary/guard/notes-tip && git commit -m "guard: pin notes"
      strato guard pin --from local && git add .vivary/guard/notes-tip
      strato guard pin --check --json
    """
    try:
        repo = repo_of(root)
        if check:
            state = pin.judge_at(repo, pin.read_worktree(repo), branchnotes.current(repo))
        else:
            if source == pin.LOCAL:  # this branch's own notes, not another's of this clone
                entered(repo)
            tip = pin.write_tip(repo, pin.verified(repo, pin.chosen(repo, source, base)))
    except GuardError as exc:
        refuse(exc)
    except gitrepo.NotARepository as exc:
        refuse(GuardError("not_a_repository", str(exc)))
    if not check:
        if as_json:
            print_json({"path": pin.PIN_PATH, "notes_tip": tip}, CANONICAL)
        else:
            click.echo(f"{pin.PIN_PATH}: {tip or pin.NONE}")
        return
    reason = state.reason()
    if as_json:
        print_json({"path": pin.PIN_PATH, "pinned": state.pinned, "notes_tip": state.tip,
               "state": state.kind, "current": reason is None, "reason": reason}, CANONICAL)
    elif reason is None:
        click.echo(f"{pin.PIN_PATH}: current ({state.tip or pin.NONE})")
    if reason is not None:
        click.echo(f"strato guard: pin not current: {reason}", err=True)
    sys.exit(0 if reason is None else 1)


@click.command("unlock")
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
        answer = lock.unlock(repo_of(root), min_age)
    except GuardError as exc:
        refuse(exc)
    refused = answer["status"] == "refused"
    if as_json:
        print_json(answer, CANONICAL)
    elif not refused:
        click.echo(f"{answer['status']}: {answer['lock']}")
    if refused:
        click.echo(f"strato guard: lock kept: {answer['reason']}", err=True)
    sys.exit(1 if refused else 0)


@click.command("migrate-store")
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
        repo = repo_of(root)
        entered(repo)
        before = gitrefs.read_ref(repo, store.REF)
        answer = store.migrate(repo)
    except GuardError as exc:
        refuse(exc)
    pin_followed(repo, before)
    if as_json:
        print_json(answer, CANONICAL)
    else:
        click.echo(
            f"{answer['status']}: {answer['migrated']} ledger(s) moved to line blobs, "
            f"{answer['states']} running state(s) written"
        )


@click.command("trust")
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
        repo = repo_of(root)
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
        refuse(exc)
    found = consent.commands(pol)
    status = ("revoked" if done else "not_approved") if revoke else state
    if as_json:
        print_json({"resource_id": resource, "checksum": pol.checksum, "status": status,
               "approved": state == "approved", "commands": [c.to_json() for c in found]}, CANONICAL)
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
