"""``tropo diff``, ``plan``, ``log`` and ``view`` (what a change does to the graph, drawn)
and ``map`` (what a folder holds before it has a graph)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import click

from tropo import untrusted
from tropo.check.graph import Graph
from tropo.check.workspace import Workspace, open_workspace
from tropo.cli.main import guarded, load, main, spelled, workspace_options
from tropo.console import PRETTY_UNICODE, fail, print_json
from tropo.fs.atomic import write_atomic
from tropo.fs.private import PlantedLink
from tropo.git import gitcli
from tropo.git.snapshot import Source
from tropo.review import fsmap, graphdiff, statediff, view

_ROOT = click.option("--root", type=click.Path(file_okay=False, path_type=Path),
                     help="Workspace folder (default: walk up from the current one).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
_NO_CACHE = click.option("--no-cache", is_flag=True, help="Ignore the caches (same answer, slower).")


def _shape(root: Path | None, source: Source, no_cache: bool) -> graphdiff.Shape:
    from tropo.review.graph_cache import shape_of  # opens the repository: only when needed

    return shape_of(open_workspace(root, source, use_cache=not no_cache))


def _page_data(ws: Workspace, title: str, g: Graph, keep: set[str] | None = None,
               ranks: dict[str, int] | None = None) -> dict[str, Any]:
    """The page's data, its layout kept in the repository's private folder (refused, and
    nothing written, when a link is planted in the way)."""
    from tropo.review.layout_cache import LayoutCache

    repository = ws.snapshot.repo()
    layouts = None if repository is None or not ws.use_cache else LayoutCache(repository)
    try:
        return view.page_data(title, g, keep, ranks, layouts)
    except PlantedLink as exc:
        fail(str(exc), 1, code=exc.code)


def _graph(ws: Workspace) -> Graph:
    from tropo.review.graph_cache import graph_of

    return graph_of(ws)


def _sides(root: Path | None, revs: str | None, staged: bool) -> tuple[Source, Source, str, str]:
    if staged:
        if revs:
            fail("diff: give either A..B or --staged, not both")
        return Source.at("HEAD"), Source.index(), "HEAD", "index"
    if not revs:
        fail("diff: give the revisions to compare, e.g. tropo diff main..HEAD (or --staged)")
    base, sep, head = revs.partition("..")
    if head.startswith("."):
        fail(f"diff: {revs!r}: use A..B (three dots are not supported)")
    if not base:
        fail(f"diff: {revs!r} names no base revision")
    old = Source.at(spelled(root, base))  # git is then asked for the one ref it means
    if not sep:
        return old, Source.worktree(), base, "working tree"
    return old, Source.at(spelled(root, head or "HEAD")), base, head or "HEAD"


def _label(source: Source, name: str) -> str:
    return name if source.kind != "rev" else source.rev or name


@main.command("diff")
@click.argument("revs", required=False, metavar="A..B")
@click.option("--staged", is_flag=True, help="Compare HEAD with the index (what the commit adds).")
@click.option("--markdown", is_flag=True, help="A summary shaped for a pull-request comment.")
@click.option("--fail-on", type=click.Choice(["broken"]), help="Exit 1 when the change breaks refs.")
@click.option("--blast-limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Dependents listed per changed node (all are counted).")
@_ROOT
@_NO_CACHE
@_JSON
@guarded
def diff_cmd(revs: str | None, staged: bool, markdown: bool, fail_on: str | None,
             blast_limit: int, root: Path | None, no_cache: bool, as_json: bool) -> None:
    """How the graph changed from A to B: nodes added, removed, retyped, moved and edited;
    edges added and removed; refs newly broken; and every changed node's blast radius.
    A alone compares A with the working tree.

    \b
    Examples:
      tropo diff main..HEAD --markdown
      tropo diff --staged --fail-on broken
      tropo diff v1.0..v1.1 --json
    """
    old_src, new_src, base, head = _sides(root, revs, staged)
    touched = None if no_cache else statediff.shapes(root, old_src, new_src)
    old, new = touched or (_shape(root, old_src, no_cache), _shape(root, new_src, no_cache))
    d = graphdiff.delta(old, new, fields=True)
    broken_added = [e for e in d["edges_added"] if e["broken"]]
    changed = graphdiff.changed_ids(d)
    report = {"base": base, "head": head, "delta": d, "broken_added": broken_added,
              "blast": graphdiff.blast_of(changed, old, new, limit=blast_limit),
              "counts": {**{k: len(v) for k, v in d.items()},
                         "broken_added": len(broken_added), "changed": len(changed)}}
    breaks = bool(d["edges_newly_broken"] or broken_added)
    if as_json:
        print_json(report, PRETTY_UNICODE)
    elif markdown:
        click.echo(render_markdown(report, old, new))
    else:
        click.echo(render_text(report))
    sys.exit(1 if fail_on == "broken" and breaks else 0)


def _edge(e: dict[str, Any]) -> str:
    return f"{e['from']} --{e['field']}--> {e['to']}"


def delta_lines(d: dict[str, Any]) -> list[str]:
    """One line per change in a delta, for people; its ids, paths and values are what the
    documents' authors chose, so every hidden character is shown (:mod:`tropo.untrusted`)."""
    lines = [f"  + {n}" for n in d["nodes_added"]]
    lines += [f"  - {n}" for n in d["nodes_removed"]]
    lines += [f"  ~ {x['id']}  type {x['from'] or 'untyped'} -> {x['to'] or 'untyped'}"
              for x in d["nodes_retyped"]]
    lines += [f"  ~ {x['id']}  moved {x['from']} -> {x['to']}" for x in d.get("nodes_moved", [])]
    lines += [f"  ~ {x['id']}  {x['field']}: {x['from']!r} -> {x['to']!r}"
              for x in d.get("fields_changed", [])]
    lines += [f"  edge + {_edge(e)}" + ("  (broken)" if e["broken"] else "") for e in d["edges_added"]]
    lines += [f"  edge - {_edge(e)}" for e in d["edges_removed"]]
    lines += [f"  BROKEN {_edge(e)}  (target gone)" for e in d["edges_newly_broken"]]
    return [untrusted.visible(line) for line in lines]


def render_text(r: dict[str, Any]) -> str:
    lines = [f"tropo diff {r['base']}..{r['head']}", *delta_lines(r["delta"])]
    reach = {n: v["count"] for n, v in r["blast"].items() if v["count"]}
    if reach:
        lines.append("  blast radius: " + ", ".join(f"{n} ({c})" for n, c in sorted(reach.items())))
    c = r["counts"]
    lines.append(f"tropo diff: {c['changed']} node(s) changed, "
                 f"{c['edges_newly_broken'] + c['broken_added']} ref(s) newly broken")
    return "\n".join(lines)


_MD_LIST = 20  # items listed per section before "and N more"


def _md_items(items: list[str]) -> str:
    more = len(items) - _MD_LIST
    return "\n".join(f"- {i}" for i in items[:_MD_LIST]) + (f"\n- …and {more} more" if more > 0 else "")


def render_markdown(r: dict[str, Any], old: graphdiff.Shape, new: graphdiff.Shape) -> str:
    """A pull-request comment: a count table, then the details that need a reviewer."""
    d, c = r["delta"], r["counts"]
    code = untrusted.code_span  # every id, path and value is a document author's: text, not Markdown

    def node(n: str) -> str:
        kind, path, _ = new.nodes[n] if n in new.nodes else old.nodes[n]
        return f"{code(n)} ({untrusted.markdown(kind or 'untyped')}, {code(path)})"

    broken = d["edges_newly_broken"] + r["broken_added"]
    out = [f"### Graph diff `{r['base']}..{r['head']}`", "",
           ":x: **This change breaks refs.**" if broken else ":white_check_mark: No ref is newly broken.",
           "", "| change | count |", "|---|---:|"]
    rows = [("nodes added", "nodes_added"), ("nodes removed", "nodes_removed"),
            ("nodes retyped", "nodes_retyped"), ("nodes moved", "nodes_moved"),
            ("fields changed", "fields_changed"), ("edges added", "edges_added"),
            ("edges removed", "edges_removed")]
    out += [f"| {label} | {c[key]} |" for label, key in rows]
    out.append(f"| refs newly broken | {len(broken)} |")
    sections = [
        ("Refs newly broken", [code(_edge(e)) for e in broken]),
        ("Nodes added", [node(n) for n in d["nodes_added"]]),
        ("Nodes removed", [node(n) for n in d["nodes_removed"]]),
        ("Retyped", [f"{code(x['id'])}: {code(x['from'] or 'untyped')} → {code(x['to'] or 'untyped')}"
                     for x in d["nodes_retyped"]]),
        ("Fields changed", [f"{code(x['id'])} {code(x['field'])}: "
                            f"{code(str(x['from']))} → {code(str(x['to']))}" for x in d["fields_changed"]]),
        ("Blast radius", [f"{code(n)} → {v['count']} dependent(s): "
                          + ", ".join(code(x["id"]) for x in v["nearest"][:10])
                          + (" …" if v["count"] > 10 else "")
                          for n, v in r["blast"].items() if v["count"]]),
    ]
    for title, items in sections:
        if items:
            out += ["", f"**{title}**", "", _md_items(items)]
    return "\n".join(out)


@main.command("plan")
@click.argument("spec_file", metavar="SPEC.toml", type=click.Path(path_type=Path))
@_ROOT
@click.option("--staged", is_flag=True, help="Plan against the index.")
@click.option("--rev", metavar="REV", help="Plan against commit REV.")
@_NO_CACHE
@_JSON
@guarded
def plan_cmd(spec_file: Path, root: Path | None, staged: bool, rev: str | None, no_cache: bool,
             as_json: bool) -> None:
    """What removing, retyping, breaking or adding edges would do, before doing it.
    Nothing is written; exit 1 when the change would leave broken refs.

    \b
    SPEC.toml keys (all optional):
      remove = ["id"]            retype = { id = "type" }
      break  = [{ from = "a", to = "b", field = "f" }]
      add    = [{ from = "a", field = "f", to = "b" }]
    Example:
      tropo plan retire-auth.toml --json
    """
    if spec_file.is_dir() or not spec_file.is_file():
        fail(f"plan: {spec_file}: no such spec file")
    try:
        spec = tomllib.loads(spec_file.read_text(encoding="utf-8-sig"))
        graphdiff.check_spec(spec)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        fail(f"plan: {spec_file}: not TOML: {exc}")
    except graphdiff.SpecError as exc:
        fail(f"plan: {spec_file}: {exc}")
    if staged and rev:
        fail("--staged and --rev exclude each other")
    source = Source.index() if staged else Source.at(rev) if rev else Source.worktree()
    ws = open_workspace(root, source, use_cache=not no_cache)
    g = _graph(ws)
    after = graphdiff.apply_change(g, spec)
    d = graphdiff.delta(graphdiff.Shape.of(g), graphdiff.Shape.of(after))
    unknown = sorted(t for t in set(spec.get("remove", [])) | set(spec.get("retype", {}))
                     if t not in g.nodes)
    gone = set(d["nodes_removed"])
    affected: dict[str, set[str]] = {}
    for nid in d["nodes_removed"] + [x["id"] for x in d["nodes_retyped"]]:
        for dep in g.blast(nid):
            if dep not in gone:
                affected.setdefault(dep, set()).add(nid)
    broken_added = [e for e in d["edges_added"] if e["broken"]]
    problems = len(d["edges_newly_broken"]) + len(broken_added)
    if as_json:
        print_json({"root": str(ws.root), "spec": str(spec_file), "unknown_targets": unknown, "delta": d,
              "broken_added": broken_added,
              "affected": {k: sorted(v) for k, v in sorted(affected.items())}, "problems": problems},
                   PRETTY_UNICODE)
    else:
        shown = untrusted.visible  # ids are the documents' authors'
        click.echo(shown(f"tropo plan: {spec_file}"))
        if unknown:
            click.echo(shown(f"  note: the spec names no such id: {', '.join(unknown)}"))
        for line in delta_lines(d):
            click.echo(line)
        for dep, via in sorted(affected.items()):
            click.echo(shown(f"  affected {dep}  (via {', '.join(sorted(via))})"))
        click.echo(f"tropo plan: {problems} broken ref(s) introduced, "
                   f"{len(affected)} affected document(s); nothing was written")
    sys.exit(1 if problems else 0)


@main.command("log")
@click.argument("node_id", metavar="ID")
@click.option("--rev", metavar="REV", default="HEAD", show_default=True, help="Start from this commit.")
@_ROOT
@_NO_CACHE
@_JSON
@guarded
def log_cmd(node_id: str, rev: str, root: Path | None, no_cache: bool, as_json: bool) -> None:
    """A node's history: when it appeared, each field change with commit and author,
    renames followed (first-parent history).

    \b
    Example:
      tropo log release-workflow --json
    """
    ws = open_workspace(root, Source.at(rev), use_cache=not no_cache)
    g = _graph(ws)
    node = g.nodes.get(node_id)
    if node is None:
        fail(f"no document with id {node_id!r} at {rev} (run `tropo graph --rev {rev}` to list ids)", 1)
    head = ws.snapshot.commit()
    assert head is not None  # a rev source always has one
    prefix = ws.root.relative_to(ws.snapshot.top).as_posix()
    full = node.path if prefix == "." else f"{prefix}/{node.path}"
    from tropo.review import node_history  # pygit2: only for this command

    events = [e.as_dict() for e in node_history.history(head, full)]
    if as_json:
        print_json({"id": node_id, "type": node.type, "path": node.path, "rev": rev, "events": events},
                   PRETTY_UNICODE)
        return
    shown = untrusted.visible  # paths, authors and values are what the commits' authors chose
    click.echo(shown(f"tropo log: {node_id} [{node.type or 'untyped'}] {node.path}"))
    for e in events:
        where = f"{e['from_path']} -> {e['path']}" if e["kind"] == "renamed" else e["path"]
        click.echo(shown(f"  {e['commit'][:10]} {e['date'][:10]} {e['author']}: {e['kind']} {where}  — ")
                   + untrusted.line(e["summary"]))
        for ch in e["changes"]:
            click.echo(shown(f"      {ch['field']}: {ch['from']!r} -> {ch['to']!r}"))


@main.command("map")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), help="Same as PATH.")
@click.option("--depth", type=click.IntRange(min=0), default=3, show_default=True,
              help="Deepest directory level listed (counts always cover the whole tree).")
@click.option("--max-entries", type=click.IntRange(min=0), help="List at most this many directories.")
@_JSON
def map_cmd(path: Path | None, root: Path | None, depth: int, max_entries: int | None,
            as_json: bool) -> None:
    """Inventory any folder (no tropo.toml needed): directories, dominant extensions,
    largest files, index files, and likely modules that lack an index.md/README.md.

    \b
    Examples:
      tropo map
      tropo map src --depth 2 --json
    """
    if path is not None and root is not None:
        fail("map: give either PATH or --root, not both")
    top = (path or root or Path.cwd()).absolute()
    if not top.is_dir():
        fail(f"map: not a directory: {top}")
    skip = fsmap.skip_patterns(top)
    inv = fsmap.inventory(top.name or "/", fsmap.walk(top, skip), depth=depth,
                          max_entries=max_entries, skip=skip)
    if as_json:
        click.echo(json.dumps(inv, indent=2, sort_keys=True, ensure_ascii=False))
        return
    s = inv["summary"]
    lines = [f"tropo map: {inv['root']} — {s['total_files']} file(s) in {s['total_dirs']} folder(s)",
             "  extensions: " + ", ".join(f"{e['extension']} {e['count']}" for e in s["extensions_top"])]
    for d in inv["directories"]:
        exts = ", ".join(e["extension"] for e in d["dominant_extensions"])
        lines.append(f"  {'  ' * d['depth']}{d['path']}  {d['files']} file(s), {d['size']} B  [{exts}]"
                     + ("  index" if d["has_index"] else ""))
    if s["likely_modules_without_index"]:
        lines.append("  likely modules without an index: " + ", ".join(s["likely_modules_without_index"]))
    lines.append("  largest: " + ", ".join(f"{f['path']} ({f['size']} B)" for f in s["largest_files"][:5]))
    for line in lines:  # file and folder names are whoever wrote the tree's
        click.echo(untrusted.visible(line))


def _inside_git(root: Path, target: Path) -> bool:
    """Whether ``target`` is in a ``.git`` folder or in the repository's git directories."""
    if ".git" in target.parts:
        return True
    dirs = gitcli.run(root, "rev-parse", "--absolute-git-dir", "--git-common-dir",
                      check=False).split("\n")  # none outside a repository
    real = target.parent.resolve() / target.name
    return any(real.is_relative_to((root / d).resolve()) for d in dirs if d)


def _output_path(root: Path, out: Path, force: bool) -> Path:
    """``out`` made absolute, refused unless it is (or will be) a regular file inside root
    that is not tracked, not in ``.git`` and not someone else's file (see
    :func:`tropo.review.view.out_refusal`)."""
    target = out.absolute()
    top = root.resolve()
    if not target.parent.is_dir():
        fail(f"view: --out {out}: the directory {target.parent} does not exist; create it "
             "first", 1)
    if not target.parent.resolve().is_relative_to(top):
        fail(f"view: --out {out} is outside the workspace {top}", 1)
    if target.is_symlink():
        fail(f"view: --out {out} is a symlink; refusing to write through it", 1)
    if target.exists() and not target.is_file():
        fail(f"view: --out {out} exists and is not a regular file", 1)
    existing = None
    if target.exists():
        with target.open("rb") as f:
            existing = f.read(1024)
    rel = (target.parent.resolve() / target.name).relative_to(top).as_posix()
    refusal = view.out_refusal(str(out), inside_git=_inside_git(top, target),
                               tracked=gitcli.toplevel(top) is not None
                               and bool(gitcli.tracked(top, [rel])),
                               existing=existing, force=force)
    if refusal is not None:
        fail(f"view: {refusal}", 1)
    return target


@main.command("view")
@click.argument("subject", required=False, type=click.Choice(["graph", "blast"]), default="graph")
@click.argument("node_id", required=False, metavar="[ID]")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the page here (inside the workspace); default: print it.")
@click.option("--depth", type=click.IntRange(min=1), help="With blast: stop after this many hops.")
@click.option("--force", is_flag=True,
              help="Overwrite --out even if it is tracked or not a page tropo view wrote.")
@workspace_options
@guarded
def view_cmd(subject: str, node_id: str | None, out: Path | None, depth: int | None, force: bool,
             root: Path | None, staged: bool, rev: str | None, no_cache: bool, as_json: bool) -> None:
    """Draw the graph, or the blast radius of ID, as one self-contained HTML page: types
    coloured, broken refs marked, pan and zoom, click a node for its fields and neighbours.

    \b
    Examples:
      tropo view --out graph.html
      tropo view blast agent-workspace --out blast.html
    """
    ws = load(root, staged, rev, no_cache)
    target = None if out is None else _output_path(ws.root, out, force)
    g = _graph(ws)
    if subject == "blast":
        if node_id is None:
            fail("view blast needs an id, e.g. tropo view blast my-module --out blast.html")
        if node_id not in g.nodes:
            fail(f"no document with id {node_id!r} (run `tropo graph` to list ids)", 1)
        ranks = {node_id: 0, **{n: d for n, (d, _) in g.blast(node_id, depth).items()}}
        data = _page_data(ws, f"blast · {node_id}", g, set(ranks), ranks)
    elif node_id is not None:
        fail(f"view graph takes no id (did you mean `tropo view blast {node_id}`?)")
    else:
        data = _page_data(ws, "graph", g)
    html = view.render(data)
    drawn = sum(1 for n in data["nodes"] if not n.get("ghost"))
    if target is None:
        click.echo(html)
        return
    write_atomic(target, html.encode("utf-8"), mode=0o644)
    if as_json:
        print_json({"wrote": str(target), "nodes": drawn, "edges": len(data["edges"])}, PRETTY_UNICODE)
    else:
        click.echo(untrusted.visible(f"tropo: wrote {out}  ({drawn} node(s), {len(data['edges'])} edge(s))"))
