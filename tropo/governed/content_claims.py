"""What a workspace content artifact adds to a capsule vivary-core compiles beside a graph:
a claim per term match of a checkout whose content was searched at the graph's revision
under the same privacy policy, the matches left out for terms the question does not ask
about, the checkouts' own omissions, unknowns for a stale or incomplete search, and the
roots the search refused. The content is a valid artifact (`content_context.py`) by now."""

from __future__ import annotations

from typing import Any

from tropo.governed.capsule import omission_shape
from tropo.governed.collation import utf16_key
from tropo.governed.content_context import is_empty
from tropo.governed.paths import is_checkout_relative, path_identity

#: Scope comparisons and characters a compile may spend placing content records in scope.
MAX_SCOPE_WORK = 1_000_000
JSON = dict[str, Any]


class ContentUnbounded(ValueError):
    """Gathering or scoping the content's claims would pass the compiler's limit."""


def _known(node: JSON, name: str) -> Any:
    fact = (node.get("facts") or {}).get(name)
    return fact.get("value") if fact is not None and fact.get("status") == "known" else None


def is_bound(node: JSON, searched: JSON) -> bool:
    """The content was searched at the revision and under the privacy policy the graph saw."""
    head, privacy = _known(node, "head_revision"), _known(node, "content_privacy_fingerprint")
    return bool(head) and head == searched.get("head_revision") and bool(privacy) and (
        privacy == searched.get("privacy_fingerprint"))


def scope_bounded(content: Any, scope: Any) -> bool:
    if scope is None or is_empty(content):
        return True
    occurrences = units = 0
    for checkout in content["checkouts"]:
        matches, each = checkout["matches"], len(checkout["matches"]) + len(checkout["omissions"]) + 1
        occurrences += each
        units += len(checkout["path"]) * each
        units += sum(len(m["path"]) for m in matches if isinstance(m.get("path"), str))
    for refusal in content["refusals"]:
        occurrences += 1
        units += len(refusal["path"])
    roots = [root for root in scope if isinstance(root, str)]
    work = occurrences * len(scope) + occurrences * sum(map(len, roots)) + units * len(scope)
    return work <= MAX_SCOPE_WORK


def candidates(
    content: Any, by_path: dict[str, JSON], terms: set[str], limit: int
) -> tuple[list[JSON], list[JSON]]:
    """A candidate claim per match of a bound checkout on a question term, and an omission
    counting the matches left out."""
    found: list[JSON] = []
    outside = work = 0
    for searched in (content or {}).get("checkouts") or []:
        work += 1
        if work > limit:
            raise ContentUnbounded("content candidate work exceeds the compiler limit")
        node = by_path.get(path_identity(searched.get("path")))
        if node is None or not is_bound(node, searched):
            continue
        matches = sorted(searched.get("matches") or [],
                         key=lambda m: (utf16_key(m["path"]), m["line"], utf16_key(m["term"])))
        for match in matches:
            work += 1
            if work > limit:
                raise ContentUnbounded("content candidate work exceeds the compiler limit")
            if not is_checkout_relative(match.get("path")) or match.get("term") not in terms:
                outside += 1
                continue
            evidence = match.get("evidence")
            found.append({
                "subject": node.get("id"),
                "subject_path": node.get("path"),
                "claim": f"{match.get('path')}:{match.get('line')} matches '{match.get('term')}': "
                         f"\"{match.get('excerpt')}\"",
                "fact": "content_match",
                "status": "known",
                "evidence": [evidence] if evidence else [],
                "intrinsic_signals": [{"signal": "content_term_match", "term": match.get("term"),
                                       "path": match.get("path")}],
            })
    omitted = [{"kind": "content_matches_outside_task", "omitted_count": outside,
                "reason": "content match terms must be normalized task question terms"}] if outside else []
    return found, omitted


def omissions_and_unknowns(content: Any, by_path: dict[str, JSON]) -> tuple[list[JSON], list[JSON]]:
    """The bound checkouts' own omissions and the refused roots; unknowns for content
    searched at another revision or policy, and for a search that did not complete."""
    omissions: list[JSON] = []
    unknowns: list[JSON] = []
    for searched in (content or {}).get("checkouts") or []:
        node = by_path.get(path_identity(searched.get("path")))
        if node is not None and is_bound(node, searched):
            for omission in searched.get("omissions") or []:
                entry = {**omission, "subject": node.get("id"), "subject_path": searched.get("path")}
                if not omission_shape(entry):
                    raise ValueError("content contains a malformed omission")
                omissions.append(entry)
        stale = searched.get("status") == "observed" and content.get("terms")
        if node is not None and stale and not is_bound(node, searched):
            unknowns.append({
                "kind": "content_snapshot_stale",
                "subject": node.get("id"),
                "subject_path": searched.get("path"),
                "reason": "content was observed at a different revision or under a "
                          "different effective privacy policy than the graph describes",
                "observed_revision": _known(node, "head_revision"),
                "searched_revision": searched.get("head_revision"),
                "evidence": [],
            })
        if searched.get("status") not in (None, "observed"):
            unknowns.append({
                "kind": "content_search_incomplete",
                "subject": node.get("id") if node is not None else None,
                "subject_path": searched.get("path"),
                "status": searched.get("status"),
                "reason": searched.get("reason") or "content_search_unavailable",
                "evidence": [searched["evidence"]] if searched.get("evidence") else [],
            })
    omissions += [{"kind": "content_root_refused", "reason": r.get("reason"), "path": r.get("path")}
                  for r in (content or {}).get("refusals") or []]
    return omissions, unknowns
