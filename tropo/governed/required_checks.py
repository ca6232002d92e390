"""The checks a capsule requires: the ones a workspace's markers imply (vivary-core's
derivation, each with its evidence), the task's declared ones added beside them and never
rewriting one, and an unknown for each test system whose command cannot be told.
"""

from __future__ import annotations

from typing import Any

from tropo.governed.paths import is_within_allowlist, path_identity

_DOCTOR_MARKERS = frozenset({"tropo.toml", "AGENTS.md", "STRATO.md"})
_AMBIGUOUS_TEST_MARKERS = ("pyproject.toml", "tox.ini", "noxfile.py", "Cargo.toml", "go.mod", "Makefile")
JSON = dict[str, Any]


def known_value(node: JSON, name: str) -> Any:
    """A checkout fact's value when the observation knows it, else None."""
    fact = (node.get("facts") or {}).get(name)
    return fact.get("value") if fact is not None and fact.get("status") == "known" else None


def _derived_checks(checkouts: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """The checks a workspace can be verified with (each with the evidence for it), and
    an unknown for each test system whose command cannot be told."""
    checks: list[JSON] = []
    unknowns: list[JSON] = []
    seen: set[tuple[str, str]] = set()

    def add(name: str, command: str, evidence: Any, cwd: str) -> None:
        if (path_identity(cwd), command) not in seen:
            seen.add((path_identity(cwd), command))
            checks.append({"name": name, "command": command, "cwd": cwd, "evidence": evidence})

    for node in checkouts:
        facts = node.get("facts") or {}
        markers = known_value(node, "workspace_markers") or []
        evidence = (facts.get("workspace_markers") or {}).get("evidence")
        cwd = str(known_value(node, "worktree_root") or node.get("path"))
        suffix = f"@{node.get('id')}"
        if _DOCTOR_MARKERS.issubset(markers):
            add(f"vivary-graph-doctor{suffix}", "create-vivary doctor . --json", evidence, cwd)
        if "tropo.toml" in markers:
            add(f"vivary-graph-check{suffix}", "tropo check --root . --json", evidence, cwd)
        npm = facts.get("npm_test_script") or {}
        if npm.get("status") == "known" and npm.get("value"):
            add(f"project-tests{suffix}", "npm test", npm.get("evidence"), cwd)
        if any(marker in markers for marker in _AMBIGUOUS_TEST_MARKERS):
            unknowns.append(
                {
                    "kind": "required_check_undetermined",
                    "subject": node.get("id"),
                    "subject_path": node.get("path"),
                    "reason": "a test system is present but the command it is run with cannot be "
                    "determined from observation",
                    "observed_markers": [m for m in markers if m in _AMBIGUOUS_TEST_MARKERS],
                    "resolution": "pass task.required_checks with this checkout's cwd to state the command "
                    "explicitly",
                    "evidence": [evidence] if evidence else [],
                }
            )
    return checks, unknowns


def _declared_cwds_observed(declared: list[JSON], checkouts: list[JSON], scope: list[str] | None) -> bool:
    found = [(n.get("path"), known_value(n, "worktree_root") or n.get("path")) for n in checkouts]
    roots: list[tuple[str, str]] = [
        (path, root)
        for path, root in found
        if isinstance(path, str) and path and isinstance(root, str) and root
    ]
    allowed = {
        path_identity(root)
        for path, root in roots
        if not scope or any(is_within_allowlist(s, path) for s in scope)
    }
    for scope_root in scope or []:
        nearest: str | None = None
        for _, root in roots:
            if is_within_allowlist(root, scope_root) and (nearest is None or len(root) > len(nearest)):
                nearest = root
        if nearest is not None:
            allowed.add(path_identity(nearest))
    return all(path_identity(check["cwd"]) in allowed for check in declared)


def required_checks(
    task: JSON, checkouts: list[JSON], scoped: list[JSON], scope: list[str] | None
) -> tuple[list[JSON], list[JSON]]:
    """Derived checks with the task's declared ones added (never rewriting one), and the
    unknowns the declared ones do not resolve."""
    checks, unknowns = _derived_checks(scoped)
    declared = task.get("required_checks")
    if declared is None:
        return checks, unknowns
    if not _declared_cwds_observed(declared, checkouts, scope):
        raise ValueError("task.required_checks cwd must name a Git checkout execution root")
    merged, by_name, resolving = list(checks), {c["name"]: c for c in checks}, set()
    for check in declared:
        existing = by_name.get(check["name"])
        if existing is not None:
            if existing["command"] != check["command"] or path_identity(existing["cwd"]) != path_identity(
                check["cwd"]
            ):
                raise ValueError("task.required_checks cannot rewrite an observed check")
            continue
        merged.append(dict(check))
        by_name[check["name"]] = check
        resolving.add(path_identity(check["cwd"]))
    if resolving:
        resolved = {
            n.get("id")
            for n in scoped
            if path_identity(str(known_value(n, "worktree_root") or n.get("path"))) in resolving
        }
        unknowns = [u for u in unknowns if u.get("subject") not in resolved]
    return merged, unknowns
