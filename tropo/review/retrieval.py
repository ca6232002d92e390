"""``query`` and ``find`` over a workspace: records from the graph, bodies from the index.

The graph comes from the parse cache and the bodies from the search index, both keyed by
blob oid, so a warm query reads no file that did not change. ``find`` turns ranked hits
into context packets and trims them to a token budget the way vivary-tropo does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tropo.check.workspace import Workspace
from tropo.git import repo as gitrepo
from tropo.git.types import hash_blob
from tropo.review.search import (
    Filters,
    Hit,
    Record,
    frontmatter_text,
    hit_dict,
    rank,
)
from tropo.review.search_index import BodyIndex

FIND_K = 5
FIND_BUDGET = 1200


@dataclass
class Search:
    """Records of a workspace plus an index synced to its blobs."""

    records: list[Record]
    index: BodyIndex

    def run(self, text: str, filters: Filters, k: int) -> list[Hit]:
        return rank(self.records, text, self.index, filters=filters, k=k)


def open_search(ws: Workspace) -> Search:
    """Records for the workspace's nodes and an index holding each of their bodies.

    Both are reused from ``.git/vivary/`` when the snapshot's fingerprint is unchanged;
    otherwise the graph is built (from the parse cache) and only new blobs are read.
    """
    repository = ws.snapshot.repo()
    index = BodyIndex(gitrepo.private_dir(repository)
                      if repository is not None and ws.use_cache else None)
    fingerprint = ws.snapshot.fingerprint()
    key = f"{fingerprint}|{ws.root.relative_to(ws.snapshot.top).as_posix()}" if fingerprint else None
    rows = index.load_records(key) if key is not None else None
    fresh: dict[str, bytes] = {}  # oid -> bytes of files only reading could identify
    if rows is None:
        rows = _rows(ws, fresh)
        if key is not None:
            index.save_records(key, rows)
    records = [Record(*row) for row in rows]
    rel_of = {r.key: r.path for r in records}
    index.sync(rel_of, lambda oid: fresh[oid] if oid in fresh else ws.read_bytes(rel_of[oid]))
    return Search(records, index)


def _rows(ws: Workspace, fresh: dict[str, bytes]) -> list[tuple[Any, ...]]:
    """One marshal-friendly row per node, sorted by id, with its blob oid."""
    g = ws.graph()
    entries = ws.entries
    rows = []
    for nid in sorted(g.nodes):
        node = g.nodes[nid]
        entry = entries.get(node.path)
        oid = entry.oid if entry is not None else None
        if oid is None:
            data = ws.read_bytes(node.path)
            oid = hash_blob(data)
            fresh[oid] = data
        edges = tuple((e.field, e.dst) for e in g.outbound(nid) if not e.broken)
        rows.append((nid, node.type, node.path, node.title or nid, frontmatter_text(node.fields),
                     edges, oid))
    return rows


def query(search: Search, text: str, filters: Filters, *, k: int, snippet_chars: int,
          explain: bool) -> list[dict[str, Any]]:
    return [hit_dict(h, text, search.index, snippet_chars=snippet_chars, explain=explain,
                     with_edges=bool(filters.edges))
            for h in search.run(text, filters, k)]


def packets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Query hits (with reasons) as context packets ``{id, type, path, reason, ...}``."""
    out = []
    for r in results:
        item: dict[str, Any] = {"id": r["id"], "type": r["type"], "path": r["path"],
                                "reason": "; ".join(r.get("reasons") or []) or "matches the task query"}
        if r.get("snippet"):
            item["snippet"] = r["snippet"]
        if r.get("edges"):
            item["edges"] = r["edges"]
        out.append(item)
    return out


def estimate_tokens(value: Any) -> int:
    """About four characters of JSON per token: cheap, deterministic, model-agnostic."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False, sort_keys=True)) / 4)


def trim(items: list[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """Fit ``items`` into ``budget`` tokens: halve snippets, then drop edges, then
    trailing items (one stays), then shorten reasons. May still exceed with one item."""
    out = [dict(r) for r in items]

    def over() -> bool:
        return estimate_tokens(out) > budget

    while over() and any("snippet" in r for r in out):
        for r in out:
            s = r.get("snippet")
            if s is not None and len(s) <= 80:
                del r["snippet"]
            elif s is not None:
                r["snippet"] = s[: max(40, len(s) // 2)].rstrip()
    while over() and any("edges" in r for r in out):
        for r in out:
            r.pop("edges", None)
    while over() and len(out) > 1:
        out.pop()
    for r in out:
        if over() and ";" in r["reason"]:
            r["reason"] = r["reason"].split(";", 1)[0]
        if over() and len(r["reason"]) > 24:
            r["reason"] = "query match"
        elif len(r["reason"]) > 80:
            r["reason"] = r["reason"][:77].rstrip() + "..."
    return out, estimate_tokens(out)
