"""Issue 25, reproduction 1: a pull-request branch that adds `.vivary/agents.toml` with
an `[agents.distill]` of its own, plus a revert (which stages a memory proposal, so the
model step has work), must not run that program when the reviewer checks the branch
out and commits. The post-commit heartbeat skips the model step, says why in its
report, and the commit is untouched; once the user approves the file, the step runs."""

from __future__ import annotations

import fcntl
import json
import sys
import time
from pathlib import Path

from strato.proposals import store
from tests.support.approvals import approve_agents
from tests.support.heartbeat import T0, commit, commit_at, install
from tests.support.repos import git


def wait_heartbeat(root: Path, head: str) -> None:
    """Until the detached heartbeat has run over `head` and let go of its lock (the
    bound only keeps a broken hook from hanging the suite)."""
    side = store.sidecar(root)
    for _ in range(1200):
        if store.load_state(side).get("head") == head:
            with open(side / "run.lock", "ab") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)  # the runner has let go
            return
        time.sleep(0.1)
    raise AssertionError("the detached heartbeat never ran over the new commit")


def _report(root: Path) -> str:
    [report] = (root / "heartbeat-reports").glob("*-heartbeat.md")
    return report.read_text()


def test_a_checked_out_branch_cannot_choose_the_heartbeats_model(ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "distill-ran"
    script = f"open({str(marker)!r}, 'a').write('x'); print('{{\"text\": \"a lesson\"}}')"
    argv = json.dumps([sys.executable, "-c", script, "{prompt}"])
    git(ws, "checkout", "-q", "-b", "pr")  # the attacker's branch
    commit_at(ws, T0, "tooling", {".vivary/agents.toml": f"[agents.distill]\nargv = {argv}\n"})
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")
    git(ws, "checkout", "-q", "main")
    install(ws)
    git(ws, "checkout", "-q", "pr")  # the reviewer's checkout, then any commit

    code, head = commit(ws, "review-notes.txt")
    assert code == 0
    wait_heartbeat(ws, head)
    assert not marker.exists()
    line = next(x for x in _report(ws).splitlines() if x.startswith("Model step skipped: "))
    assert ".vivary/agents.toml is not approved for this repository" in line
    assert "vivary trust .vivary/agents.toml" in line
    assert git(ws, "status", "--porcelain") == ""

    approve_agents(ws)  # the user reviewed it and approves exactly these bytes
    commit_at(ws, T0, "cache the index again", {"cache.py": "y"})
    git(ws, "revert", "--no-edit", "HEAD")
    wait_heartbeat(ws, git(ws, "rev-parse", "HEAD").strip())
    assert marker.exists()
    assert "Model step skipped" not in _report(ws)
