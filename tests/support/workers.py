"""Machines for `strato worker` tests: clones of one bare remote on this machine, each a
workspace whose agents are tests/support/runs.py's scripted player (approved in each
clone, as each machine's person would), and workers as real `strato worker` processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from strato.runs.store import RunStore
from tests.support.approvals import approve_agents
from tests.support.console import BIN
from tests.support.repos import git
from tests.support.runs import calls, make_workspace
from tropo.git import repo as gitrepo


def machines(tmp_path: Path, count: int) -> tuple[Path, list[Path]]:
    """A bare remote holding the workspace, and ``count`` clones of it."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    make_workspace(seed)
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    clones = []
    for i in range(count):
        dest = tmp_path / f"m{i}"
        git(tmp_path, "clone", "-q", str(bare), str(dest))
        approve_agents(dest)
        clones.append(dest)
    return bare, clones


def share(root: Path, run_id: str) -> None:
    """Push a run planned on this clone to the shared remote."""
    git(root, "push", "-q", "origin", f"refs/vivary/runs/{run_id}/*:refs/vivary/runs/{run_id}/*")


def worker(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A real `strato worker --remote origin ARGS --json` process on this clone; its
    agents log their calls beside the clones."""
    return subprocess.Popen(
        [str(BIN / "strato"), "worker", "--remote", "origin", *args, "--json"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "SLOW_S": "0.05", "CALLS_DIR": str(root.parent), **(env or {})},
    )


def finished(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any] | None, str]:
    """Wait for a worker: its exit code, its report (None if it printed none), stderr."""
    out, err = proc.communicate()
    return proc.returncode, json.loads(out) if out.strip() else None, err


def remote_run(bare: Path, run_id: str) -> dict[str, Any]:
    """The run's state as the remote holds it."""
    return RunStore(gitrepo.require(bare)).load(run_id).state


def transitions(bare: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's transitions on the remote, oldest first."""
    log = git(bare, "log", "--reverse", "--format=%B%x00", f"refs/vivary/runs/{run_id}/head")
    return [json.loads(body.strip().split("\n\n", 1)[1]) for body in log.split("\x00") if body.strip()]


def claim_refs(bare: Path, run_id: str) -> list[str]:
    return git(bare, "for-each-ref", "--format=%(refname)", f"refs/vivary/runs/{run_id}/claims/").split()


def all_calls(tmp_path: Path, tag: str) -> list[str]:
    """Every agent call made for run ``tag`` on any machine (their agents share one log,
    beside the clones, as a person watching all of them would)."""
    return sorted(calls(tmp_path, tag))
