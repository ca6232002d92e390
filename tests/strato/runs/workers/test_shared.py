"""Deciding and refusing through the shared remote: a gate decided on two clones at once
has exactly one winner and the other gets `stale`; a remote that refuses pushes, and a
worker without the agent a step needs, each say so in one line and write nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from strato.runs.workers.shared import shared_run
from tests.support.repos import git, write_files
from tests.support.runs import GATED_SPEC, one_step_spec, strato
from tests.support.workers import claim_refs, finished, machines, remote_run, share, transitions, worker


def _plan(root: Path, spec: str, run_id: str, tag: str) -> None:
    write_files(root, {f"{run_id}.yaml": spec})
    code, _, err = strato(root, "flow", "plan", str(root / f"{run_id}.yaml"), "--input", f"tag={tag}", "--id", run_id)
    assert code == 0, err
    share(root, run_id)


def _at_gate(tmp_path: Path) -> tuple[Path, list[Path]]:
    bare, clones = machines(tmp_path, 3)
    _plan(clones[0], GATED_SPEC, "r1", "g1")
    code, report, err = finished(worker(clones[0], "--run", "r1", "--interval", "0.05", "--idle-exit", "0.5"))
    assert code == 0 and report is not None and report["done"] == 1, err
    return bare, clones


def test_a_gate_decided_on_two_clones_at_once_has_one_winner_and_the_loser_gets_stale(tmp_path: Path) -> None:
    bare, (_, one, two) = _at_gate(tmp_path)
    first, second = shared_run(Runs(one), "origin", "r1"), shared_run(Runs(two), "origin", "r1")
    # both fetched the waiting gate; both decide on what they fetched
    first.runs.gate("r1", "review", "approve", note="ship it", apply=first.apply)
    with pytest.raises(Refused) as lost:
        second.runs.gate("r1", "review", "kill", note="no", apply=second.apply)
    assert lost.value.code == "stale"
    assert remote_run(bare, "r1")["status"] == "completed"
    decided = [ev for t in transitions(bare, "r1") for ev in t.get("events", []) if ev["type"] == "gate_resolved"]
    assert [ev["detail"]["decision"] for ev in decided] == ["approve"]


def test_strato_flow_gate_remote_decides_a_shared_run_from_any_clone(tmp_path: Path) -> None:
    bare, (_, _, two) = _at_gate(tmp_path)
    code, view, err = strato(two, "flow", "gate", "approve", "r1", "review", "--remote", "origin")
    assert code == 0, err
    assert view["status"] == "completed" and remote_run(bare, "r1")["status"] == "completed"
    code, again, err = strato(two, "flow", "gate", "approve", "r1", "review", "--remote", "origin")
    assert code == 1 and again["error"]["code"] == "run_not_running", err


def test_a_remote_that_refuses_pushes_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _plan(planner, one_step_spec("slow"), "r1", "p1")
    head = git(bare, "rev-parse", "refs/vivary/runs/r1/head")
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/vivary is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05"))
    assert code == 1 and report is not None and report["error"]["code"] == "push_rejected", err
    assert err.strip().splitlines()[-1].startswith("error: the remote 'origin' refused the push")
    assert git(bare, "rev-parse", "refs/vivary/runs/r1/head") == head and not claim_refs(bare, "r1")


def test_a_worker_without_the_agent_leaves_the_step_for_others_and_says_so(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _plan(planner, one_step_spec("slow"), "r1", "a1")
    code, report, err = finished(worker(one, "--run", "r1", "--agents", "codex", "--idle-exit", "0.3"))
    assert code == 0, err
    assert report is not None and report["skipped"] == 1 and report["claimed"] == 0
    assert "skipped work of run r1: agent claude is not one of this worker's (--agents); left for other workers" in err
    assert err.count("skipped work") == 1  # said once, not at every fetch
    assert not claim_refs(bare, "r1") and remote_run(bare, "r1")["status"] == "running"
