"""Compile a Task Capsule from our own graph records, so a governed decision can run on
context we produced rather than only on vivary-tropo's.

Pure: records in, capsule out. Reading the graph (and the tree it came from) is the
caller's job; `tropo find --governed` wires this to a workspace.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from tropo.canonical import MAX_SAFE_INTEGER, fingerprint
from tropo.check.graph import Graph
from tropo.governed.capsule import (
    OMITTED_LIST_CAP,
    SCHEMA,
    body,
    capsule_id,
    claim_id,
)
from tropo.governed.paths import is_canonical_absolute, normalize
from tropo.governed.questions import question_terms, word_match
from tropo.governed.receipt import js_timestamp

DEFAULT_MAX_CLAIMS = 24
GRAPH_CHECK = {"name": "tropo-check", "command": "tropo check --root . --json"}
# Stronger evidence first within a tier: what a node is, then what it says, then links.
_FACT_RANK = {"type": 0, "title": 1, "field": 2, "edge": 3}


def _jsonable(value: Any) -> Any:
    """Frontmatter as plain JSON: dates and other YAML scalars become their text."""
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int) and abs(value) <= MAX_SAFE_INTEGER:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return value.isoformat() if isinstance(value, date) else str(value)


def records_from_graph(graph: Graph) -> list[dict[str, Any]]:
    """tropo's graph as compiler records. Nodes carry no body, so `body` is None."""
    return [
        {
            "id": node.id,
            "type": node.type,
            "path": node.path,
            "title": node.title,
            "fields": node.fields,
            "body": None,
            "edges": [{"field": e.field, "dst": e.dst, "broken": e.broken} for e in graph.outbound(node.id)],
        }
        for node in graph.nodes.values()
    ]


def snapshot_fingerprint(source: str | None) -> str | None:
    """A capsule's workspace fingerprint from its snapshot's (None: derive it from the
    graph), the one definition `tropo find --governed` and `create-vivary record` share."""
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest() if source else None


def graph_fingerprint(records: Sequence[Mapping[str, Any]]) -> str:
    """The workspace fingerprint of a graph: the same nodes, fields, bodies and edges
    give the same value, whatever order they were read in."""
    ordered = sorted((_jsonable(record) for record in records), key=lambda r: (r["path"], r["id"]))
    return fingerprint({"schema": "vivary-git.graph-records/v0", "records": ordered})


def _facts(record: Mapping[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(rank kind, fact, claim text, evidence) for everything a record asserts."""
    path, node_id = record["path"], record["id"]
    source = {"kind": "graph_record", "path": path}
    facts = [("type", "type", f"{path} is a {record.get('type') or 'untyped'} node", source)]
    if record.get("title"):
        facts.append(("title", "title", f"{path} is titled {record['title']!r}", source))
    for name, value in sorted((record.get("fields") or {}).items()):
        text = json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=True)
        facts.append(("field", f"field:{name}", f"{path} sets {name} = {text}", {**source, "field": name}))
    for edge in record.get("edges") or []:
        if not edge.get("broken"):
            claim = f"{node_id} --{edge['field']}--> {edge['dst']}"
            facts.append(("edge", f"edge:{edge['field']}", claim, {**source, "field": edge["field"]}))
    return facts


def _selection(record: Mapping[str, Any], terms: list[str]) -> tuple[int, str, dict[str, Any]]:
    label = f"{record['id']} {record.get('title') or ''}"
    matched = [term for term in terms if word_match(term, label)]
    if matched:
        signals = [{"signal": "question_term_match", "term": t, "field": "label"} for t in matched]
        reason = f"task question term '{matched[0]}' matches the subject label"
        return 1, reason, {"tier": "question_match", "signals": signals}
    reason = "inside the task scope; no task-specific relevance signal"
    return 2, reason, {"tier": "allowlisted", "signals": [{"signal": "allowlisted"}]}


def _unknowns(records: Sequence[Mapping[str, Any]], root: str) -> list[dict[str, Any]]:
    return [
        {
            "checkout": record["id"],
            "path": f"{root.rstrip('/')}/{record['path']}",
            "fact": f"edge:{edge['field']}",
            "reason": f"broken_ref:{edge['dst']}",
        }
        for record in records
        for edge in record.get("edges") or []
        if edge.get("broken")
    ]


def compile_capsule(
    records: Sequence[Mapping[str, Any]],
    *,
    question: str,
    root: str,
    observed_at: datetime,
    max_claims: int = DEFAULT_MAX_CLAIMS,
    workspace_fingerprint: str | None = None,
    required_checks: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A `vivary.task-capsule/v0` answering `question` over `records` (dicts with
    id, type, path, title, fields, body, edges) of the workspace at `root`.

    Claims are ranked (question matches on a node's id or title first, then by fact
    kind) and cut at `max_claims`; cuts are listed as a `claims_over_budget`
    omission, broken refs become unknowns, and `tropo check` is the default required
    check. Raises ValueError on a blank question, a non-absolute root or a budget
    outside 0..2^53-1.
    """
    if not question.strip():
        raise ValueError("the question must not be blank")
    root = normalize(root)
    if not is_canonical_absolute(root):
        raise ValueError(f"root must be an absolute path without . or ..: {root!r}")
    if type(max_claims) is not int or not 0 <= max_claims <= MAX_SAFE_INTEGER:
        raise ValueError("max_claims must be an integer in 0..9007199254740991")
    terms = question_terms(question)
    ranked = []
    for record in records:
        tier, reason, selection = _selection(record, terms)
        for kind, fact, text, evidence in _facts(record):
            claim = {
                "subject": record["id"],
                "subject_path": f"{root.rstrip('/')}/{record['path']}",
                "fact": fact,
                "claim": text,
                "status": "known",
                "evidence": [evidence],
                "selection_reason": reason,
                "selection": selection,
            }
            key = f"{claim['subject']}:{fact}:{text}".encode("utf-16-be", "surrogatepass")
            ranked.append(((tier, _FACT_RANK[kind], key), {"id": claim_id(claim), **claim}))
    ranked.sort(key=lambda pair: pair[0])
    claims = [claim for _, claim in ranked[:max_claims]]
    cut = [claim for _, claim in ranked[max_claims:]]
    omissions: list[dict[str, Any]] = []
    if cut:
        over: dict[str, Any] = {
            "kind": "claims_over_budget",
            "reason": f"claim budget of {max_claims} reached; the lowest-ranked claims were cut",
            "omitted_count": len(cut),
            "omitted": [
                {
                    "subject_path": c["subject_path"],
                    "fact": c["fact"],
                    "tier": c["selection"]["tier"],
                }
                for c in cut[:OMITTED_LIST_CAP]
            ],
        }
        if len(cut) > OMITTED_LIST_CAP:
            over["truncated"] = True
        omissions.append(over)
    checks = (
        [dict(c) for c in required_checks] if required_checks is not None else [{**GRAPH_CHECK, "cwd": root}]
    )
    task = {"question": question, "scope": [root]}
    workspace = {
        "fingerprint": workspace_fingerprint or graph_fingerprint(records),
        "observed_at": js_timestamp(observed_at),
    }
    capsule: dict[str, Any] = {
        "capsule_id": capsule_id(task, workspace["fingerprint"]),
        "schema": SCHEMA,
        "task": task,
        "workspace": workspace,
        "claims": claims,
        "conflicts": [],
        "unknowns": _unknowns(records, root),
        "omissions": omissions,
        "required_checks": checks,
        "budget": {"max_claims": max_claims},
    }
    capsule["fingerprint"] = fingerprint(body(capsule, "capsule_id"))
    return capsule
