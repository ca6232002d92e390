"""The workspace content (`vivary.workspace-content/v0`) a governed request offers beside
its capsule: the term matches found in each checkout's tracked files, which a capsule bound
to a `content_fingerprint` was compiled with. Whether it is complete, well formed and cheap
enough to check, as vivary-ozone 0.3.2 decides before it would recompile anything.

Three forms mean "no content" (absent, `{}`, `{"checkouts": []}`); a complete artifact with
no checkouts and no refusals is valid but presents nothing either.
"""

from __future__ import annotations

from typing import Any

from tropo.governed.bounds import count_at_least, nonblank, nonempty
from tropo.governed.freshness import parse_instant
from tropo.governed.paths import (
    is_canonical_absolute,
    is_checkout_relative,
    is_within_allowlist,
    normalize,
    path_identity,
)

SCHEMA = "vivary.workspace-content/v0"
FIELDS = frozenset({"schema", "observed_at", "terms", "allowlist", "checkouts", "refusals"})
#: Source records (checkouts, refusals, their matches and omissions) a check may visit.
MAX_RECORDS = 10_000
#: Path comparisons and characters a check may spend on them.
MAX_PATH_WORK = 1_000_000
_OBSERVED = frozenset({"raw_path", "path", "status", "head_revision", "matches", "omissions"})
_UNKNOWN = frozenset({"raw_path", "path", "status", "reason", "matches", "omissions", "evidence"})
JSON = dict[str, Any]


def is_empty(content: Any) -> bool:
    return content is None or (
        type(content) is dict
        and (not content or (set(content) == {"checkouts"} and content["checkouts"] == []))
    )


def _instant(value: Any) -> bool:
    # Every `Z` read as UTC, as the suite reads this field (not only a trailing one).
    return nonblank(value) and parse_instant(value.replace("Z", "+00:00")) is not None


def _evidence(value: Any) -> bool:
    return type(value) is dict and set(value) == {"command"} and nonempty(value["command"])


def _match(match: Any, terms: frozenset[str]) -> bool:
    return (
        type(match) is dict
        and set(match) == {"path", "line", "excerpt", "term", "evidence"}
        and is_checkout_relative(match["path"])
        and count_at_least(match["line"], 1)
        and isinstance(match["excerpt"], str)
        and nonempty(match["term"])
        and match["term"] in terms
        and _evidence(match["evidence"])
    )


def _omission(omission: Any) -> bool:
    if type(omission) is not dict:
        return False
    fields, kind = set(omission), omission.get("kind")
    if kind == "content_lines_truncated":
        return (
            fields == {"kind", "path", "omitted_count", "reason"}
            and is_checkout_relative(omission["path"])
            and count_at_least(omission["omitted_count"], 1)
            and nonblank(omission["reason"])
        )
    if kind == "content_files_truncated":
        return (
            fields == {"kind", "omitted_count", "total_files_matched", "reason"}
            and count_at_least(omission["omitted_count"], 1)
            and count_at_least(omission["total_files_matched"], omission["omitted_count"])
            and nonblank(omission["reason"])
        )
    return (
        kind == "privacy_matches_excluded"
        and fields == {"kind", "omitted_count", "reason", "evidence"}
        and count_at_least(omission["omitted_count"], 1)
        and nonblank(omission["reason"])
        and _evidence(omission["evidence"])
    )


def _observed(checkout: JSON, terms: frozenset[str]) -> bool:
    """A searched checkout: its matches and omissions, and either the revision and
    privacy policy searched under, or `no_question_terms` and nothing found."""
    fields = set(checkout)
    if fields not in (_OBSERVED | {"privacy_fingerprint"}, _OBSERVED | {"reason"}):
        return False
    head, matches, omissions = checkout["head_revision"], checkout["matches"], checkout["omissions"]
    if not (
        (head is None or nonempty(head))
        and type(matches) is list
        and type(omissions) is list
        and all(_match(match, terms) for match in matches)
        and all(map(_omission, omissions))
    ):
        return False
    if "privacy_fingerprint" in fields:
        return bool(terms) and nonempty(head) and nonempty(checkout["privacy_fingerprint"])
    nothing = head is None and not matches and not omissions
    return checkout["reason"] == "no_question_terms" and not terms and nothing


def _checkout(checkout: Any, terms: frozenset[str]) -> bool:
    if not (
        type(checkout) is dict
        and nonempty(checkout.get("raw_path"))
        and is_canonical_absolute(checkout.get("path"))
        and normalize(checkout["raw_path"]) == checkout["path"]
    ):
        return False
    if checkout.get("status") == "observed":
        return _observed(checkout, terms)
    return (
        checkout.get("status") == "unknown"
        and set(checkout) == _UNKNOWN
        and nonblank(checkout["reason"])
        and checkout["matches"] == []
        and checkout["omissions"] == []
        and _evidence(checkout["evidence"])
    )


def _refusal(refusal: Any, allowlist: list[str]) -> bool:
    """A root refused as outside the allowlist (written so, or resolved so by a link)."""
    if not (
        type(refusal) is dict
        and set(refusal) == {"raw_path", "path", "status", "reason"}
        and nonempty(refusal["raw_path"])
        and nonempty(refusal["path"])
        and normalize(refusal["path"]) == refusal["path"]
        and normalize(refusal["raw_path"]) == refusal["path"]
        and refusal["status"] == "refused"
    ):
        return False
    canonical = is_canonical_absolute(refusal["path"])
    inside = any(is_within_allowlist(root, refusal["path"]) for root in allowlist)
    if refusal["reason"] == "outside_allowlist":
        return not canonical or not inside
    return refusal["reason"] == "resolved_outside_allowlist" and canonical and inside


def _unique(content: JSON) -> bool:
    """No source named twice, and no checkout matching one line for one term twice."""
    sources = [path_identity(record["path"]) for record in [*content["checkouts"], *content["refusals"]]]
    if len(set(sources)) != len(sources):
        return False
    for checkout in content["checkouts"]:
        root = checkout["path"].rstrip("/")
        keys = [(path_identity(f"{root}/{m['path']}"), m["line"], m["term"]) for m in checkout["matches"]]
        if len(set(keys)) != len(keys):
            return False
    return True


def work_bounded(content: Any) -> bool:
    """Checking the content stays within the record and path-work limits (a content
    too malformed to count is left to `is_valid`)."""
    if not isinstance(content, dict):
        return True
    checkouts, refusals = content.get("checkouts"), content.get("refusals")
    allowlist = content.get("allowlist")
    if not (isinstance(checkouts, list) and isinstance(refusals, list) and isinstance(allowlist, list)):
        return True
    sources = len(checkouts) + len(refusals)
    if sources > MAX_RECORDS or sources * len(allowlist) > MAX_PATH_WORK:
        return False
    root_units = sum(len(root) for root in allowlist if isinstance(root, str))
    path_units = sum(
        len(record["path"])
        for record in [*checkouts, *refusals]
        if isinstance(record, dict) and isinstance(record.get("path"), str)
    )
    if sources * root_units + len(allowlist) * path_units > MAX_PATH_WORK:
        return False
    records, prefix = sources, 0
    for checkout in checkouts:
        if not isinstance(checkout, dict):
            continue
        matches, omissions = checkout.get("matches"), checkout.get("omissions")
        if not (isinstance(matches, list) and isinstance(omissions, list)):
            continue
        records += len(matches) + len(omissions)
        if isinstance(checkout.get("path"), str):
            prefix += len(checkout["path"]) * (len(matches) + len(omissions))
            if prefix > MAX_PATH_WORK:
                return False
        if records > MAX_RECORDS:
            return False
    return True


def is_valid(content: Any) -> bool:
    """No content, or a complete artifact: every checkout and refusal well formed and
    inside its allowlist, none named twice."""
    if is_empty(content):
        return True
    if not (
        type(content) is dict
        and set(content) == FIELDS
        and content["schema"] == SCHEMA
        and _instant(content["observed_at"])
        and type(content["terms"]) is list
        and all(map(nonempty, content["terms"]))
        and type(content["allowlist"]) is list
        and content["allowlist"]
        and all(map(is_canonical_absolute, content["allowlist"]))
        and work_bounded(content)
        and type(content["checkouts"]) is list
        and type(content["refusals"]) is list
    ):
        return False
    terms, allowlist = frozenset(content["terms"]), content["allowlist"]
    return (
        all(
            _checkout(checkout, terms)
            and any(is_within_allowlist(root, checkout["path"]) for root in allowlist)
            for checkout in content["checkouts"]
        )
        and all(_refusal(refusal, allowlist) for refusal in content["refusals"])
        and _unique(content)
    )


def is_present(content: Any) -> bool:
    """Content that says something: not empty, and not a valid artifact of nothing."""
    if is_empty(content):
        return False
    return not (is_valid(content) and content["checkouts"] == [] and content["refusals"] == [])


def codes(content: Any, required: bool) -> list[str]:
    """Why the content cannot stand beside a capsule that does (``required``) or does not
    carry a `content_fingerprint`, in the suite's order of precedence."""
    if not work_bounded(content):
        return ["repair_work_unbounded"]
    if not is_valid(content):
        return ["invalid_content_context"]
    supplied = is_present(content)
    if required and not supplied:
        return ["content_context_required"]
    if supplied and not required:
        return ["invalid_content_context"]
    return []
