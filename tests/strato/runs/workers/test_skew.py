"""A lease's clock says nothing: a claim whose text says it expired decades ago (a
machine whose clock is far behind) is left alone while it is renewed, and one whose text
says it lives for a thousand years (a clock far ahead) is taken over once this worker has
seen it unrenewed for its ttl."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.repos import git, write_files
from tests.support.runs import calls, one_step_spec, strato
from tests.support.workers import finished, machines, remote_run, share, transitions, worker


def _planted(tmp_path: Path, root: Path, lease: dict[str, object]) -> None:
    """Plan a one-step run and claim its step as another machine would, with ``lease``."""
    write_files(root, {"r1.yaml": one_step_spec("slow")})
    code, _, err = strato(root, "flow", "plan", str(root / "r1.yaml"), "--input", "tag=s1", "--id", "r1")
    assert code == 0, err
    share(root, "r1")
    (tmp_path / "lease.json").write_text(json.dumps({"worker": "w-skewed", "machine": "far", "state": "held",
                                                     **lease}))
    blob = git(root, "hash-object", "-w", str(tmp_path / "lease.json")).strip()
    tree = subprocess.run(["git", "mktree"], cwd=root, input=f"100644 blob {blob}\tlease.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(root, "commit-tree", tree, "-m", "claim: work.g1 held by w-skewed").strip()
    git(root, "push", "-q", "origin", f"{commit}:refs/vivary/runs/r1/claims/work.g1")


def test_a_lease_that_says_it_lives_for_ever_is_taken_over_after_its_ttl_unrenewed(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _planted(tmp_path, planner, {"ttlS": 1, "expiresAt": "2999-01-01T00:00:00Z"})
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05"))
    assert code == 0, err
    assert report is not None and report["takeovers"] == 1 and remote_run(bare, "r1")["status"] == "completed"
    [done] = [t for t in transitions(bare, "r1") if t["op"] == "done"]
    assert done["worker"]["takeover"]["from"] == {"worker": "w-skewed", "machine": "far"}


def test_a_lease_that_says_it_expired_long_ago_is_not_taken_within_its_ttl(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _planted(tmp_path, planner, {"ttlS": 3600, "expiresAt": "1999-01-01T00:00:00Z"})
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05", "--idle-exit", "1.5"))
    assert code == 0, err
    assert report is not None and report["claimed"] == 0 and report["takeovers"] == 0
    assert calls(tmp_path, "s1") == [] and remote_run(bare, "r1")["status"] == "running"
