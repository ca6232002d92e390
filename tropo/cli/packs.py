"""``tropo review`` (the review packs) and ``tropo impact`` (what depends on one node):
the published suite's review layer over our graph, reached by ``vivary review`` and
``vivary impact`` too.

Their JSON documents and exit statuses are vivary-ozone 0.3.2's: advisory 0 (1 with
``--strict`` when warnings exist), and 1, as the suite, when no workspace is found or the
node is unknown. The graph comes from the graph cache (one read for a tree seen before).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tropo import untrusted
from tropo.check.graph import Graph
from tropo.check.roots import ConfigError
from tropo.check.workspace import Workspace, open_workspace
from tropo.cli.main import main, source_of, workspace_options
from tropo.console import PRETTY, REFUSED, fail, print_json
from tropo.git.gitcli import NotARepository, RevisionError
from tropo.git.snapshot import LINK, SourceError
from tropo.review import budget, packs


def _workspace(root: Path | None, staged: bool, rev: str | None, no_cache: bool) -> Workspace:
    source = source_of(staged, rev)
    try:
        ws = open_workspace(root, source, use_cache=not no_cache)
        ws.schema  # noqa: B018 - surface config errors here, as one line
    except ConfigError as exc:
        fail(str(exc), REFUSED)  # a workspace that cannot be reviewed: exit 1, as the suite's review layer
    except (SourceError, RevisionError, NotARepository) as exc:
        fail(str(exc))
    return ws


def _files(ws: Workspace) -> budget.Files:
    def read(rel: str) -> bytes | None:
        try:
            return ws.read_bytes(rel)
        except (KeyError, OSError):
            return None

    return budget.Files({rel: e.mode != LINK for rel, e in ws.entries.items()}, read)


def _graph(ws: Workspace) -> Graph:
    from tropo.review.graph_cache import graph_of  # opens the repository: only when needed

    try:
        return graph_of(ws)
    except ConfigError as exc:
        fail(str(exc), REFUSED)  # a workspace that cannot be reviewed: exit 1, as the suite's review layer


@main.command("review")
@click.option("--pack", type=click.Choice(packs.CHOICES), default="structure", show_default=True,
              help="Rule pack to run; `all` runs every pack.")
@click.option("--strict", is_flag=True, help="A gate: exit 1 when any warning is found.")
@workspace_options
def review_cmd(pack: str, strict: bool, root: Path | None, staged: bool, rev: str | None,
               no_cache: bool, as_json: bool) -> None:
    """Review the whole graph with a rule pack: gaps no single document shows (a change
    nothing verifies, an orphan, a draft nobody reviewed, a bloated routing file).
    Advisory (exit 0) unless --strict.

    \b
    Packs: structure (default), context-budget, editorial, all.
    Examples:
      tropo review
      tropo review --pack all --json
      tropo review --staged --strict        # a pre-commit gate
      tropo review --rev main --pack editorial
    """
    ws = _workspace(root, staged, rev, no_cache)
    document = packs.review(_graph(ws), _files(ws), packs.selected(pack))
    if as_json:
        print_json(document, PRETTY)
    else:
        for line in packs.render(document):
            click.echo(untrusted.visible(line))  # a message quotes what the node says
        click.echo(f"\ntropo: reviewed {document['reviewed']} node(s), "
                   f"{document['warnings']} warning(s), {document['notes']} note(s)")
    sys.exit(1 if strict and document["warnings"] else 0)


@main.command("impact")
@click.argument("node_id", metavar="ID", required=False)
@workspace_options
def impact_cmd(node_id: str | None, root: Path | None, staged: bool, rev: str | None,
               no_cache: bool, as_json: bool) -> None:
    """What depends on ID (its blast radius): every node that transitively refs it,
    nearest first, with the field it is reached through.

    \b
    Examples:
      tropo impact codebase
      tropo impact codebase --json --rev HEAD~1
    """
    if not node_id:
        fail("impact requires a node id (tropo impact ID)", REFUSED)
    ws = _workspace(root, staged, rev, no_cache)
    g = _graph(ws)
    if node_id not in g.nodes:
        fail(f"no node with id {node_id!r} (run `tropo review` or `tropo graph`)", REFUSED)
    rows = sorted(g.blast(node_id).items(), key=lambda kv: (kv[1][0], kv[0]))
    if as_json:
        print_json({"target": node_id, "impacted": len(rows),
                    "nodes": [{"id": nid, "distance": dist, "via": via, "type": g.nodes[nid].type}
                              for nid, (dist, via) in rows]}, PRETTY)
    elif not rows:
        click.echo(untrusted.visible(f"tropo: nothing depends on '{node_id}' (no inbound edges)"))
    else:
        click.echo(untrusted.visible(f"tropo: impact of '{node_id}' — {len(rows)} node(s) depend on it"))
        for nid, (dist, via) in rows:
            click.echo(untrusted.visible(f"  {dist}  {nid}  ({g.nodes[nid].type or 'untyped'}, via {via})"))
    sys.exit(0)
