"""The Task Capsule `vivary.task-capsule/v0`: its exact shape, its identity and its
integrity check.

A capsule is the read-only context an agent acts on. A decision trusts it only when
every record has the compiler's shape and the id and body fingerprint recompute, so a
capsule edited after compiling, or one with a forged id, fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tropo.canonical import MAX_SAFE_INTEGER, deterministic_id, fingerprint, is_lossless
from tropo.governed.bounds import nonblank, nonempty
from tropo.governed.paths import is_canonical_absolute
from tropo.governed.questions import FILTER_FIELDS, content_terms, parse_filters, question_terms

SCHEMA = "vivary.task-capsule/v0"
FIELDS = frozenset(
    {
        "capsule_id",
        "schema",
        "task",
        "workspace",
        "claims",
        "conflicts",
        "unknowns",
        "omissions",
        "required_checks",
        "budget",
        "fingerprint",
    }
)
MAX_SCOPE_ROOTS = 1000
OMITTED_LIST_CAP = 16
TIERS = ("conflict_side", "question_match", "allowlisted")


_OMISSION_KEYS: dict[str, frozenset[str]] = {
    kind: frozenset(keys.split())
    for kind, keys in {
        "filtered_out": "kind reason omitted_count filters",
        "refused_root": "kind reason path",
        "dirty_paths_truncated": "kind subject subject_path omitted_count reason",
        "content_matches_outside_task": "kind omitted_count reason",
        "collation_domain_excluded": "kind subject fact reason",
        "conflict_outside_scope": "kind conflict subject subject_path reason",
        "ignored_paths_excluded": "kind reason",
        "neighbor_of_pairs_capped": "kind repository reason omitted_count",
        "content_lines_truncated": "kind subject subject_path path omitted_count reason",
        "content_files_truncated": ("kind subject subject_path omitted_count total_files_matched reason"),
        "privacy_matches_excluded": "kind subject subject_path omitted_count reason evidence",
        "content_root_refused": "kind reason path",
    }.items()
}
_CONTENT_OMISSIONS = frozenset(
    {
        "content_matches_outside_task",
        "content_lines_truncated",
        "content_files_truncated",
        "privacy_matches_excluded",
        "content_root_refused",
    }
)
_UNKNOWN_KEYS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "required_check_undetermined": (
        frozenset(
            [
                "kind",
                "subject",
                "subject_path",
                "reason",
                "observed_markers",
                "resolution",
                "evidence",
            ]
        ),
        ("subject", "subject_path", "reason", "resolution"),
    ),
    "content_snapshot_stale": (
        frozenset(
            [
                "kind",
                "subject",
                "subject_path",
                "reason",
                "observed_revision",
                "searched_revision",
                "evidence",
            ]
        ),
        ("subject", "subject_path", "reason"),
    ),
    "content_search_incomplete": (
        frozenset(["kind", "subject", "subject_path", "status", "reason", "evidence"]),
        ("status", "reason"),
    ),
}


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def claim_id(claim: dict[str, Any]) -> str:
    return deterministic_id(
        "claim",
        {"subject": claim.get("subject"), "fact": claim.get("fact"), "claim": claim.get("claim")},
    )


def capsule_id(task: dict[str, Any], workspace_fingerprint: Any) -> str:
    """The compiler's identity: question, filters and workspace, nothing else."""
    return deterministic_id(
        "capsule",
        {
            "task": task.get("question"),
            "filters": task.get("filters"),
            "workspace": workspace_fingerprint,
        },
    )


def _checks_shape(value: Any) -> bool:
    return _dicts(value) and all(
        nonblank(check.get("name")) and nonblank(check.get("command")) for check in value
    )


def _declared_checks_shape(value: Any) -> bool:
    if not value or not _checks_shape(value):
        return False
    if not all(
        set(check) == {"name", "command", "cwd"} and is_canonical_absolute(check["cwd"]) for check in value
    ):
        return False
    names = [check["name"] for check in value]
    return len(names) == len(set(names))


def _task_shape(task: Any) -> bool:
    if not (
        isinstance(task, dict)
        and nonblank(task.get("question"))
        and set(task) <= {"question", "scope", "filters", "required_checks"}
    ):
        return False
    scope = task.get("scope", ["/"])
    if not (
        isinstance(scope, list)
        and 0 < len(scope) <= MAX_SCOPE_ROOTS
        and all(is_canonical_absolute(root) for root in scope)
    ):
        return False
    if "filters" in task and (task["filters"] is None or parse_filters(task["filters"]) is None):
        return False
    return "required_checks" not in task or _declared_checks_shape(task["required_checks"])


def _workspace_shape(workspace: Any) -> bool:
    return (
        isinstance(workspace, dict)
        and nonempty(workspace.get("fingerprint"))
        and ("content_fingerprint" not in workspace or nonempty(workspace["content_fingerprint"]))
    )


def _claim_shape(claim: Any) -> bool:
    if not isinstance(claim, dict) or not all(
        nonempty(claim.get(field))
        for field in (
            "id",
            "subject",
            "subject_path",
            "fact",
            "claim",
            "status",
            "selection_reason",
        )
    ):
        return False
    selection = claim.get("selection")
    if not (
        claim["status"] == "known"
        and _dicts(claim.get("evidence"))
        and isinstance(selection, dict)
        and nonempty(selection.get("tier"))
        and _dicts(selection.get("signals"))
        and claim["id"] == claim_id(claim)
    ):
        return False
    matched = selection.get("matched_filters")
    return matched is None or _dicts(matched)


def _unknown_shape(unknown: Any) -> bool:
    if not isinstance(unknown, dict):
        return False
    kind = unknown.get("kind")
    if kind is None:
        return (
            set(unknown) == {"checkout", "path", "fact", "reason"}
            and all(nonempty(unknown[field]) for field in ("checkout", "path", "fact"))
            and (unknown["reason"] is None or nonempty(unknown["reason"]))
        )
    if not isinstance(kind, str) or kind not in _UNKNOWN_KEYS:
        return False
    keys, required = _UNKNOWN_KEYS[kind]
    if set(unknown) != keys or not all(nonempty(unknown[field]) for field in required):
        return False
    if not _dicts(unknown["evidence"]):
        return False
    if kind == "required_check_undetermined":
        markers = unknown["observed_markers"]
        return isinstance(markers, list) and bool(markers) and all(map(nonempty, markers))
    optional = (
        ("observed_revision", "searched_revision")
        if kind == "content_snapshot_stale"
        else ("subject", "subject_path")
    )
    return all(unknown[field] is None or nonempty(unknown[field]) for field in optional)


def _side_shape(side: Any) -> bool:
    if not (
        isinstance(side, dict)
        and {"checkout", "path", "head_revision", "head_ref", "last_fetch", "evidence"} <= set(side)
        and nonempty(side["checkout"])
        and nonempty(side["path"])
    ):
        return False
    ref, evidence = side["head_ref"], side["evidence"]
    return (
        (side["head_revision"] is None or nonempty(side["head_revision"]))
        and (
            ref is None
            or (
                isinstance(ref, dict)
                and nonempty(ref.get("kind"))
                and (ref["kind"] != "branch" or nonempty(ref.get("name")))
            )
        )
        and (side["last_fetch"] is None or isinstance(side["last_fetch"], str))
        and (evidence is None or isinstance(evidence, dict) or _dicts(evidence))
    )


def _conflict_shape(conflict: Any) -> bool:
    if not (
        isinstance(conflict, dict)
        and conflict.get("kind") == "divergent_checkouts"
        and conflict.get("status") == "unresolved"
        and conflict.get("decision") == "review_required"
        and all(nonempty(conflict.get(field)) for field in ("id", "repository", "question"))
    ):
        return False
    sides, codes = conflict.get("sides"), conflict.get("reason_codes")
    return (
        isinstance(sides, list)
        and len(sides) >= 2
        and all(_side_shape(side) for side in sides)
        and len({side["checkout"] for side in sides}) == len(sides)
        and isinstance(codes, list)
        and bool(codes)
        and all(map(nonempty, codes))
    )


def _over_budget_shape(omission: dict[str, Any]) -> bool:
    required = {"kind", "reason", "omitted_count", "omitted"}
    if set(omission) not in (required, required | {"truncated"}):
        return False
    count, omitted = omission["omitted_count"], omission["omitted"]
    return (
        type(count) is int
        and count > 0
        and isinstance(omitted, list)
        and len(omitted) == min(count, OMITTED_LIST_CAP)
        and all(
            isinstance(entry, dict)
            and set(entry) == {"subject_path", "fact", "tier"}
            and all(nonempty(entry[field]) for field in ("subject_path", "fact", "tier"))
            and entry["tier"] in TIERS
            for entry in omitted
        )
        and (omission.get("truncated") is True if count > OMITTED_LIST_CAP else "truncated" not in omission)
    )


def _filter_record_shape(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("field") in FILTER_FIELDS
        and len(record) == 2
        and ("equals" in record) != ("includes" in record)
        and nonempty(record.get("equals", record.get("includes")))
    )


def omission_shape(omission: Any) -> bool:
    if not isinstance(omission, dict):
        return False
    kind = omission.get("kind")
    if not nonblank(kind) or not nonblank(omission.get("reason")):
        return False
    if kind == "claims_over_budget":
        return _over_budget_shape(omission)
    if _OMISSION_KEYS.get(str(kind)) != frozenset(omission):
        return False
    if "omitted_count" in omission and not (
        type(omission["omitted_count"]) is int and omission["omitted_count"] > 0
    ):
        return False
    if kind == "filtered_out" and not (
        isinstance(omission["filters"], list)
        and omission["filters"]
        and all(map(_filter_record_shape, omission["filters"]))
    ):
        return False
    if kind == "content_files_truncated" and not (
        type(omission["total_files_matched"]) is int
        and omission["total_files_matched"] >= omission["omitted_count"]
    ):
        return False
    if kind == "privacy_matches_excluded" and not isinstance(omission["evidence"], dict):
        return False
    return all(
        nonempty(omission[field])
        for field in ("path", "subject", "subject_path", "fact", "conflict", "repository")
        if field in omission
    )


def _has_content_artifacts(capsule: dict[str, Any]) -> bool:
    if any(isinstance(c, dict) and c.get("fact") == "content_match" for c in capsule["claims"]):
        return True
    records: Iterable[Any] = [*capsule["unknowns"], *capsule["omissions"]]
    return any(
        isinstance(record, dict)
        and isinstance(record.get("kind"), str)
        and (record["kind"].startswith("content_") or record["kind"] in _CONTENT_OMISSIONS)
        for record in records
    )


def _signal_valid(
    signal: dict[str, Any], terms: list[str], content_terms: set[str], claim: dict[str, Any]
) -> bool:
    kind = signal.get("signal")
    if kind == "conflict_side":
        return set(signal) == {"signal", "conflict"} and nonempty(signal["conflict"])
    if kind == "question_term_match":
        return (
            set(signal) == {"signal", "term", "field"}
            and signal["term"] in terms
            and signal["field"] in ("label", "repository", "branch")
        )
    if kind == "content_term_match":
        term, path = signal.get("term"), signal.get("path")
        return (
            set(signal) == {"signal", "term", "path"}
            and isinstance(term, str)
            and term in content_terms
            and nonempty(path)
            and claim["fact"] == "content_match"
            and claim["claim"].startswith(f"{path}:")
            and f" matches '{term}': \"" in claim["claim"]
        )
    return signal == {"signal": "allowlisted"}


def _matches_filters(task: dict[str, Any], claim: dict[str, Any]) -> bool:
    expected = parse_filters(task.get("filters")) or []
    selection = claim["selection"]
    if not expected:
        return "matched_filters" not in selection
    if selection.get("matched_filters") != expected:
        return False
    observed_of: dict[str, Callable[[], str]] = {
        "fact": lambda: str(claim["fact"]),
        "path": lambda: str(claim["subject_path"]),
    }
    for item in expected:
        if item["field"] not in observed_of:
            continue  # graph-profile fields: the match record is the proof
        observed = observed_of[item["field"]]()
        if item["operator"] == "equals" and observed != item["value"]:
            return False
        if item["operator"] == "includes" and item["value"].lower() not in observed.lower():
            return False
    return True


def _selection_valid(claim: dict[str, Any], capsule: dict[str, Any], conflicts: set[str]) -> bool:
    question = capsule["task"]["question"]
    terms = question_terms(question)
    tier, signals = claim["selection"]["tier"], claim["selection"]["signals"]
    if tier not in TIERS or not signals or not _matches_filters(capsule["task"], claim):
        return False
    seen = set()
    for signal in signals:
        if not _signal_valid(signal, terms, content_terms(question), claim):
            return False
        identity = tuple(sorted(signal.items()))
        if identity in seen:
            return False
        seen.add(identity)
    kinds = [signal["signal"] for signal in signals]
    observed = {signal["conflict"] for signal in signals if signal["signal"] == "conflict_side"}
    if conflicts:
        return tier == "conflict_side" and observed == conflicts and "allowlisted" not in kinds
    if observed:
        return False
    if "question_term_match" in kinds or "content_term_match" in kinds:
        return tier == "question_match" and "allowlisted" not in kinds
    return bool(tier == "allowlisted" and signals == [{"signal": "allowlisted"}])


def is_capsule(capsule: Any) -> bool:
    """The complete policy-facing shape, including every record and selection."""
    if not (
        isinstance(capsule, dict)
        and set(capsule) == FIELDS
        and capsule["schema"] == SCHEMA
        and _task_shape(capsule["task"])
        and nonempty(capsule["capsule_id"])
        and nonempty(capsule["fingerprint"])
        and _workspace_shape(capsule["workspace"])
        and all(
            isinstance(capsule[field], list) for field in ("claims", "conflicts", "unknowns", "omissions")
        )
        and _checks_shape(capsule["required_checks"])
        and isinstance(capsule["budget"], dict)
        and set(capsule["budget"]) == {"max_claims"}
        and type(capsule["budget"]["max_claims"]) is int
        and 0 <= capsule["budget"]["max_claims"] <= MAX_SAFE_INTEGER
    ):
        return False
    for declared in capsule["task"].get("required_checks", []):
        if not any(
            all(check.get(field) == declared[field] for field in ("name", "command", "cwd"))
            for check in capsule["required_checks"]
        ):
            return False
    if "content_fingerprint" not in capsule["workspace"] and _has_content_artifacts(capsule):
        return False
    if not (
        all(map(_claim_shape, capsule["claims"]))
        and all(map(_conflict_shape, capsule["conflicts"]))
        and all(map(_unknown_shape, capsule["unknowns"]))
        and all(map(omission_shape, capsule["omissions"]))
    ):
        return False
    conflicts_of: dict[str, set[str]] = {}
    for conflict in capsule["conflicts"]:
        for side in conflict["sides"]:
            conflicts_of.setdefault(side["checkout"], set()).add(conflict["id"])
    return all(
        _selection_valid(claim, capsule, conflicts_of.get(claim["subject"], set()))
        for claim in capsule["claims"]
    )


def body(document: dict[str, Any], *identity: str) -> dict[str, Any]:
    """The fingerprinted body: the document minus its identity fields."""
    return {key: value for key, value in document.items() if key not in identity}


def is_intact(capsule: Any) -> bool:
    """Shape plus a lossless body whose id and fingerprint both recompute."""
    if not is_capsule(capsule):
        return False
    rest = body(capsule, "capsule_id", "fingerprint")
    return (
        is_lossless(rest)
        and capsule["capsule_id"] == capsule_id(capsule["task"], capsule["workspace"]["fingerprint"])
        and capsule["fingerprint"] == fingerprint(rest)
    )
