"""Tasks: dependency readiness, and a task's control status beside its execution
evidence.

Completion only ever changes the task's own status and never sees the execution
log, so marking a task done cannot hide a failed verification: the integrity view
always reports the evidence recorded for the task's capsule.
"""

from __future__ import annotations

from typing import Any

from exo.control.text import is_bounded_text, is_trimmed
from tropo.canonical import canonicalize, deterministic_id, is_lossless

MAX_TASKS = 10_000
MAX_DEPENDENCY_EDGES = 100_000
MAX_EDGES = 10_000
_MAX_TASK_ID_BYTES = 256
_MAX_STATUS_BYTES = 64
OUTCOMES = frozenset({"passed", "failed", "skipped"})
EDGE_FIELDS = frozenset({"edge_id", "kind", "receipt_id", "receipt_fingerprint", "capsule_id",
                         "capsule_fingerprint", "position", "name", "command", "outcome",
                         "detail"})
UNKNOWN_TASK = "unknown_task"
UNKNOWN_TASK_SHAPE = "unknown_task_shape"
UNKNOWN_LOG_SHAPE = "unknown_execution_log_shape"
EDGE_IDENTITY_CONFLICT = "execution_edge_identity_conflict"
EXECUTION_UNBOUNDED = "execution_work_unbounded"


def _task_text(value: Any, max_bytes: int) -> bool:
    # Task ids and statuses are compared, never displayed as identities: the suite
    # lets control characters through here, and so must we for equal answers.
    return is_bounded_text(value, max_bytes, controls_allowed=True)


def _graph_code(tasks: Any) -> str | None:
    if type(tasks) is not list:
        return UNKNOWN_TASK
    if len(tasks) > MAX_TASKS:
        return "dependency_work_unbounded"
    seen: set[str] = set()
    edges = 0
    for task in tasks:
        if not (type(task) is dict and _task_text(task.get("id"), _MAX_TASK_ID_BYTES)
                and _task_text(task.get("status"), _MAX_STATUS_BYTES)
                and type(task.get("depends_on", [])) in (list, type(None))):
            return UNKNOWN_TASK
        needs = task.get("depends_on") or []
        if len(needs) > MAX_DEPENDENCY_EDGES - edges:
            return "dependency_work_unbounded"
        if not all(_task_text(need, _MAX_TASK_ID_BYTES) for need in needs) or task["id"] in seen:
            return UNKNOWN_TASK
        edges += len(needs)
        seen.add(task["id"])
    return None


def _first_cycle(tasks: list[dict[str, Any]]) -> list[str]:
    """The first cycle a depth-first walk in task order meets, closed by its start
    (``[a, b, a]``), or ``[]``. Iterative, so a long chain costs no stack."""
    by_id = {task["id"]: task for task in tasks}
    done: set[str] = set()
    for start in tasks:
        if start["id"] in done:
            continue
        path = [start["id"]]
        on_path = {start["id"]: 0}
        cursors = [0]
        while path:
            needs = by_id[path[-1]].get("depends_on") or []
            if cursors[-1] >= len(needs):
                done.add(path[-1])
                del on_path[path.pop()]
                cursors.pop()
                continue
            need = needs[cursors[-1]]
            cursors[-1] += 1
            if need in on_path:
                return [*path[on_path[need]:], need]
            if need in by_id and need not in done:
                on_path[need] = len(path)
                path.append(need)
                cursors.append(0)
    return []


def evaluate_dependencies(tasks: Any, task_id: Any) -> dict[str, Any]:
    """``ready`` when every dependency of ``task_id`` is done; a cycle anywhere in the
    graph blocks it, as typed evidence."""
    def blocked(code: str, unmet: list[str] | None = None,
                cycle: list[str] | None = None) -> dict[str, Any]:
        return {"decision": "blocked", "reason_codes": [code], "unmet": unmet or [],
                "cycle": cycle or []}

    code = _graph_code(tasks)
    if code is not None:
        return blocked(code)
    by_id = {task["id"]: task for task in tasks}
    if not _task_text(task_id, _MAX_TASK_ID_BYTES) or task_id not in by_id:
        return blocked(UNKNOWN_TASK)
    cycle = _first_cycle(tasks)
    if cycle:
        return blocked("dependency_cycle", cycle=cycle)
    unmet = [need for need in by_id[task_id].get("depends_on") or []
             if need not in by_id or by_id[need].get("status") != "done"]
    if unmet:
        return blocked("dependency_not_satisfied", unmet=unmet)
    return {"decision": "ready", "reason_codes": [], "unmet": [], "cycle": []}


def edge_id(receipt_fingerprint: str, name: str, position: int) -> str:
    """An execution edge's identity: the receipt, the check and its position."""
    return deterministic_id("exec-edge", {"receipt": receipt_fingerprint, "check": name,
                                          "position": position})


def _is_edge(edge: Any) -> bool:
    return (
        type(edge) is dict
        and set(edge) == EDGE_FIELDS
        and all(is_trimmed(edge[k]) for k in ("edge_id", "receipt_id", "receipt_fingerprint",
                                                "capsule_id", "capsule_fingerprint", "name",
                                                "command"))
        and edge["kind"] == "check"
        and type(edge["position"]) is int
        and edge["position"] >= 0
        and isinstance(edge["outcome"], str)
        and edge["outcome"] in OUTCOMES
        and is_lossless(edge["detail"])
        and edge["edge_id"] == edge_id(edge["receipt_fingerprint"], edge["name"], edge["position"])
    )


def log_code(log: Any) -> str | None:
    """Why an execution log is unusable: not a list of exact edges, too long, or one id
    carrying two different records (or the same one twice)."""
    if type(log) is not list:
        return UNKNOWN_LOG_SHAPE
    if len(log) > MAX_EDGES:
        return EXECUTION_UNBOUNDED
    seen: dict[str, str] = {}
    for edge in log:
        if not _is_edge(edge):
            return UNKNOWN_LOG_SHAPE
        body = canonicalize(edge)
        previous = seen.setdefault(edge["edge_id"], body)
        if previous is not body:
            return EDGE_IDENTITY_CONFLICT if previous != body else UNKNOWN_LOG_SHAPE
    return None


def _is_task(task: Any, *, needs_capsule: bool) -> bool:
    return (type(task) is dict and is_trimmed(task.get("task_id"))
            and is_trimmed(task.get("status"))
            and (not needs_capsule or is_trimmed(task.get("capsule_id"))))


def task_view(task: Any, log: Any) -> dict[str, Any]:
    """The task's status beside every execution edge of its capsule, failed ones
    called out."""
    code = None if _is_task(task, needs_capsule=True) else UNKNOWN_TASK_SHAPE
    code = code or log_code(log)
    if code is not None:
        known = type(task) is dict
        return {"task_id": task.get("task_id") if known else None,
                "status": task.get("status") if known else None,
                "execution_edges": [], "has_failed_verification": False,
                "failed_edges": [], "reason_codes": [code]}
    edges = [edge for edge in log if edge["capsule_id"] == task["capsule_id"]]
    failed = [edge for edge in edges if edge["outcome"] == "failed"]
    return {"task_id": task["task_id"], "status": task["status"], "execution_edges": edges,
            "has_failed_verification": bool(failed), "failed_edges": failed,
            "reason_codes": []}


def complete(task: Any, log: Any) -> dict[str, Any]:
    """Mark the task done, refused while its current view has a reason code; the
    answer carries the view after the transition."""
    view = task_view(task, log)
    if view["reason_codes"]:
        return {"task": None, "view": view, "reason_codes": view["reason_codes"]}
    done = {**task, "status": "done"}
    after = task_view(done, log)
    return {"task": done, "view": after, "reason_codes": after["reason_codes"]}
