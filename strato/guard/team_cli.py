"""`strato guard merge-pins | sync`: two pull requests' guard notes brought together
(:mod:`strato.guard.team`), at a merge and on the shared notes ref."""

from __future__ import annotations

from pathlib import Path

import click

from strato.guard import branchnotes, pin, team
from strato.guard.errors import GuardError
from strato.guard.reappend import reappend
from strato.guard.terminal import entered, json_option, refuse, repo_of, root_option
from tropo.console import CANONICAL, print_json


@click.command("merge-pins")
@root_option
@json_option
@click.option("--resolve", is_flag=True, help="Resolve the pin conflict git left in the index "
              "(a merge made without the driver); then `git add` the pin.")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
def merge_pins_command(root: Path, as_json: bool, resolve: bool, files: tuple[Path, ...]) -> None:
    """Merge two sides' .vivary/guard/notes-tip: the pin of the union of their notes.

    git runs it as the merge driver `vivary-guard-pin` (`vivary hooks install` registers
    it) with the merge base's, our and their pin files; it writes the merged pin over
    ours. Ledgers both sides appended to differently are a conflict: one line and the
    `strato guard reappend` command, nothing written.

    \b
    Examples:
      strato guard merge-pins %O %A %B          # as git calls it
      strato guard merge-pins --resolve && git add .vivary/guard/notes-tip
    """
    try:
        repo = repo_of(root)
        if resolve == bool(files) or (files and len(files) != 3):
            raise GuardError("invalid_usage", "pass --resolve, or the three files BASE OURS THEIRS")
        merged = team.resolve(repo) if resolve else team.driver(repo, files[1], files[2])
    except GuardError as exc:
        refuse(exc)
    if as_json:
        print_json({"path": pin.PIN_PATH, "notes_tip": merged}, CANONICAL)
    elif resolve:
        click.echo(f"{pin.PIN_PATH}: {merged or pin.NONE} (now `git add {pin.PIN_PATH}`)")


@click.command("sync")
@root_option
@json_option
@click.option("--remote", default="origin", show_default=True, help="The remote to sync with.")
def sync_command(root: Path, as_json: bool, remote: str) -> None:
    """Fetch the remote's guard notes, merge them with yours, push with a lease.

    Entries of different ledgers merge by themselves; a push that raced another is
    fetched and merged again, so nobody's entries are lost. Two sides that appended to
    one ledger are a conflict: one line and the command that re-appends.

    \b
    Examples:
      strato guard sync
      strato guard sync --remote upstream --json
    """
    try:
        done = team.sync(repo_of(root), remote)
    except GuardError as exc:
        refuse(exc)
    if as_json:
        print_json(done, CANONICAL)
    else:
        tip = done["notes_tip"] or pin.NONE
        click.echo(f"{remote}: guard notes at {tip[:12]}" + (" (pushed)" if done["pushed"] else ""))


@click.command("reappend")
@root_option
@json_option
@click.argument("resource_id")
@click.option("--onto", required=True, metavar="REV", help="The other side's notes commit (the "
              "conflict message names it).")
def reappend_command(root: Path, as_json: bool, resource_id: str, onto: str) -> None:
    """Re-derive this clone's entries of one ledger after the other side's.

    The one command after a same-ledger conflict: the notes are rebuilt on REV and this
    side's transitions run again; a signed override or migrate stops the run and asks
    for the re-sign (its signature covers the ledger head it was made at). The work
    tree's pin, when the project pins, names the result: commit it.

    \b
    Examples:
      strato guard reappend release:1.0 --onto 3f2a9c1e0b7d4a6f8e5c2b1a0d9e8f7c6b5a4d3e
      strato guard reappend release:1.0 --onto "$THEIRS" --json
    """
    try:
        repo = repo_of(root)
        entered(repo)  # this branch's entries, not another's of this clone
        done = reappend(repo, resource_id, onto)
        if not repo.is_bare and pin.read_worktree(repo) is not None:  # the project pins
            done["pinned"] = pin.write(repo)
            branchnotes.record(repo)
    except GuardError as exc:
        refuse(exc)
    if as_json:
        print_json(done, CANONICAL)
        return
    click.echo(f"{resource_id}: {done['reappended']} entries re-derived onto {done['onto'][:12]}")
    if done["reason"] is not None:
        click.echo(f"strato guard: stopped: {done['reason']}", err=True)
