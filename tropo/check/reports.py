"""The JSON documents ``tropo check``, ``graph`` and ``blast`` print, built from a
workspace without any I/O of their own, so every front end (CLI, MCP) reports alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from tropo.check.findings import Finding, failing

if TYPE_CHECKING:
    from tropo.check.graph import Graph
    from tropo.check.incremental import Outcome
    from tropo.check.workspace import Workspace


class UnknownNode(LookupError):
    """``blast`` was asked about an id no document has."""

    def __init__(self, node_id: str) -> None:
        super().__init__(f"no document with id {node_id!r} (run `tropo graph` to list ids)")


@dataclass(frozen=True)
class CheckResult:
    checked: int
    clean: int
    findings: list[Finding]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level == "error")

    @property
    def warnings(self) -> int:
        """Findings that are neither errors nor info (advice, which fails nothing)."""
        return len(failing(self.findings)) - self.errors

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "clean": self.clean,
                "errors": self.errors, "warnings": self.warnings,
                "findings": [f.as_dict() for f in self.findings]}


def check(ws: Workspace, selectors: list[str] | None, *, strict: bool = False,
          lenient: bool = False) -> CheckResult:
    """Check the selected documents. Warnings count as errors when the schema is strict
    (its default) or ``strict`` asks, unless ``lenient``."""
    if selectors is None:
        from tropo.check import incremental

        return graded(incremental.summarize(ws), strict=strict, lenient=lenient)
    report = ws.check(selectors)
    return CheckResult(report.checked, report.clean,
                       report.graded((ws.config.strict or strict) and not lenient))


def graded(outcome: Outcome, *, strict: bool = False, lenient: bool = False) -> CheckResult:
    """A whole-workspace check as reported: see :func:`check` for the grading."""
    summary = outcome.summary
    return CheckResult(summary.checked, summary.clean,
                       summary.graded((outcome.strict or strict) and not lenient))


def graph(root: str, g: Graph) -> dict[str, Any]:
    """The graph of the workspace at ``root``: nodes by id, edges in the graph's order."""
    return _whole(_graph(root, g))


def graph_text(root: str, g: Graph) -> Iterator[str]:
    """:func:`graph` as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, in pieces."""
    return pieces(_graph(root, g))


def _graph(root: str, g: Graph) -> dict[str, Any]:
    return {"root": root,
            "nodes": (n.as_dict() for n in sorted(g.nodes.values(), key=lambda n: n.id)),
            "edges": (e.as_dict() for e in g.edges),
            "counts": {"nodes": len(g.nodes), "edges": len(g.edges), "broken": g.broken}}


def _whole(document: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, Iterator) else v for k, v in document.items()}


def pieces(document: dict[str, Any]) -> Iterator[str]:
    """``json.dumps(document, indent=2, ensure_ascii=False)`` in pieces, for a document of
    scalars, flat objects and lists (or iterators) of flat objects: at 100k nodes the
    whole text, and the pure-Python encoder ``indent`` selects, cost more than the graph.
    Every string goes through the C encoder."""
    if not document:
        yield "{}"
        return
    sep = "{\n  "
    for key, value in document.items():
        yield f"{sep}{_string(key)}: "
        sep = ",\n  "
        if isinstance(value, dict):
            yield _object(value, "  ")
        elif isinstance(value, (list, Iterator)):
            yield from _items(_object(item, "    ") for item in value)
        else:
            yield _value(value)
    yield "\n}"


_string = json.encoder.encode_basestring  # what ensure_ascii=False writes a str as (C)


_LITERALS = {None: "null", True: "true", False: "false"}


def _value(value: object) -> str:
    if isinstance(value, str):  # the common case first: ids, types, paths
        return _string(value)
    if value is None or isinstance(value, bool):
        return _LITERALS[value]
    return str(value)  # an int


def _object(flat: dict[str, Any], indent: str) -> str:
    if not flat:
        return "{}"
    inner = f",\n  {indent}".join([f"{_string(k)}: {_value(v)}" for k, v in flat.items()])
    return f"{{\n  {indent}{inner}\n{indent}}}"


def _items(items: Iterable[str], batch: int = 2048) -> Iterator[str]:
    """A JSON list at the second level of an ``indent=2`` document, ``batch`` items a piece."""
    it = iter(items)
    first = list(islice(it, batch))
    if not first:
        yield "[]"
        return
    yield "[\n    " + ",\n    ".join(first)
    while chunk := list(islice(it, batch)):
        yield ",\n    " + ",\n    ".join(chunk)
    yield "\n  ]"


def blast_rows(g: Graph, node_id: str, depth: int | None) -> list[tuple[str, tuple[int, str]]]:
    """What transitively refs ``node_id``, nearest first."""
    if node_id not in g.nodes:
        raise UnknownNode(node_id)
    return sorted(g.blast(node_id, depth).items(), key=lambda kv: (kv[1][0], kv[0]))


def blast(ws: Workspace, g: Graph, node_id: str, depth: int | None) -> dict[str, Any]:
    return _whole(_blast(ws, g, node_id, depth))


def blast_text(ws: Workspace, g: Graph, node_id: str, depth: int | None) -> Iterator[str]:
    """:func:`blast` as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, in pieces
    (UnknownNode before the first)."""
    return pieces(_blast(ws, g, node_id, depth))


def _blast(ws: Workspace, g: Graph, node_id: str, depth: int | None) -> dict[str, Any]:
    rows = blast_rows(g, node_id, depth)
    return {"root": str(ws.root), "target": node_id, "depth": depth,
            "impacted": ({"id": nid, "type": g.nodes[nid].type if nid in g.nodes else None,
                          "distance": dist, "via": via} for nid, (dist, via) in rows),
            "counts": {"impacted": len(rows)}}
