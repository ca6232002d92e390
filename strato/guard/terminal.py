"""What `strato guard`'s commands share at a terminal: their options, the repository a
--root names, and a refusal in Stratum's error envelope."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from strato.guard import branchnotes, pin, store
from strato.guard.errors import GuardError
from strato.guard.review import error_markdown
from tropo.console import CANONICAL, REFUSED, USAGE, print_json, stop
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Repository

USAGE_ERRORS = frozenset(
    {"invalid_request", "invalid_config", "not_a_repository", "invalid_revision", "invalid_usage"}
)


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Any directory inside the workspace's git repository.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable keys).")


def refuse(exc: GuardError, markdown: bool = False) -> NoReturn:
    """Stratum's error envelope `{status: "error", error_type, message}` on stdout, with or
    without --json (a ledger operation always answers in JSON), or its Markdown for a
    review read by people; then the one line and the exit code."""
    if markdown:
        click.echo(error_markdown(exc.error_type, exc.message), nl=False)
    else:
        print_json(exc.envelope(), CANONICAL)
    stop(f"{exc.error_type}: {exc.message}", USAGE if exc.error_type in USAGE_ERRORS else REFUSED,
         prog="strato guard")


def entered(repo: Repository) -> None:
    """Before a guard write: the notes ref on this branch's own chain, said when it moved
    (:func:`strato.guard.branchnotes.enter`)."""
    if (said := branchnotes.enter(repo)) is not None:
        click.echo(f"strato guard: {said}", err=True)


def pin_followed(repo: Repository, before: str | None) -> None:
    """When the command moved the notes ref, move the work tree's pin along and say so,
    and record where this branch's chain now is."""
    if gitrefs.read_ref(repo, store.REF) == before:
        return
    if (said := pin.follow(repo)) is not None:
        click.echo(f"strato guard: {said}", err=True)
    branchnotes.record(repo)


def repo_of(root: Path) -> Repository:
    try:
        return gitrepo.require(root)
    except gitrepo.NotARepository as exc:
        raise GuardError("not_a_repository", f"{exc}; pass --root inside the workspace") from exc
