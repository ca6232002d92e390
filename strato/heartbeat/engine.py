"""One heartbeat run: gather the facts once, run every check, stage the proposals.

Facts come through tropo's repository layer: one ``git log`` pass for the new commits,
one for the last change of the files that need it, one ``cat-file --batch`` for texts.
Checks run cheapest first; when ``budget_ms`` is spent the rest are skipped and named
in the summary (the next run catches up: the state only moves when a run completes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strato.distill import model
from strato.distill.service import Sources, default_sources, skill_proposals
from strato.guard import ledger
from strato.guard import store as guard_store
from strato.guard.errors import GuardError
from strato.heartbeat import hygiene, memory, playbook, refusals, report
from strato.proposals import store
from strato.proposals.proposal import KINDS, Proposal
from strato.proposals.settings import Settings
from tropo.check.roots import ConfigError
from tropo.git import gitcli, notes, objects
from tropo.git import log as gitlog
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.snapshot import Source, SourceError

Check = Callable[[], list[Proposal]]
RUNS = "refs/vivary/runs/"  # strato.runs.store keeps each run's chain here


class HeartbeatError(Exception):
    """The run cannot start (bad --since, not a repository): exit 2."""


def _texts(root: Path, head: str, paths: list[str]) -> dict[str, str]:
    found = gitcli.blobs(root, [f"{head}:{p}" for p in paths])
    return {p: found[f"{head}:{p}"].decode("utf-8", "replace") for p in paths if f"{head}:{p}" in found}


def _graph_items(root: Path, head: str) -> tuple[list[hygiene.Item], list[tuple[str, str, str]]]:
    """Typed nodes and broken refs of the workspace at ``head`` (none without a schema)."""
    from tropo.check.workspace import open_workspace

    try:
        graph = open_workspace(root, Source.at(head)).graph()
    except (ConfigError, SourceError):
        return [], []
    items = [hygiene.Item(n.id, n.type, n.path, str(n.fields.get("status") or "") or None,
                          len(graph.inbound(n.id)))
             for n in graph.nodes.values()]
    broken = sorted({(graph.nodes[e.src].path, e.field, e.dst) for e in graph.edges
                     if e.broken and e.src in graph.nodes})
    return items, broken


def run(root: Path, settings: Settings, *, since: str | None = None, budget_ms: int | None = None,
        now: float | None = None, sources: Sources | None = None) -> dict[str, Any]:
    """Run the heartbeat over the commits since ``since`` (default: the last run);
    ``sources`` are the transcript folders for skill candidates (default: this
    repository's Claude Code and Codex folders, see :mod:`strato.distill.service`)."""

    started = time.monotonic()
    now = time.time() if now is None else now
    side = store.sidecar(root)
    state = store.load_state(side)
    head = gitcli.head_oid(root)
    base: str | None
    if since is not None:
        try:  # the one resolver: a short name a pushed tag shares with a branch is refused
            base = str(gitrepo.resolve_commit(gitrepo.require(root), since).id)
        except gitrepo.AmbiguousRevision as exc:
            raise HeartbeatError(f"--since: {exc}") from exc
        except gitrepo.RevisionError as exc:
            raise HeartbeatError(f"--since {since!r} names no commit") from exc
    else:
        last = state.get("head")
        base = gitcli.is_commit(root, last) if isinstance(last, str) else None
    commits = gitlog.log(root, head, base) if head else []
    fixes: dict[str, list[playbook.Fix]] = dict(state.get("fixes") or {})
    playbook.index_fixes(fixes, reversed(commits))
    known_broken = set(state.get("broken") or [])
    broken_now: list[str] = []

    def graph_checks() -> list[Proposal]:
        assert head is not None
        items, broken = _graph_items(root, head)
        broken_now.extend(f"{p}:{f}:{t}" for p, f, t in broken)
        active = [i.path for i in items if i.status == "active"]
        touched = gitlog.last_changed(root, head, active)
        return [*hygiene.stale_items(items, touched, now, settings.stale_days),
                *hygiene.orphans(items), *hygiene.broken_refs(broken, known_broken)]

    def claim_checks() -> list[Proposal]:
        assert head is not None
        repo = gitrepo.require(root)
        tips = gitrefs.branches(repo, "claim/")
        merged = {t.name for t in tips if gitrefs.is_ancestor(repo, t.oid, head)}
        return hygiene.claim_branches(tips, merged, now, settings.claim_idle_days)

    seen_runs: dict[str, str] = dict(state.get("runs") or {})

    def run_checks() -> list[Proposal]:
        from strato.runs.store import RunStore, parse_message  # a run's transitions and state

        repo = gitrepo.require(root)
        tips = gitrefs.ref_tips(repo, RUNS)
        heads = [(name, oid, when) for name, (oid, when) in tips.items() if name.endswith("/head")]
        runs = RunStore(repo)
        waits, retries = [], []
        for name, oid, when in heads:
            run_id = name[len(RUNS):-len("/head")]
            if seen_runs.get(run_id) != oid:  # a run that moved: read its chain again
                chain = []
                for c in reversed(gitlog.log(root, oid)):
                    try:
                        chain.append((c.oid, parse_message(f"{c.subject}\n\n{c.body}")))
                    except ValueError:
                        continue  # not a transition: nothing to learn from it
                retries += memory.run_lessons(run_id, chain)
                seen_runs[run_id] = oid
            try:
                state = runs.at(run_id, oid).state
            except (LookupError, ValueError):  # not a run this version can read
                continue
            if isinstance(state, dict) and state.get("status") == "running":
                waits.append((run_id, when, sorted(hygiene.waiting_gates(state))))
        return [*hygiene.gate_waits(waits, now, settings.gate_wait_hours), *retries]

    def guard_checks() -> list[Proposal]:
        repo = gitrepo.require(root)
        tip = gitrefs.read_ref(repo, guard_store.REF)
        resources, overrides = [], []
        for kept in guard_store.ledgers(repo, tip):
            rid = ledger.resource_of(kept.first_line) if kept.problem is None else None
            if rid is None or notes.anchor_id(guard_store.anchor_content(rid)) != kept.anchor:
                continue  # not a ledger, or a broken one: `strato guard verify`'s to report
            try:
                state = guard_store.require(guard_store.load(repo, rid, tip))
            except GuardError:
                continue
            last = max((int(e.get("ts_ms") or 0) for e in state.entries), default=0)
            resources.append((rid, state.current_state, state.current_state in state.policy.terminal, last))
            overrides += memory.override_lessons(rid, state.entries)
        return [*hygiene.guard_stuck(resources, now, settings.guard_stuck_days), *overrides]

    def surface_checks() -> list[Proposal]:
        assert head is not None
        texts = _texts(root, head, ["STATE.md", "STRATO.md"])
        newest = commits[0].time if commits else None
        state_time = gitlog.last_changed(root, head, ["STATE.md"]).get("STATE.md") \
            if "STATE.md" in texts else None
        return [*hygiene.state_age(texts.get("STATE.md"), state_time, newest),
                *hygiene.strato_budget(texts.get("STRATO.md"), settings.strato_token_budget)]

    def learn_checks() -> list[Proposal]:
        assert head is not None
        book = _texts(root, head, [playbook.PLAYBOOK]).get(playbook.PLAYBOOK)
        return [*playbook.proposals(fixes, book, head, settings.fix_repeats),
                *memory.lessons(commits), *refusals.lessons(refusals.load(side), commits)]

    def duplicate_checks() -> list[Proposal]:
        assert head is not None
        docs = objects.tree_files(root, head, (".md", ".markdown"))
        texts = _texts(root, head, [p for p in docs if not p.startswith(report.FOLDER + "/")])
        return hygiene.duplicates(texts, settings.duplicate_min_chars)

    checks: list[tuple[str, Check]] = [("surface", surface_checks), ("claims", claim_checks),
                                        ("runs", run_checks), ("guard", guard_checks),
                                        ("learn", learn_checks),
                                        ("graph", graph_checks), ("duplicates", duplicate_checks)]

    def skill_checks() -> list[Proposal]:
        return skill_proposals(root, sources or default_sources(root), 3,
                                       settings.skill_window_days, now)

    checks.append(("skills", skill_checks))
    proposals: list[Proposal] = []
    skipped: list[str] = []
    for name, check in checks if head else []:
        if budget_ms is not None and (time.monotonic() - started) * 1000 >= budget_ms:
            skipped.append(name)
            continue
        proposals += check()
    day = store.today(now)
    outcomes = {p.id: (p, store.offer(side, p, day)) for p in proposals}
    new = sorted(pid for pid, (_, o) in outcomes.items() if o in ("new", "revised"))
    rewrites = model.rewrite_new(root, new, settings.distill_tokens)
    records = store.all_records(side)
    result: dict[str, Any] = {
        "day": day, "head": head, "since": base, "commits": len(commits), "new": new,
        "skipped": skipped, "distill": rewrites.as_dict(),
        "counts": {
            "proposed": len(outcomes), "open": sum(1 for r in records if r.get("status") == "open"),
            "known": sum(1 for _, o in outcomes.values() if o == "known"),
            "rejected": sum(1 for _, o in outcomes.values() if o == "rejected"),
            "new_by_kind": {k: sum(1 for pid in new if outcomes[pid][0].kind == k) for k in KINDS},
        },
    }
    result["summary"] = report.summary(result)
    result["report"] = str(report.write(root, side, day, report.render(result, records)))
    if head and not skipped:
        store.save_state(side, {"head": head, "fixes": fixes, "runs": seen_runs,
                                "broken": sorted(set(broken_now))})
    return result
