"""Promotion: `strato heartbeat apply` of a skill or playbook proposal runs the user's
`[promotion]` eval without and with the proposal's files; a drop beyond the margin
refuses the apply, and either way the comparison joins the proposal's history (and the
applied commit's message)."""

from __future__ import annotations

import json
from pathlib import Path

from strato.agents import trust
from strato.proposals import store
from strato.proposals.proposal import Proposal
from tests.support.console import run
from tests.support.evals import FLOWS, configure, tiny_set
from tests.support.repos import commit_all, git, write_files


def _staged(root: Path, kind: str, files: dict[str, str]) -> str:
    base = git(root, "rev-parse", "HEAD").strip()
    proposal = Proposal(kind, kind, f"subject {sorted(files)}", "a proposal", ("seen twice",), files, base)
    store.offer(store.sidecar(root), proposal, "2026-12-07")
    return proposal.id


def _workspace(repo_dir: Path, tmp_path: Path) -> Path:
    configure(rate=0.0)
    tiny_set(tmp_path / "set")
    with (trust.config_dir() / "evals.toml").open("a") as fh:
        fh.write(f'\n[promotion]\nset = "{tmp_path / "set"}"\nflow = "{FLOWS / "bare.stratum.yaml"}"\n'
                 'agent = "weak"\nmargin = 0.1\n')
    write_files(repo_dir, {"README.md": "# ws\n"})
    commit_all(repo_dir)
    return repo_dir


def test_a_proposal_that_makes_nothing_worse_is_applied_with_its_evidence(repo_dir: Path, tmp_path: Path) -> None:
    root = _workspace(repo_dir, tmp_path)
    pid = _staged(root, "skill", {".vivary/skills/tidy.md": "# Tidy\n\nKeep functions small.\n"})
    proc = run("strato", "heartbeat", "apply", pid, "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    message = git(root, "log", "-1", "--format=%B", f"heartbeat/{pid}")
    assert "Heartbeat-Eval: eval promote-" in message and "100.0% -> 100.0% (+0.0%" in message
    [evidence] = store.get(store.sidecar(root), pid)["promotion"]
    assert evidence["passed"] and evidence["baselineRate"] == evidence["candidateRate"] == 1.0
    shown = run("strato", "heartbeat", "show", pid, cwd=root).stdout
    assert "promotion: passed: eval promote-" in shown


def test_a_proposal_that_regresses_beyond_the_margin_is_refused(repo_dir: Path, tmp_path: Path) -> None:
    root = _workspace(repo_dir, tmp_path)
    pid = _staged(root, "playbook", {"textkit/strings.py": "def broken(:\n"})
    proc = run("strato", "heartbeat", "apply", pid, "--json", cwd=root)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "refused"
    assert "fell beyond the margin" in proc.stderr and "100.0% -> 0.0%" in proc.stderr
    assert git(root, "branch", "--list", f"heartbeat/{pid}") == ""
    record = store.get(store.sidecar(root), pid)
    assert record["status"] == "open" and record["promotion"][0]["passed"] is False
    assert {f.split(" ")[0] for f in record["promotion"][0]["flipped"]} == {"l01", "n01", "s01"}
    # the baseline is kept under its id and not run again for the next proposal
    before = git(root, "for-each-ref", "--format=%(objectname)", "refs/vivary/evals/")
    other = _staged(root, "skill", {".vivary/skills/x.md": "x\n"})
    assert run("strato", "heartbeat", "apply", other, cwd=root).returncode == 0
    base = [line for line in before.split() if line]
    after = git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/vivary/evals/promote-base-*")
    assert after.split()[1] in base


def test_a_proposal_path_into_git_is_refused_before_anything_runs(repo_dir: Path, tmp_path: Path) -> None:
    root = _workspace(repo_dir, tmp_path)
    pid = _staged(root, "skill", {".git/hooks/pre-commit": "#!/bin/sh\n"})
    proc = run("strato", "heartbeat", "apply", pid, cwd=root)
    assert proc.returncode == 2 and "enters .git" in proc.stderr
    assert git(root, "for-each-ref", "refs/vivary/evals/") == ""
