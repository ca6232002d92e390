"""``tropo view``: the graph (or one node's blast radius) as one self-contained HTML file.

:func:`page_data` and :func:`render` are pure. Nodes are laid out in layers by the
direction of their edges (:mod:`tropo.review.layered`): a ref points right, to the
node it names, and a blast radius reads right to left from its target. Each layer is a
column on a grid wide enough that labels never overlap; nodes with no edge at all
stand in a last column of their own. The page (``view.html``, no network, no external
assets) draws arrows, shows an edge's label on hover, fits the window on load and
focuses a node's neighbourhood on a click.

The page draws with sigma.js over a graphology graph (WebGL: fast at 20,000 nodes), both
vendored in ``vendor/`` and inlined by :func:`template`, so nothing is fetched at run time.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import cache
from importlib import resources
from typing import Any, Protocol

from tropo.check.graph import Graph
from tropo.review.layered import back_edges, longest_path_layers, order

LAYOUT_VERSION = 2  # bump when the layout changes, so no cached one is reused
CELL_W, CELL_H = 190, 26  # widest cell: a 24-character label at 11px fits without overlap
LABEL = 24  # characters of an id the page shows before it cuts it with an ellipsis
CHAR_W = 7  # px per character at 11px, a little over the widest common sans-serif's average
ROWS = 40  # nodes per column before a layer wraps, at least; more in a big graph (rows_for)
ASPECT = 1.6  # width over height the whole graph aims at, about a window's
BAND_GAP = 80  # room between bands of layers, for their headers
BAND_W = 2600  # px: a graph no wider (ten layers or so) never folds into bands
LAYER_GAP = 70  # room between layers for the curve and arrowhead of every edge
GENERATOR = b'<meta name="generator" content="tropo view">'  # in view.html's <head>
PALETTE = ("#4f7cff", "#23b26d", "#e0823d", "#b455d6", "#d6455a", "#2bb8c4", "#9a8c2b",
           "#5d6b82", "#c2185b", "#00897b")


def colours(types: list[str]) -> dict[str, str]:
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(sorted(types))}


def rows_for(count: int) -> int:
    """Nodes per column: 40, or as many as keep a big graph about as wide as a window
    rather than a strip a hundred windows long (columns of CELL_W, rows of CELL_H)."""
    return max(ROWS, math.ceil(math.sqrt(count * CELL_W / (ASPECT * CELL_H))))


def grid(rows: list[list[int]], labels: list[str],
         widths: list[int]) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """Grid positions for each node (rows[k] is layer k, top to bottom) and a header per
    layer; layers left to right, each column as wide as its longest label (``widths``:
    characters per node). A graph of many layers folds into bands, top to bottom, each
    about as wide as the whole is tall times ASPECT (at least BAND_W); layers are centred
    in their band."""
    count = sum(len(row) for row in rows)
    pos = [(0, 0)] * count
    headers = []
    per = rows_for(count)
    blocks = []  # (row, label, cell width, block width, block height)
    for row, label in zip(rows, labels, strict=True):
        if row:
            cell = min(CELL_W, 16 + CHAR_W * max(min(LABEL, widths[v]) for v in row))
            blocks.append((row, label, cell, math.ceil(len(row) / per) * cell + LAYER_GAP,
                           min(per, len(row)) * CELL_H))
    width = max([BAND_W, math.sqrt(ASPECT * sum(w * (h + BAND_GAP) for *_, w, h in blocks)),
                 *(w for *_, w, _ in blocks)], default=0)
    bands: list[int] = []  # each band's height, to centre its layers
    x = y = tallest = 0
    placed = []
    for row, label, cell, w, h in blocks:
        if x and x + w > width:  # the next band
            bands.append(tallest)
            x, y, tallest = 0, y + tallest + BAND_GAP, 0
        placed.append((row, label, cell, x, y, h, len(bands)))
        tallest = max(tallest, h)
        x += w
    bands.append(tallest)
    for row, label, cell, x, y, h, band in placed:
        top = y + (bands[band] - h) // 2
        headers.append({"label": f"{label} ({len(row)})", "x": x, "y": top - 30})
        for i, node in enumerate(row):
            pos[node] = (x + (i // per) * cell, top + (i % per) * CELL_H)
    return pos, headers


def _layers(names: list[str], pairs: list[tuple[int, int]],
            ranks: dict[str, int] | None) -> tuple[list[int], list[str]]:
    """Each node's layer and each layer's label: by edge direction for the whole graph
    (nodes without edges last), by distance for a blast radius (target rightmost)."""
    n = len(names)
    if ranks is None:
        flipped = back_edges(n, pairs)
        layer = longest_path_layers(n, [(d, s) if i in flipped else (s, d)
                                        for i, (s, d) in enumerate(pairs)])
        linked = {v for pair in pairs for v in pair}
        alone = max(layer, default=0) + 1 if linked else 0
        layer = [layer[v] if v in linked else alone for v in range(n)]
        labels = [f"depth {k}" for k in range(alone)] + ["no refs"]
        return layer, labels[:max(layer, default=0) + 1]
    deepest = max(ranks.values())
    layer = [deepest - ranks[name] if name in ranks else 0 for name in names]
    for src, dst in pairs:  # a broken target sits one layer right of what refs it
        if names[dst] not in ranks:
            layer[dst] = max(layer[dst], layer[src] + 1)
    labels = [f"distance {deepest - k}" if k < deepest else "target" for k in range(deepest + 1)]
    return layer, labels + ["broken targets"] * (max(layer) - deepest)


Layout = tuple[list[tuple[int, int]], list[dict[str, Any]]]  # each node's (x, y); headers


class Layouts(Protocol):
    """Where layouts are kept between pages, by :func:`layout_key` (the one on disk is
    :class:`tropo.review.layout_cache.LayoutCache`); ``count``: nodes the layout places."""

    def get(self, key: str, count: int) -> Layout | None: ...

    def put(self, key: str, layout: Layout) -> None: ...


def layout_key(names: list[str], ends: list[tuple[int, int]], ranks: dict[str, int] | None) -> str:
    """The fingerprint of everything a layout depends on: the same key, the same layout."""
    blob = json.dumps([LAYOUT_VERSION, ROWS, ASPECT, names, ends,
                       None if ranks is None else sorted(ranks.items())], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def layout(names: list[str], ends: list[tuple[int, int]], ranks: dict[str, int] | None) -> Layout:
    """Layers by edge direction (or blast distance), ordered to cross little, on the grid."""
    layer, labels = _layers(names, ends, ranks)
    return grid(order(layer, ends), labels, [len(name.lstrip("\0")) for name in names])


def page_data(title: str, g: Graph, keep: set[str] | None = None,
              ranks: dict[str, int] | None = None, layouts: Layouts | None = None) -> dict[str, Any]:
    """What the page draws: positioned nodes (real and broken targets) and edges. With
    ``layouts``, a layout computed before for the same nodes and edges is reused."""
    chosen = set(g.nodes if keep is None else keep)
    ids = sorted(chosen, key=lambda nid: (g.nodes[nid].type is None, g.nodes[nid].type or "", nid))
    edges = [e for e in g.edges if e.src in chosen and (e.broken or e.dst in chosen)]
    ghosts = sorted({e.dst for e in edges if e.broken})
    names = [*ids, *(f"\0{t}" for t in ghosts)]
    index = {name: i for i, name in enumerate(names)}
    ends = [(index[e.src], index[f"\0{e.dst}" if e.broken else e.dst]) for e in edges]
    key = layout_key(names, ends, ranks) if layouts is not None else ""
    kept = layouts.get(key, len(names)) if layouts is not None else None
    pos, headers = kept if kept is not None else layout(names, ends, ranks)
    if layouts is not None and kept is None:
        layouts.put(key, (pos, headers))
    nodes = [{"id": nid, "type": g.nodes[nid].type, "path": g.nodes[nid].path,
              "title": g.nodes[nid].title, "fields": g.nodes[nid].fields,
              "x": pos[i][0], "y": pos[i][1]} for i, nid in enumerate(ids)]
    nodes += [{"id": t, "ghost": True, "x": pos[len(ids) + i][0], "y": pos[len(ids) + i][1]}
              for i, t in enumerate(ghosts)]
    return {
        "title": title,
        "colours": colours([n.type or "untyped" for n in (g.nodes[i] for i in ids)]),
        "headers": headers,
        "nodes": nodes,
        "edges": [[s, e.field, d, e.broken] for e, (s, d) in zip(edges, ends, strict=True)],
    }


VENDORED = re.compile(r'<script src="(vendor/[\w.-]+\.js)"></script>')


def inline_vendored(page: str) -> str:
    """``page`` (a ``view.html``) with each vendored script inlined in its place."""
    here = resources.files("tropo.review")

    def inline(m: re.Match[str]) -> str:
        code = here.joinpath(m.group(1)).read_text(encoding="utf-8")
        if "</script" in code.lower():  # it would end its own element early
            raise ValueError(f"{m.group(1)} contains </script")
        return f"<script>{code}</script>"
    return VENDORED.sub(inline, page)


@cache
def template() -> str:
    """``view.html`` with its vendored scripts inlined: the page every render fills in, and
    whose inline scripts the workbench's policy allows by hash."""
    return inline_vendored(resources.files("tropo.review").joinpath("view.html").read_text(encoding="utf-8"))


def render(data: dict[str, Any], page: str | None = None) -> str:
    """The HTML page with ``data`` inlined (``<`` escaped so no tag can close early);
    ``page``: another template than :func:`template` (the benchmark's page before a change)."""
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str).replace("<", "\\u003c")
    title = data["title"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    page = template() if page is None else page
    head, body = page.split("__DATA__", 1)  # the vendored code is never searched
    return head.replace("__TITLE__", title) + payload + body


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
