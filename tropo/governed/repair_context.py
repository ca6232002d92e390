"""The workspace graph (`vivary.workspace-graph/v0`) a governed request offers as repair
context: whether a repair could be keyed on it, whether re-projecting it and proposing
repairs over it would stay bounded (decided before any of that work is done), and whether
it is its own checkouts' projection and the capsule's.

Each predicate answers one of the suite's questions (vivary-ozone 0.3.2) and `codes` asks
them in its order: the shape, the bindings, the bounds, the graph re-projected from its
checkouts (`workspace_graph.py`), its conflicts and repair topology held to the capsule's,
and the capsule recompiled from it (`recompile.py`). A capsule compiled with content is
recompiled with it.
"""

from __future__ import annotations

from typing import Any

from tropo.canonical import MAX_SAFE_INTEGER, canonicalize, fingerprint
from tropo.governed import content_context, recompile, workspace_graph
from tropo.governed.bounds import MAX_WORK, identifier, nonblank, scope_work_bounded, string_cost, work_units
from tropo.governed.collation import collatable
from tropo.governed.content_claims import ContentUnbounded
from tropo.governed.freshness import parse_instant
from tropo.governed.paths import is_within_allowlist
from tropo.governed.workspace_graph import MAX_NEIGHBOR_GROUP, SCHEMA, is_git_checkout, repository_identity

MAX_NODES = 1_000
MAX_EDGES = 1_000
MAX_CONFLICTS = 300
MAX_UNKNOWNS = 1_000
#: Checkouts of one repository compared pairwise for duplicate claims (and so the most
#: pairs, C(300, 2), any repair may scan or propose).
MAX_DEDUPE_CHECKOUTS = 300
MAX_PAIRS = MAX_DEDUPE_CHECKOUTS * (MAX_DEDUPE_CHECKOUTS - 1) // 2
#: Git checkouts in the task scope a capsule may be recompiled over.
MAX_CONTEXT_CHECKOUTS = 300
#: Tokens a split proposal estimates per omitted claim.
OMITTED_CLAIM_TOKENS = 12
JSON = dict[str, Any]


def neighbor_pairs(graph: JSON) -> int | None:
    """How many neighbour edges re-projecting the graph would make, or None when a
    checkout's facts are too malformed to group it."""
    groups: dict[str, int] = {}
    try:
        for node in graph["nodes"]:
            if node.get("kind") != "checkout":
                continue
            path, facts = node["path"], node["facts"]
            repository = facts.get("is_git_repository")
            if repository is None or repository.get("value") is not True:
                continue
            key = canonicalize(repository_identity(path, facts)["identity"])
            groups[key] = groups.get(key, 0) + 1
    except (AttributeError, KeyError, TypeError):
        return None
    capped = [min(size, MAX_NEIGHBOR_GROUP) for size in groups.values()]
    return sum(size * (size - 1) // 2 for size in capped)


def _unknowns_safe(unknowns: list[Any]) -> bool:
    return all(
        isinstance(unknown, dict)
        and all(unknown.get(field) is None or nonblank(unknown[field]) for field in ("path", "subject_path"))
        for unknown in unknowns
    )


def _nodes(nodes: list[Any]) -> tuple[dict[str, str], dict[str, str]] | None:
    """Each node's kind and each checkout's path by id, or None when a node is malformed."""
    kinds: dict[str, str] = {}
    paths: dict[str, str] = {}
    for node in nodes:
        if not (
            isinstance(node, dict)
            and identifier(node.get("id"))
            and nonblank(node.get("kind"))
            and node["id"] not in kinds
            and (node.get("facts") is None or isinstance(node["facts"], dict))
        ):
            return None
        kinds[node["id"]] = node["kind"]
        if node["kind"] == "checkout":
            if not nonblank(node.get("path")):
                return None
            paths[node["id"]] = node["path"]
    return kinds, paths


def _checkout_of(edges: list[Any], kinds: dict[str, str]) -> dict[str, set[str]] | None:
    """Each repository's checkouts, or None when a `checkout_of` edge is malformed or a
    checkout belongs to two repositories."""
    owner: dict[str, str] = {}
    checkouts: dict[str, set[str]] = {}
    for edge in edges:
        if not isinstance(edge, dict):
            return None
        if edge.get("kind") != "checkout_of":
            continue
        checkout, repository = edge.get("from"), edge.get("to")
        if not (
            nonblank(checkout)
            and nonblank(repository)
            and kinds.get(checkout) == "checkout"
            and kinds.get(repository) == "repository"
            and collatable(checkout)
            and collatable(repository)
            and checkout not in owner
        ):
            return None
        owner[checkout] = repository
        checkouts.setdefault(repository, set()).add(checkout)
    return checkouts


def _conflicts_safe(conflicts: list[Any], kinds: dict[str, str], paths: dict[str, str],
                    checkouts: dict[str, set[str]]) -> bool:
    """Every conflict is a divergence between all (at least two) checkouts of one
    repository, each side naming its checkout's path, within the pairwise limit."""
    seen: set[str] = set()
    pairs = 0
    for conflict in conflicts:
        if not isinstance(conflict, dict):
            return False
        repository, sides = conflict.get("repository"), conflict.get("sides")
        members = checkouts.get(repository, set()) if isinstance(repository, str) else set()
        if not (
            identifier(conflict.get("id"))
            and conflict["id"] not in seen
            and conflict.get("kind") == "divergent_checkouts"
            and nonblank(repository)
            and kinds.get(repository) == "repository"
            and isinstance(sides, list)
            and all(
                isinstance(side, dict)
                and nonblank(side.get("checkout"))
                and kinds.get(side["checkout"]) == "checkout"
                and nonblank(side.get("path"))
                and side["path"] == paths.get(side["checkout"])
                and side["checkout"] in members
                for side in sides
            )
        ):
            return False
        seen.add(conflict["id"])
        named = [side["checkout"] for side in sides]
        if len(set(named)) != len(named) or len(named) < 2 or set(named) != members:
            return False
        pairs += len(named) * (len(named) - 1) // 2
        if pairs > MAX_PAIRS:
            return False
    return True


def graph_safe(graph: Any) -> bool:
    """A graph of the right schema and size whose nodes, `checkout_of` edges and
    conflicts a repair could be keyed on."""
    if not (
        isinstance(graph, dict)
        and graph.get("schema") == SCHEMA
        and nonblank(graph.get("workspace_fingerprint"))
        and parse_instant(graph.get("observed_at")) is not None
        and all(isinstance(graph.get(f), list) for f in ("nodes", "edges", "conflicts", "unknowns"))
        and len(graph["nodes"]) <= MAX_NODES
        and len(graph["edges"]) <= MAX_EDGES
        and len(graph["conflicts"]) <= MAX_CONFLICTS
        and len(graph["unknowns"]) <= MAX_UNKNOWNS
        and _unknowns_safe(graph["unknowns"])
    ):
        return False
    found = _nodes(graph["nodes"])
    if found is None:
        return False
    kinds, paths = found
    checkouts = _checkout_of(graph["edges"], kinds)
    return (
        checkouts is not None
        and _conflicts_safe(graph["conflicts"], kinds, paths, checkouts)
        and neighbor_pairs(graph) is not None
    )


def _in_scope(scope: list[str], path: Any) -> bool:
    return not scope or any(is_within_allowlist(root, path) for root in scope)


def checkouts_bounded(scope: list[str], graph: JSON) -> bool:
    """Few enough Git checkouts in the task scope to recompile the capsule over."""
    checkouts = [node for node in graph["nodes"] if is_git_checkout(node)]
    paths = [node.get("path") for node in checkouts]
    if not scope_work_bounded(scope, paths):
        return False
    return sum(_in_scope(scope, path) for path in paths) <= MAX_CONTEXT_CHECKOUTS


def _refusal_paths(refusals: Any) -> list[Any]:
    # A refusal list the suite iterates whatever it holds: a string's characters and a
    # mapping's keys are not records, so they name no path.
    items = refusals if isinstance(refusals, list | str | dict) else ()
    return [item["path"] for item in items if isinstance(item, dict) and item.get("path") is not None]


def context_paths_bounded(scope: list[str], graph: JSON) -> bool:
    """Matching every path the graph narrates (checkouts, unknowns, worktree roots,
    refusals) against the task scope stays within the scope limits."""
    if not scope:
        return True
    checkouts = [node for node in graph["nodes"] if node.get("kind") == "checkout"]
    paths = [node.get("path") for node in checkouts]
    paths += [u[f] for u in graph["unknowns"] for f in ("path", "subject_path") if u.get(f) is not None]
    for node in checkouts:
        root = (node.get("facts") or {}).get("worktree_root")
        if isinstance(root, dict) and root.get("status") == "known" and root.get("value") is not None:
            paths.append(root["value"])
    return scope_work_bounded(scope, paths + _refusal_paths(graph.get("refusals") or []))


def _over_budget(capsule: JSON) -> JSON | None:
    return next((o for o in capsule["omissions"] if o.get("kind") == "claims_over_budget"), None)


def estimates_bounded(capsule: JSON) -> bool:
    """A split proposal's token estimate for the cut claims is a safe integer."""
    cut = _over_budget(capsule)
    return cut is None or cut["omitted_count"] <= MAX_SAFE_INTEGER // OMITTED_CLAIM_TOKENS


def _deferrable(claim: JSON) -> bool:
    selection = claim.get("selection")
    tier = selection.get("tier") if isinstance(selection, dict) else None
    return tier == "allowlisted" and not claim.get("evidence")


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def proposals_bounded(capsule: JSON, graph: JSON) -> bool:
    """At most C(300, 2) proposals and pair scans, counted from above before any is made."""
    claims = capsule["claims"]
    over_budget = _over_budget(capsule) is not None
    bound = sum(map(_deferrable, claims)) + over_budget
    if bound > MAX_PAIRS:
        return False
    per_subject: dict[Any, int] = {}
    for claim in claims:
        per_subject[claim.get("subject")] = per_subject.get(claim.get("subject"), 0) + 1
    by_repository: dict[Any, list[Any]] = {}
    for edge in graph["edges"]:
        if edge.get("kind") == "checkout_of":
            by_repository.setdefault(edge["to"], []).append(edge["from"])
    scans = 0
    for checkouts in by_repository.values():
        considered = sorted(checkouts, key=_utf16)[:MAX_DEDUPE_CHECKOUTS]
        scans += len(considered) * (len(considered) - 1) // 2
        if scans > MAX_PAIRS:
            return False
        counts = sorted(per_subject.get(checkout, 0) for checkout in considered)
        bound += sum(count * index for index, count in enumerate(counts))
        if over_budget and sum(per_subject.get(checkout, 0) for checkout in checkouts) >= 3:
            if len(checkouts) > MAX_DEDUPE_CHECKOUTS:
                return False
            bound += 1
        if bound > MAX_PAIRS:
            return False
    return True


def projection_bounded(graph: JSON) -> bool:
    """Re-projecting the graph (each remote and dirty entry expands into nodes that
    repeat their checkout's path) stays within the node, edge and work limits."""
    expansions, per_path = 0, []
    for node in graph["nodes"]:
        facts = node.get("facts")
        if node.get("kind") != "checkout" or not isinstance(facts, dict):
            continue
        grows = 0
        for name in ("remotes", "dirty_entries"):
            detail = facts.get(name)
            if isinstance(detail, dict) and detail.get("status") == "known":
                if not isinstance(detail.get("value"), list):
                    return False
                grows += len(detail["value"])
        expansions += grows
        if expansions > MAX_NODES:
            return False
        per_path.append((node["path"], grows))
    pairs = neighbor_pairs(graph)
    if pairs is None or pairs > MAX_EDGES:
        return False
    work = work_units(graph)
    if work is None:
        return False
    for path, grows in per_path:
        work += (1 + string_cost(path)) * grows
        if work > MAX_WORK:
            return False
    return True


def conflicts_match(capsule: JSON, graph: JSON) -> tuple[bool, bool]:
    """Whether the capsule hands every graph conflict in its scope to review, as the
    graph states it, and nothing else; and whether finding out stayed within C(300, 2)
    scope comparisons."""
    expected: dict[str, JSON] = {}
    for conflict in capsule["conflicts"]:
        if not (
            isinstance(conflict, dict)
            and conflict.get("decision") == "review_required"
            and identifier(conflict.get("id"))
            and conflict["id"] not in expected
        ):
            return False, True
        expected[conflict["id"]] = {k: v for k, v in conflict.items() if k != "decision"}
    actual = {conflict["id"]: conflict for conflict in graph["conflicts"]}
    if any(actual.get(cid) != conflict for cid, conflict in expected.items()):
        return False, True
    scope = capsule["task"].get("scope") or []
    paths = {node["id"]: node["path"] for node in graph["nodes"] if node["kind"] == "checkout"}
    comparisons = 0
    for conflict in graph["conflicts"]:
        if conflict["id"] in expected:
            continue
        if not scope:
            return False, True
        in_scope = True
        for side in conflict.get("sides") or []:
            for root in scope:
                comparisons += 1
                if comparisons > MAX_PAIRS:
                    return False, False
                if is_within_allowlist(root, paths[side["checkout"]]):
                    break
            else:
                in_scope = False
                break
        if in_scope:
            return False, True
    return True, True


def _context_codes(capsule: JSON, graph: JSON, content: Any) -> list[str]:
    """The capsule is what the graph compiles to, or why we cannot say."""
    bound = capsule["workspace"].get("content_fingerprint")
    if bound is None and content_context.is_present(content):  # (artifacts the capsule's shape refuses)
        return ["repair_graph_context_mismatch"]
    if bound is not None and not (content_context.is_present(content) and fingerprint(content) == bound):
        return ["repair_graph_context_mismatch"]
    topology = capsule["workspace"]["repair_topology_fingerprint"]
    try:
        budget = capsule["budget"]["max_claims"]
        compiled = recompile.compile_capsule(capsule["task"], graph, budget, topology,
                                             content if bound is not None else None)
    except (recompile.RankingUnbounded, ContentUnbounded):
        return ["repair_work_unbounded"]
    except (AttributeError, KeyError, TypeError, ValueError):
        return ["repair_graph_context_mismatch"]
    return [] if canonicalize(compiled) == canonicalize(capsule) else ["repair_graph_context_mismatch"]


def _rest_codes(capsule: JSON, graph: JSON, content: Any) -> list[str]:
    """The checks past the bounds: the graph is its own checkouts' projection, the
    capsule's conflicts and repair topology are the graph's, and the capsule is what the
    graph compiles to."""
    if not workspace_graph.is_canonical(graph):
        return ["invalid_repair_graph"]
    matches, bounded = conflicts_match(capsule, graph)
    if not bounded:
        return ["repair_work_unbounded"]
    if not matches:
        return ["repair_graph_conflicts_mismatch"]
    if capsule["workspace"]["repair_topology_fingerprint"] != workspace_graph.topology_fingerprint(graph):
        return ["repair_graph_topology_unbound"]
    return _context_codes(capsule, graph, content)


def codes(request: JSON, capsule_safe: bool, content_valid: bool) -> list[str]:
    """Why the request's graph cannot carry repairs, in the suite's order; the reason we
    cannot yet judge one that passes every check."""
    graph, capsule = request["graph"], request.get("capsule")
    workspace = request.get("workspace")
    claimed = workspace.get("fingerprint") if isinstance(workspace, dict) else None
    if not graph_safe(graph):
        return ["invalid_repair_graph"]
    if graph["workspace_fingerprint"] != claimed:
        return ["repair_graph_workspace_mismatch"]
    if not capsule_safe or not isinstance(capsule, dict):
        return []
    if graph["observed_at"] != capsule["workspace"].get("observed_at"):
        return ["repair_graph_context_mismatch"]
    if not content_valid:
        return []
    scope = capsule["task"].get("scope") or []
    if not (checkouts_bounded(scope, graph) and context_paths_bounded(scope, graph)):
        return ["repair_work_unbounded"]
    if not estimates_bounded(capsule):
        return ["repair_estimate_unbounded"]
    if not (proposals_bounded(capsule, graph) and projection_bounded(graph)):
        return ["repair_work_unbounded"]
    return _rest_codes(capsule, graph, request.get("content"))
