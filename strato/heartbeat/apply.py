"""``apply`` and ``reject``: a person's decision on one proposal.

``apply`` builds the proposal's files on its base commit in a private index and creates
the branch ``heartbeat/<id>`` (it must not exist yet: :func:`tropo.git.chain.move`), so
the person's branch, index and working tree stay exactly as they were, and the branch's
diff is the proposal. A skill or playbook proposal passes the user's promotion eval
first, when one is configured (:mod:`strato.evals.promotion`): its evidence joins the
proposal's history, and the commit's message. A memory line is private: applying it adds
it to the git-ignored ``MEMORY.md`` (created if absent) and commits nothing; a tracked or
un-ignored ``MEMORY.md``, or one that is a link, is refused, so a lesson never lands in a
file git would share. A proposal with no files otherwise (a hygiene finding) is refused: a
person acts on it by hand. Both record the decision; ``reject`` records it too, so the
subject is not proposed again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.evals import promotion
from strato.heartbeat import memory
from strato.proposals import store
from tropo import untrusted
from tropo.fs.atomic import write_atomic
from tropo.git import chain, gitcli, objects
from tropo.git import repo as gitrepo
from tropo.git.refs import RefRaceError


class Refused(Exception):
    """The proposal cannot be applied as asked (exit 1)."""


def branch(pid: str) -> str:
    return f"heartbeat/{pid}"


def apply(root: Path, pid: str) -> dict[str, Any]:
    side = store.sidecar(root)
    record = store.get(side, pid)
    if record.get("status") == "rejected":
        raise Refused(f"{pid} was rejected; nothing applied")
    if record.get("kind") == "memory":
        return _remember(root, side, pid, record)
    files = {k: v.encode() for k, v in store.files(record).items()}
    base = record.get("base")
    if not files or not isinstance(base, str):
        raise Refused(f"{pid} changes no file: act on it by hand, then `strato heartbeat reject {pid}` "
                      "if it should not come back")
    if gitcli.is_commit(root, base) is None:
        raise Refused(f"{pid} was built on {base[:12]}, which is gone; rerun the heartbeat")
    message = f"heartbeat: {untrusted.line(store.title(record))}\n\nHeartbeat-Proposal: {pid}\n" \
              f"Heartbeat-Revision: {untrusted.line(record['revision'])}\n"
    if record.get("kind") in promotion.KINDS and (gate := promotion.gate(root)) is not None:
        evidence = promotion.evaluate(root, pid, files, gate)
        store.decide(side, pid, str(record.get("status")), promotion=[*record.get("promotion", []), evidence])
        if not evidence["passed"]:
            raise Refused(f"{pid} not applied: it fell beyond the margin: {promotion.line(evidence)}")
        message += f"Heartbeat-Eval: {promotion.line(evidence)}\n"
    repo = gitrepo.require(root)
    commit = str(objects.commit_files(repo, base, files, message))
    name = branch(pid)
    try:
        chain.move(repo, f"refs/heads/{name}", commit, None, f"heartbeat: apply {pid}")
    except RefRaceError:
        raise Refused(f"branch {name} already exists; delete it to apply {pid} again") from None
    store.decide(side, pid, "applied", branch=name, commit=commit)
    return {"id": pid, "status": "applied", "branch": name, "commit": commit,
            "files": sorted(files)}


def _remember(root: Path, side: Path, pid: str, record: dict[str, Any]) -> dict[str, Any]:
    """Add the memory line to the private MEMORY.md: only a file git ignores and does
    not track, never through a link, written whole (a crash leaves the old file)."""
    if record.get("status") == "applied":
        raise Refused(f"{pid} is already in {memory.MEMORY}")
    path = root / memory.MEMORY
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise Refused(f"{memory.MEMORY} is not a plain file; not writing through it")
    if gitcli.tracked(root, [memory.MEMORY]):
        raise Refused(f"{memory.MEMORY} is tracked: a memory line goes only to a private file")
    if not gitcli.ignored(root, [memory.MEMORY]):
        raise Refused(f"{memory.MEMORY} is not git-ignored: add it to .gitignore (it is private), "
                      f"then apply {pid} again")
    line = untrusted.line(f"{store.title(record)} ({pid})")
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise Refused(f"cannot read {memory.MEMORY}: {exc}") from None
    mode = path.stat().st_mode & 0o777 if text is not None else 0o600  # private when new
    write_atomic(path, memory.with_lesson(text, line).encode("utf-8"), mode=mode)
    store.decide(side, pid, "applied", file=memory.MEMORY)
    return {"id": pid, "status": "applied", "file": memory.MEMORY, "line": line}


def reject(root: Path, pid: str) -> dict[str, Any]:
    record = store.decide(store.sidecar(root), pid, "rejected")
    return {"id": pid, "status": record["status"]}
