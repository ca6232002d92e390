"""The notes commit a branch's ledgers are at, pinned in the branch's own tree.

Notes refs are not protected on common hosts; branches are. A base branch that names
its notes commit in ``.vivary/guard/notes-tip`` fixes, through its own protection,
which ledger lines review takes as already accepted (see docs/guard.md, threat model).
"""

from __future__ import annotations

import re
from pathlib import Path

from strato.guard import store
from strato.guard.errors import GuardError
from tropo.git import repo as gitrepo
from tropo.git.revision import read_file
from tropo.git.types import Commit, Repository

PIN_PATH = ".vivary/guard/notes-tip"
NONE = "none"  # the branch has no ledgers yet
SHA = re.compile(r"^[0-9a-f]{40}$")
FETCH = f"git fetch origin '+{store.REF}:{store.REF}'"


def text(tip: str | None) -> str:
    return f"{tip if tip is not None else NONE}\n"


def write(repo: Repository) -> str | None:
    """Pin the current notes tip in the work tree (commit it with the change); the tip."""
    tip = gitrepo.read_ref(repo, store.REF)
    path = Path(gitrepo.workdir(repo)) / PIN_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(tip))
    return tip


def read_or_none(commit: Commit) -> str | None:
    """The pin file's text as written, None when there is none (no judgement)."""
    data = read_file(commit, PIN_PATH)
    return None if data is None else data.decode("utf-8", "replace").strip()


def read(commit: Commit) -> str | None:
    """The notes commit ``commit`` pins (None: no ledgers); fails closed with the fix."""
    data = read_file(commit, PIN_PATH)
    where = str(commit.id)[:12]
    if data is None:
        raise GuardError(
            "review_unpinned",
            f"base {where} has no {PIN_PATH}: run `strato guard pin` on the base branch and "
            "commit it, or pass --base-notes REV (a notes commit your CI keeps)",
        )
    value = data.decode("utf-8", "replace").strip()
    if value == NONE:
        return None
    if not SHA.match(value):
        raise GuardError("review_unpinned", f"{PIN_PATH} at base {where} is not a commit id")
    return value


def require_commit(repo: Repository, sha: str) -> str:
    """``sha`` as a notes commit this clone has; the fetch to run otherwise."""
    try:
        return str(gitrepo.resolve_commit(repo, sha).id)
    except gitrepo.RevisionError:
        raise GuardError(
            "review_unpinned",
            f"the base's notes commit {sha[:12]} is not in this clone (run {FETCH}); "
            "if the remote no longer has it, the notes ref was rewritten",
        ) from None
