"""A worker on one clone: it fetches the shared runs, claims ready steps and fanout items
on the remote, runs them with this machine's own agents and pushes each result as the
run's next transition (docs/runs.md, "Many machines").

The loop does the fetching, claiming and renewing; each claimed piece of work runs in a
thread beside it (an agent waited for, a fanout item's stages). A step's agent is this
worker's configuration of the name the spec gives (never an argv from the run or the
remote), and it is stopped the moment the loop sees that its claim is no longer this
worker's, its run has ended or been cancelled, or its work was handed out anew.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.agents import groups
from strato.agents.calls import CallResult, agent_prompt, call
from strato.agents.config import READ_ONLY, AgentSpec
from strato.runs.dispatch import agentgroups
from strato.runs.engine import bounds
from strato.runs.engine.state import RUN_TERMINAL, Refused, now_iso
from strato.runs.layout import LayoutError
from strato.runs.service import SpecInvalid, engine_result
from strato.runs.store import RunSnapshot
from strato.runs.workers import fold, items, leases
from strato.runs.workers.shared import Claim, ClaimLost, RunRewritten, SharedRuns

Say = Callable[[str], None]
BUSY_FETCH_S = 1.0  # a worker whose own pushes keep its view current fetches at most this often


class Stopped(Exception):
    """The worker stopped this job's agent (a cancel, a lost claim, the worker itself
    stopping): what the agent gave then is no answer, so no attempt of it is recorded."""


@dataclass
class Job:
    """One claimed piece of work: a step's agent, a fanout item, a fanout's settling."""

    run_id: str
    label: str
    claims: list[Claim]
    moved_on: Callable[[RunSnapshot], str | None]  # why its work should stop now (None: carry on)
    done: Callable[[Any], None]  # what the loop does with what the work gave
    takeover: dict[str, Any] | None
    renew_at: float
    future: Future[Any] | None = None
    pgid: list[int] = field(default_factory=list)
    stopped: str | None = None  # why its agent was stopped: what it gave is dropped


@dataclass(frozen=True)
class Options:
    run_id: str | None = None  # None: every run on the remote
    agents: frozenset[str] | None = None  # None: every agent this clone configures
    max_parallel: int = 1
    ttl_s: float = leases.DEFAULT_TTL_S
    interval_s: float = 0.5
    idle_exit_s: float | None = None  # stop after this long with nothing to run


class Worker:
    def __init__(self, shared: SharedRuns, options: Options, say: Say,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.shared, self.runs = shared, shared.runs
        self.options, self.say, self.clock = options, say, clock
        self.watch = leases.Watch(clock)
        self.id = f"w-{uuid.uuid4().hex[:12]}"
        self.machine = socket.gethostname()
        self.jobs: dict[tuple[str, str], Job] = {}
        self.pool = ThreadPoolExecutor(max_workers=max(1, options.max_parallel))
        self.dropped: set[str] = set()  # runs no longer followed (rewritten, unreadable)
        self.told: set[tuple[str, str]] = set()
        self.counts: Counter[str] = Counter()
        self.statuses: dict[str, str] = {}
        self.slots: dict[str, str] = {}
        self.refusals: dict[str, str | None] = {}  # per spec digest: why it may not run here
        self.limited: dict[tuple[str, str], bool] = {}  # per fanout start: whether a ledger has a limit
        self.next_fetch = 0.0  # per fanout start, the concurrency slot last held here

    # --- the loop

    def run(self) -> dict[str, Any]:
        """Work until the runs watched have ended (or nothing was runnable for
        ``idle_exit_s``); a report of what was done."""
        idle_since = self.clock()
        try:
            while True:
                self.tick()
                if self.jobs:
                    idle_since = self.clock()
                if self._finished(idle_since):
                    break
                self._pause()
        finally:
            self._shutdown()
        return self.report()

    def _pause(self) -> None:
        """Wait one interval, or less when a job's work ends first (its result is taken
        and the next piece claimed at once, not an interval later)."""
        running = [job.future for job in self.jobs.values() if job.future is not None]
        if running:
            wait(running, timeout=self.options.interval_s, return_when=FIRST_COMPLETED)
        else:
            time.sleep(self.options.interval_s)

    def tick(self) -> None:
        if self._busy():
            return
        if self.shared.stale or self.clock() >= self.next_fetch:
            self._fetch()
        snaps = self._snapshots()
        for key, job in list(self.jobs.items()):
            if self._follow(job, snaps.get(job.run_id)):
                del self.jobs[key]
        claimed = self.counts["claimed"]
        for snap in snaps.values():
            if snap.state["status"] == "running":
                self._claim(snap)
        if not self.full() and self.counts["claimed"] == claimed:
            self.shared.stale = True  # room, and nothing in this view to take: look again

    def _fetch(self) -> None:
        """The remote's runs, at least once a second (a cancel is seen within it), and
        before any decision taken on a view known to be behind; between those, the view
        the worker's own pushes kept current."""
        self.next_fetch = self.clock() + BUSY_FETCH_S
        for rewritten in self.shared.fetch(self.options.run_id):
            self._drop(rewritten.run_id, str(rewritten))
            if self.options.run_id is not None:
                raise rewritten

    def _busy(self) -> bool:
        """Nothing to do this tick: no room for more work, no job ended and no renewal
        due, and the run was fetched less than a second ago (a cancel is seen within it)."""
        now = self.clock()
        return self.full() and now < self.next_fetch and not any(
            job.future is None or job.future.done() or now >= job.renew_at for job in self.jobs.values())

    def full(self) -> bool:
        return len(self.jobs) >= self.options.max_parallel

    def _snapshots(self) -> dict[str, RunSnapshot]:
        ids = [self.options.run_id] if self.options.run_id else self.runs.store.run_ids()
        out = {}
        for run_id in ids:
            if run_id in self.dropped:
                continue
            try:
                snap = self.runs.store.load(run_id)
            except LayoutError as exc:  # left to a clone that reads it
                self._drop(run_id, f"run {run_id}: {exc}")
                if self.options.run_id is not None:
                    raise
                continue
            self.statuses[run_id] = snap.state["status"]
            out[run_id] = snap
        return out

    def _finished(self, idle_since: float) -> bool:
        if self.jobs:
            return False
        if self.options.idle_exit_s is not None and self.clock() - idle_since >= self.options.idle_exit_s:
            return True
        watched = [s for r, s in self.statuses.items() if r not in self.dropped]
        return bool(watched or self.options.run_id is None) and all(s in RUN_TERMINAL for s in watched)

    # --- claiming

    def lacks(self, name: str) -> str | None:
        """Why this worker cannot run agent ``name`` (None: it can)."""
        if self.options.agents is not None and name not in self.options.agents:
            return f"agent {name} is not one of this worker's (--agents)"
        config = self.runs.config
        if name in config.refused:
            return f"agent {name} is not approved on this machine"
        spec = config.agents.get(name)
        if spec is None:
            return f"no agent {name} is configured on this machine"
        program = spec.argv[0]
        if shutil.which(program) is None and shutil.which(str(self.runs.root / program)) is None:
            return f"agent {name}'s program {program} is not on this machine"
        return None

    def _claim(self, snap: RunSnapshot) -> None:
        """Fold the fanout results waiting in the run (busy or not), then claim what
        this worker has room for."""
        try:
            eng = self.runs.engine(snap, judge=False)
            if fold.fold(self, snap, eng):
                snap = self.runs.store.load(snap.run_id)
                eng = self.runs.engine(snap, judge=False)
        except SpecInvalid as exc:
            self._drop(snap.run_id, f"run {snap.run_id}: its spec does not load here: {exc}")
            return
        except RunRewritten as exc:
            self._drop(exc.run_id, str(exc))
            if self.options.run_id is not None:
                raise
            return
        if self.full() or snap.state["status"] != "running":
            return
        items.claim_fanouts(self, snap, eng)
        for entry in eng.ready():
            if "itemIndex" in entry or self.full():
                continue  # consumer items are their clients'
            key = leases.claim_key(entry["id"], entry["generation"])
            if (snap.run_id, key) in self.jobs:
                continue
            if not self.can_run(snap.run_id, entry["id"], [entry["agent"]]):
                continue
            self._start_step(snap, entry, key)

    def can_run(self, run_id: str, label: str, agents: Sequence[str]) -> bool:
        """Whether this worker has every agent of a piece of work; says once when not."""
        why = next((w for a in agents if (w := self.lacks(a)) is not None), None)
        if why is not None:
            self.tell(run_id, label, f"skipped {label} of run {run_id}: {why}; left for other workers")
        return why is None

    def take(self, run_id: str, keys: Sequence[tuple[str, bool]], what: dict[str, Any]) -> list[Claim] | None:
        """Claim every key at once, or none: ``(key, reusable)``, where a reusable
        claim (a fanout's concurrency slot) may be taken again once it is done. A held
        claim is taken over only once this worker has seen it unrenewed for its ttl. None
        when any is held, or another worker's push won."""
        wanted: list[tuple[str, dict[str, Any], str | None]] = []
        takeover: dict[str, Any] | None = None
        for key, reusable in keys:
            tip = self.shared.claim_tip(run_id, key)
            doc = self.lease(run_id, what, 0)
            if tip is not None:
                if not self.free(run_id, key, reusable):
                    return None
                lease = self.shared.lease_at(tip)
                if lease.state == leases.HELD:
                    takeover = doc["takeover"] = {"from": lease.holder, "claim": tip}
            wanted.append((key, doc, tip))
        claims = self.shared.create_claims(run_id, wanted)
        if claims is None:
            self.counts["racesLost"] += 1
            return None
        self.counts["claimed"] += 1
        if takeover is not None:
            self.counts["takeovers"] += 1
            holder = takeover["from"]
            self.say(f"took over {what['label']} of run {run_id} from {holder['worker']} "
                     f"({holder['machine']}): its claim was not renewed")
        return claims

    def free(self, run_id: str, key: str, reusable: bool = False) -> bool:
        """Whether a claim may be taken as far as this worker can tell: absent, given up,
        done (a reusable one), or held but unrenewed for its ttl as this worker saw it."""
        tip = self.shared.claim_tip(run_id, key)
        if tip is None:
            return True
        lease = self.shared.lease_at(tip)
        if lease.state == leases.RELEASED or (reusable and lease.state == leases.DONE):
            return True
        return self.watch.expired(leases.claim_ref(run_id, key), tip, lease)

    def lease(self, run_id: str, what: dict[str, Any], renewal: int) -> dict[str, Any]:
        """A lease's text: who holds it and until when, on this machine's clock (for
        people to read: no one decides by it)."""
        until = time.gmtime(time.time() + self.options.ttl_s)
        return {
            "worker": self.id, "machine": self.machine, "pid": os.getpid(), "runId": run_id, **what,
            "ttlS": self.options.ttl_s, "renewal": renewal, "state": leases.HELD,
            "renewedAt": now_iso(), "expiresAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", until),
        }

    def start(self, job: Job, work: Callable[[], Any]) -> None:
        self.jobs[(job.run_id, job.claims[0].key)] = job
        job.future = self.pool.submit(work)

    def new_job(self, run_id: str, label: str, claims: list[Claim],
                moved_on: Callable[[RunSnapshot], str | None], done: Callable[[Any], None]) -> Job:
        return Job(run_id, label, claims, moved_on, done, claims[0].doc.get("takeover"),
                   self.clock() + self.options.ttl_s / 3)

    def who(self, job: Job) -> dict[str, Any]:
        """What a transition says of the worker that pushed it (and whom it took over from)."""
        return {"id": self.id, "machine": self.machine, "claim": job.claims[0].key,
                **({"takeover": job.takeover} if job.takeover else {})}

    # --- a step

    def _start_step(self, snap: RunSnapshot, entry: dict[str, Any], key: str) -> None:
        what = {"label": entry["id"], "stepId": entry["id"], "generation": entry["generation"],
                "dispatchId": entry.get("dispatchId")}
        claims = self.take(snap.run_id, [(key, False)], what)
        if claims is None:
            return
        agent = self.runs.config.get(entry["agent"])
        token = entry["dispatchToken"]

        def moved_on(now: RunSnapshot) -> str | None:
            if self.runs.engine(now, judge=False).issued_token(entry["id"]) != token:
                return "its step was handed out anew"
            return None

        def report(res: CallResult) -> None:
            self._report(job, entry, agent, res)

        job = self.new_job(snap.run_id, entry["id"], claims, moved_on, report)
        self.start(job, lambda: self.agent_call(job)(agent, agent_prompt(entry), self.runs.root, READ_ONLY))

    def agent_call(self, job: Job) -> Callable[[AgentSpec, str, Path, str], CallResult]:
        """How the job calls an agent here: registered as a foreground run's agents are
        (so a `strato flow cancel` on this clone stops it too), its group kept so the
        loop can stop it."""

        def run(agent: AgentSpec, prompt: str, cwd: Path, sandbox: str) -> CallResult:
            with agentgroups.registered(self.runs, job.run_id) as register:
                def on_start(pid: int) -> None:
                    job.pgid.append(pid)
                    register(pid)
                    if job.stopped is not None:
                        groups.stop(pid)

                res = call(agent, prompt, cwd, self.runs.pacing_dir, sandbox=sandbox,
                           admit=bounds.agent_output, on_start=on_start)
            if job.stopped is not None:
                raise Stopped(job.stopped)
            return res

        return run

    def _report(self, job: Job, entry: dict[str, Any], agent: AgentSpec, res: CallResult) -> None:
        step, token = entry["id"], entry["dispatchToken"]
        result = engine_result(res, agent.model())
        self.shared.apply(job.run_id, "done", lambda e: e.step_done(step, result, token, None, "engine"),
                          claims=job.claims, stepId=step, worker=self.who(job))

    # --- following a job

    def _follow(self, job: Job, snap: RunSnapshot | None) -> bool:
        """Carry a job one tick on; True once it is over (reported or dropped)."""
        assert job.future is not None
        if job.future.done():
            self._end(job)
            return True
        why = self._moved_on(job, snap)
        if why is None and self.clock() >= job.renew_at:
            if self.shared.renew(job.claims, _renewed):
                job.renew_at = self.clock() + self.options.ttl_s / 3
            else:
                why = "its claim was taken over"
        if why is not None:
            self._stop(job, why)
        return False

    def _moved_on(self, job: Job, snap: RunSnapshot | None) -> str | None:
        if snap is None:
            return "its run is no longer followed"
        if snap.state["status"] != "running":
            return f"its run is {snap.state['status']}"
        return job.moved_on(snap)

    def _end(self, job: Job) -> None:
        """What the job's work gave, taken in the loop: reported, or dropped and said."""
        assert job.future is not None
        try:
            if job.stopped is None:
                job.done(job.future.result())
                self.counts["done"] += 1
            else:
                job.future.exception()
        except ClaimLost:
            self.counts["dropped"] += 1
            self.say(f"dropped the result of {job.label} (run {job.run_id}): its claim was taken over")
            return
        except RunRewritten as exc:
            self._drop(exc.run_id, str(exc))
            if self.options.run_id is not None:
                raise
            return
        except Refused as exc:
            self.counts["dropped"] += 1
            self.say(f"dropped the result of {job.label} (run {job.run_id}): {exc}")
        self._release(job)

    def _stop(self, job: Job, why: str) -> None:
        if job.stopped is not None:
            return
        job.stopped = why
        self.counts["stopped"] += 1
        self.say(f"stopping the agent of {job.label} (run {job.run_id}): {why}")
        for pid in job.pgid:
            groups.stop(pid)

    def _release(self, job: Job) -> None:
        """Give up the claims still held (others need not wait for them to expire); a
        lost race means they were not this worker's any more."""
        held = [c for c in job.claims if c.doc.get("state") == leases.HELD]
        if held:
            why = job.stopped or "dropped"
            commits = [self.shared.claim_commit(c, leases.RELEASED, reason=why) for c in held]
            self.shared.push([(commit, c.ref, c.tip) for commit, c in zip(commits, held, strict=True)])

    def _drop(self, run_id: str, why: str) -> None:
        self.dropped.add(run_id)
        self.say(why)
        for job in self.jobs.values():
            if job.run_id == run_id:
                self._stop(job, "its run is no longer followed")

    def tell(self, run_id: str, label: str, line: str) -> None:
        if (run_id, label) not in self.told:
            self.told.add((run_id, label))
            self.counts["skipped"] += 1
            self.say(line)

    def _shutdown(self) -> None:
        """Stop what still runs (an interrupted worker) and give its claims up."""
        for job in self.jobs.values():
            self._stop(job, "the worker is stopping")
        self.pool.shutdown(wait=True)
        for job in self.jobs.values():
            with contextlib.suppress(Refused):
                self._release(job)
        self.jobs.clear()

    def report(self) -> dict[str, Any]:
        return {
            "worker": self.id, "machine": self.machine, "remote": self.shared.remote,
            "runs": dict(sorted(self.statuses.items())), "dropped": sorted(self.dropped),
            "claimed": self.counts["claimed"], "done": self.counts["done"],
            "takeovers": self.counts["takeovers"], "racesLost": self.counts["racesLost"],
            "resultsDropped": self.counts["dropped"], "agentsStopped": self.counts["stopped"],
            "skipped": self.counts["skipped"], "pushes": self.shared.pushes,
            "pushesRejected": self.shared.rejected, "headPushesRejected": self.shared.rejected_head,
            "pushS": round(self.shared.push_s, 3),
            "fetchS": round(self.shared.fetch_s, 3), **fold.counts(self),
        }


def _renewed(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "renewal": doc["renewal"] + 1, "renewedAt": now_iso()}
