"""``apply`` and ``reject``: a person's decision on one proposal.

``apply`` builds the proposal's files on its base commit in a private index and creates
the branch ``heartbeat/<id>`` (it must not exist yet: :func:`tropo.git.chain.move`), so
the person's branch, index and working tree stay exactly as they were, and the branch's
diff is the proposal. A skill or playbook proposal passes the user's promotion eval
first, when one is configured (:mod:`strato.evals.promotion`): its evidence joins the
proposal's history, and the commit's message. A proposal with no files (a hygiene finding, a private memory
line) is refused: a person acts on it by hand. ``reject`` records the decision, so the
subject is not proposed again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.evals import promotion
from strato.proposals import store
from tropo import untrusted
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


def reject(root: Path, pid: str) -> dict[str, Any]:
    record = store.decide(store.sidecar(root), pid, "rejected")
    return {"id": pid, "status": record["status"]}
