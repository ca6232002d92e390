"""Folding: the results waiting in fanout items' `done` claims brought into the run head,
several at once (group commit: the head is no longer on each item's critical path, and
one push records many items).

A result waits while its item is still pending on the head; its claim, `done`, keeps
any worker from claiming the item again. The worker holding the fanout's lowest held
concurrency slot folds every waiting result when `FOLD_AT` wait or the oldest has
waited `FOLD_AFTER_S` of its own clock; any worker folds them once the oldest has
waited `ORPHANED_S` (that holder may be gone) or when no pending item is left unclaimed
(nothing else to do, and the settling waits for the head to record every item). A fold
fetches the head first, so results another worker just folded are not pushed again,
applies each result's record calls in item order, one transition each as a local run
records them (in one pass over one state: `Runs.apply_all`), and pushes them with a
lease on the head it read: a lost race fetches the head and folds what is left, and a
result the head already records is skipped (results.py), so each lands once. A result
that does not read as one is given up (its claim released, with the reason), and the
item runs again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.store import RunSnapshot
from strato.runs.workers import leases, results
from strato.runs.workers.shared import RESULT_FILE, Claim, Operation, RunRewritten
from tropo.git.objects import blob_at

if TYPE_CHECKING:
    from strato.runs.workers.worker import Worker

FOLD_AT = 16  # results waiting in one fanout: fold them now
FOLD_AFTER_S = 1.0  # the oldest waiting result this long (this worker's clock): fold
# the others wait this long for the lowest slot's holder (two folding the same results
# race for the head, and all but one lose; that holder may be gone, its slot not yet expired)
ORPHANED_S = 10.0


def fold(worker: Worker, snap: RunSnapshot, eng: Engine) -> bool:
    """Fold what waits in the run's engine-mode fanouts, when it is time; True if the
    head moved."""
    moved = False
    for frame, step, st in eng.running_fanouts():
        path = frame.prefix + step.id
        base = leases.fanout_key(path, st)
        folder = _folds(worker, snap.run_id, base, step.fanout.concurrency)
        waiting: list[tuple[int, Claim, bytes]] = []
        free, oldest = 0, 0.0
        for it in st["fanout"]["items"]:
            if it["status"] != "pending":
                continue
            key = f"{base}.i{it['index']}"
            tip = worker.shared.claim_tip(snap.run_id, key)
            found = None if tip is None else _result(worker, snap.run_id, key, tip)
            if found is None:
                free += int(tip is None)
                continue
            claim, raw, age = found
            waiting.append((it["index"], claim, raw))
            oldest = max(oldest, age)
        due = folder and (len(waiting) >= FOLD_AT or oldest >= FOLD_AFTER_S)
        if waiting and (due or oldest >= ORPHANED_S or not free):
            moved = _fold(worker, snap.run_id, path, base, waiting) or moved
    return moved


def _folds(worker: Worker, run_id: str, base: str, concurrency: int) -> bool:
    """Whether this worker holds the lowest concurrency slot held (as its view shows):
    that holder folds for everyone, one worker at a time, so folds do not race each
    other for the head."""
    mine = {c.key for job in worker.jobs.values() for c in job.claims if c.doc.get("state") == leases.HELD}
    for k in range(max(1, concurrency)):
        key = f"{base}.s{k}"
        if key in mine:
            return True
        tip = worker.shared.claim_tip(run_id, key)
        if tip is not None and worker.shared.lease_at(tip).state == leases.HELD:
            return False
    return False


def _result(worker: Worker, run_id: str, key: str, tip: str) -> tuple[Claim, bytes, float] | None:
    """The result in the claim's tip if it is a `done` one holding one: the claim, the
    result's bytes, and how long this worker has seen it waiting."""
    lease = worker.shared.lease_at(tip)
    if lease.state != leases.DONE:
        return None
    raw = blob_at(worker.runs.repo, tip, RESULT_FILE)
    if raw is None:
        return None
    age = worker.watch.observe(leases.claim_ref(run_id, key), tip)
    return Claim(run_id, key, tip, lease.doc), raw, age


def _fold(worker: Worker, run_id: str, path: str, base: str, waiting: list[tuple[int, Claim, bytes]]) -> bool:
    ops: list[Operation] = []
    for index, claim, raw in sorted(waiting, key=lambda w: w[0]):
        try:
            ops += results.decode(raw, path, base, index, own=claim.tip in worker.shared.written)
        except (ValueError, RecursionError) as exc:
            _give_up(worker, claim, f"its result does not read as one: {str(exc)[:200]}")
    if not ops:
        return False
    before = worker.runs.store.head(run_id)
    worker.shared.contended.add(run_id)  # fold on the head as it is now: another may have folded these
    try:
        head = worker.shared.apply_all(run_id, ops).snap.head
    except RunRewritten:
        raise
    except Refused as exc:
        worker.say(f"could not fold the results of {path} (run {run_id}): {exc}")
        return False
    if head == before:
        return False
    worker.counts["folds"] += 1
    landed = worker.runs.store.since(head, worker.shared.landed_on)  # this fold's transitions
    worker.counts["folded"] += sum(t.get("op") == "fanout_item" for _, t in landed)
    return True


def _give_up(worker: Worker, claim: Claim, why: str) -> None:
    """Release a claim whose result cannot be folded, so its item is claimed and run
    again (the item is still pending: nothing of it is on the head)."""
    commit = worker.shared.claim_commit(claim, leases.RELEASED, reason=why)
    if worker.shared.push([(commit, claim.ref, claim.tip)]):
        worker.say(f"released {claim.key} of run {claim.run_id}: {why}")


def counts(worker: Worker) -> dict[str, Any]:
    """What a worker's report says of its folds."""
    return {"folds": worker.counts["folds"], "resultsFolded": worker.counts["folded"]}
