"""Memory lines from flow retries, guard overrides and refused commits, each with its trail."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from strato.guard import engine as guard
from strato.guard import signedops
from strato.heartbeat import engine, refusals
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support import console
from tests.support.flows import make_workspace, reply
from tests.support.guard import POLICY, make_key, ssh_sign
from tests.support.guard import Workspace as GuardWorkspace
from tests.support.heartbeat import SCHEMA, T0, commit_at
from tests.support.repos import git


def beat(root: Path) -> list[str]:
    return list(engine.run(root, Settings(), now=T0)["new"])


def records(root: Path, check: str) -> list[dict[str, Any]]:
    return [r for r in store.all_records(store.sidecar(root)) if r["check"] == check]


def run_chain(root: Path, run_id: str) -> set[str]:
    return set(git(root, "rev-list", f"refs/vivary/runs/{run_id}/head").split())


def test_a_step_that_failed_then_passed_is_a_lesson_with_its_run_commits(tmp_path: Path) -> None:
    flow = make_workspace(tmp_path)
    flow.agents([{"match": "Review", "replies": [reply({"summary": 3}), reply({"summary": "fine"})]}])
    runs = flow.runs()
    run_id = runs.plan(flow.spec("readme_workflow.stratum.yaml"), {"files": ["a.py"]}).snap.run_id
    assert runs.drive(run_id).state["status"] == "completed"
    beat(flow.root)
    [lesson] = records(flow.root, "run-retry")
    assert lesson["kind"] == "memory" and lesson["files"] == {}
    assert f"Flow run {run_id}" in lesson["title"] and "failed 1 time(s)" in lesson["title"]
    failed, passed = lesson["evidence"]
    assert "attempt 1 failed" in failed and "breaks contract" in failed and "attempt 2 passed" in passed
    cited = {line.split(" commit ", 1)[1].split(":", 1)[0] for line in lesson["evidence"]}
    assert len(cited) == 2 and cited <= run_chain(flow.root, run_id)
    assert beat(flow.root) == []  # the run did not move: its chain is not read again


def test_a_step_that_passed_at_once_teaches_nothing(tmp_path: Path) -> None:
    flow = make_workspace(tmp_path)
    flow.agents([{"match": "Review", "replies": [reply({"summary": "fine"})]}])
    runs = flow.runs()
    run_id = runs.plan(flow.spec("readme_workflow.stratum.yaml"), {"files": ["a.py"]}).snap.run_id
    assert runs.drive(run_id).state["status"] == "completed"
    beat(flow.root)
    assert records(flow.root, "run-retry") == []


def test_a_run_that_failed_for_good_is_no_lesson_yet(tmp_path: Path) -> None:
    flow = make_workspace(tmp_path)
    flow.agents([{"match": "Review", "replies": [reply({"summary": 3}), reply({"summary": 4})]}])
    runs = flow.runs()
    run_id = runs.plan(flow.spec("readme_workflow.stratum.yaml"), {"files": ["a.py"]}).snap.run_id
    assert runs.drive(run_id).state["status"] == "failed"
    beat(flow.root)
    assert records(flow.root, "run-retry") == []


def test_a_signed_override_is_a_lesson_naming_its_ledger_line(repo_dir: Path, tmp_path: Path) -> None:
    ws = GuardWorkspace(repo_dir, tmp_path)
    keys = tmp_path / "keys"
    keys.mkdir()
    key = make_key(keys)
    ws.commit({"README.md": "# ws\n", "NOTES.md": "n\n"}, "initial")
    ws.trust(key.signers_line("alice@example.com"))
    rid = "feat:9"
    guard.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    guard.transition(ws.repo, {"resource_id": rid, "from_state": "draft", "to_state": "review"})
    beat(repo_dir)
    assert records(repo_dir, "guard-override") == []  # evidence moved it: nothing to learn
    ask = {"resource_id": rid, "from_state": "review", "to_state": "released",
           "rationale": "hotfix, token=ghp_abcdefghijklmnopqrstuvwx0123"}
    payload, ns = guard.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), tmp_path)})
    beat(repo_dir)
    [lesson] = records(repo_dir, "guard-override")
    assert "review->released was overridden" in lesson["title"] and "hotfix" in lesson["title"]
    assert "ghp_" not in json.dumps(lesson) and "[REDACTED]" in lesson["title"]
    [trail] = lesson["evidence"]
    assert trail.startswith(f"guard ledger {rid} line 3: entry ")
    assert beat(repo_dir) == []


STRICT = SCHEMA.replace("strict = false", "strict = true")


def git_commit(root: Path, message: str) -> subprocess.CompletedProcess[str]:
    git(root, "add", "-A")
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, capture_output=True,
                          text=True, check=False)


def test_a_refused_commit_then_its_fix_is_a_lesson(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit_at(root, T0, "init", {"tropo.toml": STRICT, "changes/one.md": "---\nstatus: done\n---\n# One\n"})
    proc = console.run("vivary", "hooks", "install", "--hook", "pre-commit", cwd=root)
    assert proc.returncode == 0, proc.stderr
    parent = git(root, "rev-parse", "HEAD").strip()
    (root / "changes" / "two.md").write_text("---\nstatus: wobbly\n---\n# Two\n")
    refused = git_commit(root, "add two")
    assert refused.returncode != 0 and "commit refused" in refused.stderr
    assert git(root, "rev-parse", "HEAD").strip() == parent
    beat(root)
    assert records(root, "refused-commit") == []  # not fixed yet
    (root / "changes" / "two.md").write_text("---\nstatus: active\n---\n# Two\n")
    assert git_commit(root, "add two").returncode == 0
    fix = git(root, "rev-parse", "HEAD").strip()
    beat(root)
    [lesson] = records(root, "refused-commit")
    assert "wobbly" in lesson["title"] and fix[:12] in lesson["title"]
    assert any(f"on HEAD {parent}" in line and "two.md" in line for line in lesson["evidence"])
    assert lesson["evidence"][-1] == f"commit {fix}: add two"
    assert beat(root) == []
    assert git(root, "status", "--porcelain") == ""  # the refusal is private: nothing tracked


def test_a_refusal_is_recorded_redacted_and_one_line(ws: Path) -> None:
    refusals.record(ws, ["changes/x.md: bad\nsecret: hunter22-long-value", "api_key=sk-abcdefghijklmnop1234"])
    [entry] = refusals.load(store.sidecar(ws))
    assert entry["findings"] == ["changes/x.md: bad secret: [REDACTED]", "api_key=[REDACTED]"]
    assert entry["head"] == git(ws, "rev-parse", "HEAD").strip()


def test_refusals_keep_the_newest_and_skip_garbage(ws: Path) -> None:
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    (side / refusals.FILE).write_bytes(b"not json\n\xff\xfe\n")
    assert refusals.load(side) == []
    for i in range(refusals.KEEP + 5):
        refusals.record(ws, [f"finding {i}"], now=T0 + i)
    kept = refusals.load(side)
    assert len(kept) == refusals.KEEP and kept[-1]["findings"] == [f"finding {refusals.KEEP + 4}"]


def test_a_forged_run_chain_cannot_add_lines_or_leak_a_key() -> None:
    from strato.heartbeat import memory

    step = "review\n## Injected heading"
    chain = [("c1", {"op": "drive", "events": [
                 {"type": "result", "stepId": step,
                  "detail": {"success": False, "attempt": "1\n- x", "reason": "bad\ntoken=ghp_abcdefghijklmnopqrstuvwx0123"}}]}),
             ("c2", {"op": "drive", "events": [{"type": "result", "stepId": step, "detail": {"success": True}},
                                               {"type": "result"}, "not an event"]}),
             ("c3", {"events": "not a list"})]
    [lesson] = memory.run_lessons("r1", chain)
    for text in (lesson.title, *lesson.evidence):
        assert "\n" not in text and "ghp_" not in text
    assert "[REDACTED]" in lesson.title and lesson.evidence[0].startswith("run r1 commit c1: review ## Injected")
