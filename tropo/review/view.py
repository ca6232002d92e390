"""``tropo view``: the graph (or one node's blast radius) as one self-contained HTML file.

:func:`layout` and :func:`render` are pure: nodes are placed in labelled columns (by
type, or by distance for a blast radius) on a grid wide enough that labels never
overlap, broken targets get a column of their own, and the page (``view.html``, no
network, no external assets) draws them with pan, zoom and a details panel.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

from tropo.check.graph import Graph

CELL_W, CELL_H = 190, 26  # grid cell: a 24-character label at 11px fits without overlap
ROWS = 40  # nodes per column before a group wraps into another column
GROUP_GAP = 80
GENERATOR = b'<meta name="generator" content="tropo view">'  # in view.html's <head>
PALETTE = ("#4f7cff", "#23b26d", "#e0823d", "#b455d6", "#d6455a", "#2bb8c4", "#9a8c2b",
           "#5d6b82", "#c2185b", "#00897b")


def colours(types: list[str]) -> dict[str, str]:
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(sorted(types))}


def layout(groups: list[tuple[str, list[str]]]) -> tuple[dict[str, tuple[int, int]], list[dict[str, Any]]]:
    """Grid positions for each id and a header per group, groups left to right."""
    pos: dict[str, tuple[int, int]] = {}
    headers = []
    x = 0
    for label, ids in groups:
        if not ids:
            continue
        headers.append({"label": f"{label} ({len(ids)})", "x": x, "y": -30})
        for i, nid in enumerate(ids):
            pos[nid] = (x + (i // ROWS) * CELL_W, (i % ROWS) * CELL_H)
        x += math.ceil(len(ids) / ROWS) * CELL_W + GROUP_GAP
    return pos, headers


def page_data(title: str, g: Graph, keep: set[str] | None = None,
              ranks: dict[str, int] | None = None) -> dict[str, Any]:
    """What the page draws: positioned nodes (real and broken targets) and edges."""
    ids = sorted(g.nodes if keep is None else keep)
    chosen = set(ids)
    edges = [e for e in g.edges if e.src in chosen and (e.broken or e.dst in chosen)]
    ghosts = sorted({e.dst for e in edges if e.broken})
    if ranks is None:
        by_type: dict[str, list[str]] = {}
        for nid in ids:
            by_type.setdefault(g.nodes[nid].type or "untyped", []).append(nid)
        groups = sorted(by_type.items(), key=lambda kv: (kv[0] == "untyped", kv[0]))
    else:
        by_rank: dict[int, list[str]] = {}
        for nid in ids:
            by_rank.setdefault(ranks[nid], []).append(nid)
        groups = [("target" if r == 0 else f"distance {r}", by_rank[r]) for r in sorted(by_rank)]
    pos, headers = layout([*groups, ("broken targets", [f"\0{t}" for t in ghosts])])
    index = {nid: i for i, nid in enumerate(ids)}
    index.update({f"\0{t}": len(ids) + i for i, t in enumerate(ghosts)})
    nodes = [{"id": nid, "type": g.nodes[nid].type, "path": g.nodes[nid].path,
              "title": g.nodes[nid].title, "fields": g.nodes[nid].fields,
              "x": pos[nid][0], "y": pos[nid][1]} for nid in ids]
    nodes += [{"id": t, "ghost": True, "x": pos[f"\0{t}"][0], "y": pos[f"\0{t}"][1]} for t in ghosts]
    return {
        "title": title,
        "colours": colours([n.type or "untyped" for n in (g.nodes[i] for i in ids)]),
        "headers": headers,
        "nodes": nodes,
        "edges": [[index[e.src], e.field, index[f"\0{e.dst}" if e.broken else e.dst], e.broken]
                  for e in edges],
    }


def render(data: dict[str, Any]) -> str:
    """The HTML page with ``data`` inlined (``<`` escaped so no tag can close early)."""
    template = resources.files("tropo.review").joinpath("view.html").read_text(encoding="utf-8")
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str).replace("<", "\\u003c")
    title = data["title"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return template.replace("__TITLE__", title).replace("__DATA__", payload)


def is_our_page(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first KiB) is a page this view wrote."""
    return head.startswith(b"<!doctype html>") and GENERATOR in head[:1024]


def out_refusal(shown: str, *, inside_git: bool, tracked: bool, existing: bytes | None,
                force: bool) -> str | None:
    """Why ``--out`` must not be written (None: it may): never inside ``.git``; a tracked
    file, or an existing file that is not one of our pages, only with ``force``.
    ``existing`` is the first KiB of the file already there (None: there is none)."""
    if inside_git:
        return f"--out {shown} is inside the repository's .git; refusing to write there"
    if force:
        return None
    if tracked:
        return f"--out {shown} is a tracked file; refusing to overwrite it (--force to do it)"
    if existing is not None and not is_our_page(existing):
        return (f"--out {shown} exists and is not a page tropo view wrote; refusing to "
                "overwrite it (--force to do it)")
    return None
