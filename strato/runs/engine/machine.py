"""The run state machine: the operations the service applies to a run held as plain
JSON (the `run.json` of each transition): advance, step results, gate decisions,
cancel and checkpoint restore, and settling an engine-mode fanout.

The engine never does I/O beyond reading files for ensures and asking the judge: the
service layer loads a run, calls one operation here, and commits the result. Each
operation appends events to `Engine.events`; an operation that is refused raises
`Refused` before it changes anything. The work is done where a reader would look for
it: `advance` (starting steps), `results`, `gates`, `iterate` (iterate and carry),
`budgets`, `outcomes` (how a step ends), `fanout_steps` and `consumer`; this class
applies one of them and then advances the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strato.flow.spec import FanoutStep
from strato.runs.engine import dispatches, gates, results
from strato.runs.engine import fanouts as fanout_steps
from strato.runs.engine.advance import advance_run
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.fanouts import FanoutOutcome
from strato.runs.engine.ledger import usage_errors
from strato.runs.engine.state import ACTIVE, Refused, new_token, token_holders


class Engine(RunContext):
    """One run and the operations on it (see the module docstring)."""

    def advance(self) -> None:
        advance_run(self)

    def ready(self) -> list[dict[str, Any]]:
        return results.ready(self)

    def step_done(
        self,
        path: str,
        result: Any,
        token: str | None,
        claims: Mapping[str, Any] | None = None,
        source: str = "step_done",
    ) -> None:
        results.step_done(self, path, result, token, claims, source)
        self.advance()

    def usage_report(self, dispatch_id: str, usage: Any, telemetry: Any = None) -> bool:
        """Debit a dispatch's usage once; False (nothing changed) when it already was.
        `Refused` before any change for a malformed report or an unknown dispatch."""
        problems = usage_errors(usage)
        if not problems and "dispatches" in usage:
            problems = ["usage.dispatches: dispatches are engine-accounted"]
        if problems:
            raise Refused("invalid_usage", problems[0])
        problems = [] if telemetry is None else dispatches.telemetry_errors(telemetry)
        if problems:
            raise Refused("invalid_telemetry", problems[0])
        if not dispatches.report(self, dispatch_id, usage, telemetry):
            return False
        self.advance()
        return True

    def claim(self, path: str, token: str) -> bool:
        """Take the ready step at `path` (handed out with `token`) for the engine's own
        agent (see `dispatches.claim`); `Refused` if it is no longer that hand-out."""
        self.require_running()
        _, _, st = self.locate(path)
        if st["status"] != "ready" or st.get("dispatchToken") != token:
            raise Refused("stale_token", f"step {path} is no longer the hand-out the engine picked")
        return dispatches.claim(self, path, st)

    def issued_token(self, path: str) -> str | None:
        return results.issued_token(self, path)

    def gate_resolve(
        self,
        path: str,
        decision: str,
        token: str | None,
        note: str | None = None,
        resolved_by: str = "agent",
        client: str | None = None,
    ) -> None:
        """`client` names the MCP client that decided (from its handshake), kept beside
        `resolvedBy` in the event and the gate's attempt record."""
        gates.resolve(self, path, decision, token, note, resolved_by, client)
        self.advance()

    def cancel(self, by: str = "cli", reason: str | None = None) -> None:
        """End the run; what was in flight (steps, consumer items) is recorded as burned."""
        self.require_running()
        steps: list[str] = []
        items = 0
        for frame in self.frames():
            for sid, st in frame.steps.items():
                if st["status"] in ACTIVE:
                    steps.append(frame.prefix + sid)
                items += sum(it.get("status") == "ready" for it in st.get("fanout", {}).get("items", []))
                for holder in token_holders(st):
                    holder.pop("dispatchToken", None)
                    holder.pop("gateToken", None)
        self.run.update(status="cancelled", failure={"attempt": 0, "reason": reason or "cancelled"})
        self.emit("flow_cancelled", by=by, reason=reason, burned={"steps": steps, "items": items})

    def restore(self, label: str, saved: dict[str, Any]) -> None:
        """Go back to a checkpoint's state; spend and the dispatch records never roll
        back, and every live step or item is handed out again (new token, dispatch id
        and generation) so results and decisions issued after the checkpoint are stale."""
        spent = dict(self.run["flowSpent"])
        for key in ("status", "scope", "carry", "output", "failure"):
            if key in saved:
                self.run[key] = saved[key]
            else:
                self.run.pop(key, None)
        merged = {
            k: max(spent.get(k, 0), saved["flowSpent"].get(k, 0)) for k in {*spent, *saved["flowSpent"]}
        }
        self.run["flowSpent"] = merged
        self.forget_frames()
        restored: list[str] = []
        for frame in self.frames():
            for sid, st in frame.steps.items():
                restored.append(frame.prefix + sid)
                for holder in token_holders(st):
                    if "dispatchToken" in holder:
                        dispatches.reissue(self, holder)
                    if "gateToken" in holder:
                        holder["gateToken"] = new_token()
        self.emit("checkpoint_reverted", label=label, stepsRestored=restored)
        self.advance()

    def running_fanouts(self) -> list[tuple[Frame, FanoutStep, dict[str, Any]]]:
        return fanout_steps.running(self)

    def finish_fanout(self, path: str, outcome: FanoutOutcome) -> None:
        """Settle a fanout whose items have all run (the service ran and merged them)."""
        fanout_steps.finish(self, path, outcome)
        self.advance()
