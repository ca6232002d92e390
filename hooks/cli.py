"""The ``vivary`` command: ``vivary hooks install | uninstall | status``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hooks import install as installer
from hooks.scripts import DEFAULT_HOOKS, KNOWN_HOOKS
from tropo import gitcli

_root = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Any directory inside the repository.",
)
_json = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
_hook = click.option(
    "--hook",
    "hooks",
    multiple=True,
    type=click.Choice(KNOWN_HOOKS),
    help="Hook to act on (repeatable); default: pre-commit, pre-push and post-commit.",
)


def _repo_root(root: Path) -> Path:
    top = gitcli.toplevel(root) if root.is_dir() else None
    if top is None:
        click.echo(f"vivary: not a git work tree: {root}; run `git init` first", err=True)
        sys.exit(2)
    return top


def _emit(as_json: bool, payload: dict[str, object], lines: list[str]) -> None:
    click.echo(json.dumps(payload, sort_keys=True) if as_json else "\n".join(lines))


def _emit_actions(as_json: bool, top: Path, names: tuple[str, ...], actions: list[str]) -> None:
    result = dict(zip(names, actions, strict=True))
    _emit(
        as_json,
        {"ok": True, "root": str(top), "hooks": result},
        [f"vivary: {name}: {action}" for name, action in result.items()],
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """Vivary git integration.

    Example: vivary hooks install --root my-workspace
    """


@main.group()
def hooks() -> None:
    """Install, remove and inspect the git hooks that enforce the graph.

    Example: vivary hooks status --json
    """


def _names(hooks: tuple[str, ...]) -> tuple[str, ...]:
    return hooks or DEFAULT_HOOKS


@hooks.command("install")
@_root
@_json
@_hook
def install_cmd(root: Path, as_json: bool, hooks: tuple[str, ...]) -> None:
    """Install the hooks; an existing hook of your own keeps running (chained).

    Example: vivary hooks install --hook pre-commit --hook pre-push --hook post-commit
    """
    top, names = _repo_root(root), _names(hooks)
    try:
        actions = installer.install(top, names)
    except installer.HookConflict as exc:
        click.echo(f"vivary: {exc}", err=True)
        sys.exit(1)
    _emit_actions(as_json, top, names, actions)


@hooks.command("uninstall")
@_root
@_json
@_hook
def uninstall_cmd(root: Path, as_json: bool, hooks: tuple[str, ...]) -> None:
    """Remove our hooks and restore the ones they chained.

    Example: vivary hooks uninstall --root .
    """
    top = _repo_root(root)
    names = hooks or KNOWN_HOOKS
    _emit_actions(as_json, top, names, installer.uninstall(top, names))


@hooks.command("status")
@_root
@_json
@_hook
def status_cmd(root: Path, as_json: bool, hooks: tuple[str, ...]) -> None:
    """Say which hooks are installed, stale, foreign or absent; exit 1 unless all current.

    Example: vivary hooks status --hook pre-commit
    """
    top, names = _repo_root(root), _names(hooks)
    states = installer.status(top, names)
    ok = all(s.state == "installed" for s in states)
    _emit(
        as_json,
        {"ok": ok, "root": str(top), "hooks": [s.as_json() for s in states]},
        [f"vivary: {s.name}: {s.state}{' (chains your previous hook)' if s.chained else ''}" for s in states],
    )
    sys.exit(0 if ok else 1)
