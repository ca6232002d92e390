"""Context-repair proposals (`vivary.context-repair-proposal/v0`) over a verified capsule
and the workspace graph it was compiled from: which claims to open on demand, whether to
split an over-budget task, which duplicated facts of one repository's checkouts to route
through one owner or an index. Report only: nothing is written, every proposal needs a
gate, and every token figure is an approximate estimate from lengths alone.

A proposal cites opaque ids and counts, never a path or a claim's text; a pair of checkouts
in unresolved conflict gets no deduplicate proposal (it is `withheld`), so no winner is
chosen for either side.
"""

from __future__ import annotations

import math
from typing import Any

from tropo.canonical import deterministic_id, fingerprint
from tropo.governed.collation import locale_key, utf16_key
from tropo.governed.repair_context import OMITTED_CLAIM_TOKENS

SCHEMA = "vivary.context-repair-proposal/v0"
CHARS_PER_TOKEN = 4
JSON = dict[str, Any]


def _estimate(tokens: int) -> JSON:
    return {"token_savings": tokens, "estimate_quality": "approximate"}


def _tokens(text: Any) -> int:
    return max(1, math.ceil((len(text) if isinstance(text, str) else 0) / CHARS_PER_TOKEN))


def _proposal(
    kind: str, identity: JSON, target: Any, purpose: str, evidence: list[Any], tokens: int, **extra: Any
) -> JSON:
    return {
        "id": deterministic_id("repair", {"kind": kind, **identity}),
        "kind": kind,
        "status": "proposed",
        "target": target,
        "purpose": purpose,
        "evidence": evidence,
        **extra,
        "requires_gate": True,
        "estimate": _estimate(tokens),
    }


def _open_first(claims: list[JSON]) -> list[JSON]:
    """The weakest claims (allowlisted, no evidence) are opened on demand instead."""
    return [
        _proposal(
            "open_first",
            {"claim": claim.get("id")},
            claim.get("id"),
            "claim carries the weakest relevance tier ('allowlisted') and cites no evidence; "
            "open its source on demand instead of pre-expanding it into every capsule",
            [claim.get("id")],
            _tokens(claim.get("claim")),
        )
        for claim in claims
        if (claim.get("selection") or {}).get("tier") == "allowlisted" and not claim.get("evidence")
    ]


def _split(capsule: JSON, cut: JSON) -> JSON:
    """An over-budget task is split rather than the budget widened; the cut claims are
    cited by rehashed ids, not their paths."""
    omitted = cut.get("omitted") or []
    cited = [
        deterministic_id("omitted-claim", {"subject_path": e.get("subject_path"), "fact": e.get("fact")})
        for e in omitted
    ]
    tiers = sorted(dict.fromkeys(e.get("tier") for e in omitted), key=utf16_key)
    listed = f" (tiers cut: {', '.join(tiers)})" if tiers else ""
    return _proposal(
        "split",
        {"capsule": capsule.get("capsule_id")},
        capsule.get("capsule_id"),
        f"capsule cut {cut.get('omitted_count')} claim(s) at the budget boundary{listed}; propose "
        "splitting the task into narrower per-subject questions instead of widening the budget",
        [capsule.get("capsule_id"), "omission:claims_over_budget", *cited],
        cut["omitted_count"] * OMITTED_CLAIM_TOKENS,
    )


def _conflicting_pairs(graph: JSON) -> dict[Any, set[str]]:
    pairs: dict[Any, set[str]] = {}
    for conflict in graph.get("conflicts") or []:
        sides = sorted((side.get("checkout") for side in conflict.get("sides") or []), key=utf16_key)
        found = pairs.setdefault(conflict.get("repository"), set())
        found.update(f"{a}|{b}" for i, a in enumerate(sides) for b in sides[i + 1 :])
    return pairs


def _duplicates(repository: Any, a: str, b: str, by_subject: dict[Any, list[JSON]]) -> list[JSON]:
    """One proposal per fact both checkouts assert with the same value; the one citing
    more evidence is named the owner."""
    b_claims = {claim.get("fact"): claim for claim in by_subject.get(b, [])}
    proposals = []
    for claim_a in by_subject.get(a, []):
        claim_b = b_claims.get(claim_a.get("fact"))
        if not claim_b or claim_a.get("claim") != claim_b.get("claim"):
            continue
        fact = claim_a.get("fact")
        count_a, count_b = len(claim_a.get("evidence") or []), len(claim_b.get("evidence") or [])
        owner = None if count_a == count_b else a if count_a > count_b else b
        proposals.append(
            _proposal(
                "deduplicate",
                {"repository": repository, "sides": [a, b], "fact": fact},
                repository,
                f"checkouts {a} and {b} of the same repository both carry a claim for '{fact}'; "
                "route the fact through one owning checkout instead of duplicating it in the capsule",
                [claim_a.get("id"), claim_b.get("id")],
                _tokens(claim_a.get("claim")),
                cites=[a, b],
                ownership={
                    "subject": owner,
                    "basis": "more_evidence_citations" if owner else "tie_no_preference",
                },
            )
        )
    return proposals


def propose(capsule: JSON, graph: JSON) -> JSON:
    """The proposal document for a capsule verified against its graph."""
    claims = capsule.get("claims") or []
    proposals = _open_first(claims)
    cut = next((o for o in capsule.get("omissions") or [] if o.get("kind") == "claims_over_budget"), None)
    if cut is not None:
        proposals.append(_split(capsule, cut))
    by_subject: dict[Any, list[JSON]] = {}
    for claim in claims:
        by_subject.setdefault(claim.get("subject"), []).append(claim)
    by_repository: dict[Any, list[Any]] = {}
    for edge in graph.get("edges") or []:
        if edge.get("kind") == "checkout_of":
            by_repository.setdefault(edge.get("to"), []).append(edge.get("from"))
    conflicting = _conflicting_pairs(graph)
    withheld = []
    for repository, checkouts in sorted(by_repository.items(), key=lambda item: locale_key(item[0])):
        if len(checkouts) < 2:
            continue
        # At most 45 checkouts of one repository get this far (the neighbour edges of more
        # pass the graph's 1,000-edge bound), so the suite's pairwise cap never engages.
        ordered = sorted(checkouts, key=utf16_key)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                found = _duplicates(repository, a, b, by_subject)
                if found and f"{a}|{b}" in conflicting.get(repository, set()):
                    withheld.append(
                        {
                            "kind": "deduplicate",
                            "repository": repository,
                            "sides": [a, b],
                            "reason": "conflict_unresolved",
                        }
                    )
                else:
                    proposals += found
        count = sum(len(by_subject.get(checkout, [])) for checkout in ordered)
        if cut is not None and count >= 3:
            proposals.append(
                _proposal(
                    "route_through_index",
                    {"repository": repository},
                    "modules/index.md",
                    f"repository {repository} contributes {count} claim(s) across {len(checkouts)} "
                    "checkouts under budget pressure; route its recurring facts through a persisted index "
                    "entry instead of re-deriving them every capsule",
                    [repository, *ordered],
                    count * OMITTED_CLAIM_TOKENS,
                )
            )
    body: JSON = {
        "schema": SCHEMA,
        "capsule": {"id": capsule.get("capsule_id"), "fingerprint": capsule.get("fingerprint")},
        "proposals": proposals,
        "withheld": withheld,
    }
    body.update({"writes_performed": 0, "requires_gate": bool(proposals)})
    return {**body, "fingerprint": fingerprint(body)}
