"""Review packs: the relationship-level gaps a per-document check cannot see (a change
that nothing verifies, a draft nobody reviewed), as the published suite's review layer
(vivary-ozone 0.3.2) reports them, finding for finding.

Pure: a graph (and, for the context-budget pack, the workspace's files) in, the suite's
review document out. ``tropo check`` stays the enforcing gate; a review is advisory
unless the caller asks for ``strict``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tropo.check.graph import Graph
from tropo.review import budget

Finding = dict[str, Any]  # the suite's finding document; its key order is part of the format

PACKS = (
    ("structure", "deterministic completeness + topology review over the Vivary graph"),
    ("context-budget", "deterministic context-bloat review over public routing surfaces"),
    ("editorial", "deterministic editorial coverage review for writing workspaces"),
)
PACK_NAMES = tuple(name for name, _ in PACKS)
CHOICES = (*PACK_NAMES, "all")

# A node's review role is the workspace folder it lives in, whatever its schema type.
ROLES = {"modules": "module", "changes": "change", "decisions": "decision",
         "verification": "verification", "gates": "gate"}
EDITORIAL_ROLES = {"drafts": "draft", "manuscripts": "manuscript", "reviews": "review",
                   "editorial-reviews": "review", "edits": "edit", "revisions": "edit",
                   "outlines": "structure", "structures": "structure", "beats": "structure"}
REVIEW_FIELDS = frozenset({"review", "reviews", "editorial_review", "editorial_reviews",
                           "critique", "critiques"})
EDIT_FIELDS = frozenset({"edit", "edits", "revision", "revisions", "copyedit", "copyedits"})
STRUCTURE_FIELDS = frozenset({"outline", "outlines", "structure", "structures", "beat_sheet",
                              "beats", "brief", "briefs"})
SUBJECT_FIELDS = frozenset({"draft", "drafts", "manuscript", "manuscripts", "work", "target",
                            "targets"})
WORK = frozenset({"draft", "manuscript"})


def selected(name: str) -> list[str]:
    """The packs ``--pack NAME`` runs, in the suite's order (``all`` is every one)."""
    if name == "all":
        return list(PACK_NAMES)
    if name not in PACK_NAMES:
        raise ValueError(f"unknown review pack {name!r}")
    return [name]


def _folder_role(path: str, table: dict[str, str]) -> str | None:
    top, sep, _ = path.partition("/")
    return table.get(top) if sep else None


def _node_finding(graph: Graph, severity: str, rule: str, nid: str, message: str) -> Finding:
    node = graph.nodes[nid]
    return {"severity": severity, "rule": rule, "id": nid, "type": node.type,
            "path": node.path, "message": message}


def structure(graph: Graph) -> list[Finding]:
    """Changes without verification or gates, modules without verification, orphans,
    then broken edges (which ``tropo check`` enforces as W220; shown here to the reviewer)."""
    fields: dict[str, set[str]] = {}
    linked: set[str] = set()
    for e in graph.edges:
        fields.setdefault(e.src, set()).add(e.field)
        linked.add(e.src)
        linked.add(e.dst)
    out: list[Finding] = []
    for nid in sorted(graph.nodes):
        role = _folder_role(graph.nodes[nid].path, ROLES)
        has = fields.get(nid, set())
        if role == "change":
            if "verification" not in has:
                out.append(_node_finding(graph, "warn", "change-unverified", nid,
                                         f"change '{nid}' has no verification linked"))
            if "gates" not in has:
                out.append(_node_finding(graph, "info", "change-ungated", nid,
                                         f"change '{nid}' has no gate linked"))
        elif role == "module" and "verification" not in has:
            out.append(_node_finding(graph, "info", "module-unverified", nid,
                                     f"module '{nid}' has no verification linked"))
        if nid not in linked:
            out.append(_node_finding(graph, "info", "orphan", nid,
                                     f"{role or 'node'} '{nid}' is disconnected (no edges in or out)"))
    for e in graph.edges:  # already in (from, field, to) order
        if e.broken:
            out.append(_node_finding(
                graph, "warn", "broken-edge", e.src,
                f"edge {e.src} --{e.field}--> {e.dst} is broken (target missing); "
                "tropo check enforces this"))
    return out


def editorial(graph: Graph) -> list[Finding]:
    """Review, edit and structure coverage between writing folders; silent for a
    workspace with none of them. Broken edges link nothing."""
    roles = {nid: _folder_role(node.path, EDITORIAL_ROLES) for nid, node in graph.nodes.items()}

    def linked(nid: str, out_fields: frozenset[str], out_roles: frozenset[str],
               in_fields: frozenset[str], in_roles: frozenset[str]) -> bool:
        return any(not e.broken and e.field in out_fields and roles.get(e.dst) in out_roles
                   for e in graph.outbound(nid)) or \
            any(not e.broken and e.field in in_fields and roles.get(e.src) in in_roles
                for e in graph.inbound(nid))

    out: list[Finding] = []
    for nid in sorted(graph.nodes):
        role = roles[nid]
        if role in WORK:
            label = f"{role} '{nid}'"
            if not linked(nid, REVIEW_FIELDS, frozenset({"review"}), SUBJECT_FIELDS,
                          frozenset({"review"})):
                out.append(_node_finding(graph, "warn", "draft-unreviewed", nid,
                                         f"{label} has no review linked"))
            if not linked(nid, EDIT_FIELDS, frozenset({"edit"}), SUBJECT_FIELDS,
                          frozenset({"edit"})):
                out.append(_node_finding(graph, "info", "draft-unedited", nid,
                                         f"{label} has no edit or revision linked"))
            if not linked(nid, STRUCTURE_FIELDS, frozenset({"structure"}), SUBJECT_FIELDS,
                          frozenset({"structure"})):
                out.append(_node_finding(
                    graph, "info", "draft-structure-missing", nid,
                    f"{label} has no outline, beat sheet, or structure note linked"))
        elif role == "review":
            if not linked(nid, SUBJECT_FIELDS, WORK, REVIEW_FIELDS, WORK):
                out.append(_node_finding(graph, "warn", "review-unlinked", nid,
                                         f"review '{nid}' is not linked to a draft or manuscript"))
        elif role == "edit":
            work_or_review = WORK | {"review"}
            if not linked(nid, SUBJECT_FIELDS | REVIEW_FIELDS, work_or_review, EDIT_FIELDS,
                          work_or_review):
                out.append(_node_finding(
                    graph, "warn", "edit-unlinked", nid,
                    f"edit '{nid}' is not linked to a draft, manuscript, or review"))
    return out


def review(graph: Graph, files: budget.Files, packs: Iterable[str]) -> dict[str, Any]:
    """The suite's review document: node count, packs run, warning and note counts and
    the findings, pack by pack."""
    names = list(packs)
    findings: list[Finding] = []
    if "structure" in names:
        findings += structure(graph)
    if "context-budget" in names:
        findings += budget.context_budget(files)
    if "editorial" in names:
        findings += editorial(graph)
    warnings = sum(1 for f in findings if f["severity"] == "warn")
    return {"reviewed": len(graph.nodes), "packs": names, "warnings": warnings,
            "notes": len(findings) - warnings, "findings": findings}


def render(document: dict[str, Any]) -> list[str]:
    """The text form: one line per finding, located by path (or id)."""
    return [f"{f['path'] or f['id']}: {f['severity']} {f['rule']}: {f['message']}"
            for f in document["findings"]]
