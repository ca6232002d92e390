"""The workbench's Evals view: eval runs read from `refs/vivary/evals/<id>` as `strato eval
list|show|compare` read them (:mod:`strato.evals.store`, :mod:`strato.evals.compare`),
and where each result's flow run lives: the eval's scratch repository.

Who controls these bytes: anyone who can push a ref may have written every field of an
eval's `eval.json` and `results.json` (ids, task names, reasons, run ids). Nothing here
runs or opens a path from them: an id must match the store's pattern before it names a
ref or a folder, a run id must match the run store's before the run is opened, and the
page shows every string as text. One malformed eval is a row that says so, never the
end of the list."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any

from strato.evals import store
from strato.evals.compare import SetsDiffer, compare, summary
from strato.runs.store import RUN_ID
from tropo.git.refs import ref_tips
from tropo.git.repo import private_dir
from tropo.git.types import Repository
from workbench.source import Refusal

# what reading an eval written by hand raises: results.json not JSON, or not the shape
UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, IndexError)
RESULT_KEYS = ("task", "trial", "score", "outcome", "reason", "attempts", "verifierCalls", "tokens",
               "wallMs", "runId")


def scratch(repo: Repository, eval_id: str) -> Path:
    """The eval's scratch repository (where its flow runs are), made by nothing here."""
    if not store.EVAL_ID.match(eval_id):
        raise Refusal(404, "eval_not_found", f"not an eval id: {eval_id!r}")
    return private_dir(repo, "evals", eval_id, "work")


def scratch_present(work: Path) -> bool:
    """Whether the scratch repository is in this clone (an eval fetched from elsewhere
    keeps its runs where it ran); a `.git` that is a link is not taken for one."""
    try:
        return stat.S_ISDIR(os.lstat(work / ".git").st_mode)
    except OSError:
        return False


def _audit(run_id: Any, work: Path) -> str | None:
    """The command that shows a run's attempts at a terminal (text to read, never run here)."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        return None
    return f"strato flow audit {run_id} --root {shlex.quote(str(work))}"


def _load(repo: Repository, eval_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return store.load(repo, eval_id)
    except store.EvalNotFound as exc:
        raise Refusal(404, "eval_not_found", str(exc)) from None
    except UNREADABLE as exc:
        raise Refusal(409, "unreadable_eval", f"eval {eval_id!r} cannot be read: {exc}") from None


def _head(eval_id: str, config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """An eval as the list shows it: what ran and how well, in `strato eval list`'s numbers."""
    return {"id": eval_id, "set": str(config["set"]["name"]), "repeat": config["repeat"],
            "seed": config.get("seed"), **summary(config, rows)}


def listing(repo: Repository) -> dict[str, Any]:
    """Every eval run, the one with the newest result first."""
    tips = ref_tips(repo, store.PREFIX)
    out = []
    for name, (_, at) in sorted(tips.items(), key=lambda kv: (-kv[1][1], kv[0])):
        eval_id = name[len(store.PREFIX):]
        try:
            out.append({**_head(eval_id, *store.load(repo, eval_id)), "movedAt": at})
        except (store.EvalNotFound, *UNREADABLE) as exc:
            out.append({"id": eval_id, "problem": f"cannot be read: {exc}", "movedAt": at})
    return {"evals": out}


def one(repo: Repository, eval_id: str) -> dict[str, Any]:
    """One eval: its configuration, numbers and every result (`rows`, as `strato eval show
    --json` names them), each with where its run is."""
    config, rows = _load(repo, eval_id)
    work = scratch(repo, eval_id)
    try:
        head = _head(eval_id, config, rows)
        shown = [{**{k: r.get(k) for k in RESULT_KEYS}, "audit": _audit(r.get("runId"), work)}
                 for r in rows]
    except UNREADABLE as exc:
        raise Refusal(409, "unreadable_eval", f"eval {eval_id!r} cannot be read: {exc}") from None
    return {**head, "ref": store.ref(eval_id), "config": config, "rows": shown,
            "scratch": {"path": str(work), "present": scratch_present(work)}}


def paired(repo: Repository, a: str, b: str) -> dict[str, Any]:
    """`strato eval compare A B --json`: refused, naming the difference, for different sets."""
    try:
        return compare((a, *_load(repo, a)), (b, *_load(repo, b)))
    except SetsDiffer as exc:
        raise Refusal(409, "different_task_sets", str(exc)) from None
    except UNREADABLE as exc:
        raise Refusal(409, "unreadable_eval", f"{a} and {b} cannot be compared: {exc}") from None
