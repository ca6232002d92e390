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

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strato.runs.dispatch.fanout import BudgetRefused
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from strato.runs.store import PREFIX, Outcome, RunSnapshot, head_ref
from strato.runs.workers import leases
from tropo.git import remote as gitremote
from tropo.git.objects import blob_at, write_commit
from tropo.git.refs import cas_ref, is_ancestor, read_ref
from tropo.git.types import Oid

MAX_PUSH_RETRIES = 50
RESULT_FILE = "result.json"  # beside an item claim's done lease: its result (workers/results.py)
MAX_BACKOFF_PUSHES = 8  # a lost race waits at most this many pushes' time before trying again

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


@dataclass(frozen=True)
class Operation:
    """One engine operation to apply to a shared run: what `Runs.apply` takes."""

    op: str
    action: Callable[[Engine], bool | None]
    detail: dict[str, Any]


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


@dataclass
class Handoff:
    """The next piece of work claimed by the push that lands this one's result: ``pick``
    names its claim key and lease from the run as that push leaves it (None: nothing to
    take), its claim ref is created and the concurrency slot ``slot`` moves on to it in
    the same atomic push (one push per item, where a separate claim push made two);
    ``taken`` is what the landed push claimed."""

    pick: Callable[[RunSnapshot, set[str]], tuple[str, dict[str, Any]] | None]  # keys to pass over
    slot: str
    taken: list[Claim] = field(default_factory=list)
    lost: set[str] = field(default_factory=set)  # picked, and the push carrying the claim lost


class SharedRuns:
    """The runs of one clone, shared through ``remote``."""

    def __init__(self, runs: Runs, remote: str) -> None:
        self.runs = runs
        self.remote = remote
        self.seen: dict[str, str] = {}  # run -> the last remote head this clone saw
        self.pushes = 0
        self.rejected = 0
        self.rejected_head = 0  # of them, pushes that moved a run head (a fold, a step's result)
        self.landed_on = ""  # the head the last apply_all decided on (what a fold added is on top)
        self.push_s = 0.0  # time spent pushing and fetching (what a benchmark reports per item)
        self.fetch_s = 0.0
        self.last_push_s = 0.0
        # whether this clone's view may be behind the remote for a reason it knows of (a
        # push turned down, or nothing to claim in it): a worker fetches before it decides
        # again. A push that landed leaves the view current: the refs it moved are
        # mirrored here, so the next claim needs no fetch to see them.
        self.stale = True
        # the runs whose head another clone moved since this one last pushed it: before
        # pushing a transition on them, fetch their head first (a push on a head known to
        # be old is a lost race, and losing costs a fetch and a push)
        self.contended: set[str] = set()
        # the clone's run refs are read, mirrored and pushed by one thread at a time: a
        # fetch between a push and the head it remembers would read as a rewrite
        self.lock = threading.RLock()
        self.written: set[str] = set()  # the result commits this clone pushed (its own evidence)

    # --- reading

    def fetch(self, run_id: str | None = None) -> list[RunRewritten]:
        """Mirror the remote's refs of ``run_id`` (every run: None) into this clone; the
        runs found rewritten, whose heads are left as the remote has them and are no
        longer followed."""
        with self.lock:
            return self._fetch(run_id)

    def _fetch(self, run_id: str | None) -> list[RunRewritten]:
        started = time.perf_counter()
        gitremote.mirror(self.runs.root, self.remote, f"{PREFIX}{run_id}/" if run_id else PREFIX, prune=False)
        self.fetch_s += time.perf_counter() - started
        self.stale = False
        heads: dict[str, str | None] = dict(self.runs.store.heads())
        if run_id:
            heads = {run_id: read_ref(self.runs.repo, head_ref(run_id))}
        return self._rewritten(heads)

    def fetch_items(self, run_id: str) -> None:
        """Mirror the run's item refs (the commits of worktree items that workers on other
        clones pushed): the loop's own fetches may bring only the head and this worker's
        claims, and a settle merges the recorded commits, whose objects must be here."""
        with self.lock:
            started = time.perf_counter()
            gitremote.mirror(self.runs.root, self.remote, f"{PREFIX}{run_id}/items/", prune=False)
            self.fetch_s += time.perf_counter() - started

    def _rewritten(self, heads: dict[str, str | None]) -> list[RunRewritten]:
        """The runs among ``heads`` (as just fetched) that do not descend from the head
        this clone saw last; the others' heads are now the ones seen."""
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
        started = time.perf_counter()
        try:
            with self.lock:
                res = gitremote.push_refs(self.runs.root, self.remote, updates)
        except gitremote.RemoteError as exc:
            raise Refused("remote_unreachable", str(exc)) from None
        finally:
            self.last_push_s = time.perf_counter() - started
            self.push_s += self.last_push_s
        if res.denied:
            raise push_refused(self.remote, res.detail)
        if not res.ok:
            self.rejected += 1
            self.rejected_head += any(ref.endswith("/head") for _, ref, _ in updates)
            self.stale = True
            return False
        with self.lock:
            self._mirror(updates)
        return True

    def _mirror(self, updates: list[Update]) -> None:
        """What a push that landed set on the remote, set on this clone's refs too (as
        the next fetch would): only the remote's acceptance makes these values true."""
        for new, ref, _ in updates:
            old = read_ref(self.runs.repo, ref)
            if old != new:
                cas_ref(self.runs.repo, ref, new, old, "worker: as pushed")

    def apply(
        self,
        run_id: str,
        op: str,
        action: Callable[[Engine], bool | None],
        claims: Sequence[Claim] = (),
        finish: bool = True,
        **detail: Any,
    ) -> Outcome:
        """Apply one operation to the run as the remote has it and push it with a lease
        on that head, in one atomic push with a lease on each of ``claims`` (moved to
        `done` when ``finish``, else left where they are: only still held). A lost race
        fetches and decides again; a refusal met only after losing one is `stale`
        (another clone decided first). ClaimLost when a claim moved on meanwhile."""
        return self.apply_all(run_id, [Operation(op, action, detail)], claims, finish)

    def apply_all(
        self, run_id: str, ops: Sequence[Operation], claims: Sequence[Claim] = (), finish: bool = True,
        handoff: Handoff | None = None,
        carried: Callable[[Outcome], list[Update]] | None = None,
    ) -> Outcome:
        """:meth:`apply` for several operations in order, each its own transition, all
        pushed at once (a fanout item's dispatch, attempts and result: one push), with
        the ``handoff``'s next claim when it picks one (a claim lost to another worker
        is a lost race like any other: fetched, picked again) and the ref updates
        ``carried`` names for what the last one did (a worktree item's commit, a
        fanout's merge)."""
        with self.lock:
            lost = False
            for tries in range(MAX_PUSH_RETRIES):
                if lost:
                    self._back_off(tries)
                if lost or run_id in self.contended:
                    self._refetch(run_id, claims)
                    lost = lost or run_id in self.contended  # the head moved: another clone was first
                base = self.runs.store.head(run_id)
                try:
                    outcome = self.runs.apply_all(run_id, [(o.op, o.action, o.detail) for o in ops])
                except Refused as exc:  # a head that refuses a reservation refuses it on any clone
                    if lost and exc.code != "stale" and not isinstance(exc, BudgetRefused):
                        raise Refused("stale", f"{exc} (another clone moved run {run_id} first)") from None
                    raise
                head = outcome.snap.head
                extra = carried(outcome) if carried is not None else []
                nxt = None
                if handoff is not None and finish and head != base:
                    nxt = handoff.pick(outcome.snap, handoff.lost)
                if head == base or self._land(run_id, (base, head), claims, finish, extra, handoff, nxt):
                    self.landed_on = base
                    return outcome
                if handoff is not None and nxt is not None:  # another's claim may have turned it down
                    handoff.lost.add(nxt[0])
                lost = True
            raise Refused("race_lost", f"run {run_id} kept moving on {self.remote!r}; try again")

    def _back_off(self, tries: int) -> None:
        """After the ``tries``-th lost race in a row, wait a random part of up to 2**tries
        pushes' time: workers that all lost to one landing would otherwise all push
        again at once, and all but one lose again, each loss costing a fetch and a push
        of the cores and the remote they share."""
        time.sleep(random.uniform(0, self.last_push_s * min(2 ** (tries - 1), MAX_BACKOFF_PUSHES)))

    def _refetch(self, run_id: str, claims: Sequence[Claim]) -> None:
        """After a lost race (or before pushing on a contended head): the remote's run
        head and ``claims`` again, if it is still the same run and the claims are still
        this worker's. The other claims are left as they were (the loop's fetch brings
        them); a fetch of these few refs that fails (a claim ref deleted) falls back to
        the whole run."""
        before = self.runs.store.head(run_id)
        started = time.perf_counter()
        try:
            refs = [head_ref(run_id), *(c.ref for c in claims)]  # each is here: fetched or pushed before
            gitremote.fetch_refs(self.runs.root, self.remote, refs, have=refs)
            self.fetch_s += time.perf_counter() - started
            found = self._rewritten({run_id: read_ref(self.runs.repo, head_ref(run_id))})
        except gitremote.RemoteError:
            found = self._fetch(run_id)
        for rewritten in found:
            raise rewritten
        if self.runs.store.head(run_id) != before:
            self.contended.add(run_id)
        else:
            self.contended.discard(run_id)
        for claim in claims:
            if self.claim_tip(run_id, claim.key) != claim.tip:
                raise ClaimLost(claim.ref)

    def land_result(self, run_id: str, result: bytes, claims: Sequence[Claim], handoff: Handoff | None,
                    extra: Sequence[Update] = ()) -> None:
        """Push a fanout item's ``result`` in the `done` commit of its claim (the first of
        ``claims``; the others, its concurrency slot, done or handed on), without
        touching the run head, which a fold brings it to later: workers landing items
        race only for the next item's claim. A lost race fetches this worker's claims
        and picks again; ClaimLost when one of them moved on meanwhile."""
        with self.lock:
            lost = False
            for tries in range(MAX_PUSH_RETRIES):
                if lost:
                    self._back_off(tries)
                    self._refetch(run_id, claims)
                nxt = None
                if handoff is not None:
                    nxt = handoff.pick(self.runs.store.load(run_id), handoff.lost)
                if self._land(run_id, None, claims, True, extra, handoff, nxt, result):
                    self.written.add(claims[0].tip)
                    return
                if handoff is not None and nxt is not None:
                    handoff.lost.add(nxt[0])
                lost = True
            raise Refused("race_lost", f"run {run_id}'s claims kept moving on {self.remote!r}; try again")

    def _land(self, run_id: str, head: tuple[str, str] | None, claims: Sequence[Claim], finish: bool,
              extra: Sequence[Update] = (), handoff: Handoff | None = None,
              nxt: tuple[str, dict[str, Any]] | None = None, result: bytes | None = None) -> bool:
        """One atomic push: the run head moved from ``head[0]`` to ``head[1]`` (None:
        left alone), ``claims`` moved to `done` when ``finish`` (the first with
        ``result``), the handoff's next claim, ``extra``."""
        moved = [c.tip for c in claims]
        if finish:
            files = {RESULT_FILE: result} if result is not None else {}
            moved = [self.claim_commit(c, leases.DONE, files if i == 0 else {},
                                       **({"head": head[1]} if head else {})) for i, c in enumerate(claims)]
        taken: list[Claim] = []
        if handoff is not None and nxt is not None:
            key, doc = nxt
            item = Claim(run_id, key, self._commit(key, doc, []), doc)
            at = next(i for i, c in enumerate(claims) if c.key == handoff.slot)
            slot = Claim(run_id, handoff.slot, self._commit(handoff.slot, doc, [claims[at].tip]), doc)
            moved[at], taken = slot.tip, [item, slot]
        updates: list[Update] = [(head[1], head_ref(run_id), head[0])] if head else []
        updates += [*extra, *((new, c.ref, c.tip) for new, c in zip(moved, claims, strict=True))]
        updates += [(item.tip, item.ref, None) for item in taken[:1]]
        if not self.push(updates):
            return False
        if head:
            self.seen[run_id] = head[1]
        for new, claim in zip(moved, claims, strict=True):
            claim.tip = new
            if finish:
                claim.doc = {**claim.doc, "state": leases.DONE}
        if handoff is not None:
            handoff.taken = taken
        return True

    def claim_commit(self, claim: Claim, state: str, files: dict[str, bytes] | None = None,
                     **extra: Any) -> str:
        """A new commit on the claim's tip saying ``state`` (its lease otherwise as held),
        with ``files`` beside the lease (an item's result)."""
        doc = {**claim.doc, "state": state, **extra}
        return self._commit(claim.key, doc, [claim.tip], files)

    def _commit(self, key: str, doc: dict[str, Any], parents: list[str],
                files: dict[str, bytes] | None = None) -> str:
        message = f"claim: {key} {doc.get('state', leases.HELD)} by {doc.get('worker', '?')}\n"
        tree = {**(files or {}), "lease.json": leases.encode(doc)}
        return str(write_commit(self.runs.repo, tree, [Oid(hex=p) for p in parents], message))

    def create_claims(
        self, run_id: str, wanted: Sequence[tuple[str, dict[str, Any], str | None]]
    ) -> list[Claim] | None:
        """Push claims, all or none: each ``(key, lease, replaces)`` must create its ref
        (``replaces``: must move it on from that tip, a takeover or a freed slot); None
        when another worker's push won any of them."""
        with self.lock:
            made = [(key, doc, old, self._commit(key, doc, [old] if old else [])) for key, doc, old in wanted]
            if not self.push([(commit, leases.claim_ref(run_id, key), old) for key, _, old, commit in made]):
                return None
            return [Claim(run_id, key, commit, doc) for key, doc, _, commit in made]

    def renew(self, claims: Sequence[Claim], renewed: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
        """Push a renewal (``renewed`` of each lease) of each claim on its tip, all or
        none; False when any of them is no longer this worker's. Read under the lock:
        the job's own thread may be landing its result at the same time (its claims
        then done, and the next item's added by a handoff), and a job whose result
        landed has nothing to renew."""
        with self.lock:
            held = list(claims)
            if any(c.doc.get("state") == leases.DONE for c in held):
                return True
            docs = [renewed(c.doc) for c in held]
            made = [self._commit(c.key, doc, [c.tip]) for c, doc in zip(held, docs, strict=True)]
            if not self.push([(commit, c.ref, c.tip) for commit, c in zip(made, held, strict=True)]):
                return False
            for commit, claim, doc in zip(made, held, docs, strict=True):
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
