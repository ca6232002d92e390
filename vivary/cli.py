"""The ``vivary`` command: the front door's task verbs (``vivary.frontdoor``),
``vivary hooks install | uninstall | status | check``, ``vivary trust`` (``vivary.trust``)
and ``vivary logs`` (``vivary.logs``; ``vivary email`` is ``vivary logs email``, as in the
suite)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from hooks import graph
from hooks import install as installer
from hooks.scripts import DEFAULT_HOOKS
from tropo import console
from tropo.git import gitcli
from vivary import frontdoor
from vivary.logs import email_cmd, logs

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
    type=click.Choice(DEFAULT_HOOKS),
    help="Hook to act on (repeatable); default: pre-commit, pre-merge-commit, pre-push and post-commit.",
)


def _repo_root(root: Path) -> Path:
    top = gitcli.toplevel(root) if root.is_dir() else None
    if top is None:
        console.fail(_not_a_work_tree(root), code="not_a_repository")
    return top


def _not_a_work_tree(root: Path, hint: str = "") -> str:
    """Why ``root`` is no work tree: a folder that is missing needs another fix than `git init`."""
    if not root.exists():
        return f"no such folder: {root}; pass --root with an existing folder"
    if not root.is_dir():
        return f"not a folder: {root}; pass --root with a folder"
    return f"not a git work tree: {root}; run `git init` first{hint}"


def _report_actions(as_json: bool, top: Path, names: tuple[str, ...], actions: list[str]) -> None:
    result = dict(zip(names, actions, strict=True))
    console.emit(
        as_json,
        {"ok": True, "root": str(top), "hooks": result},
        [f"vivary: {name}: {action}" for name, action in result.items()],
    )


@click.group("vivary", cls=frontdoor.FrontDoor, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
@click.pass_context
def main(ctx: click.Context) -> None:
    """The Vivary front door: task verbs routed to the commands that own them, and git hooks.

    `--` ends the front door's own options, as in `vivary -- check --help`.

    \b
    Examples:
      vivary check --json
      vivary control --governed --json request.json
      vivary hooks install --root my-workspace
    """
    if ctx.invoked_subcommand is None:  # bare `vivary` shows the verbs, as the suite's does
        click.echo(ctx.get_help())


frontdoor.register(main)


@main.group()
def hooks() -> None:
    """Install, remove and inspect the git hooks that enforce the graph; run their check in CI.

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
        console.fail(str(exc), console.REFUSED)
    _report_actions(as_json, top, names, actions)


@hooks.command("uninstall")
@_root
@_json
@_hook
def uninstall_cmd(root: Path, as_json: bool, hooks: tuple[str, ...]) -> None:
    """Remove our hooks and restore the ones they chained.

    Example: vivary hooks uninstall --root .
    """
    top = _repo_root(root)
    names = hooks or DEFAULT_HOOKS
    _report_actions(as_json, top, names, installer.uninstall(top, names))


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
    console.emit(
        as_json,
        {"ok": ok, "root": str(top), "hooks": [s.as_json() for s in states]},
        [f"vivary: {s.name}: {s.state}{' (chains your previous hook)' if s.chained else ''}"
         + (f": {s.problem}" if s.problem else "") for s in states],
    )
    sys.exit(0 if ok else 1)


@hooks.command("check")
@_root
@_json
@click.option("--base", required=True, metavar="REV",
              help="The accepted revision (the target branch): its hooks.toml mode applies.")
@click.option("--head", "head_rev", default="HEAD", show_default=True, metavar="REV",
              help="The revision to check.")
def check_cmd(root: Path, as_json: bool, base: str, head_rev: str) -> None:
    """The hooks' graph check of HEAD (or --head) against --base, for CI: strict, or only
    new findings when the base's .vivary/hooks.toml says mode = "ratchet". Exit 1 on any.

    Example: vivary hooks check --base refs/remotes/origin/main --head HEAD
    """
    from tropo.check.roots import ConfigError
    from tropo.git.gitcli import RevisionError
    from tropo.git.snapshot import Source, SourceError

    top = _repo_root(root)
    try:
        revs = [graph.named(top, r) for r in (base, head_rev)]
    except RevisionError as exc:
        console.fail(str(exc))
    try:
        verdict = graph.judge(top, Source.at(revs[1]), revs[0])
    except (ConfigError, SourceError, RevisionError, graph.HookConfigError) as exc:
        console.fail(str(exc))
    found = verdict.findings
    new = " new" if verdict.mode == "ratchet" else ""
    console.emit(
        as_json,
        {"ok": not found, "mode": verdict.mode, "base": revs[0], "head": revs[1],
         "findings": [f.as_dict() for f in found]},
        [f.render() for f in found]
        + [f"vivary: {len(found)}{new} finding(s) at {head_rev} ({verdict.mode}, base {base})"],
    )
    sys.exit(1 if found else 0)


main.add_command(logs)
main.add_command(email_cmd, name="email")  # the suite's front door has both spellings


@hooks.command("run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def run_cmd(argv: tuple[str, ...]) -> None:
    """What an installed hook runs when the Python that installed it is gone: the same
    runner, through this installation (hooks/scripts.py). Not for typing by hand.

    Example: vivary hooks run pre-commit .git/hooks/pre-commit
    """
    from hooks import run

    sys.exit(run.main(list(argv)))


@main.command("serve")
@_root
@_json
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: pick a free one; the line printed names it).")
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDR",
              help="Address to bind; anything but 127.0.0.1 prints a warning.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in your browser.")
@click.option("--demo", is_flag=True, help="Replay a recorded sample run: no repository needed.")
@click.option("--export-demo", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Write the demo as static files to DIR (a new or empty folder) and exit.")
def serve_cmd(root: Path, as_json: bool, port: int, host: str, open_browser: bool, demo: bool,
              export_demo: Path | None) -> None:
    """The workbench: a local web page of runs, gates, board, guard, heartbeat and lanes.

    Prints one line, `vivary: serving http://127.0.0.1:PORT/?token=TOKEN` (under --json
    one object with url, port and token); the token is new each start and is needed for
    every read of the repository and every decision.

    \b
    Examples:
      vivary serve --open
      vivary serve --port 8765 --root my-workspace
      vivary serve --demo
      vivary serve --export-demo site/
    """
    from workbench import export, launch

    if export_demo is not None:
        try:
            written = export.export_demo(export_demo)
        except export.ExportRefused as exc:
            console.fail(str(exc), console.REFUSED)
        console.emit(as_json, {"ok": True, "wrote": str(export_demo), "files": len(written)},
              [f"vivary: wrote the demo ({len(written)} files) to {export_demo}; "
               f"open {export_demo / 'index.html'}"])
        return

    def announce(link: str, port: int, token: str) -> None:
        console.emit(as_json, {"ok": True, "url": link, "port": port, "token": token, "demo": demo},
              [f"vivary: serving {link}"])

    try:
        if demo:
            source = launch.demo_source()
        else:
            top = gitcli.toplevel(root) if root.is_dir() else None
            if top is None:
                console.fail(_not_a_work_tree(root, " (or try `vivary serve --demo`)"),
                             code="not_a_repository")
            source = launch.repo_source(top)
        launch.run(source, host, port, open_browser, announce)
    except launch.LaunchError as exc:
        console.fail(str(exc))


@main.command("trust")
@_root
@_json
@click.option("--show", is_flag=True,
              help="Print what each FILE would run, its diff against the bytes last approved and the "
                   "sha256 of the bytes shown (for --sha256); "
                   "exit 0 only when every one is approved and unchanged.")
@click.option("--revoke", is_flag=True, help="Take back the approval of each FILE.")
@click.option("--list", "list_", is_flag=True, help="List this repository's approvals.")
@click.option("--all", "every", is_flag=True, help="With --list: every repository's approvals.")
@click.option("--sha256", "sha256", metavar="HEX",
              help="Approve FILE only if its bytes are exactly those --show printed this sha256 "
                   "for; refused (nothing approved) if it changed since.")
@click.argument("files", nargs=-1, metavar="[FILE]...")
def trust_cmd(root: Path, as_json: bool, show: bool, revoke: bool, list_: bool, every: bool,
              sha256: str | None, files: tuple[str, ...]) -> None:
    """Approve the exact bytes of repository files that start programs (agents, judges).

    A workspace's .vivary/agents.toml runs nothing until you approve its exact content
    here; any change, a checked-out branch's included, asks again. Approvals are kept in
    $XDG_CONFIG_HOME/vivary (never in the repository), per repository path: a moved
    repository is asked again. FILE is relative to the current folder; without FILE,
    the repository's .vivary/agents.toml. --show prints the sha256 of the bytes it
    showed; --sha256 approves those bytes and nothing else, so a file changed between
    your review and your approval is refused. Without --sha256, FILE is approved as it
    is now, and what it runs is printed.

    \b
    Examples:
      vivary trust --show            # review what .vivary/agents.toml would run, the diff, its sha256
      vivary trust --sha256 HEX .vivary/agents.toml   # approve exactly the bytes you reviewed
      vivary trust                   # approve it as it is now (prints what it runs)
      vivary trust --revoke .vivary/agents.toml
      vivary trust --list --all --json
    """
    from strato.agents import trust as store
    from tropo import untrusted
    from vivary import trust as trusting

    if show + revoke + list_ > 1:
        console.fail("--show, --revoke and --list are separate requests: give one")
    if every and not list_:
        console.fail("--all goes with --list")
    if list_ and files:
        console.fail("--list takes no FILE")
    if revoke and not files:
        console.fail("--revoke needs the FILE to take back")
    if sha256 is not None and (show or revoke or list_):
        console.fail("--sha256 goes with approving (no --show, --revoke or --list)")
    if sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        console.fail(f"--sha256 takes the 64 hex digits --show printed, not {sha256!r}")
    found = gitcli.toplevel(root) if root.is_dir() else None
    if found is None:
        console.fail(f"not a git work tree: {root}; run `git init` first", code="not_a_repository")
    top = found.resolve()
    cwd = Path.cwd()
    try:
        if list_:
            rows = trusting.listing(None if every else top)
            console.emit(as_json, {"ok": True, "repository": None if every else str(top), "approvals": rows},
                  [trusting.listed(r, every) for r in rows]
                  or ["vivary: no approvals" + ("" if every else f" for {untrusted.visible(str(top))}")])
        elif revoke:
            gone = trusting.revoke(top, cwd, files)
            console.emit(as_json, {"ok": True, "repository": str(top), "revoked": gone},
                  [f"vivary: revoked {untrusted.visible(name)}: it runs nothing until approved again"
                   for name in gone])
        elif show:
            reviewed = trusting.review(top, cwd, files)
            ok = all(r.state == "approved" for r in reviewed)
            console.emit(as_json, {"ok": ok, "repository": str(top),
                                   "files": [r.to_json() for r in reviewed]},
                         [line for r in reviewed for line in r.lines()])
            sys.exit(0 if ok else 1)
        else:
            done = trusting.approve(top, cwd, files, None if sha256 is None else sha256.lower())
            said = [f"vivary: approved {untrusted.visible(r.name)} (sha256 {store.digest(r.data)[:12]}) "
                    f"for {untrusted.visible(str(top))}" for r in done]
            if sha256 is None:  # approved unseen: show the person what they approved
                said = [line for r, head in zip(done, said, strict=True) for line in r.what(head, "runs")]
            console.emit(as_json, {"ok": True, "repository": str(top),
                                   "approved": [r.to_json() for r in done]}, said)
    except trusting.Refused as exc:
        console.fail(str(exc), exc.exit_code, code=exc.code)
    except store.TrustError as exc:
        console.fail(f"{exc}; nothing was changed", 2, code="trust_store")
