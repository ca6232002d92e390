"""Breaking a stale lock on the notes ref, only when that is provably safe.

A writer killed between taking and releasing ``refs/notes/vivary/guard.lock`` (kill -9,
power loss) leaves the lock behind, and every later append refuses. The ref itself
still names the last good notes commit (the lock holds only the value a writer meant to
write), so removing the lock loses nothing *if* no writer is still alive. A git lock
file records no pid, so liveness is judged by age: ref locks are held for milliseconds,
and one older than ``min_age_s`` belongs to a dead writer. Before removing it we also
re-verify every ledger, so a lock is never broken on top of a broken ref. Each decision
is appended to ``.git/vivary/guard/unlock.log``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from strato.guard import store
from strato.guard.verify import verify_repository
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import Repository

DEFAULT_MIN_AGE_S = 60.0


def lock_path(repo: Repository) -> Path:
    return Path(repo.path) / (store.REF + ".lock")


def unlock(repo: Repository, min_age_s: float = DEFAULT_MIN_AGE_S) -> dict[str, Any]:
    """Remove a stale notes-ref lock; ``status`` says what was decided and why."""
    path = lock_path(repo)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return {"status": "no_lock", "lock": str(path)}
    age = max(0.0, time.time() - stat.st_mtime)
    held = path.read_bytes()[:200].decode("ascii", "replace").strip()
    tip = gitrefs.read_ref(repo, store.REF)
    answer: dict[str, Any] = {
        "lock": str(path),
        "age_s": round(age, 3),
        "lock_content": held,
        "tip": tip,
    }
    if age < min_age_s:
        answer |= {
            "status": "refused",
            "reason": f"the lock is {age:.1f}s old (< {min_age_s:g}s): a writer may be alive",
        }
    elif not (report := verify_repository(repo)).ok:
        answer |= {
            "status": "refused",
            "reason": f"the ledger does not verify: {report.breaks[0]}; repair it first",
        }
    else:
        path.unlink(missing_ok=True)
        answer |= {"status": "unlocked", "reason": "stale lock on a ref whose ledgers verify"}
    _log(repo, answer)
    return answer


def _log(repo: Repository, answer: dict[str, Any]) -> None:
    log = gitrepo.private_dir(repo) / "guard" / "unlock.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"ts_ms": int(time.time() * 1000), "pid": os.getpid(), **answer})
    with log.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
