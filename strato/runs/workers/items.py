"""Engine-mode fanouts carried by many workers: each item is claimed on its own, and a
concurrency slot with it, so a fanout's `concurrency` holds across every machine; each
item runs and is recorded as a local fanout runs and records it (its dispatch, each
attempt, the item: transitions pushed with leases on the item's claims); once no item
is pending, one worker claims the fanout's settling and runs the same merge step as a
local fanout. Under `isolation: worktree` an item's edits travel as a commit on the
item's ref, pushed with its result; the settling worker merges only the commits the
run's transitions recorded, in its own clone's work tree.
"""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from strato.agents.calls import CallResult
from strato.agents.config import AgentsConfig, AgentSpec
from strato.flow.spec import FanoutStep
from strato.runs.dispatch.fanout import item_runner, limited
from strato.runs.dispatch.merge import settle_fanout
from strato.runs.engine.budgets import task_ledgers
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.store import PREFIX, Outcome, RunSnapshot
from strato.runs.workers import results
from strato.runs.workers.leases import fanout_key
from strato.runs.workers.shared import Claim, Handoff, Operation, SharedRuns, Update
from tropo.git.refs import read_ref
from tropo.git.types import Repository

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable

    from strato.runs.workers.worker import Job, Worker


class SharedAccess:
    """A fanout's view of a shared run (`RunAccess`): every transition it writes is
    pushed with leases on the job's claims, and the one that ends the job's work moves
    them to `done` in the same push."""

    def __init__(
        self, shared: SharedRuns, claims: list[Claim], finishing: str, detail: dict[str, Any], batch: bool,
        handoff: Handoff | None = None,
    ) -> None:
        self.shared, self.claims, self.finishing, self.detail = shared, claims, finishing, detail
        self.handoff = handoff
        # an item's transitions before its last wait for it and go in one push: while it
        # runs, its claim is what shows it running; killed, nothing of it landed. Not
        # under a budget: each dispatch must be reserved on the head before its call
        self.batch = batch
        self.queued: list[Operation] = []
        self.repo: Repository = shared.runs.repo
        self.root: Path = shared.runs.root

    @property
    def config(self) -> AgentsConfig:
        return self.shared.runs.config

    @property
    def pacing_dir(self) -> Path:
        return self.shared.runs.pacing_dir

    def load(self, run_id: str) -> RunSnapshot:
        return self.shared.runs.load(run_id)

    def engine(self, snap: RunSnapshot, judge: bool = True) -> Engine:
        return self.shared.runs.engine(snap, judge)

    def command_refusal(self, snap: RunSnapshot, command: str) -> str | None:
        return self.shared.runs.command_refusal(snap, command)

    def preflight(self, snap: RunSnapshot) -> None:
        self.shared.runs.preflight(snap)

    def apply(self, run_id: str, op: str, action: Callable[[Engine], bool | None], **detail: Any) -> Outcome:
        last = op == self.finishing
        self.queued.append(Operation(op, action, {**detail, **(self.detail if last else {})}))
        if self.batch and not last:
            return Outcome(self.load(run_id), [])
        ops, self.queued = self.queued, []
        handoff = self.handoff if last else None
        if self.batch:  # the item's result, as data in its claim: folded into the head later
            self.shared.land_result(run_id, results.encode(ops), self.claims, handoff, self.item_commit(ops))
            outcome = Outcome(self.load(run_id), [])
        else:
            outcome = self.shared.apply_all(run_id, ops, claims=self.claims, finish=last, handoff=handoff,
                                            carried=self.carried if last else None)
        if handoff is not None:  # the job holds them until the loop hands them on (or gives them up)
            self.claims.extend(handoff.taken)
        return outcome

    def item_commit(self, ops: list[Operation]) -> list[Update]:
        """A worktree item's edits (the commit its result records) on the item's ref,
        pushed with the result."""
        action = ops[-1].action
        commit = action.keywords["item"].get("commit") if isinstance(action, partial) else None
        if commit is None:
            return []
        ref = item_ref(self.claims[0].run_id, self.claims[0].key)
        return [(commit, ref, read_ref(self.repo, ref))]

    def carried(self, outcome: Outcome) -> list[Update]:
        """What the job's last push carries besides the run: the commit its transition
        recorded (a worktree item's edits, a fanout's merge), on the job's ref under
        `items/` (the item's claim key; `<fanout start>.merged` for the merge)."""
        for event in outcome.events:
            commit = event.get("detail", {}).get("commit")
            if commit is not None and event["type"] in ("fanout_item_done", "fanout_merge"):
                claim = self.claims[0]
                merged = f"{claim.key.rsplit('.', 1)[0]}.merged"  # `<start>.settle` -> `<start>.merged`
                ref = item_ref(claim.run_id, claim.key if event["type"] == "fanout_item_done" else merged)
                return [(commit, ref, read_ref(self.repo, ref))]
        return []


def claim_fanouts(worker: Worker, snap: RunSnapshot, eng: Engine) -> None:
    """Claim what this worker can of the run's engine-mode fanouts in flight."""
    for frame, step, st in eng.running_fanouts():
        path = frame.prefix + step.id
        if worker.full() or not worker.can_run(snap.run_id, path, [s.agent for s in step.fanout.steps]):
            continue
        if (why := _refused_here(worker, snap)) is not None:
            worker.tell(snap.run_id, path, f"skipped {path} of run {snap.run_id}: {why}; "
                        "left for other workers")
            continue
        base = fanout_key(path, st)
        pending = [it["index"] for it in st["fanout"]["items"] if it["status"] == "pending"]
        if not pending:
            _start_settle(worker, snap, path, base)
        for index in _spread(worker, pending):
            if worker.full() or worker.shared.stale:
                break  # a claim lost this tick: the view is behind, fetch before the next
            if (snap.run_id, f"{base}.i{index}") not in worker.jobs:
                _start_item(worker, snap, path, base, index, step)


def _refused_here(worker: Worker, snap: RunSnapshot) -> str | None:
    """Why this machine may not drive the run's fanouts (their agents, judge or commands,
    `pre_merge` included, not approved here), asked once per spec: a worker that claimed
    such an item would only drop it and claim it again."""
    digest = snap.state["revisionDigest"]
    if digest not in worker.refusals:
        try:
            worker.runs.preflight(snap)
            worker.refusals[digest] = None
        except Refused as exc:
            worker.refusals[digest] = str(exc)
    return worker.refusals[digest]


def _spread(worker: Worker, keys: list[T]) -> list[T]:
    """``keys`` from a place of this worker's own: workers that start from the same first
    item would all race for it at every fetch, and all but one lose."""
    if not keys:
        return keys
    start = int(worker.id[2:], 16) % len(keys)
    return keys[start:] + keys[:start]


def _start_item(
    worker: Worker, snap: RunSnapshot, path: str, base: str, index: int, step: FanoutStep
) -> None:
    item = f"{base}.i{index}"
    mine = {c.key for job in worker.jobs.values() for c in job.claims}
    slots = _spread(worker, [f"{base}.s{k}" for k in range(max(1, step.fanout.concurrency))])
    kept = worker.slots.get(base)  # first the slot it held last: the others start from theirs
    if kept in slots:
        slots.remove(kept)
        slots.insert(0, kept)
    slot = next((s for s in slots if s not in mine and worker.free(snap.run_id, s, reusable=True)), None)
    if slot is None or not worker.free(snap.run_id, item):
        return  # every slot is busy, or the item is another's: look again at the next fetch
    claims = worker.take(snap.run_id, [(item, False), (slot, True)], _item_lease(path, index, slot))
    if claims is not None:
        worker.slots[base] = slot
        _item_job(worker, snap.run_id, path, base, claims)


def _item_lease(path: str, index: int, slot: str) -> dict[str, Any]:
    return {"label": f"{path}/{index}", "stepId": path, "item": index, "slot": slot}


def _item_job(worker: Worker, run_id: str, path: str, base: str, claims: list[Claim]) -> None:
    """Run the item of ``claims`` (its own claim and a concurrency slot's); the push of
    its result also claims the next pending item no claim was seen for, on the same slot,
    and the loop runs that one next."""
    index: int = claims[0].doc["item"]
    slot = claims[1].key

    def pick(now: RunSnapshot, skip: set[str]) -> tuple[str, dict[str, Any]] | None:
        _, _, st = worker.runs.engine(now, judge=False).look(path)
        if st["status"] != "running" or fanout_key(path, st) != base:
            return None
        pending = [it["index"] for it in st["fanout"]["items"] if it["status"] == "pending"]
        # any free one at random: in order, a worker whose view is a moment old would lose
        # to the one just ahead of it item after item. Shuffled, the first free one is as
        # random, and only the claims looked at until then are read
        random.shuffle(pending)
        for nxt in pending:
            if f"{base}.i{nxt}" not in skip and worker.shared.claim_tip(run_id, f"{base}.i{nxt}") is None:
                return f"{base}.i{nxt}", worker.lease(run_id, _item_lease(path, nxt, slot), 0)
        return None

    _run(worker, run_id, f"{path}/{index}", claims, path, base, "fanout_item",
         lambda access, call: _one_item(access, run_id, path, index, call),
         batch=not _limited(worker, run_id, path, base), handoff=Handoff(pick, slot))


def _limited(worker: Worker, run_id: str, path: str, base: str) -> bool:
    """Whether the fanout's ledgers have a limit (the spec's, so asked once per start):
    its items then push each transition as it happens, each dispatch reserved on the
    run head before its agent starts, since a clone's own view of the ledgers misses
    the calls other clones started."""
    if (run_id, base) not in worker.limited:
        frame, step, st = worker.runs.engine(worker.runs.store.load(run_id), judge=False).look(path)
        worker.limited[(run_id, base)] = limited(task_ledgers(frame, step, st))
    return worker.limited[(run_id, base)]


def item_ref(run_id: str, key: str) -> str:
    """Where a worktree item's commit is pushed (``key``: the item's claim key)."""
    return f"{PREFIX}{run_id}/items/{key}"


def _one_item(access: SharedAccess, run_id: str, path: str, index: int,
              call: Callable[[str, AgentSpec, str, Path, str], CallResult]) -> None:
    runner, _, pending = item_runner(access, run_id, path, call)
    for item in pending:
        if item["index"] == index:
            runner.run(item)


def _start_settle(worker: Worker, snap: RunSnapshot, path: str, base: str) -> None:
    what = {"label": f"{path} (merge)", "stepId": path}
    claims = worker.take(snap.run_id, [(f"{base}.settle", False)], what)
    if claims is not None:
        _run(worker, snap.run_id, f"{path} (merge)", claims, path, base, "fanout_settle",
             lambda access, _call: _settle(worker, access, snap.run_id, path))


def _settle(worker: Worker, access: SharedAccess, run_id: str, path: str) -> Outcome:
    worker.shared.fetch_items(run_id)  # the items other clones ran: their commits
    return settle_fanout(access, run_id, path)


def _run(worker: Worker, run_id: str, label: str, claims: list[Claim], path: str, base: str, finishing: str,
         work: Callable[[SharedAccess, Callable[[str, AgentSpec, str, Path, str], CallResult]], Any],
         batch: bool = False, handoff: Handoff | None = None) -> None:
    def moved_on(now: RunSnapshot) -> str | None:
        _, _, st = worker.runs.engine(now, judge=False).look(path)
        if st["status"] != "running" or fanout_key(path, st) != base:
            return "its fanout moved on"
        return None

    def done(_: Any) -> None:
        if handoff is not None and handoff.taken:  # claimed by the result's push: the next job's now
            taken, handoff.taken = handoff.taken, []
            del job.claims[-len(taken):]
            worker.counts["claimed"] += 1
            _item_job(worker, run_id, path, base, taken)

    job: Job = worker.new_job(run_id, label, claims, moved_on, done)
    access = SharedAccess(worker.shared, claims, finishing, {"worker": worker.who(job)}, batch, handoff)
    agent = worker.agent_call(job)

    def call(_key: str, spec: AgentSpec, prompt: str, cwd: Path, sandbox: str) -> CallResult:
        return agent(spec, prompt, cwd, sandbox)

    worker.start(job, lambda: work(access, call))
