"""Machines for `strato worker` tests: clones of one bare remote on this machine, each a
workspace whose agents are tests/support/runs.py's scripted player (approved in each
clone, as each machine's person would), and workers as real `strato worker` processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
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


def push_claim(root: Path, ref: str, files: dict[str, bytes]) -> None:
    """Push a claim commit holding ``files`` (its `lease.json`, a `result.json`) to
    ``ref``, as a worker on ``root`` would have."""
    def stdin(*args: str, data: bytes) -> str:
        return subprocess.run(["git", *args], cwd=root, input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    blobs = {name: stdin("hash-object", "-w", "--stdin", data=data) for name, data in files.items()}
    tree = stdin("mktree", data="".join(f"100644 blob {oid}\t{name}\n" for name, oid in blobs.items()).encode())
    commit = git(root, "commit-tree", tree, "-m", "claim").strip()
    git(root, "push", "-q", "origin", f"+{commit}:{ref}")  # forced: whatever was there


def agent_pids(tmp_path: Path, tag: str) -> list[int]:
    """The pids of run ``tag``'s agent calls on any machine (the calls log beside the clones)."""
    log = tmp_path / f"calls-{tag}.log"
    return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []


def kill(pid: int) -> None:
    """SIGKILL ``pid`` if it still runs (a killed worker's orphan agent)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
