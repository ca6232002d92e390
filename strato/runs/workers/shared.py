"""A run as a shared remote holds it: fetched into the clone's own run refs, changed by
the local engine on the head that was fetched, and pushed back with a lease on that head,
so the remote takes a transition only on the history it was decided from.

The clone's `refs/vivary/runs/<id>/*` mirror the remote's (a fetch forces them), so the
engine, the views and `strato flow` read a fetched run as they read a local one. A push
the remote turns down because the head moved is a lost race: fetch, decide again, push
again; the remote's history is never overwritten. A head that no longer descends from
the last one this clone saw was force-pushed (`run_rewritten`): nothing is pushed on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from strato.runs.store import PREFIX, Outcome, head_ref
from strato.runs.workers import leases
from tropo.git import remote as gitremote
from tropo.git.objects import blob_at, write_commit
from tropo.git.refs import is_ancestor, read_ref
from tropo.git.types import Oid

MAX_PUSH_RETRIES = 50

Update = tuple[str | None, str, str | None]  # (new commit, remote ref, the value it must hold)


class RunRewritten(Refused):
    """The remote's head of a run is not a descendant of the one this clone saw last."""

    def __init__(self, run_id: str, seen: str, found: str | None) -> None:
        now = found[:12] if found else "nothing"
        super().__init__("run_rewritten", f"run {run_id} was rewritten on the remote: its head went from "
                         f"{seen[:12]} to {now}, which does not descend from it; stopping")
        self.run_id = run_id


class ClaimLost(Exception):
    """The claim moved on without this worker (taken over, or finished by another)."""


def push_refused(remote: str, detail: str) -> Refused:
    return Refused("push_rejected", f"the remote {remote!r} refused the push ({detail}): "
                   "check your rights to push refs/vivary/runs/* there")


@dataclass
class Claim:
    """A claim this worker holds: its ref and the tip it last pushed."""

    run_id: str
    key: str
    tip: str
    doc: dict[str, Any]

    @property
    def ref(self) -> str:
        return leases.claim_ref(self.run_id, self.key)


class SharedRuns:
    """The runs of one clone, shared through ``remote``."""

    def __init__(self, runs: Runs, remote: str) -> None:
        self.runs = runs
        self.remote = remote
        self.seen: dict[str, str] = {}  # run -> the last remote head this clone saw
        self.pushes = 0
        self.rejected = 0

    # --- reading

    def fetch(self, run_id: str | None = None) -> list[RunRewritten]:
        """Mirror the remote's refs of ``run_id`` (every run: None) into this clone; the
        runs found rewritten, whose heads are left as the remote has them and are no
        longer followed."""
        gitremote.mirror(self.runs.root, self.remote, f"{PREFIX}{run_id}/" if run_id else PREFIX, prune=False)
        heads: dict[str, str | None] = dict(self.runs.store.heads())
        if run_id:
            heads = {run_id: read_ref(self.runs.repo, head_ref(run_id))}
        rewritten = []
        for run, head in heads.items():
            seen = self.seen.get(run)
            if seen is not None and (head is None or not is_ancestor(self.runs.repo, seen, head)):
                rewritten.append(RunRewritten(run, seen, head))
            elif head is not None:
                self.seen[run] = head
        return rewritten

    def claim_tip(self, run_id: str, key: str) -> str | None:
        return read_ref(self.runs.repo, leases.claim_ref(run_id, key))

    def lease_at(self, commit: str) -> leases.Lease:
        return leases.parse(blob_at(self.runs.repo, commit, "lease.json"))

    # --- writing

    def push(self, updates: list[Update]) -> bool:
        """Push every update or none; False when a lease no longer held (a lost race)."""
        self.pushes += 1
        try:
            res = gitremote.push_refs(self.runs.root, self.remote, updates)
        except gitremote.RemoteError as exc:
            raise Refused("remote_unreachable", str(exc)) from None
        if res.denied:
            raise push_refused(self.remote, res.detail)
        if not res.ok:
            self.rejected += 1
        return res.ok

    def apply(
        self,
        run_id: str,
        op: str,
        action: Callable[[Engine], bool | None],
        claim: Claim | None = None,
        **detail: Any,
    ) -> Outcome:
        """Apply one operation to the run as the remote has it and push it with a lease
        on that head (and, with ``claim``, move the claim to `done` in the same atomic
        push). A lost race fetches and decides again; a refusal met only after losing one
        is `stale` (another clone decided first). ClaimLost when the claim moved on."""
        lost = False
        for _ in range(MAX_PUSH_RETRIES):
            if lost:
                for rewritten in self.fetch(run_id):
                    raise rewritten
                if claim is not None and self.claim_tip(run_id, claim.key) != claim.tip:
                    raise ClaimLost(claim.ref)
            base = self.runs.store.head(run_id)
            try:
                outcome = self.runs.apply(run_id, op, action, **detail)
            except Refused as exc:
                if lost and exc.code != "stale":
                    raise Refused("stale", f"{exc} (another clone moved run {run_id} first)") from None
                raise
            head = outcome.snap.head
            if head == base:
                return outcome
            updates: list[Update] = [(head, head_ref(run_id), base)]
            finished = None if claim is None else self.claim_commit(claim, leases.DONE, head=head)
            if claim is not None and finished is not None:
                updates.append((finished, claim.ref, claim.tip))
            if self.push(updates):
                self.seen[run_id] = head
                if claim is not None and finished is not None:
                    claim.tip = finished
                return outcome
            lost = True
        raise Refused("race_lost", f"run {run_id} kept moving on {self.remote!r}; try again")

    def claim_commit(self, claim: Claim, state: str, **extra: Any) -> str:
        """A new commit on the claim's tip saying ``state`` (its lease otherwise as held)."""
        doc = {**claim.doc, "state": state, **extra}
        return self._commit(claim.key, doc, [claim.tip])

    def _commit(self, key: str, doc: dict[str, Any], parents: list[str]) -> str:
        message = f"claim: {key} {doc.get('state', leases.HELD)} by {doc.get('worker', '?')}\n"
        files = {"lease.json": leases.encode(doc)}
        return str(write_commit(self.runs.repo, files, [Oid(hex=p) for p in parents], message))

    def create_claim(
        self, run_id: str, key: str, doc: dict[str, Any], replaces: str | None = None
    ) -> Claim | None:
        """Push a claim that must create the ref (``replaces``: that must move it on from
        that tip, a takeover); None when another worker's push won."""
        commit = self._commit(key, doc, [replaces] if replaces else [])
        if not self.push([(commit, leases.claim_ref(run_id, key), replaces)]):
            return None
        return Claim(run_id, key, commit, doc)

    def renew(self, claim: Claim, doc: dict[str, Any]) -> bool:
        """Push a renewal on the claim's tip; False when it is no longer this worker's."""
        commit = self._commit(claim.key, doc, [claim.tip])
        if not self.push([(commit, claim.ref, claim.tip)]):
            return False
        claim.tip, claim.doc = commit, doc
        return True


def shared_run(runs: Runs, remote: str, run_id: str | None) -> SharedRuns:
    """The runs of this clone as ``remote`` holds them, ``run_id`` (every run: None)
    fetched now; `unknown_remote` (a usage error) for a name `git remote` does not list."""
    known = gitremote.remote_names(runs.root)
    if remote not in known:
        raise Refused("unknown_remote", f"no remote {remote!r} in this clone (git remote lists: "
                      f"{', '.join(known) or 'none'})")
    shared = SharedRuns(runs, remote)
    shared.fetch(run_id)
    return shared
