"""A worker on one clone: it fetches the shared runs, claims ready steps on the remote,
runs them with this machine's own agents and pushes each result as the run's next
transition (docs/runs.md, "Many machines").

Every git question and every push happens in the worker's one loop; only the agents run
beside it, in threads that wait for their process groups. A step's agent is this
worker's configuration of the name the spec gives (never an argv from the run or the
remote), and it is stopped the moment the loop sees that its claim is no longer this
worker's, its run has ended or been cancelled, or its step was handed out anew.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from strato.agents import groups
from strato.agents.calls import CallResult, agent_prompt, call
from strato.agents.config import AgentSpec
from strato.runs.dispatch import agentgroups
from strato.runs.engine import bounds
from strato.runs.engine.state import RUN_TERMINAL, Refused, now_iso
from strato.runs.service import SpecInvalid, engine_result
from strato.runs.store import RunSnapshot
from strato.runs.workers import leases
from strato.runs.workers.shared import Claim, ClaimLost, RunRewritten, SharedRuns

Say = Callable[[str], None]


@dataclass
class Job:
    """One claimed step whose agent runs (or has just ended)."""

    claim: Claim
    entry: dict[str, Any]
    agent: AgentSpec
    takeover: dict[str, Any] | None
    renew_at: float
    future: Future[CallResult] | None = None
    pgid: list[int] = field(default_factory=list)
    stopped: str | None = None  # why its agent was stopped: its result is dropped

    @property
    def run_id(self) -> str:
        return self.claim.run_id


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
                time.sleep(self.options.interval_s)
        finally:
            self._shutdown()
        return self.report()

    def tick(self) -> None:
        for rewritten in self.shared.fetch(self.options.run_id):
            self._drop(rewritten.run_id, str(rewritten))
            if self.options.run_id is not None:
                raise rewritten
        snaps = self._snapshots()
        for key, job in list(self.jobs.items()):
            if self._follow(job, snaps.get(job.run_id)):
                del self.jobs[key]
        for snap in snaps.values():
            if len(self.jobs) >= self.options.max_parallel:
                break
            self._claim(snap)

    def _snapshots(self) -> dict[str, RunSnapshot]:
        ids = [self.options.run_id] if self.options.run_id else self.runs.store.run_ids()
        out = {}
        for run_id in ids:
            if run_id in self.dropped:
                continue
            snap = self.runs.store.load(run_id)
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
        if snap.state["status"] != "running":
            return
        try:
            ready = self.runs.engine(snap, judge=False).ready()
        except SpecInvalid as exc:
            self._drop(snap.run_id, f"run {snap.run_id}: its spec does not load here: {exc}")
            return
        for entry in ready:
            if "itemIndex" in entry or len(self.jobs) >= self.options.max_parallel:
                continue  # consumer items are their clients'
            key = leases.claim_key(entry["id"], entry["generation"])
            if (snap.run_id, key) in self.jobs:
                continue
            if (why := self.lacks(entry["agent"])) is not None:
                self._tell(snap.run_id, entry["id"], f"skipped {entry['id']} of run {snap.run_id}: {why}; "
                           "left for other workers")
                continue
            self._try(snap, entry, key)

    def _try(self, snap: RunSnapshot, entry: dict[str, Any], key: str) -> None:
        tip = self.shared.claim_tip(snap.run_id, key)
        takeover: dict[str, Any] | None = None
        if tip is not None:
            lease = self.shared.lease_at(tip)
            ref = leases.claim_ref(snap.run_id, key)
            if lease.state == leases.DONE or not (
                lease.state == leases.RELEASED or self.watch.expired(ref, tip, lease)
            ):
                return
            takeover = {"from": lease.holder, "claim": tip, "state": lease.state}
        doc = self._lease(snap.run_id, entry, renewal=0, takeover=takeover)
        claim = self.shared.create_claim(snap.run_id, key, doc, replaces=tip)
        if claim is None:
            self.counts["racesLost"] += 1
            return
        self.counts["claimed"] += 1
        if takeover is not None:
            self.counts["takeovers"] += 1
            holder = takeover["from"]
            self.say(f"took over {entry['id']} of run {snap.run_id} from {holder['worker']} "
                     f"({holder['machine']}): its claim was not renewed")
        agent = self.runs.config.get(entry["agent"])
        job = Job(claim, entry, agent, takeover, self.clock() + self._renew_every())
        self.jobs[(snap.run_id, key)] = job
        job.future = self.pool.submit(self._call, job)

    def _lease(self, run_id: str, entry: dict[str, Any], renewal: int,
               takeover: dict[str, Any] | None) -> dict[str, Any]:
        """A lease's text: who holds it and until when, on this machine's clock (for
        people to read: no one decides by it)."""
        now = time.time()
        doc = {
            "worker": self.id, "machine": self.machine, "pid": os.getpid(), "runId": run_id,
            "stepId": entry["id"], "generation": entry["generation"], "dispatchId": entry.get("dispatchId"),
            "ttlS": self.options.ttl_s, "renewal": renewal, "state": leases.HELD,
            "renewedAt": now_iso(), "expiresAt": _iso(now + self.options.ttl_s),
        }
        if takeover is not None:
            doc["takeover"] = takeover
        return doc

    def _renew_every(self) -> float:
        return self.options.ttl_s / 3

    # --- a claimed step

    def _call(self, job: Job) -> CallResult:
        """The step's agent, run here; registered as a foreground run's agents are, so a
        `strato flow cancel` on this clone stops it too."""
        with agentgroups.registered(self.runs, job.run_id) as register:
            def on_start(pid: int) -> None:
                job.pgid.append(pid)
                register(pid)
                if job.stopped is not None:
                    groups.stop(pid)

            prompt = agent_prompt(job.entry)
            return call(job.agent, prompt, self.runs.root, self.runs.pacing_dir, admit=bounds.agent_output,
                        on_start=on_start)

    def _follow(self, job: Job, snap: RunSnapshot | None) -> bool:
        """Carry a job one tick on; True once it is over (reported or dropped)."""
        assert job.future is not None
        if job.future.done():
            self._report(job, job.future.result())
            return True
        why = self._moved_on(job, snap)
        if why is None and self.clock() >= job.renew_at:
            doc = self._lease(job.run_id, job.entry, job.claim.doc["renewal"] + 1, job.takeover)
            if self.shared.renew(job.claim, doc):
                job.renew_at = self.clock() + self._renew_every()
            else:
                why = "its claim was taken over"
        if why is not None:
            self._stop(job, why)
        return False

    def _moved_on(self, job: Job, snap: RunSnapshot | None) -> str | None:
        """Why the job's agent should stop now (None: it carries on)."""
        if snap is None:
            return "its run is no longer followed"
        if snap.state["status"] != "running":
            return f"its run is {snap.state['status']}"
        if self.runs.engine(snap, judge=False).issued_token(job.entry["id"]) != job.entry["dispatchToken"]:
            return "its step was handed out anew"
        return None

    def _stop(self, job: Job, why: str) -> None:
        if job.stopped is not None:
            return
        job.stopped = why
        self.counts["stopped"] += 1
        self.say(f"stopping the agent of {job.entry['id']} (run {job.run_id}): {why}")
        for pid in job.pgid:
            groups.stop(pid)

    def _report(self, job: Job, res: CallResult) -> None:
        step = job.entry["id"]
        if job.stopped is not None:
            self._release(job)
            return
        result = engine_result(res, job.agent.model())
        token = job.entry["dispatchToken"]
        who = {"id": self.id, "machine": self.machine, "claim": job.claim.key,
               **({"takeover": job.takeover} if job.takeover else {})}
        try:
            self.shared.apply(job.run_id, "done", lambda e: e.step_done(step, result, token, None, "engine"),
                              claim=job.claim, stepId=step, worker=who)
        except ClaimLost:
            self.counts["dropped"] += 1
            self.say(f"dropped the result of {step} (run {job.run_id}): its claim was taken over")
            return
        except RunRewritten:
            raise
        except Refused as exc:
            self.counts["dropped"] += 1
            self.say(f"dropped the result of {step} (run {job.run_id}): {exc}")
            self._release(job)
            return
        self.counts["done"] += 1

    def _release(self, job: Job) -> None:
        """Give a claim up at once (others need not wait for it to expire); a lost race
        means it was not this worker's any more."""
        if job.claim.doc.get("state") == leases.HELD:
            commit = self.shared.claim_commit(job.claim, leases.RELEASED, reason=job.stopped or "dropped")
            self.shared.push([(commit, job.claim.ref, job.claim.tip)])

    def _drop(self, run_id: str, why: str) -> None:
        self.dropped.add(run_id)
        self.say(why)
        for job in self.jobs.values():
            if job.run_id == run_id:
                self._stop(job, "its run is no longer followed")

    def _tell(self, run_id: str, step: str, line: str) -> None:
        if (run_id, step) not in self.told:
            self.told.add((run_id, step))
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
            "pushesRejected": self.shared.rejected,
        }


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))

