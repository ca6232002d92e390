"""The workbench over a repository: every view is read from the refs, notes and files
the commands themselves keep (runs, claims, guard ledgers, heartbeat proposals), and a
decision goes through the same service call the terminal's command makes, marked as a
person's at the workbench. Each request opens the repository afresh (requests run on
worker threads; a repository handle is not shared between them)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from exo import board as exo_board
from exo.claims import claim_refs
from exo.claims import holders as claim_holders
from exo.workspace import WorkspaceError, load_worktree
from strato.guard import review as guard_review
from strato.guard import verify as guard_verify
from strato.guard.authz import Signer
from strato.guard.errors import GuardError
from strato.heartbeat import apply as heartbeat_apply
from strato.proposals import store as heartbeat_store
from strato.runs.cli.lanes import lanes_view
from strato.runs.engine.state import Refused
from strato.runs.service import Runs, SpecInvalid
from strato.runs.store import RunNotFound, RunSnapshot, check_run_id
from strato.runs.views import documents as views
from tropo.git import repo as gitrepo
from tropo.review import view as graph_view
from tropo.review.layout_cache import LayoutCache
from workbench import evals as eval_views
from workbench.source import Refusal, gate_request, page

# refusals of a gate decision that mean "the gate is not as you saw it"
STALE = frozenset({"stale_token", "gate_not_waiting", "run_not_running", "race_lost"})
EVENT_CACHE = 8  # runs whose event lists are kept (keyed by head commit: never out of date)
# what reading a run written by hand (any writer of refs can) raises: a spec that does not
# validate, a run.json that is not JSON or lacks what a run has
UNREADABLE = (SpecInvalid, RunNotFound, ValueError, KeyError, TypeError, AttributeError, IndexError)


def attempt_view(attempt: dict[str, Any]) -> dict[str, Any]:
    """One attempt as the page shows it: outcome, reason and resolution as recorded, or
    read from what older attempts kept (a failure text, a gate decision)."""
    failure = attempt.get("failure")
    outcome = attempt.get("outcome") or ("failed" if failure else attempt.get("decision") or "succeeded")
    return {
        **attempt,
        "outcome": outcome,
        "reason": attempt.get("reason") or (failure if isinstance(failure, str) else None),
        "resolution": attempt.get("resolution"),
    }


def step_views(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's top-level steps in spec order, attempts first to last; no tokens."""
    out = []
    for sid, st in state["scope"]["steps"].items():
        shown = {k: v for k, v in st.items() if not k.endswith("Token") and k != "attempts"}
        out.append({"id": sid, **shown, "attempts": [attempt_view(a) for a in st.get("attempts", [])]})
    return out


def row(runs: Runs, snap: RunSnapshot, moved_at: int) -> dict[str, Any]:
    """A run as the list shows it (gate tokens only in the run's own view)."""
    summary = views.summary(runs, snap)
    summary["gates"] = [{k: v for k, v in g.items() if k != "gateToken"} for g in summary["gates"]]
    return {**summary, "createdAt": snap.state.get("createdAt"), "movedAt": moved_at}


def _row_or_unreadable(runs: Runs, run_id: str, head: str, moved_at: int) -> dict[str, Any]:
    """The run's row, or a row saying it cannot be read: one malformed run ref (anyone who
    can write refs can make one) must not take the list of every other run down with it."""
    try:
        return row(runs, runs.store.at(run_id, head), moved_at)
    except UNREADABLE as exc:
        return {"runId": run_id, "flow": None, "status": "unreadable", "problem": str(exc), "head": head,
                "ready": [], "gates": [], "flowSpent": {}, "createdAt": None, "movedAt": moved_at}


def events_of(runs: Runs, head: str) -> list[dict[str, Any]]:
    """Every event of the run up to ``head``, oldest first, from its commits."""
    return [ev for _, t in runs.store.since(head, None) for ev in t.get("events", [])]


def detail(runs: Runs, snap: RunSnapshot, events: list[dict[str, Any]], offset: int,
           limit: int) -> dict[str, Any]:
    """A run's own view: summary with gate tokens, steps and attempts, usage, judged
    events, and one page of ``events``, newest first."""
    newest = events[::-1]
    start, end = page(offset, limit, len(newest))
    return {
        **views.summary(runs, snap),
        "gates": views.asked_gates(runs, snap),
        "createdAt": snap.state.get("createdAt"),
        "steps": step_views(snap.state),
        "usage": {"flow": snap.state["flowSpent"],
                  "steps": {s: st.get("spent", {}) for s, st in snap.state["scope"]["steps"].items()}},
        "judged": [ev for ev in events if ev["type"] in ("judged", "verified", "skipped")],
        "checkpoints": runs.store.checkpoints(snap.run_id),
        "events": {"total": len(events), "offset": start, "limit": limit, "items": newest[start:end]},
    }


class RepoSource:
    """The workbench's views of the repository at ``root``."""

    demo = False

    def __init__(self, root: Path) -> None:
        self.root = root
        self._events: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _runs(self) -> Runs:
        return Runs(self.root)

    # --- runs

    def tips(self) -> dict[str, str]:
        return self._runs().store.heads()

    def runs(self, offset: int, limit: int) -> dict[str, Any]:
        """Runs, most recently moved first; only the page's runs are loaded."""
        runs = self._runs()
        tips = runs.store.tips()
        order = sorted(tips, key=lambda r: (-tips[r][1], r))
        start, end = page(offset, limit, len(order))
        rows = [_row_or_unreadable(runs, r, *tips[r]) for r in order[start:end]]
        return {"total": len(order), "offset": start, "limit": limit, "runs": rows}

    def _all_events(self, runs: Runs, run_id: str, head: str) -> list[dict[str, Any]]:
        key = (run_id, head)
        with self._lock:
            cached = self._events.get(key)
        if cached is None:
            cached = events_of(runs, head)
            with self._lock:
                while len(self._events) >= EVENT_CACHE:
                    self._events.pop(next(iter(self._events)))
                self._events[key] = cached
        return cached

    def run(self, run_id: str, offset: int, limit: int) -> dict[str, Any]:
        """One run: its summary, steps and attempts, usage, judged events, and one page
        of its events, newest first."""
        runs = self._runs()
        try:
            snap = runs.store.at(check_run_id(run_id), runs.store.head(run_id))
        except RunNotFound as exc:
            raise Refusal(404, "run_not_found", str(exc)) from None
        try:
            return detail(runs, snap, self._all_events(runs, snap.run_id, snap.head), offset, limit)
        except UNREADABLE as exc:
            raise Refusal(409, "unreadable_run", f"run {run_id!r} cannot be read: {exc}") from None

    def decide_gate(self, run_id: str, step: str, body: Any) -> dict[str, Any]:
        """A person's decision, through the same call `strato flow gate` makes at a
        terminal (recorded as resolvedBy human, via workbench)."""
        decision, token, note = gate_request(body)
        runs = self._runs()
        try:
            check_run_id(run_id)
            outcome = runs.gate(run_id, step, decision, token, note, resolved_by="human", via="workbench")
        except RunNotFound as exc:
            raise Refusal(404, "run_not_found", str(exc)) from None
        except Refused as exc:
            if exc.code in STALE:
                raise Refusal(409, "stale", f"{exc} (reload: the gate moved on)") from None
            status = 404 if exc.code == "unknown_step" else 400 if exc.code == "not_a_gate_step" else 409
            raise Refusal(status, exc.code, str(exc)) from None
        except UNREADABLE as exc:
            raise Refusal(409, "unreadable_run", f"run {run_id!r} cannot be read: {exc}") from None
        return views.outcome_view(runs, outcome)

    # --- the other views

    def board(self) -> dict[str, Any]:
        try:
            view = load_worktree(self.root)
            items = view.items
        except WorkspaceError as exc:
            return {"available": False, "reason": str(exc), "items": [], "claims": []}
        paths = {item.id: view.prefix + item.path for item in items}
        rows = exo_board.rows(items, claim_holders(view.repo, paths))
        claims = [{"id": item, "refs": refs} for item, refs in sorted(claim_refs(view.repo).items())]
        return {"available": True, **exo_board.as_json(rows), "claims": claims}

    def guard(self) -> dict[str, Any]:
        """Every resource with its ledger entries, and whether every chain verifies."""
        resources: dict[str, list[dict[str, Any]]] = {}

        def collect(rid: str, line: int, entry: dict[str, Any], signer: Signer | None,
                    problem: str | None) -> None:
            resources.setdefault(rid, []).append({
                "line": line, **{k: entry.get(k) for k in ("kind", "outcome", "from_state", "to_state",
                                                            "rationale", "git_head", "ts")},
                "signer": signer.principal if signer is not None else None, "problem": problem})

        report = guard_verify.verify_repository(gitrepo.require(self.root), on_entry=collect)
        listed = [{"id": rid, "state": rows[-1]["to_state"], "entries": rows}
                  for rid, rows in sorted(resources.items())]
        return {"verify": report.to_json(), "resources": listed}

    def review(self, base: str, head: str) -> dict[str, Any]:
        try:
            return guard_review.review(gitrepo.require(self.root), base, head).to_json()
        except gitrepo.RevisionError as exc:
            raise Refusal(400, "invalid_revision", str(exc)) from None
        except GuardError as exc:
            raise Refusal(400, exc.error_type, str(exc)) from None

    def heartbeat(self) -> dict[str, Any]:
        side = heartbeat_store.sidecar(self.root)
        rows = [{**{k: r.get(k) for k in ("id", "kind", "status", "revision", "evidence", "base")},
                 "title": heartbeat_store.title(r), "files": sorted(heartbeat_store.files(r))}
                for r in heartbeat_store.all_records(side)]
        return {"last_head": heartbeat_store.load_state(side).get("head"), "proposals": rows}

    def decide_proposal(self, pid: str, decision: str) -> dict[str, Any]:
        """Accept (apply on a branch ``heartbeat/<id>``) or reject, as `strato heartbeat` does."""
        try:
            if decision == "accept":
                return heartbeat_apply.apply(self.root, pid)
            if decision == "reject":
                return heartbeat_apply.reject(self.root, pid)
        except heartbeat_store.UnknownProposal as exc:
            raise Refusal(404, "unknown_proposal", str(exc)) from None
        except heartbeat_apply.Refused as exc:
            raise Refusal(409, "refused", str(exc)) from None
        raise Refusal(400, "bad_request", 'decision must be "accept" or "reject"')

    def lanes(self) -> dict[str, Any]:
        """`strato lanes --json`: each lane's clean streak, verification rate and resets."""
        try:
            return {"available": True, **lanes_view(self.root)}
        except Refused as exc:  # a malformed lanes ref: said, never shown as lanes
            raise Refusal(409, exc.code, str(exc)) from None

    # --- evals (read only)

    def evals(self) -> dict[str, Any]:
        return eval_views.listing(gitrepo.require(self.root))

    def eval(self, eval_id: str) -> dict[str, Any]:
        return eval_views.one(gitrepo.require(self.root), eval_id)

    def compare_evals(self, a: str, b: str) -> dict[str, Any]:
        return eval_views.paired(gitrepo.require(self.root), a, b)

    def eval_run(self, eval_id: str, run_id: str, offset: int, limit: int) -> dict[str, Any]:
        """A result's flow run, read from the eval's scratch repository as any run is."""
        work = eval_views.scratch(gitrepo.require(self.root), eval_id)
        if not eval_views.scratch_present(work):
            raise Refusal(404, "run_not_here", f"eval {eval_id!r} ran elsewhere: its runs are in the "
                          f"scratch repository {work} of the clone that ran it "
                          "(`strato flow audit RUN --root` there)")
        return RepoSource(work).run(run_id, offset, limit)

    def graph_page(self) -> str:
        """`tropo view`'s page of the workspace graph."""
        try:
            worktree = load_worktree(self.root)
            graph = worktree.graph
        except WorkspaceError as exc:
            raise Refusal(409, "no_graph", str(exc)) from None
        return graph_view.render(graph_view.page_data("graph", graph, layouts=LayoutCache(worktree.repo)))
