"""The Task Capsule vivary-core compiles from a workspace graph, rebuilt so a governed
request's capsule can be held to the graph it names: the same claims from the same checkout
facts, ranked by the same question terms and filters, cut at the same budget, with the
same omissions, unknowns, conflicts and derived checks.

A capsule compiled with content also carries the content's claims, omissions and unknowns
(`content_claims.py`) and its `content_fingerprint`.
"""

from __future__ import annotations

from typing import Any

from tropo.canonical import canonicalize, fingerprint
from tropo.governed import content_claims
from tropo.governed.capsule import (
    OMITTED_LIST_CAP,
    SCHEMA,
    TIERS,
    capsule_id,
    claim_id,
)
from tropo.governed.collation import Key, collatable, locale_key, utf16_key
from tropo.governed.content_context import is_present
from tropo.governed.paths import is_within_allowlist, path_identity
from tropo.governed.questions import content_terms, parse_filters, question_terms, word_match
from tropo.governed.required_checks import required_checks
from tropo.governed.workspace_graph import is_git_checkout

#: Candidate claims a compile may rank, and the ranking work it may spend on them.
MAX_CANDIDATES = 10_000
MAX_RANKING_WORK = 1_000_000
DIRTY_PATHS_CAP = 10
FACT_WEIGHTS = {
    "head_revision": 0,
    "head_ref": 1,
    "is_dirty": 2,
    "dirty_entries": 2.5,
    "remotes": 3,
    "last_fetch": 4,
    "content_match": 5,
}
#: How much further down each next content match of one checkout ranks.
CONTENT_STEP = 25
UNKNOWN_FACT_WEIGHT = 9
TIER_BAND = 100
JSON = dict[str, Any]


class RankingUnbounded(ValueError):
    """Ranking the candidates against the question and filters would pass its limit."""


def _in_scope(path: Any, scope: list[str] | None) -> bool:
    return not scope or not path or any(is_within_allowlist(root, path) for root in scope)


def _entry_in_scope(entry: Any, scope: list[str] | None) -> bool:
    if not scope or not isinstance(entry, dict):
        return True
    keys = ("subject_path",) if entry.get("kind") == "content_lines_truncated" else ("path", "subject_path")
    if any(entry.get(key) and not _in_scope(entry[key], scope) for key in keys):
        return False
    return all(
        not (isinstance(side, dict) and side.get("path")) or _in_scope(side["path"], scope)
        for side in entry.get("sides") or []
    )


def _scope_conflicts(conflicts: list[JSON], scope: list[str] | None) -> tuple[list[JSON], list[JSON]]:
    """Conflicts wholly in scope; for the others, an omission per side that is."""
    kept, omitted = [], []
    for conflict in conflicts:
        if _entry_in_scope(conflict, scope):
            kept.append(conflict)
            continue
        for side in conflict.get("sides") or []:
            if isinstance(side, dict) and side.get("path") and _in_scope(side["path"], scope):
                omitted.append(
                    {
                        "kind": "conflict_outside_scope",
                        "conflict": conflict.get("id"),
                        "subject": side.get("checkout"),
                        "subject_path": side["path"],
                        "reason": "one or more conflict sides are outside the declared scope",
                    }
                )
    return kept, omitted


def _fact_claim(node: JSON, name: str, text: Any) -> JSON | None:
    fact = (node.get("facts") or {}).get(name)
    if fact is None or fact.get("status") == "unknown":
        return None
    evidence = fact.get("evidence")
    return {
        "subject": node.get("id"),
        "subject_path": node.get("path"),
        "claim": text(fact.get("value")),
        "fact": name,
        "status": fact.get("status"),
        "evidence": [evidence] if evidence else [],
    }


def _dirty_claim(node: JSON, omissions: list[JSON]) -> JSON | None:
    facts = node.get("facts") or {}
    flag, dirty = facts.get("is_dirty"), facts.get("dirty_entries")
    if not flag or flag.get("value") is not True:
        return None
    if (
        not dirty
        or dirty.get("status") == "unknown"
        or not isinstance(dirty.get("value"), list)
        or not dirty["value"]
    ):
        return None
    entries = dirty["value"]
    listing = ", ".join(f"{e.get('state')} {e.get('path')}" for e in entries[:DIRTY_PATHS_CAP])
    noun = "entry" if len(entries) == 1 else "entries"
    more = len(entries) > DIRTY_PATHS_CAP
    if more:
        omissions.append(
            {
                "kind": "dirty_paths_truncated",
                "subject": node.get("id"),
                "subject_path": node.get("path"),
                "omitted_count": len(entries) - DIRTY_PATHS_CAP,
                "reason": f"dirty-path listing capped at {DIRTY_PATHS_CAP}; "
                f"the exact total ({len(entries)}) is always reported in the claim text",
            }
        )
    evidence = dirty.get("evidence")
    return {
        "subject": node.get("id"),
        "subject_path": node.get("path"),
        "claim": f"worktree has {len(entries)} dirty {noun}: {listing}" + (", \u2026" if more else ""),
        "fact": "dirty_entries",
        "status": dirty.get("status"),
        "evidence": [evidence] if evidence else [],
    }


def _ref_text(ref: Any) -> str:
    if isinstance(ref, dict) and ref.get("kind") == "branch":
        return f"HEAD is on branch '{ref.get('name')}'"
    return "HEAD is detached"


def _remotes_text(remotes: Any) -> str:
    if not remotes:
        return "no remotes are configured"
    named = (
        f"{r.get('name')} -> {r.get('fetch_url') if r.get('fetch_url') is not None else '?'}" for r in remotes
    )
    return "remotes: " + ", ".join(named)


def _candidates(checkouts: list[JSON], omissions: list[JSON]) -> list[JSON]:
    """Every claim a checkout's facts support, in the compiler's fact order."""
    found = []
    for node in checkouts:
        found += [
            _fact_claim(node, "head_revision", lambda sha: f"HEAD revision is {sha}"),
            _fact_claim(node, "head_ref", _ref_text),
            _fact_claim(
                node,
                "is_dirty",
                lambda dirty: "worktree has uncommitted changes" if dirty else "worktree is clean",
            ),
            _dirty_claim(node, omissions),
            _fact_claim(node, "remotes", _remotes_text),
            _fact_claim(node, "last_fetch", lambda at: f"last recorded fetch at {at}"),
        ]
    return [claim for claim in found if claim is not None]


def _sorted(candidates: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """Candidates in collation order, content matches that cannot be collated after them
    by UTF-16 code units; other claims whose text cannot be collated, as omissions."""
    keyed: list[tuple[Key, JSON]] = []
    omitted = []
    for claim in candidates:
        text = f"{claim.get('subject')}:{claim.get('fact')}:{claim.get('claim')}"
        if collatable(text):
            keyed.append(((0, locale_key(text)), claim))
        elif claim.get("fact") == "content_match":
            keyed.append(((1, utf16_key(text)), claim))
        else:
            omitted.append(
                {
                    "kind": "collation_domain_excluded",
                    "subject": claim.get("subject"),
                    "fact": claim.get("fact"),
                    "reason": _domain_reason(text),
                }
            )
    keyed.sort(key=lambda pair: pair[0])
    return [claim for _, claim in keyed], omitted


def _domain_reason(text: str) -> str:
    outside = next(ch for ch in text if not collatable(ch))
    return (
        f"character U+{ord(outside):04X} ({outside!r}) is outside the pinned collation domain; "
        "the Node oracle's ordering for it was never extracted"
    )


def _profiles(graph: JSON, conflicts: list[JSON]) -> dict[str, JSON]:
    """What ranking may match a checkout by: label, path, branch, repository, conflicts."""
    repositories = {n["id"]: n for n in graph["nodes"] if n.get("kind") == "repository"}
    profiles: dict[str, JSON] = {}
    for node in graph["nodes"]:
        if node.get("kind") != "checkout":
            continue
        ref = (node.get("facts") or {}).get("head_ref")
        value = ref.get("value") if isinstance(ref, dict) and ref.get("status") == "known" else None
        branch = value.get("name") if isinstance(value, dict) and value.get("kind") == "branch" else None
        profiles[node["id"]] = {
            "label": node.get("label"),
            "path": node.get("path"),
            "branch": branch,
            "repository": None,
            "conflicts": [],
        }
    for edge in graph["edges"]:
        if (
            edge.get("kind") == "checkout_of"
            and edge.get("from") in profiles
            and edge.get("to") in repositories
        ):
            profiles[edge["from"]]["repository"] = repositories[edge["to"]]
    for conflict in conflicts:
        for side in conflict.get("sides") or []:
            if side.get("checkout") in profiles:
                profiles[side["checkout"]]["conflicts"].append(conflict)
    return profiles


def _profile_of(profiles: dict[str, JSON], claim: JSON) -> JSON | None:
    subject = claim.get("subject")
    return profiles.get(subject) if isinstance(subject, str) else None


def _field(profile: JSON | None, claim: JSON, field: str) -> Any:
    if field == "fact":
        return claim.get("fact")
    if profile is None:
        return None
    if field == "repository":
        repository = profile.get("repository")
        return repository.get("identity") if isinstance(repository, dict) else None
    return profile.get(field)


def _match_value(profile: JSON | None, field: str) -> Any:
    if field == "repository":
        repository = profile.get("repository") if profile else None
        known = isinstance(repository, dict) and repository.get("identity_status") == "known"
        return repository.get("identity") if known and isinstance(repository, dict) else None
    return _field(profile, {}, field)


def _passes(rule: JSON, value: Any) -> bool:
    if value is None:
        return False
    if rule["operator"] == "equals":
        return bool(value == rule["value"])
    return rule["value"].lower() in str(value).lower()


def _rank(profile: JSON | None, terms: list[str], intrinsic: list[JSON]) -> tuple[int, list[JSON], str]:
    """A claim's tier, the signals that placed it there (its own last), and why, in words."""
    conflicts = (profile.get("conflicts") if profile else None) or []
    signals: list[JSON] = [{"signal": "conflict_side", "conflict": c.get("id")} for c in conflicts]
    surfaces = [(field, _match_value(profile, field)) for field in ("label", "repository", "branch")]
    signals += [
        {"signal": "question_term_match", "term": term, "field": field}
        for term in terms
        for field, value in surfaces
        if isinstance(value, str) and word_match(term, value)
    ]
    signals += intrinsic
    if conflicts and profile is not None:
        kind = profile["conflicts"][0].get("kind")
        return (
            0,
            signals,
            (
                f"subject is a side of an unresolved {kind} conflict; "
                "the task question turns on which side is current"
            ),
        )
    match = next((s for s in signals if s["signal"] == "question_term_match"), None)
    if match is not None:
        return 1, signals, f"task question term '{match['term']}' matches the subject {match['field']}"
    found = next((s for s in signals if s["signal"] == "content_term_match"), None)
    if found is not None:
        return 1, signals, f"content match: term '{found['term']}' was found in {found['path']}"
    return 2, [{"signal": "allowlisted"}], "inside the task allowlist; no task-specific relevance signal"


def _ranking_bounded(
    candidates: list[JSON], profiles: dict[str, JSON], terms: list[str], rules: list[JSON]
) -> bool:
    term_units, work = sum(map(len, terms)), 0
    for claim in candidates:
        profile = _profile_of(profiles, claim)
        for rule in rules:
            value = _field(profile, claim, rule["field"])
            work += len(rule["value"]) + (
                len(value) if isinstance(value, str) else 0 if value is None else len(str(value))
            )
            if work > MAX_RANKING_WORK:
                return False
        for field in ("label", "repository", "branch"):
            value = _match_value(profile, field)
            if isinstance(value, str) and value:
                work += len(terms) * len(value) + term_units
                if work > MAX_RANKING_WORK:
                    return False
    return True


def _select(
    task: JSON, graph: JSON, conflicts: list[JSON], candidates: list[JSON], max_claims: int
) -> tuple[list[JSON], list[JSON]]:
    """Filter, rank and cut the candidates: the claims kept and what the cut omits."""
    rules = parse_filters(task.get("filters"))
    if rules is None:
        raise ValueError("task.filters is invalid")
    profiles, terms = _profiles(graph, conflicts), question_terms(task["question"])
    if len(candidates) * (len(terms) + len(rules)) > MAX_RANKING_WORK or not _ranking_bounded(
        candidates, profiles, terms, rules
    ):
        raise RankingUnbounded("ranking work exceeds the compiler limit")
    ranked, filtered = [], 0
    matches_seen: dict[Any, int] = {}
    for candidate in candidates:
        claim = {k: v for k, v in candidate.items() if k != "intrinsic_signals"}
        profile = _profile_of(profiles, claim)
        if not all(_passes(rule, _field(profile, claim, rule["field"])) for rule in rules):
            filtered += 1
            continue
        tier, signals, reason = _rank(profile, terms, candidate.get("intrinsic_signals") or [])
        selection: JSON = {"tier": TIERS[tier], "signals": signals}
        if rules:
            selection["matched_filters"] = [dict(rule) for rule in rules]
        weight = FACT_WEIGHTS.get(str(claim.get("fact")), UNKNOWN_FACT_WEIGHT)
        if claim.get("fact") == "content_match":
            seen = matches_seen.get(claim.get("subject"), 0)
            matches_seen[claim.get("subject")] = seen + 1
            weight += seen * CONTENT_STEP
        tiebreak = utf16_key(f"{claim.get('subject')}:{claim.get('fact')}:{claim.get('claim')}")
        ranked.append(
            (
                (tier * TIER_BAND + weight, tiebreak),
                {**claim, "selection_reason": reason, "selection": selection},
            )
        )
    ranked.sort(key=lambda pair: pair[0])
    kept, cut = [claim for _, claim in ranked[:max_claims]], [claim for _, claim in ranked[max_claims:]]
    omissions: list[JSON] = []
    if filtered:
        omissions.append(
            {
                "kind": "filtered_out",
                "reason": "structured task filters excluded candidate claims",
                "omitted_count": filtered,
                "filters": [{"field": r["field"], r["operator"]: r["value"]} for r in rules],
            }
        )
    if cut:
        over: JSON = {
            "kind": "claims_over_budget",
            "reason": f"claim budget {max_claims} reached; cuts ranked by relevance tier, "
            "weakest evidence first",
            "omitted_count": len(cut),
            "omitted": [
                {"subject_path": c.get("subject_path"), "fact": c.get("fact"), "tier": c["selection"]["tier"]}
                for c in cut[:OMITTED_LIST_CAP]
            ],
        }
        if len(cut) > OMITTED_LIST_CAP:
            over["truncated"] = True
        omissions.append(over)
    return kept, omissions


def compile_capsule(task: JSON, graph: JSON, max_claims: int, topology: str, content: Any = None) -> JSON:
    """The capsule for `task` over a canonical graph (and a valid content artifact, if
    any), as vivary-core compiles it. Raises ValueError where the compiler would refuse,
    RankingUnbounded past the ranking limit and ContentUnbounded past the content's."""
    scope = task.get("scope")
    if not content_claims.scope_bounded(content, scope):
        raise content_claims.ContentUnbounded("content scope work exceeds the compiler limit")
    checkouts = [node for node in graph["nodes"] if is_git_checkout(node)]
    conflicts, conflict_omissions = _scope_conflicts(graph["conflicts"], scope)
    in_scope = [node for node in checkouts if _in_scope(node.get("path"), scope)] if scope else checkouts
    truncated: list[JSON] = []
    candidates = _candidates(in_scope, truncated)
    if len(candidates) > MAX_CANDIDATES:
        raise ValueError("graph candidate work exceeds the compiler limit")
    by_path = {path_identity(str(node.get("path"))): node for node in in_scope}
    matched, outside = content_claims.candidates(content, by_path, content_terms(task["question"]),
                                                 MAX_CANDIDATES - len(candidates))
    candidates, excluded = _sorted(candidates + matched)
    claims, cut = _select(task, graph, conflicts, candidates, max_claims)
    omissions = [
        {
            "kind": "ignored_paths_excluded",
            "reason": "git-ignored paths are excluded from observation by policy and never enter a capsule",
        },
        *conflict_omissions,
        *truncated,
        *outside,
        *excluded,
        *cut,
        *(
            {"kind": "refused_root", "reason": r.get("reason"), "path": r.get("path")}
            for r in graph.get("refusals") or []
            if not scope or any(is_within_allowlist(s, r.get("path")) for s in scope)
        ),
    ]
    content_omissions, content_unknowns = content_claims.omissions_and_unknowns(content, by_path)
    omissions += content_omissions
    checks, check_unknowns = required_checks(
        task, checkouts, [n for n in in_scope if _in_scope(n.get("path"), scope)], scope
    )
    task_out: JSON = {"question": task.get("question")}
    for field in ("scope", "filters", "required_checks"):
        if task.get(field) is not None:
            task_out[field] = list(task[field]) if field != "filters" else task[field]
    workspace = {
        "fingerprint": graph.get("workspace_fingerprint"),
        "observed_at": graph.get("observed_at"),
        "repair_topology_fingerprint": topology,
    }
    if is_present(content):
        workspace["content_fingerprint"] = fingerprint(content)
    capsule: JSON = {
        "schema": SCHEMA,
        "task": task_out,
        "workspace": workspace,
        "claims": [{"id": claim_id(claim), **claim} for claim in claims],
        "conflicts": [{**conflict, "decision": "review_required"} for conflict in conflicts],
        "unknowns": [
            u for u in [*graph["unknowns"], *content_unknowns, *check_unknowns] if _entry_in_scope(u, scope)
        ],
        "omissions": [o for o in omissions if _entry_in_scope(o, scope)],
        "required_checks": checks,
        "budget": {"max_claims": max_claims},
    }
    body_fingerprint = fingerprint(capsule)
    return {
        "capsule_id": capsule_id(task, graph.get("workspace_fingerprint")),
        **capsule,
        "fingerprint": body_fingerprint,
    }


def same_capsule(capsule: JSON, compiled: JSON) -> bool:
    return canonicalize(capsule) == canonicalize(compiled)
