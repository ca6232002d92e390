"""Run operations against a workspace: load the run from its ref, apply one engine
operation, commit the new state with compare-and-swap. A lost race reloads and decides
again, so a result or decision that was valid for the old head is re-checked against
the new one (and usually refused as stale)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from strato.agents import trust
from strato.agents.calls import CallResult, agent_prompt, call, judge_runner
from strato.agents.config import WORKSPACE_FILE, AgentsConfig, AgentSpec, committed_gate_policy, load_config
from strato.agents.spectrust import command_refusal, refusal
from strato.flow.errors import SpecError
from strato.flow.spec import GateStep, Spec
from strato.flow.starts import starts
from strato.flow.validate import load_spec
from strato.runs.dispatch import agentgroups
from strato.runs.dispatch.commands import command_evaluator
from strato.runs.dispatch.fanout import ItemCall, run_fanout
from strato.runs.engine import bounds
from strato.runs.engine.attempts import attempt_rows
from strato.runs.engine.checks import Judge
from strato.runs.engine.context import Evaluator
from strato.runs.engine.dispatches import engine_telemetry
from strato.runs.engine.machine import Engine
from strato.runs.engine.planning import FlowInfo, plan
from strato.runs.engine.state import RUN_TERMINAL, Refused
from strato.runs.lanes.model import LaneBook, digest
from strato.runs.lanes.store import LaneStore
from strato.runs.layout import LayoutError
from strato.runs.store import RUN_ID, Outcome, RunSnapshot, RunStore, Transition, head_ref, valid_label
from tropo.git.chain import ChainConflict
from tropo.git.refs import RefRaceError
from tropo.git.repo import head_commit, private_dir, require, workdir
from tropo.git.snapshot import read_file
from tropo.git.types import Repository

# the transports a person decides through: their own terminal, or the workbench page
# (`vivary serve`), which proves it with the per-start token only that person was shown
PERSON_TRANSPORTS = ("terminal", "workbench")


# an operation: its name, what it does to the run (False: nothing), the transition's detail
Operation = tuple[str, Callable[[Engine], bool | None], dict[str, Any]]


class SpecInvalid(Exception):
    def __init__(self, errors: list[SpecError]) -> None:
        super().__init__(str(errors[0]) if errors else "invalid spec")
        self.errors = errors


def _preflight(root: Path, spec: Spec, text: str, config: AgentsConfig) -> None:
    """Refuse (``untrusted``) a spec that would start a program the person did not choose."""
    found = starts(spec)
    if (why := refusal(root, text, config, found.agents, found.judged, found.commands)) is not None:
        raise Refused("untrusted", why)


class Runs:
    """All runs of one workspace."""

    def __init__(self, root: Path | str, judge: Judge | None = None, *,
                 config: AgentsConfig | None = None, lanes: bool = True) -> None:
        """``config``: the agents as another workspace trusts them (an eval's scratch copy
        runs the agents of the workspace that started it); ``lanes=False`` verifies every
        output and records no lane evidence (an eval measuring verification without them)."""
        self.repo: Repository = require(root)
        self.root = workdir(self.repo)
        self.store = RunStore(self.repo)
        self.lanes = LaneStore(self.repo)
        self._specs: dict[str, tuple[Spec, Evaluator]] = {}
        self._infos: dict[str, dict[str, FlowInfo]] = {}
        self._judge = judge
        self._config: AgentsConfig | None = config
        self._use_lanes = lanes

    # --- helpers

    @property
    def config(self) -> AgentsConfig:
        if self._config is None:
            loaded = load_config(self.root)  # the working tree's is still checked whole
            committed = read_file(head_commit(self.repo), WORKSPACE_FILE)
            gates = committed_gate_policy(self.root, committed, loaded.gates)
            self._config = replace(loaded, gates=gates)
        return self._config

    @property
    def pacing_dir(self) -> Path:
        return private_dir(self.repo, "pacing", create=True)

    def judge(self) -> Judge | None:
        """The judge of `judged` ensures; one that holds nothing, with the refusal as its
        reason, when only an unapproved agents file names one (a run planned before
        the file changed: nothing runs)."""
        if self._judge is None:
            try:
                spec = self.config.trusted_judge()
            except trust.Untrusted as exc:
                return _refusing_judge(str(exc))
            if spec is not None:
                self._judge = judge_runner(spec, self.root, self.pacing_dir, bounds.agent_output)
        return self._judge

    @cached_property
    def config_digests(self) -> dict[str, str]:
        """Each agent's configuration as its lanes see it: its own table and the judge's."""
        judge = self.config.judge
        shared = {"judge": None if judge is None else _as_lanes_see(judge)}
        return {name: digest({"agent": _as_lanes_see(a), **shared}) for name, a in self.config.agents.items()}

    def lane_book(self) -> LaneBook | None:
        """The lanes as they stand, for one operation (strato.runs.engine.verification);
        None when this service runs without lanes."""
        return LaneBook(self.lanes.standing(), self.config_digests) if self._use_lanes else None

    def _parsed(self, text: str) -> Spec:
        spec, errors = load_spec(text, self.config.known)
        if spec is None:
            raise SpecInvalid(errors)
        return spec

    def _frozen(self, snap: RunSnapshot) -> tuple[Spec, Evaluator]:
        """The run's spec and the evaluator of its commands (checked against its text)."""
        key = self.store.spec_key(snap)
        if key not in self._specs:
            text = self.store.spec_text(snap)
            self._specs[key] = (self._parsed(text), command_evaluator(self.root, text))
        return self._specs[key]

    def spec_of(self, snap: RunSnapshot) -> Spec:
        return self._frozen(snap)[0]

    def preflight(self, snap: RunSnapshot) -> None:
        """Refuse (`untrusted`) to drive a run whose agents, judge or commands the person
        has not approved here, before any step is claimed."""
        _preflight(self.root, self.spec_of(snap), self.store.spec_text(snap), self.config)

    def command_refusal(self, snap: RunSnapshot, command: str) -> str | None:
        """Why the run's spec may not run ``command`` here (None: it is approved)."""
        return command_refusal(self.root, self.store.spec_text(snap), command)

    def engine(self, snap: RunSnapshot, judge: bool = True) -> Engine:
        spec, evaluator = self._frozen(snap)
        infos = self._infos.setdefault(snap.state["revisionDigest"], {})
        # a snapshot's tables hand each entry an operation takes out as a copy of its
        # own (strato.runs.layout), so the engine may work on it in place
        judged = self.judge() if judge else None
        book = self.lane_book() if judge else None
        return Engine(spec, snap.state, self.root, judged, evaluator, infos=infos, lanes=book)

    def load(self, run_id: str) -> RunSnapshot:
        return self.store.load(run_id)

    # --- operations

    def plan(self, spec_text: str, inputs: dict[str, Any], run_id: str | None = None) -> Outcome:
        if run_id is not None and not RUN_ID.match(run_id):
            raise Refused("invalid_run_id", f"invalid run id {run_id!r} (letters, digits, dashes)")
        bounds.check(inputs, "the run's input")
        spec = self._parsed(spec_text)
        _preflight(self.root, spec, spec_text, self.config)  # nothing is written when refused
        state = plan(spec, inputs, run_id or str(uuid.uuid4()))
        evaluator = command_evaluator(self.root, spec_text)
        eng = Engine(spec, state, self.root, self.judge(), evaluator, lanes=self.lane_book())
        eng.emit("planned", flow=spec.entry, input=inputs)
        eng.advance()
        message = {"op": "plan", "events": eng.events}
        try:
            head = self.store.create(state["id"], eng.run, spec_text, message)
        except RefRaceError:
            raise Refused("run_exists", f"a run named {state['id']!r} already exists") from None
        if eng.lanes is not None:  # a new run's lane evidence: it exists once its ref does
            self.lanes.record(eng.lanes.evidence)
        snap = RunSnapshot(state["id"], head, eng.run)
        self._specs[self.store.spec_key(snap)] = (spec, evaluator)
        return Outcome(snap, eng.events)

    def apply(
        self, run_id: str, op: str, action: Callable[[Engine], bool | None], **detail: Any
    ) -> Outcome:
        """Load, act, commit with CAS; on a lost race start over from the new head. An
        action that returns False changed nothing: no transition is written."""
        return self.apply_all(run_id, [(op, action, detail)])

    def apply_all(self, run_id: str, ops: Sequence[Operation]) -> Outcome:
        """:meth:`apply` for several operations in order, each its own transition, on one
        state (an entry is copied and decoded once, not once an operation), the ref moved
        once: all land or none. The events are the last operation's."""
        run_id = self.store.resolve(run_id)
        engines: list[Engine | None] = []  # each operation's (None: it changed nothing)

        def decide(snap: RunSnapshot) -> Iterator[Transition]:
            engines.clear()
            for op, action, detail in ops:
                eng = self.engine(snap)
                engines.append(None if action(eng) is False else eng)
                if eng is engines[-1]:
                    if eng.lanes is not None:  # lowering trust early is always safe
                        self.lanes.record(eng.lanes.resets())
                    yield eng.run, {"op": op, **detail, "events": eng.events}

        try:
            new = self.store.update(run_id, ops[-1][0], decide)
        except ChainConflict as exc:
            if exc.name != head_ref(run_id):  # the lanes', not the run's
                raise
            raise Refused("race_lost", f"run {run_id} kept moving; try again") from None
        for done in engines:
            if done is not None and done.lanes is not None:
                self.lanes.record(done.lanes.gains())
        return Outcome(new, [] if engines[-1] is None else engines[-1].events)

    def done(
        self,
        run_id: str,
        step: str,
        token: str | None,
        result: Any,
        claims: dict[str, Any] | None = None,
        source: str = "step_done",
        current: bool = False,
    ) -> Outcome:
        """Report a step's result with the token it was handed out with; `claims`
        (dispatchId, generation, contractDigest, revisionDigest) must match the hand-out
        as the token must. `current` reports it for the dispatch outstanding now instead
        (Stratum's step_done names none). That token is read once, before the first
        attempt: if the run moves meanwhile (another report, a revert, a cancel), the
        retry after the lost race is refused as stale rather than taken as the result of
        a newer dispatch. A result past :mod:`strato.runs.engine.bounds` is refused first."""
        bounds.check(result, "the step result")
        if current:
            token = self.engine(self.store.load(run_id), judge=False).issued_token(step)
        return self.apply(
            run_id, "done", lambda e: e.step_done(step, result, token, claims, source), stepId=step
        )

    def usage_report(
        self, run_id: str, dispatch_id: str, usage: Any, telemetry: Any = None
    ) -> Outcome:
        """Debit a dispatch's usage once: a repeat (or the loser of a race with the same
        report) writes nothing and answers with the run as it is."""
        return self.apply(
            run_id,
            "usage",
            lambda e: e.usage_report(dispatch_id, usage, telemetry),
            dispatchId=dispatch_id,
        )

    def gate(
        self,
        run_id: str,
        step: str,
        decision: str,
        token: str | None = None,
        note: str | None = None,
        resolved_by: str = "agent",
        via: str = "cli",
        client: str | None = None,
        apply: Callable[..., Outcome] | None = None,
    ) -> Outcome:
        """Resolve a gate (written by ``apply``, default :meth:`apply`: a shared run's
        pushes it to its remote). Without a token the current one is used: a person at the CLI
        decides on the gate as it is now (a stale token is refused like a stale result).
        `via` is how the decision arrived, as the caller knows it from its own transport
        (`terminal`, `cli` without one, `mcp`, `workbench`), never from what a client says: the gate
        policy is checked against it, and over MCP the decision is the agent's. The
        defaults are the agent's and no terminal: only a caller that knows a person is at
        its terminal (or holds the workbench's token) says `resolved_by="human"` with
        `via="terminal"` (or `"workbench"`)."""
        policy = self.config.gates
        if via == "mcp":
            resolved_by = "agent"

        def act(e: Engine) -> None:
            frame, gate_step, st = e.locate(step)
            in_person = via in PERSON_TRANSPORTS and resolved_by == "human"
            if policy.needs_person(frame.name, gate_step.id) and not in_person:
                raise Refused(
                    "gate_needs_person",
                    f"gate {step} ({frame.name}) must be decided by a person: run "
                    "`strato flow gate` at a terminal or the workbench (`vivary serve`) "
                    "([gates] person in .vivary/agents.toml)",
                )
            if via == "mcp" and not policy.mcp_may_resolve(frame.name, gate_step.id):
                raise Refused(
                    "gate_not_allowed_over_mcp",
                    f"gate {step} is not decided over MCP here: a person decides it with "
                    '`strato flow gate` ([gates] mcp = "resolve" in .vivary/agents.toml allows it)',
                )
            e.gate_resolve(step, decision, token or st.get("gateToken"), note, resolved_by, client)

        detail = {"resolvedBy": resolved_by, **({"client": client} if client else {})}
        return (apply or self.apply)(run_id, "gate", act, stepId=step, decision=decision, via=via, **detail)

    def resume(self, run_id: str, by: str) -> Outcome:
        """Record that `by` (`mcp`, `cli`, `runner`) takes a running run up again: a
        `resumed` event, unless the run's last transition already is one (resuming a run
        that has not moved since says nothing new, and runners that die before moving it
        do not grow its history). An ended run is not resumed."""
        snap = self.store.load(run_id)
        if snap.state["status"] != "running" or self.store.transition_at(snap.head).get("op") == "resume":
            return Outcome(snap, [])

        def act(e: Engine) -> bool:
            if e.run["status"] != "running":
                return False
            e.emit("resumed", by=by)
            return True

        return self.apply(snap.run_id, "resume", act, by=by)

    def cancel(self, run_id: str, reason: str | None = None, by: str = "cli") -> Outcome:
        return self.apply(run_id, "cancel", lambda e: e.cancel(by, reason))

    def commit(self, run_id: str, label: str) -> RunSnapshot:
        snap = self.store.load(run_id)
        if not valid_label(snap.run_id, label.strip()):
            raise Refused(
                "invalid_label",
                f"invalid checkpoint label {label!r} (letters, digits, '.', '_', '-'; "
                "a git ref name: no '..', no trailing '.' or '.lock')",
            )
        if self.engine(snap).running_fanouts():
            raise Refused("fanout_in_flight", "cannot checkpoint while a fanout is in flight")
        self.store.save_checkpoint(snap, label.strip())
        return snap

    def revert(self, run_id: str, label: str) -> Outcome:
        run_id = self.store.resolve(run_id)
        saved = self.store.checkpoint(run_id, label).state
        return self.apply(run_id, "revert", lambda e: e.restore(label, saved), label=label)

    def audit(self, run_id: str) -> dict[str, Any]:
        snap = self.store.load(run_id)
        run_id = snap.run_id
        history = [t for _, t in self.store.history(run_id)]
        events = [ev for t in history for ev in t.get("events", [])]
        out = {
            "runId": run_id,
            "status": snap.state["status"],
            "events": events,
            "steps": snap.state["scope"]["steps"],
            "flowSpent": snap.state["flowSpent"],
            "carry": snap.state.get("carry", {}),
            "head": snap.head,
            "attempts": attempt_rows(events),
        }
        for key in ("output", "failure"):
            if key in snap.state:
                out[key] = snap.state[key]
        # a shared run's results, by the worker that pushed each (and whom it took over from)
        carried = [{"stepId": t.get("stepId"), **t["worker"]}
                   for t in history if isinstance(t.get("worker"), dict)]
        if carried:
            out["workers"] = carried
        return out

    def gates(self) -> list[dict[str, Any]]:
        out = []
        for run_id in self.store.run_ids():
            try:
                snap = self.store.load(run_id)
            except LayoutError:  # not decided here: `strato flow list` shows it unreadable
                continue
            if snap.state["status"] != "running":
                continue
            eng = self.engine(snap, judge=False)
            for frame in eng.frames():
                for step in frame.flow.typed_steps:
                    st = frame.steps[step.id]
                    if st["status"] == "waiting_gate" and isinstance(step, GateStep):
                        g = step.gate
                        out.append({"runId": run_id, "flow": frame.name, "stepId": frame.prefix + step.id,
                                    "gateToken": st["gateToken"], "round": frame.scope["rounds"],
                                    "on_approve": g.on_approve, "on_revise": g.on_revise,
                                    "on_kill": g.on_kill})
        return out

    # --- engine mode

    def drive(
        self,
        run_id: str,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        dispatch: Callable[[str, dict[str, Any]], Outcome] | None = None,
        fanout_calls: Callable[[str, str], ItemCall] | None = None,
    ) -> RunSnapshot:
        """Run agents for ready steps (and fanouts) until the run ends or only gates
        are left waiting. `dispatch` runs one ready step (default: `self.dispatch`) and
        `fanout_calls(run, fanout path)` the agents of a fanout's items (default: here);
        a background runner passes ones whose agents outlive it."""
        dispatch = dispatch or self.dispatch
        run_id = self.store.resolve(run_id)
        if (first := self.store.load(run_id)).state["status"] not in RUN_TERMINAL:
            self.preflight(first)
        while True:
            snap = self.store.load(run_id)
            if snap.state["status"] in RUN_TERMINAL:
                return snap
            eng = self.engine(snap)
            fanouts = eng.running_fanouts()
            if fanouts:
                frame, step, _ = fanouts[0]
                path = frame.prefix + step.id
                calls = None if fanout_calls is None else fanout_calls(run_id, path)
                self._emit(on_event, run_fanout(self, run_id, path, calls).events)
                continue
            ready = eng.ready()
            if not ready:
                return snap
            mine = [entry for entry in ready if "itemIndex" not in entry]  # consumer items are not ours
            if not mine:
                return snap
            for taken in self.claim(run_id, mine):
                self._emit(on_event, dispatch(run_id, taken).events)

    def claim(self, run_id: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Claim ready steps for the engine before any of their agents runs (only the
        engine's measure of their usage then counts), all in one transition: while one
        step's agent runs, no other client can report the next one first. The entries to
        run, handed out anew where another client had reported usage first, without
        those no longer ready (reported, cancelled or reverted meanwhile)."""

        def take(eng: Engine) -> bool:
            changed = False
            for entry in entries:
                with contextlib.suppress(Refused):  # that one is no longer the hand-out
                    changed = eng.claim(entry["id"], entry["dispatchToken"]) or changed
            return changed

        try:
            steps = [entry["id"] for entry in entries]
            snap = self.apply(run_id, "engine_dispatch", take, stepIds=steps).snap
        except Refused:  # the run ended meanwhile
            return []
        picked = {entry["id"] for entry in entries}
        return [e for e in self.engine(snap, judge=False).ready() if e["id"] in picked]

    def dispatch(self, run_id: str, entry: dict[str, Any]) -> Outcome:
        agent = self.config.get(entry["agent"])
        with agentgroups.registered(self, run_id) as on_start:  # so a cancel elsewhere stops it
            res = call(agent, agent_prompt(entry), self.root, self.pacing_dir, admit=bounds.agent_output,
                       on_start=on_start)
        return self.report(run_id, entry, res, agent.model())

    def report(self, run_id: str, entry: dict[str, Any], res: CallResult, model: str) -> Outcome:
        """Record what the agent of a ready step gave, with the token it was handed;
        ``model`` is what telemetry names (the agent's `AgentSpec.model()`)."""
        result = engine_result(res, model)
        try:
            return self.done(run_id, entry["id"], entry["dispatchToken"], result, source="engine")
        except Refused:  # cancelled or reverted while the agent ran: the result is stale
            return Outcome(self.store.load(run_id), [])

    @staticmethod
    def _emit(on_event: Callable[[dict[str, Any]], None] | None, events: list[dict[str, Any]]) -> None:
        for ev in events if on_event else []:
            assert on_event is not None
            on_event(ev)


def engine_result(res: CallResult, model: str) -> dict[str, Any]:
    """The result of a step whose agent the engine called itself: the output or the
    failure, the call's usage with its wall time as `ms`, and the engine's telemetry."""
    result: dict[str, Any] = {"output": res.output}
    if res.failure is not None:
        result = {"failure": res.failure}
    result["usage"] = {**res.usage, "ms": res.duration_ms}
    result["telemetry"] = engine_telemetry(model, res.duration_ms)
    return result


def _as_lanes_see(spec: AgentSpec) -> dict[str, Any]:
    """An agent's table without its per-call settings: no engine call passes one, so a
    change to them changes nothing a lane measured."""
    return {k: v for k, v in asdict(spec).items() if k != "takes"}


def _refusing_judge(reason: str) -> Judge:
    """A judge that runs nothing: every statement fails with the refusal."""

    def judge(statement: str, stakes: str, output: Any) -> dict[str, Any]:
        return {"holds": False, "reason": reason, "model": "none"}

    return judge
