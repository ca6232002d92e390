"""`strato guard verify | review | descriptors`: whether every ledger entry was allowed, for
the whole history or for the entries a change adds, and what the installed upgrade
descriptors are and whether they verify."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from strato.guard import signedops
from strato.guard.errors import GuardError
from strato.guard.review import review as run_review
from strato.guard.terminal import json_option, refuse, repo_of, root_option
from strato.guard.verify import verify_repository
from tropo.console import CANONICAL, REFUSED, print_json
from tropo.git import repo as gitrepo
from tropo.git.types import Repository
from tropo.untrusted import visible

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


@click.command("verify")
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
        repo = repo_of(root)
        report = verify_repository(repo, since=_revs(repo, since))
    except GuardError as exc:
        refuse(exc)
    if as_json:
        print_json(report.to_json(), CANONICAL)
    elif report.ok:
        click.echo(f"guard ledgers ok: {report.resources} resources, {report.entries} entries")
    else:
        click.echo(f"guard ledger broken: {visible(report.breaks[0])}", err=True)
        for brk in report.breaks[1:]:
            click.echo(f"  also: {visible(brk)}", err=True)
    sys.exit(0 if report.ok else 1)


@click.command("review")
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
        repo = repo_of(root)
        report = run_review(repo, base, head, since=_revs(repo, since), base_notes=base_notes)
    except gitrepo.RevisionError as exc:
        refuse(GuardError("invalid_revision", str(exc)), markdown and not as_json)
    except GuardError as exc:
        refuse(exc, markdown and not as_json)
    if as_json:
        print_json(report.to_json(), CANONICAL)
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


@click.command("descriptors")
@root_option
@json_option
def descriptors_command(root: Path, as_json: bool) -> None:
    """List the signed upgrade descriptors HEAD installs (.vivary/guard/upgrades.json),
    the allowed signers and whether the file's signature verifies. Read-only: applying
    one is the MCP tool's alone. Exit 0 when the file verifies or there is none, 1 when
    it is present and does not verify.

    \b
    Example:
      strato guard descriptors --json
    """
    try:
        view = signedops.descriptors_view(repo_of(root))
    except GuardError as exc:
        refuse(exc)
    if as_json:
        print_json(view, CANONICAL)
    else:
        for d in view["descriptors"]:
            click.echo(visible(f"{d['id']}  from {d['from_checksum'][:12]}  {d['rationale']}"))
        for s in view["signers"]:
            click.echo(visible(f"signer {', '.join(s['principals'])}  {s['fingerprint']}"))
        if view["signers_error"]:
            click.echo(visible(f"signers: {view['signers_error']}"))
        state = "none at HEAD" if not view["installed"] else \
            "verified" if view["verified"] else f"not verified: {view['reason']}"
        click.echo(visible(f"{view['path']}: {state}"))
    if view["installed"] and not view["verified"]:
        sys.exit(REFUSED)
