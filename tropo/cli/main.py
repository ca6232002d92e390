"""The ``tropo`` command line: thin wrappers that render what :mod:`tropo.check.workspace` finds.

Exit codes: 0 success, 1 findings or a refused action, 2 usage or configuration error.
"""

from __future__ import annotations

import atexit
import functools
import gc
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from tropo import untrusted
from tropo.check import reports
from tropo.check.findings import failing
from tropo.check.roots import CONFIG_NAME, ConfigError
from tropo.cli.halves import two_cores
from tropo.cli.receipts import ReceiptGroup
from tropo.console import PRETTY_UNICODE, fail, print_json
from tropo.fs.atomic import write_atomic
from tropo.git.gitcli import NotARepository, RevisionError
from tropo.git.snapshot import Source, SourceError

if TYPE_CHECKING:  # the git and YAML machinery loads only when a command needs it
    from tropo.check.document import Doc
    from tropo.check.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


def workspace_options(func: F) -> F:
    """--root, --staged, --rev, --no-cache, --json: shared by every reading command."""
    options = [
        click.option("--root", type=click.Path(file_okay=False, path_type=Path),
                     help="Workspace folder (default: walk up from the current one)."),
        click.option("--staged", is_flag=True, help="Read the index: what a commit would record."),
        click.option("--rev", metavar="REV", help="Read the workspace as commit REV has it."),
        click.option("--no-cache", is_flag=True, help="Ignore the parse cache (same answer, slower)."),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def source_of(staged: bool, rev: str | None) -> Source:
    if staged and rev:
        fail("--staged and --rev exclude each other")
    return Source.index() if staged else Source.at(rev) if rev else Source.worktree()


def spelled(root: Path | None, rev: str) -> str:
    """``rev`` with its name spelled as the one full ref it means (:mod:`tropo.git.revspec`),
    settled before anything is read or cached, for the commands whose fast path then asks
    git by name. A short name several refs answer to exits 2; outside a repository ``rev``
    comes back as given, for the source to say so in its own words."""
    from tropo.git import repo as gitrepo
    from tropo.git import revspec

    repository = gitrepo.discover(root or Path.cwd())
    if repository is None:
        return rev
    try:
        return revspec.spelled(repository, rev)
    except RevisionError as exc:
        fail(str(exc))


def load(root: Path | None, staged: bool, rev: str | None, no_cache: bool,
         *, eager: bool = True) -> Workspace:
    """The workspace to read; ``eager=False`` leaves config errors to ``guarded``."""
    from tropo.check.workspace import open_workspace

    source = source_of(staged, rev)
    try:
        ws = open_workspace(root, source, use_cache=not no_cache)
        if eager:
            ws.schema  # noqa: B018 - surface config errors here, as one line
    except ConfigError as exc:
        fail(f"config error: {exc}", code="config_error")
    except (SourceError, RevisionError, NotARepository) as exc:
        fail(str(exc))
    return ws


@functools.cache
def _freeze_at_exit() -> None:
    atexit.register(gc.freeze)


def collector_paused(func: Callable[P, R]) -> Callable[P, R]:
    """For a command that may read every document: the cyclic collector is paused while
    it runs (each pass would rescan the millions of objects a check builds and keeps),
    and when the process ends they are frozen, so the interpreter's last collection skips
    them; together a fifth of a cold check's CPU at 20k documents. An in-process caller
    gets its collector back as it was, and its own exit is only spared the same scan."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _freeze_at_exit()
        collecting = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if collecting:
                _to_oldest_generation()
                gc.enable()

    return wrapper


def _to_oldest_generation() -> None:
    """Every object the collector tracks moved to its oldest generation (a freeze and an
    unfreeze: two list splices), so the first allocation after the pause does not start
    a young collection that scans all a check built and kept (0.05-0.1 s at 20k
    documents); a later full collection still sees them. Not when the caller froze some:
    an unfreeze would thaw those too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def guarded(func: Callable[P, R]) -> Callable[P, R]:
    """Turn expected errors raised late (while reading) into one line and exit 2."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ConfigError as exc:
            fail(f"config error: {exc}", code="config_error")
        except (SourceError, RevisionError, NotARepository) as exc:
            fail(str(exc))

    return wrapper


def relative_paths(ws: Workspace, paths: tuple[str, ...]) -> list[str] | None:
    """PATHS as workspace-relative selectors; a path outside the root is a usage error."""
    if not paths:
        return None
    out = []
    for p in paths:
        full = Path(p).absolute()
        try:
            rel = full.resolve().relative_to(ws.root) if not full.is_symlink() else \
                full.relative_to(ws.root)
        except ValueError:
            fail(f"{p}: outside the workspace {ws.root}")
        out.append(rel.as_posix())
    return out


# retrieval and review load only when named: a warm `tropo check` does not pay for them
# (their modules also register the commands on `main` as they load)
LAZY = {name: f"tropo.cli.{module}:{name}_cmd" for module, names in (
    ("retrieval", ("query", "find")), ("review", ("diff", "plan", "log", "map", "view")),
    ("packs", ("review", "impact")), ("verify", ("verify",))) for name in names}


def verify_request(argv: Sequence[str]) -> str | None:
    """The request document ``tropo verify`` reads on this command line, if any."""
    words = [token for token in argv if token == "-" or not token.startswith("-")]
    return words[1] if len(words) > 1 and words[0] == "verify" else None


@click.group("tropo", cls=ReceiptGroup, lazy=LAZY, invoke_without_command=True, receipt_tool="tropo",
             receipt_default="check", receipt_request=verify_request,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
@click.pass_context
def main(ctx: click.Context) -> None:
    """The typed knowledge graph of a Vivary workspace.

    \b
    Examples:
      tropo check                 # strict check of the working tree
      tropo check --staged        # what the next commit would record
      tropo graph --json --rev HEAD~3
      tropo blast my-module --depth 2
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(check)


@main.command()
@click.argument("paths", nargs=-1)
@workspace_options
@click.option("--strict", is_flag=True, help="Warnings fail the check (the default).")
@click.option("--lenient", is_flag=True, help="Warnings do not fail the check.")
@click.option("--quiet", is_flag=True, help="Hide warning (W...) and info (I...) codes in text output.")
@click.option("--new-since", metavar="REV",
              help="Report only findings commit REV did not have (same path and code).")
@guarded
@collector_paused
@two_cores
def check(paths: tuple[str, ...], root: Path | None, staged: bool, rev: str | None,
          no_cache: bool, as_json: bool, strict: bool, lenient: bool, quiet: bool,
          new_since: str | None) -> None:
    """Check documents against the schema; refs resolve against the whole workspace.

    \b
    Examples:
      tropo check
      tropo check modules/ --json
      tropo check --staged --quiet
      tropo check --new-since refs/remotes/origin/main  # the ratchet: only what got worse
    """
    since_rev = None if new_since is None else spelled(root, new_since)
    if paths:
        ws = load(root, staged, rev, no_cache)
        result = reports.check(ws, relative_paths(ws, paths), strict=strict, lenient=lenient)
    else:  # the whole workspace: often answered without reading one document
        from tropo.check import incremental

        outcome = incremental.check(root, source_of(staged, rev), use_cache=not no_cache)
        result = reports.graded(outcome, strict=strict, lenient=lenient)
    known = None
    if since_rev is not None:
        from tropo.check import ratchet

        before = ratchet.findings_at(root, since_rev, use_cache=not no_cache)
        fresh = ratchet.new_since(result.findings, before)
        known = len(result.findings) - len(fresh)
        result = reports.CheckResult(result.checked, result.clean, fresh)
    findings, errors = result.findings, result.errors
    if as_json:
        print_json(result.as_dict() if known is None
             else {**result.as_dict(), "new_since": new_since, "known": known}, PRETTY_UNICODE)
    else:
        shown = [f for f in findings if not (quiet and f.code.startswith("I"))]  # info: advice
        for f in sorted(shown, key=lambda f: (f.path, f.line)):
            if not (quiet and f.code.startswith("W")):
                click.echo(untrusted.visible(f.render()))  # it quotes what the document says
        click.echo(f"\ntropo: {result.checked} document(s), "
                   f"{errors} error(s), {result.warnings} warning(s)"
                   + ("" if known is None else f" new since {new_since} ({known} known)"))
        if any(f.code == "W210" for f in findings):
            click.echo("hint: redundant frontmatter detected — run `tropo fix` to remove it")
    sys.exit(1 if errors else 0)


@main.command()
@workspace_options
@guarded
def types(root: Path | None, staged: bool, rev: str | None, no_cache: bool,
          as_json: bool) -> None:
    """List the types of the schema with their folders and fields.

    Example: tropo types --json
    """
    ws = load(root, staged, rev, no_cache)
    cfg = ws.config
    if as_json:
        print_json({"root": str(ws.root), "derive": cfg.derive, "base_optional": cfg.base_optional,
              "types": {n: {"folders": t.folders, "required": t.required,
                            "optional": t.optional} for n, t in cfg.types.items()}}, PRETTY_UNICODE)
        return
    shown = untrusted.visible  # a tropo.toml's (or a pack's) names are its author's
    click.echo(shown(f"Config root: {ws.root}") + "\n")
    click.echo(shown("Derived (never declared): " + ", ".join(cfg.derive)))
    click.echo(shown("Base optional: " + (", ".join(cfg.base_optional) or "-")))
    click.echo()
    for name in sorted(cfg.types):
        t = cfg.types[name]
        click.echo(shown(f"  {name}  (folder: {'/'.join(t.folders) or name})") + "\n"
                   + shown(f"    required: {', '.join(t.required) or '-'}") + "\n"
                   + shown(f"    optional: {', '.join(t.optional) or '-'}"))


@main.command()
@click.argument("paths", nargs=-1)
@workspace_options
@guarded
def stats(paths: tuple[str, ...], root: Path | None, staged: bool, rev: str | None,
          no_cache: bool, as_json: bool) -> None:
    """Count documents by type and by outcome.

    Example: tropo stats changes/ --json
    """
    ws = load(root, staged, rev, no_cache)
    docs = ws.check(relative_paths(ws, paths)).docs
    by_type = Counter(d.type or "untyped" for d in docs)
    clean = sum(1 for d in docs if not failing(d.findings))  # info only advises
    errored = sum(1 for d in docs if any(f.level == "error" for f in d.findings))
    if as_json:
        print_json({"total": len(docs), "by_type": dict(by_type), "clean": clean,
              "with_errors": errored, "warnings_only": len(docs) - clean - errored}, PRETTY_UNICODE)
        return
    click.echo(f"{len(docs)} document(s) in the knowledge layer\n")
    width = max((len(t) for t in by_type), default=4)
    for t, c in by_type.most_common():
        mark = "" if t in ws.config.types or t == "untyped" else "   (not in config)"
        click.echo(untrusted.visible(f"  {t:<{width}}  {c}{mark}"))  # a type is a document's
    click.echo(f"\n  clean: {clean}   with errors: {errored}   "
               f"warnings only: {len(docs) - clean - errored}")


def echo_pieces(pieces: Iterator[str]) -> None:
    """One JSON text on stdout as its pieces come (the first may still raise)."""
    for piece in pieces:
        click.echo(piece, nl=False)
    click.echo()


@main.command()
@workspace_options
@guarded
def graph(root: Path | None, staged: bool, rev: str | None, no_cache: bool,
          as_json: bool) -> None:
    """Print the typed graph: documents as nodes, ref fields as edges.

    Example: tropo graph --rev HEAD --json
    """
    from tropo.check import incremental

    ws = load(root, staged, rev, no_cache)
    g = incremental.graph(ws)  # from the warm check's state when there is one
    if as_json:  # streamed: the bytes print_json(reports.graph(...), PRETTY_UNICODE) wrote
        echo_pieces(reports.graph_text(str(ws.root), g))
        return
    click.echo(f"tropo graph: {len(g.nodes)} node(s), {len(g.edges)} edge(s)"
               + (f", {g.broken} broken" if g.broken else ""))
    for nid in sorted(g.nodes):
        click.echo("\n" + untrusted.visible(f"  {nid}  [{g.nodes[nid].type or 'untyped'}]"))
        for e in g.outbound(nid):  # a ref's target is whatever its author wrote
            click.echo(untrusted.visible(f"    --{e.field}--> {e.dst}") + ("  (broken)" if e.broken else ""))


@main.command()
@click.argument("node_id", metavar="ID")
@click.option("--depth", type=click.IntRange(min=1), help="Stop after this many hops.")
@workspace_options
@guarded
def blast(node_id: str, depth: int | None, root: Path | None, staged: bool, rev: str | None,
          no_cache: bool, as_json: bool) -> None:
    """What a change to ID could touch: everything that transitively refs it.

    \b
    Example:
      tropo blast agent-workspace --depth 2 --json
    """
    from tropo.check import incremental

    ws = load(root, staged, rev, no_cache)
    g = incremental.graph(ws)  # from the warm check's state when there is one
    try:
        if as_json:  # streamed: the bytes print_json(reports.blast(...), PRETTY_UNICODE) wrote
            echo_pieces(reports.blast_text(ws, g, node_id, depth))
            return
        rows = reports.blast_rows(g, node_id, depth)
    except reports.UnknownNode as exc:
        fail(str(exc), 1)
    target = g.nodes[node_id]
    click.echo(f"tropo blast: {untrusted.visible(node_id)} [{target.type or 'untyped'}] — "
               f"{len(rows)} document(s) depend on it"
               + (f" (depth ≤ {depth})" if depth is not None else ""))
    for nid, (dist, via) in rows:
        kind = g.nodes[nid].type if nid in g.nodes else None
        click.echo(untrusted.visible(f"  {nid}  [{kind or 'untyped'}]   (distance {dist}, via {via})"))


@main.command()
@click.argument("paths", nargs=-1)
@workspace_options
@guarded
def signal(paths: tuple[str, ...], root: Path | None, staged: bool, rev: str | None,
           no_cache: bool, as_json: bool) -> None:
    """Show what each document declares beyond what is derived.

    Example: tropo signal changes/ --json
    """
    ws = load(root, staged, rev, no_cache)
    docs = ws.check(relative_paths(ws, paths)).docs
    if as_json:
        print_json([{"path": d.rel, "type": d.type, "signal": d.declared} for d in docs], PRETTY_UNICODE)
        return
    for d in sorted(docs, key=lambda d: d.rel):
        head = untrusted.visible(f"{d.rel}  [{d.type or 'untyped'}]")  # the document's
        if not d.declared:
            click.echo(f"{head}  (no signal — fully derived)")
            continue
        click.echo(head)
        for k, v in d.declared.items():
            click.echo(untrusted.visible(f"    {k}: {v}"))


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--packs", default="", help="Comma-separated packs, e.g. repo-graph,coordination.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def init(directory: Path | None, packs: str, as_json: bool) -> None:
    """Write a starter tropo.toml (never over an existing one).

    \b
    Example:
      tropo init . --packs dev-project,coordination
    """
    from tropo.check.config import BUNDLED_PACKS

    target = (directory or Path.cwd()).absolute()
    dst = target / CONFIG_NAME
    names = [p.strip() for p in packs.split(",") if p.strip()]
    unknown = [p for p in names if p not in BUNDLED_PACKS and
               not (target / ".tropo" / "packs" / f"{p}.toml").is_file()]
    if unknown:
        fail(f"unknown pack {unknown[0]!r} (bundled: {', '.join(BUNDLED_PACKS)})")
    if dst.exists() or dst.is_symlink():
        fail(f"{dst} already exists — not overwriting", 1)
    lines = ["version = 1", ""]
    if names:
        lines += ["packs = [" + ", ".join(f'"{p}"' for p in names) + "]", ""]
    lines += ["[base]", 'derive        = ["id", "title", "created", "updated"]',
              'optional      = { tags = "string-list" }', "allow_untyped = true", ""]
    if not names:
        lines += ["# Declare types below: the table key is the type name,",
                  "# `folder` is the directory name that roots it.",
                  "# [types.note]", '# folder   = "notes"',
                  '# optional = { tags = "string-list" }', ""]
    write_atomic(dst, "\n".join(lines).encode())
    if as_json:
        print_json({"wrote": str(dst), "packs": names}, PRETTY_UNICODE)
    else:
        said = f"tropo: wrote {dst}" + (f"  (packs: {', '.join(names)})" if names else "")
        click.echo(untrusted.visible(said))


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@guarded
def fix(paths: tuple[str, ...], dry_run: bool, root: Path | None, as_json: bool) -> None:
    """Remove frontmatter fields that merely repeat a derived value (W210).

    Only those lines go; every other byte of each file stays as it was.

    Example: tropo fix --dry-run
    """
    ws = load(root, False, None, False)
    changes: list[tuple[str, list[str]]] = []
    refused: list[str] = []
    for d in ws.check(relative_paths(ws, paths)).docs:
        if d.noise:
            if _fix_one(ws, d, dry_run):
                changes.append((d.rel, list(d.noise)))
            else:
                refused.append(d.rel)
    for rel in refused:
        click.echo(untrusted.visible(f"tropo: {rel}: left alone (its frontmatter cannot be edited safely)"),
                   err=True)
    if as_json:
        print_json({"fixed": len(changes), "dry_run": dry_run,
              "changes": [{"path": r, "removed": k} for r, k in sorted(changes)]}, PRETTY_UNICODE)
        return
    verb = "would remove" if dry_run else "removed"
    for rel, keys in sorted(changes):
        click.echo(untrusted.visible(f"{rel}: {verb} derived noise: {', '.join(keys)}"))
    click.echo(f"\ntropo fix: {verb} noise from {len(changes)} file(s)"
               + (" (dry run)" if dry_run else ""))


def _fix_one(ws: Workspace, doc: Doc, dry_run: bool) -> bool:
    from tropo.check import edit

    path = ws.root / doc.rel
    if path.is_symlink():
        return False
    raw = path.read_bytes()
    try:
        new = edit.remove_keys(raw.decode("utf-8"), doc.noise)
    except (UnicodeDecodeError, edit.EditError):
        return False
    if not dry_run:
        write_atomic(path, new.encode("utf-8"), mode=path.stat().st_mode & 0o7777)
    return True

