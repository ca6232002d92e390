"""``tropo query`` and ``tropo find``: ranked search, budgeted context packets, capsules."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from tropo import untrusted
from tropo.check.workspace import Workspace
from tropo.cli.main import guarded, load, main, workspace_options
from tropo.console import PRETTY_UNICODE, fail, print_json
from tropo.review.retrieval import FIND_BUDGET, FIND_K, open_search, packets, query, trim
from tropo.review.search import DEFAULT_SNIPPET, Filters

F = TypeVar("F", bound=Callable[..., Any])


def search_options(func: F) -> F:
    """TEXT and the filters shared by query and find."""
    options = [
        click.argument("words", nargs=-1, metavar="TEXT..."),
        click.option("--type", "types", multiple=True, metavar="TYPE",
                     help="Only this type (repeat: any of them; '' = untyped)."),
        click.option("--path", "paths", multiple=True, metavar="GLOB",
                     help="Only paths matching GLOB (repeat: any of them)."),
        click.option("--edge", "edges", multiple=True, metavar="FIELD[:TARGET]",
                     help="Only nodes with such an outbound edge (repeat: all of them)."),
        click.option("--snippet", type=click.IntRange(min=0), default=DEFAULT_SNIPPET,
                     show_default=True, help="Snippet length in characters (0: none)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _search_text(words: tuple[str, ...], command: str) -> str:
    text = " ".join(words).strip()
    if not text:
        fail(f"{command}: give the text to search for, e.g. tropo {command} \"release workflow\"")
    return text


@main.command("query")
@search_options
@click.option("--k", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many results at most.")
@click.option("--explain", is_flag=True, help="Say why each result matched, with its edges.")
@workspace_options
@guarded
def query_cmd(words: tuple[str, ...], types: tuple[str, ...], paths: tuple[str, ...],
              edges: tuple[str, ...], snippet: int, k: int, explain: bool, root: Path | None,
              staged: bool, rev: str | None, no_cache: bool, as_json: bool) -> None:
    """Rank the graph's nodes for TEXT over id, title, frontmatter, path, body and edges.

    A warm query reads no unchanged file: bodies come from an index in .git/vivary/.

    \b
    Examples:
      tropo query release truth
      tropo query auth --type module --edge related_changes --explain --json
    """
    text = _search_text(words, "query")
    filters = Filters(types, paths, edges)
    ws = load(root, staged, rev, no_cache, eager=False)
    results = query(open_search(ws), text, filters, k=k, snippet_chars=snippet, explain=explain)
    if as_json:
        print_json({"query": text, "k": k, "mode": "text", "filters": filters.as_dict(),
              "results": results}, PRETTY_UNICODE)
        return
    if not results:
        click.echo(untrusted.visible(f"tropo query: no results for {text!r}"))
        return
    click.echo(untrusted.visible(f"tropo query: {len(results)} result(s) for {text!r}"))
    for i, r in enumerate(results, 1):
        _line(i, r)
        if r.get("reasons"):
            click.echo(untrusted.visible(f"    why: {', '.join(r['reasons'])}"))
        if r.get("snippet"):
            click.echo(f"    {untrusted.line(r['snippet'])}")


def _line(i: int, r: dict[str, Any]) -> None:
    kind = f"[{r['type']}] " if r.get("type") else ""
    click.echo(untrusted.visible(f"{i:2}. {kind}{r['id']} - {r['path']}"))


@main.command("find")
@search_options
@click.option("--k", type=click.IntRange(min=0), default=FIND_K, show_default=True,
              help="How many packets at most (0: the default).")
@click.option("--budget", type=click.IntRange(min=0), default=FIND_BUDGET, show_default=True,
              help="Token budget the packets are trimmed to fit (0: the default).")
@click.option("--governed", is_flag=True,
              help="Compile a Task Capsule (vivary.task-capsule/v0) for `strato decide --governed`.")
@click.option("--max-claims", type=click.IntRange(min=0), default=None,
              help="With --governed: the most claims the capsule carries (default 24).")
@workspace_options
@guarded
@click.pass_context
def find_cmd(ctx: click.Context, words: tuple[str, ...], types: tuple[str, ...],
             paths: tuple[str, ...], edges: tuple[str, ...], snippet: int, k: int, budget: int,
             governed: bool, max_claims: int | None, root: Path | None, staged: bool,
             rev: str | None, no_cache: bool, as_json: bool) -> None:
    """The smallest useful context for TEXT: packets {id, type, path, reason, snippet, edges}
    trimmed to a token budget (snippets, then edges, then trailing packets).

    \b
    Examples:
      tropo find "where is release truth owned"
      tropo find auth flow --budget 300 --json
      tropo find --governed "what should the hooks change do next" --max-claims 40
    """
    text = _search_text(words, "find")
    if governed:
        _governed(ctx, text, max_claims, load(root, staged, rev, no_cache))
        return
    if max_claims is not None:
        fail("--max-claims goes with --governed")
    k, budget = k or FIND_K, budget or FIND_BUDGET
    filters = Filters(types, paths, edges)
    ws = load(root, staged, rev, no_cache, eager=False)
    hits = query(open_search(ws), text, filters, k=k, snippet_chars=snippet, explain=True)
    items, tokens = trim(packets(hits), budget)
    if as_json:
        print_json({"query": text, "k": k, "budget": budget, "estimated_tokens": tokens,
              "filters": filters.as_dict(), "results": items}, PRETTY_UNICODE)
        return
    if not items:
        click.echo(untrusted.visible(f"tropo find: no context for {text!r}"))
        return
    click.echo(untrusted.visible(f"tropo find: {len(items)} context result(s) for {text!r} "
                                 f"(~{tokens} token(s), budget {budget})"))
    for i, r in enumerate(items, 1):
        _line(i, r)
        click.echo(untrusted.visible(f"    why: {r['reason']}"))
        if r.get("snippet"):
            click.echo(f"    {untrusted.line(r['snippet'])}")


def _governed(ctx: click.Context, question: str, max_claims: int | None, ws: Workspace) -> None:
    """Print a Task Capsule over the graph (the format strato's decisions read); the
    fingerprint is the snapshot's."""
    from click.core import ParameterSource

    # Only --governed needs the capsule modules: plain find and query skip ~10 ms of imports.
    from tropo.governed.capsule_graph import (
        DEFAULT_MAX_CLAIMS,
        compile_capsule,
        records_from_graph,
        snapshot_fingerprint,
    )

    ranked = ("types", "paths", "edges", "snippet", "k", "budget")
    given = [name for name in ranked if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    if given:
        fail(f"--governed compiles a capsule: --{given[0].rstrip('s')} does not apply")
    fingerprint = snapshot_fingerprint(ws.snapshot.fingerprint())
    try:
        capsule = compile_capsule(
            records_from_graph(ws.graph()), question=question, root=str(ws.root),
            observed_at=datetime.now(UTC),
            max_claims=DEFAULT_MAX_CLAIMS if max_claims is None else max_claims,
            workspace_fingerprint=fingerprint,
        )
    except ValueError as exc:
        fail(str(exc))
    print_json(capsule, PRETTY_UNICODE)
