"""16 processes claim one item at the same moment: exactly one wins, nothing strays.

Each racer is a separate Python process running the real ``exo`` CLI; all import
first, report ready, then wait for a shared start signal so that the claims overlap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.support.coordination import ITEM, clone, make_remote, write_workspace
from tests.support.repos import commit_all, git

RACERS = 16
RACER = """
import os, sys, time
from pathlib import Path
from exo.cli import main
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
main(sys.argv[3:])
"""


def _race(jobs: list[tuple[Path, list[str]]], signals: Path) -> list[subprocess.CompletedProcess[str]]:
    signals.mkdir()
    go = signals / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(signals / f"ready-{i}"), str(go), *args],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i, (cwd, args) in enumerate(jobs)
    ]
    while len(list(signals.glob("ready-*"))) < len(jobs):
        if any(p.poll() is not None for p in procs):
            break  # a racer died before the start: let the assertions show why
        time.sleep(0.01)
    go.touch()
    results = []
    for i, proc in enumerate(procs):
        out, err = proc.communicate()
        results.append(subprocess.CompletedProcess(jobs[i][1], proc.returncode, out, err))
    return results


def _claim_args(i: int, root: Path, *extra: str) -> list[str]:
    return ["claim", "item", "--agent", f"agent{i}", "--root", str(root), "--json", *extra]


def _winner(results: list[subprocess.CompletedProcess[str]]) -> str:
    codes = sorted(r.returncode for r in results)
    assert codes == [0] + [1] * (RACERS - 1), [(r.returncode, r.stderr) for r in results]
    (win,) = [json.loads(r.stdout) for r in results if r.returncode == 0]
    winner = str(win["assignee"])
    for lost in (r for r in results if r.returncode == 1):
        assert f"@{winner}" in lost.stderr, lost.stderr
        assert json.loads(lost.stdout)["holder"] == winner
    return winner


def _claim_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/claim").split()


def _holder(repo: Path, ref: str) -> str:
    text = git(repo, "show", f"{ref}:{ITEM}")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("assignee:")]
    return line.split(":", 1)[1].strip()


def test_local_race_has_exactly_one_winner(repo_dir: Path, tmp_path: Path) -> None:
    write_workspace(repo_dir)
    commit_all(repo_dir)
    results = _race([(repo_dir, _claim_args(i, repo_dir)) for i in range(RACERS)],
                    tmp_path / "signals")
    winner = _winner(results)
    assert _claim_refs(repo_dir) == ["refs/heads/claim/item"]
    assert _holder(repo_dir, "claim/item") == winner
    assert git(repo_dir, "status", "--porcelain") == ""
    assert not list((repo_dir / ".git").rglob("*.lock"))


def test_remote_race_from_separate_clones_has_exactly_one_winner(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    clones = [clone(bare, f"clone{i}") for i in range(RACERS)]
    results = _race(
        [(c, _claim_args(i, c, "--remote", "origin")) for i, c in enumerate(clones)],
        tmp_path / "signals",
    )
    winner = _winner(results)
    assert _claim_refs(bare) == ["refs/heads/claim/item"]
    assert _holder(bare, "claim/item") == winner
    winners = [c for c in clones if _claim_refs(c)]
    assert len(winners) == 1 and _holder(winners[0], "claim/item") == winner
    for each in clones:
        assert git(each, "status", "--porcelain") == ""
        assert not list((each / ".git").rglob("*.lock"))
    assert not list(bare.rglob("*.lock"))
