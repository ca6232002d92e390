"""The workspace graph (`vivary.workspace-graph/v0`) as vivary-core projects it from
checkout observations, so a graph a request carries can be held to the projection of its
own checkout nodes: a graph is canonical when every repository, revision, branch, remote,
dirty artifact, edge, conflict, unknown, omission, refusal and its workspace fingerprint
are exactly what its checkouts project to.

Pure and in the suite's vocabulary. Paths are ordered as the suite orders them
(`collation.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

from tropo.canonical import deterministic_id, fingerprint
from tropo.governed.bounds import nonblank
from tropo.governed.collation import locale_key, path_key, utf16_key
from tropo.governed.paths import is_canonical_absolute, is_checkout_relative, normalize, path_identity

SCHEMA = "vivary.workspace-graph/v0"
FIELDS = frozenset({"schema", "observed_at", "allowlist", "workspace_fingerprint", "nodes", "edges",
                    "conflicts", "unknowns", "refusals", "omissions"})
#: Checkouts of one repository that get pairwise neighbour edges.
MAX_NEIGHBOR_GROUP = 300
JSON = dict[str, Any]


def _branch_ref(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("kind") == "detached":
        return set(value) == {"kind"}
    return value.get("kind") == "branch" and set(value) == {"kind", "name"} and nonblank(value["name"])


def _dirty_entries(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(entry, dict)
        and set(entry) == {"state", "path"}
        and isinstance(entry["state"], str)
        and is_checkout_relative(entry["path"])
        for entry in value
    )


def _remotes(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(remote, dict)
        and nonblank(remote.get("name"))
        and all(field not in remote or isinstance(remote[field], str) for field in ("fetch_url", "push_url"))
        for remote in value
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


#: What a known fact's value must be; a fact not named here may hold anything.
_FACT_VALUES: dict[str, Callable[[Any], bool]] = {
    "is_git_repository": _flag,
    "is_dirty": _flag,
    "worktree_root": is_canonical_absolute,
    "git_common_dir": is_canonical_absolute,
    "head_revision": nonblank,
    "content_privacy_fingerprint": nonblank,
    "upstream": nonblank,
    "last_fetch": nonblank,
    "npm_test_script": nonblank,
    "head_ref": _branch_ref,
    "workspace_markers": _strings,
    "dirty_entries": _dirty_entries,
    "remotes": _remotes,
}


def _fact_valid(name: str, detail: Any) -> bool:
    if detail is None:
        return True
    if not isinstance(detail, dict) or detail.get("status") not in ("known", "unknown"):
        return False
    if detail["status"] == "unknown":
        return nonblank(detail.get("reason"))
    return "value" in detail and _FACT_VALUES.get(name, lambda _: True)(detail["value"])


def facts_valid(facts: Any) -> TypeGuard[JSON]:
    """Each fact absent, unknown for a reason, or known with a value of its kind."""
    return isinstance(facts, dict) and all(_fact_valid(name, detail) for name, detail in facts.items())


def is_git_checkout(node: Any) -> bool:
    """A checkout node whose facts are well formed and say it is a Git repository."""
    if not isinstance(node, dict) or node.get("kind") != "checkout":
        return False
    facts = node.get("facts")
    if not facts_valid(facts):
        return False
    repository = facts.get("is_git_repository")
    return (
        isinstance(repository, dict)
        and repository.get("status") == "known"
        and repository.get("value") is True
    )


def _value(facts: JSON, name: str, field: str = "value") -> Any:
    detail = facts.get(name)
    return None if detail is None else detail.get(field)


def _known(facts: JSON, name: str) -> JSON | None:
    detail = facts.get(name)
    return detail if detail is not None and detail.get("status") == "known" else None


def repository_identity(path: str, facts: JSON) -> JSON:
    """Which repository a checkout is of: its origin (else first) remote's fetch URL, else
    its shared Git directory, else itself. Raises on facts too malformed to tell."""
    remotes = facts.get("remotes")
    if remotes is not None and remotes.get("status") == "known":
        values = remotes.get("value") or []
        origin = next((remote for remote in values if remote.get("name") == "origin"), None)
        if origin is None and values:
            origin = values[0]
        if origin is not None and origin.get("fetch_url"):
            url = origin["fetch_url"]
            return {"identity": url, "identity_status": "known", "evidence": remotes.get("evidence")}
    common = facts.get("git_common_dir")
    if common is not None and common.get("status") == "known" and common.get("value"):
        local = path_identity(str(common["value"]))
        evidence = common.get("evidence")
        return {"identity": f"local:{local}", "identity_status": "inferred", "evidence": evidence}
    known = remotes is not None and remotes.get("status") == "known"
    return {
        "identity": f"local:{path_identity(str(path))}",
        "identity_status": "inferred" if known else "unknown",
        "evidence": remotes.get("evidence") if remotes is not None else None,
    }


def normalized_refusals(refusals: Any) -> list[JSON]:
    """The roots an observation refused, as committed: checked, trimmed, in path order.
    Raises ValueError on a malformed one."""
    if refusals is None:
        return []
    if not isinstance(refusals, list):
        raise ValueError("workspace graph refusals must be a list")
    kept = []
    for refusal in refusals:
        if not (
            isinstance(refusal, dict)
            and isinstance(refusal.get("path"), str)
            and refusal["path"]
            and normalize(refusal["path"]) == refusal["path"]
            and refusal.get("status") == "refused"
            and isinstance(refusal.get("reason"), str)
            and refusal["reason"]
            and (refusal["reason"] != "resolved_outside_allowlist" or is_canonical_absolute(refusal["path"]))
        ):
            raise ValueError("workspace graph contains an invalid refusal")
        kept.append({"path": refusal["path"], "status": refusal["status"], "reason": refusal["reason"]})
    return sorted(kept, key=lambda r: path_key(f"{r['path']}:{r['reason']}"))


def _commitment(facts: JSON, name: str) -> JSON | None:
    detail = facts.get(name)
    if detail is None:
        return None
    committed: JSON = {"status": detail.get("status")}
    if detail.get("status") == "known":
        value = detail.get("value")
        if name == "dirty_entries" and isinstance(value, list):
            value = sorted(value, key=lambda e: utf16_key(f"{e.get('path')}:{e.get('state')}"))
        elif name == "workspace_markers" and isinstance(value, list):
            value = sorted(value, key=utf16_key)
        committed["value"] = value
    elif "reason" in detail:
        committed["reason"] = detail.get("reason")
    return committed


def _core_facts(node: JSON) -> JSON:
    facts = node["facts"]
    return {
        "path": node["path"],
        "worktree_root": _value(facts, "worktree_root") or node["path"],
        "head_revision": _value(facts, "head_revision"),
        "head_ref": _value(facts, "head_ref"),
        "is_dirty": _value(facts, "is_dirty"),
        "dirty_paths": sorted((e["path"] for e in _value(facts, "dirty_entries") or []), key=utf16_key),
        "remotes": _value(facts, "remotes") or [],
        "facts": {name: _commitment(facts, name) for name in sorted(facts, key=utf16_key)},
    }


def workspace_fingerprint(nodes: list[Any], refusals: Any) -> str:
    """The workspace commitment: every checkout's core facts in path order, and the
    refusals. Raises ValueError on a malformed or repeated checkout."""
    checkouts = []
    for node in nodes:
        if not isinstance(node, dict):
            raise ValueError("workspace graph nodes must be mappings")
        if node.get("kind") != "checkout":
            continue
        if not (is_canonical_absolute(node.get("path")) and facts_valid(node.get("facts"))):
            raise ValueError("workspace graph checkouts require valid path and facts")
        checkouts.append(node)
    identities = [path_identity(node["path"]) for node in checkouts]
    if len(set(identities)) != len(identities):
        raise ValueError("workspace graph contains duplicate checkout identities")
    core = sorted([_core_facts(node) for node in checkouts], key=lambda c: path_key(c["path"]))
    return fingerprint({"checkouts": core, "refusals": normalized_refusals(refusals)})


class _Projection:
    """Nodes and edges by id, first one kept, as a projection accumulates them."""

    def __init__(self) -> None:
        self.nodes: dict[str, JSON] = {}
        self.edges: dict[str, JSON] = {}
        self.unknowns: list[JSON] = []
        self.omissions: list[JSON] = []

    def node(self, node: JSON) -> None:
        self.nodes.setdefault(node["id"], node)

    def edge(self, kind: str, source: str, target: str, evidence: Any) -> None:
        edge_id = deterministic_id("edge", {"kind": kind, "from": source, "to": target})
        self.edges.setdefault(edge_id, {"id": edge_id, "kind": kind, "from": source, "to": target,
                                        "evidence": evidence})

    def unknown(self, checkout: str, path: str, fact: str, reason: Any) -> None:
        self.unknowns.append({"checkout": checkout, "path": path, "fact": fact, "reason": reason})


def _project_checkout(out: _Projection, cid: str, path: str, facts: JSON) -> str:
    """One Git checkout's nodes and edges; its repository's id."""
    for name, detail in facts.items():
        if detail.get("status") == "unknown":
            out.unknown(cid, path, name, detail.get("reason"))
    out.node({"id": cid, "kind": "checkout", "label": path.split("/")[-1], "path": path, "facts": facts})
    repo = repository_identity(path, facts)
    rid = deterministic_id("repository", {"identity": repo["identity"]})
    out.node({"id": rid, "kind": "repository", "identity": repo["identity"],
              "identity_status": repo["identity_status"]})
    out.edge("checkout_of", cid, rid, repo["evidence"])
    if head := _known(facts, "head_revision"):
        revision = deterministic_id("revision", {"sha": head["value"]})
        out.node({"id": revision, "kind": "revision", "sha": head["value"]})
        out.edge("at_revision", cid, revision, head.get("evidence"))
    ref = _known(facts, "head_ref")
    if ref and ref.get("value", {}).get("kind") == "branch":
        name = ref["value"]["name"]
        branch = deterministic_id("branch", {"checkout": path, "name": name})
        out.node({"id": branch, "kind": "branch", "name": name, "checkout": cid})
        out.edge("at_branch", cid, branch, ref.get("evidence"))
    if remotes := _known(facts, "remotes"):
        for remote in remotes["value"]:
            url = remote.get("fetch_url")
            remote_id = deterministic_id("remote", {"checkout": path, "name": remote["name"], "url": url})
            out.node({"id": remote_id, "kind": "remote", "name": remote["name"], "fetch_url": url,
                      "checkout": cid})
            out.edge("tracks_remote", cid, remote_id, remotes.get("evidence"))
    if dirty := _known(facts, "dirty_entries"):
        for entry in dirty["value"]:
            artifact = deterministic_id("artifact", {"checkout": path, "path": entry["path"]})
            out.node({"id": artifact, "kind": "dirty_artifact", "path": entry["path"],
                      "state": entry["state"], "checkout": cid})
            out.edge("dirty_artifact", cid, artifact, dirty.get("evidence"))
    return rid


def _side(cid: str, checkout: JSON) -> JSON:
    facts = checkout["facts"]
    fetched = facts.get("last_fetch", {})
    return {
        "checkout": cid,
        "path": checkout["path"],
        "head_revision": _value(facts, "head_revision"),
        "head_ref": _value(facts, "head_ref"),
        "last_fetch": fetched["value"] if fetched.get("status") == "known" else None,
        "evidence": _value(facts, "head_revision", "evidence"),
    }


def _pairs(count: int) -> int:
    return count * (count - 1) // 2


def _capped(repository: str, total: int) -> JSON:
    """The notice that only the first checkouts of a repository (in collation order of
    their ids) got neighbour edges: the heads of all of them still make its conflict."""
    return {
        "kind": "neighbor_of_pairs_capped",
        "repository": repository,
        "reason": f"repository has {total} checkouts sharing one origin; pairwise neighbor_of edge "
                  f"generation is capped at {MAX_NEIGHBOR_GROUP} checkouts to stay bounded",
        "considered_checkouts": MAX_NEIGHBOR_GROUP,
        "total_checkouts": total,
        "omitted_checkout_count": total - MAX_NEIGHBOR_GROUP,
        "omitted_pair_count": _pairs(total) - _pairs(MAX_NEIGHBOR_GROUP),
    }


def _relate(out: _Projection, groups: dict[str, list[tuple[str, JSON]]]) -> list[JSON]:
    """Neighbour edges between the checkouts of one repository, and a conflict where
    they disagree about HEAD (both sides kept, no winner chosen)."""
    conflicts = []
    for rid, group in sorted(groups.items(), key=lambda item: utf16_key(item[0])):
        if len(group) < 2:
            continue
        considered = group
        if len(group) > MAX_NEIGHBOR_GROUP:
            considered = sorted(group, key=lambda member: locale_key(member[0]))[:MAX_NEIGHBOR_GROUP]
            out.omissions.append(_capped(rid, len(group)))
        for i, (left, _) in enumerate(considered):
            for right, _ in considered[i + 1 :]:
                out.edge("neighbor_of", left, right, None)
        heads = {_value(checkout["facts"], "head_revision") or "unknown" for _, checkout in group}
        if len(heads) > 1:
            sides = sorted([_side(cid, c) for cid, c in group], key=lambda side: path_key(side["path"]))
            named = [side["checkout"] for side in sides]
            conflicts.append({
                "id": deterministic_id("conflict", {"repository": rid, "sides": named}),
                "kind": "divergent_checkouts",
                "repository": rid,
                "question": "Which checkout reflects current repository truth?",
                "sides": sides,
                "status": "unresolved",
                "reason_codes": ["value_conflict", "identity_unresolved"],
            })
    return conflicts


def project(observation: JSON) -> JSON:
    """The graph of an observation (`observed_at`, `allowlist`, `checkouts` of `path` and
    `facts`, `refusals`). Raises ValueError on a malformed observation; nodes and edges
    come in no particular order."""
    allowlist = [normalize(str(path)) for path in observation.get("allowlist", [])]
    if not all(map(is_canonical_absolute, allowlist)):
        raise ValueError("workspace observation contains an invalid allowlist")
    out = _Projection()
    groups: dict[str, list[tuple[str, JSON]]] = {}
    seen: set[str] = set()
    for checkout in observation["checkouts"]:
        if not (isinstance(checkout, dict) and is_canonical_absolute(checkout.get("path"))
                and facts_valid(checkout.get("facts"))):
            raise ValueError("workspace graph contains an invalid fact status")
        path, facts = checkout["path"], checkout["facts"]
        if path_identity(path) in seen:
            raise ValueError("workspace observation contains duplicate checkout identities")
        seen.add(path_identity(path))
        cid = deterministic_id("checkout", {"path": path})
        if _value(facts, "is_git_repository") is not True:
            flag = facts.get("is_git_repository")
            if isinstance(flag, dict) and flag.get("status") == "unknown":
                out.unknown(cid, path, "is_git_repository", flag.get("reason"))
            out.node({"id": cid, "kind": "checkout", "label": path.split("/")[-1], "path": path,
                      "facts": {"is_git_repository": flag}})
            continue
        groups.setdefault(_project_checkout(out, cid, path, facts), []).append((cid, checkout))
    conflicts = _relate(out, groups)
    refusals = normalized_refusals(observation.get("refusals"))
    nodes = list(out.nodes.values())
    graph: JSON = {
        "schema": SCHEMA,
        "observed_at": observation["observed_at"],
        "allowlist": allowlist,
        "workspace_fingerprint": workspace_fingerprint(nodes, refusals),
        "nodes": nodes,
        "edges": list(out.edges.values()),
        "conflicts": conflicts,
        "unknowns": out.unknowns,
        "refusals": refusals,
    }
    if out.omissions:
        graph["omissions"] = out.omissions
    return graph


def _edge(edge: Any) -> JSON:
    """An edge with its id checked; a neighbour edge, symmetric, with its ends in order."""
    if not isinstance(edge, dict):
        raise ValueError("workspace graph edges must be mappings")
    kind, source, target = edge.get("kind"), edge.get("from"), edge.get("to")
    if not all(isinstance(value, str) and value for value in (kind, source, target)):
        raise ValueError("workspace graph edges require kind and endpoints")
    if edge.get("id") != deterministic_id("edge", {"kind": kind, "from": source, "to": target}):
        raise ValueError("workspace graph edge id is not canonical")
    if kind != "neighbor_of":
        return edge
    low, high = sorted((str(source), str(target)), key=utf16_key)
    ends = {"kind": kind, "from": low, "to": high}
    return {**edge, "from": low, "to": high, "id": deterministic_id("edge", ends)}


def _by_id(items: list[JSON]) -> list[JSON]:
    return sorted(items, key=lambda item: utf16_key(item["id"]))


def _by_value(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: utf16_key(fingerprint(item)))


def is_canonical(graph: Any) -> bool:
    """Whether the graph is exactly the projection of its own checkout nodes."""
    if not (
        isinstance(graph, dict)
        and graph.get("schema") == SCHEMA
        and all(isinstance(graph.get(field), list) for field in ("nodes", "edges", "conflicts", "unknowns"))
        and set(graph) <= FIELDS
    ):
        return False
    checkouts = []
    for node in graph["nodes"]:
        if not isinstance(node, dict):
            return False
        if node.get("kind") != "checkout":
            continue
        cid, path, facts = node.get("id"), node.get("path"), node.get("facts")
        if not (isinstance(cid, str) and cid and isinstance(path, str) and path and isinstance(facts, dict)):
            return False
        checkouts.append({"path": path, "facts": {k: v for k, v in facts.items() if v is not None}})
    try:
        refusals = normalized_refusals(graph.get("refusals"))
        again = project({"observed_at": graph.get("observed_at"), "allowlist": graph.get("allowlist") or [],
                         "checkouts": checkouts, "refusals": refusals})
        return (
            "allowlist" in graph
            and graph["allowlist"] == again["allowlist"]
            and _by_id(graph["nodes"]) == _by_id(again["nodes"])
            and _by_id([_edge(e) for e in graph["edges"]]) == _by_id([_edge(e) for e in again["edges"]])
            and _by_id(graph["conflicts"]) == _by_id(again["conflicts"])
            and _by_value(graph["unknowns"]) == _by_value(again["unknowns"])
            and _by_value(graph.get("omissions", [])) == _by_value(again.get("omissions", []))
            and graph.get("refusals", []) == again["refusals"]
            and graph.get("workspace_fingerprint") == again["workspace_fingerprint"]
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return False


def topology_fingerprint(graph: JSON) -> str:
    """What a repair proposal may rest on, committed: checkouts and their paths,
    repositories and their identities, and which checkout is of which repository."""
    checkouts = sorted(
        ({"id": n["id"], "path": n["path"]} for n in graph["nodes"] if n.get("kind") == "checkout"),
        key=lambda n: utf16_key(n["id"]),
    )
    repositories = sorted(
        ({"id": n["id"], "identity": n.get("identity"), "identity_status": n.get("identity_status")}
         for n in graph["nodes"] if n.get("kind") == "repository"),
        key=lambda n: utf16_key(n["id"]),
    )
    relations = sorted(
        ({"checkout": e["from"], "repository": e["to"]}
         for e in graph["edges"] if e.get("kind") == "checkout_of"),
        key=lambda r: (utf16_key(r["checkout"]), utf16_key(r["repository"])),
    )
    return fingerprint({"schema": "vivary.repair-topology/v0", "checkouts": checkouts,
                        "repositories": repositories, "checkout_of": relations})
