"""The ``exo`` command: board, conflicts, roles, claim and release.

Text and ``--json`` output of board, conflicts and roles match vivary-exo 0.3 on the
same workspace (conflicts exits 0 unless ``--strict``, as there). Exit codes: 0 done,
1 refused (claim held or lost, unknown item, unmerged work), 2 usage or configuration.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from exo import board, conflicts, remotes, roles
from exo.assignee import HandleError, normalize_handle
from exo.claims import ClaimError, ClaimRefused, default_remote
from exo.claims import claim as make_claim
from exo.claims import holders as claim_holders
from exo.claims import release as drop_claim
from exo.workspace import WorkspaceError, load_at_head, load_worktree, open_repo
from tropo import untrusted
from tropo.cli.receipts import ReceiptGroup
from tropo.console import PRETTY, REFUSED, emit, fail, print_json
from tropo.git.remote import RemoteError

F = TypeVar("F", bound=Callable[..., Any])


def _refused(item_id: str, verb: str, refused: ClaimRefused) -> NoReturn:
    """A refused claim or release under ``--json``: its own document is the JSON error."""
    print_json({"id": item_id, verb: False, "holder": refused.holder, "error": str(refused)}, PRETTY)
    click.echo(f"exo: {untrusted.visible(refused)}", err=True)
    sys.exit(REFUSED)


def _root_option(func: F) -> F:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Workspace root (default: found from the current directory).",
    )(func)


def _json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(
        func
    )


def _remote_option(func: F) -> F:
    return click.option(
        "--remote",
        default=None,
        metavar="NAME",
        help="Also push/delete the claim branch on this remote (default: git config "
        "exo.remote).",
    )(func)


@click.group("exo", cls=ReceiptGroup, receipt_tool="exo", receipt_default="conflicts",
             lazy={"control": "exo.control.cli:control_command"},  # governed: loaded when named
             invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git", prog_name="exo")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Coordinate many agents over the workspace graph. With no command: conflicts.

    \b
    Example:
      exo claim local-ci-baseline --agent connie --remote origin
      exo board
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(conflicts_command)


@main.command("conflicts")
@_root_option
@_json_option
@click.option("--strict", is_flag=True, help="Exit 1 when any conflict is found.")
def conflicts_command(root: Path | None, as_json: bool, strict: bool) -> None:
    """Active work items whose outbound edges share a target.

    \b
    Example:
      exo conflicts --root . --json
    """
    view = _load(lambda: load_worktree(root))
    active = conflicts.active_ids(_load(lambda: view.items))
    found = conflicts.find_conflicts(active, view.edges)
    emit(as_json, conflicts.as_json(active, found), conflicts.as_text(active, found), PRETTY, authored=True)
    sys.exit(1 if strict and found else 0)


@main.command("board")
@click.option("--fetch", "refresh", is_flag=True, help="Fetch the remote's claims first.")
@_root_option
@_json_option
def board_command(refresh: bool, root: Path | None, as_json: bool) -> None:
    """Every work item with its status and holder (claim branches, then the tree).

    Other clones' claims are read from the remote-tracking branches: the board says when
    each remote was last fetched (`remotes` under --json), and --fetch fetches first.

    \b
    Example:
      exo board --fetch --json
    """
    view = _load(lambda: load_worktree(root))
    items = _load(lambda: view.items)
    paths = {item.id: view.prefix + item.path for item in items}
    try:
        if refresh:
            remotes.refresh(view.repo)
        rows = board.rows(items, claim_holders(view.repo, paths))
    except RemoteError as exc:
        fail(str(exc), REFUSED)
    except ClaimError as exc:
        fail(str(exc))
    fresh = remotes.freshness(view.repo)
    document = board.as_json(rows) | ({"remotes": fresh} if fresh else {})
    emit(as_json, document, [*board.as_text(rows), *remotes.as_text(fresh)], PRETTY, authored=True)


@main.command("roles")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              hidden=True)  # accepted as vivary-exo accepts it; roles read no workspace
@_json_option
def roles_command(root: Path | None, as_json: bool) -> None:
    """The seven bounded role contracts workers are given.

    \b
    Example:
      exo roles
    """
    emit(as_json, roles.as_json(), roles.as_text(), PRETTY, authored=True)


@main.command("claim")
@click.argument("item_id", metavar="ID")
@click.option("--agent", required=True, metavar="HANDLE", help="Who claims: [@]letters, "
              "digits, '.', '_', '-'.")
@_remote_option
@click.option("--worktree", type=click.Path(path_type=Path), default=None,
              help="Also check the claim branch out in a new worktree at PATH.")
@_root_option
@_json_option
def claim_command(item_id: str, agent: str, remote: str | None, worktree: Path | None,
                  root: Path | None, as_json: bool) -> None:
    """Claim work item ID by creating branch claim/ID (refused if it exists).

    The branch's commit sets `assignee` on the item, made from HEAD without touching
    the working tree or the index. With a remote, the first push to create the
    branch there wins; a loser's local branch is removed and the winner named.

    \b
    Example:
      exo claim local-ci-baseline --agent @connie --remote origin
    """
    try:
        handle = normalize_handle(agent)
    except HandleError as exc:
        fail(str(exc))
    view = _load(lambda: load_at_head(root))
    try:
        target = view.claim_target(item_id)
        result = make_claim(view.repo, item_id, target, handle,
                            remote or default_remote(view.repo), worktree)
    except ClaimRefused as refused:
        if as_json:
            _refused(item_id, "claimed", refused)
        fail(str(refused), REFUSED)
    except (ClaimError, WorkspaceError) as exc:
        fail(str(exc))
    document = {"claimed": True, **vars(result)}
    verb = "claimed" if result.remote is None else f"claimed (pushed to {result.remote})"
    if result.resumed:
        verb = f"claimed (published the interrupted claim to {result.remote})"
    note = remotes.local_claim_note(view.repo) if result.remote is None else None
    if note is not None:
        document["note"] = note
        click.echo(f"exo: {note}", err=True)
    emit(as_json, document, [f"exo: {verb} {item_id} for @{handle} on {result.branch}"], PRETTY,
         authored=True)


@main.command("release")
@click.argument("item_id", metavar="ID")
@click.option("--agent", required=True, metavar="HANDLE",
              help="Who releases; refused unless it is the holder (or --force).")
@click.option("--force", is_flag=True,
              help="Release another agent's claim, or one with unmerged work.")
@click.option("--reason", default=None, metavar="TEXT",
              help="Why, with --force; recorded on refs/exo/released/ID.")
@_remote_option
@_root_option
@_json_option
def release_command(item_id: str, agent: str, force: bool, reason: str | None,
                    remote: str | None, root: Path | None, as_json: bool) -> None:
    """Delete your claim on ID (branch claim/ID, and on the remote).

    Only the holder (the agent the claim commit names) releases it. `--force --reason`
    releases anyway and records who, why and the dropped tip as a commit on
    refs/exo/released/ID. A remote branch is deleted only if it is still the commit
    read (a lease), atomically with that record.

    \b
    Examples:
      exo release local-ci-baseline --agent connie --remote origin
      exo release local-ci-baseline --agent lead --force --reason "connie left the team"
    """
    try:
        handle = normalize_handle(agent)
    except HandleError as exc:
        fail(str(exc))
    repo = _load(lambda: open_repo(root))
    try:
        result = drop_claim(repo, item_id, handle, force, remote or default_remote(repo),
                            reason)
    except ClaimRefused as refused:
        if as_json:
            _refused(item_id, "released", refused)
        fail(str(refused), REFUSED)
    except ClaimError as exc:
        fail(str(exc))
    emit(as_json, {"released": True, **vars(result)},
          [f"exo: released {item_id} ({result.branch})"
           + (f"; recorded as {result.record[:12]} on refs/exo/released/{item_id}"
              if result.record else "")], PRETTY, authored=True)


V = TypeVar("V")


def _load(loader: Callable[[], V]) -> V:
    try:
        return loader()
    except WorkspaceError as exc:
        fail(str(exc))
