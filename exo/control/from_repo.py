"""``--from-repo``: the request's state read from the workspace instead of the caller.

Claims come from the ``claim/<id>`` branches (local first, then remote-tracking), one
per work item, held by the assignee the claim commit records: an agent, contributing,
scoped to the item's file, created at the claim commit's committer time. With ``git
config exo.lease-seconds N`` each claim carries a lease of N seconds from then, so
``expire_leases`` answers which claims have gone stale. Tasks are the work items with
their status (``open`` when unset). Execution logs are not read from the repository.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from exo.claims import claim_commit, claim_refs, holder_at
from exo.control import ledger, scope
from exo.control.envelope import OPERATIONS
from exo.workspace import View
from tropo.git.refs import read_ref
from tropo.git.repo import resolve_commit

PROJECT = "workspace"
LEASE_KEY = "exo.lease-seconds"


class FromRepoError(Exception):
    """The repository's configuration cannot be turned into state (exit 2)."""


def _instant(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def lease_seconds(view: View) -> int | None:
    try:
        raw = str(view.repo.config[LEASE_KEY])
    except KeyError:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise FromRepoError(f"git config {LEASE_KEY} must be a positive integer, not {raw!r}")
    return int(raw)


def claims(view: View) -> list[dict[str, Any]]:
    """The active claims the claim branches record, in item id order."""
    paths = {item.id: view.prefix + item.path for item in view.items}
    seconds = lease_seconds(view)
    found = []
    for item_id, refs in sorted(claim_refs(view.repo).items()):
        if item_id not in paths:
            continue
        for ref in refs:
            oid = read_ref(view.repo, ref)
            holder = holder_at(view.repo, oid, paths[item_id]) if oid else None
            if oid and holder:
                break
        else:
            continue
        # the claim commit's time, which exo wrote: a later commit on the branch (its
        # committer chooses its date) neither renews the lease nor dates it ahead
        made = claim_commit(view.repo, oid, item_id) or resolve_commit(view.repo, oid)
        created = datetime.fromtimestamp(made.commit_time, UTC)
        lease = None if seconds is None else {
            "granted_at": _instant(created),
            "expires_at": _instant(created + timedelta(seconds=seconds))}
        claim: dict[str, Any] = {
            "scope": scope.normalize({"project": PROJECT, "paths": [paths[item_id]]}),
            "actor": {"kind": "agent", "id": holder}, "authority_class": "contributor",
            "lease": lease, "status": "active", "created_at": _instant(created)}
        claim["claim_id"] = ledger.claim_id(claim)
        found.append(claim)
    return found


def tasks(view: View) -> list[dict[str, Any]]:
    return [{"id": item.id, "status": "open" if item.status is None else str(item.status)}
            for item in view.items]


def fill(request: Any, view: View) -> Any:
    """``request`` with the claims or tasks its operation reads taken from ``view``
    (the request may leave them out); a request whose operation or state is not
    well-formed is returned as is, to be refused by the envelope."""
    if type(request) is not dict:
        return request
    operation = request.get("operation")
    state = request.get("state", {})
    if type(operation) is not str or operation not in OPERATIONS or type(state) is not dict:
        return request
    wanted = OPERATIONS[operation][0]
    state = dict(state)
    if "claims" in wanted:
        state["claims"] = claims(view)
    if "tasks" in wanted:
        state["tasks"] = tasks(view)
    return {**request, "state": state}
