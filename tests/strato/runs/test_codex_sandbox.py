"""A `codex` agent is handed `-s read-only` in the workspace, and `-s workspace-write`
inside an engine fanout item's own worktree, where its files are its work (merged back
when the fanout succeeds). A script that keeps to codex's sandbox plays codex."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strato.agents.config import AgentConfigError, load_config
from strato.mcp.contract import event_violations
from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.flows import make_workspace
from tests.support.repos import git

CODEX = Path(__file__).parent / "scripts" / "codex_like.py"

FANOUT = """
version: 1
contracts:
  Wrote: {file: string, wrote: boolean}
  Sum: {count: integer}
flows:
  entry: main
  main:
    input: {files: "string[]"}
    output: {from: "${count.output}", contract: Sum}
    steps:
      - id: edit
        fanout:
          over: "${input.files}"
          concurrency: 2
          isolation: ISOLATION
          require: all
          merge: sequential
          steps:
            - do: "Write ${item}"
              agent: codex
              out: Wrote
              attempts: 1
              ensure:
                - file_exists: "${item}"
      - id: count
        after: [edit]
        set:
          count: "len(result.edit)"
        out: Sum
"""


def _codex_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = make_workspace(tmp_path)
    log = tmp_path / "codex.log"
    argv = json.dumps([sys.executable, str(CODEX), str(log), "exec", "-s", "{sandbox}", "--", "{prompt}"])
    (ws.root / ".vivary").mkdir()
    (ws.root / ".vivary" / "agents.toml").write_text(f"[agents.codex]\nargv = {argv}\ntimeout_s = 60\n")
    approve_agents(ws.root)
    return ws.root, log


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_codex_in_a_fanout_worktree_may_write_there_and_its_files_are_merged(tmp_path: Path) -> None:
    root, log = _codex_workspace(tmp_path)
    runs = Runs(root)
    run_id = runs.plan(FANOUT.replace("ISOLATION", "worktree"), {"files": ["a.txt", "b.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    calls = _calls(log)
    assert [c["argv"][:3] for c in calls] == [["exec", "-s", "workspace-write"]] * 2
    worktrees = root / ".git" / "vivary" / "worktrees"
    assert all(Path(c["cwd"]).is_relative_to(worktrees) for c in calls)
    for name in ("a.txt", "b.txt"):
        assert (root / name).read_text() == "written by codex in workspace-write\n"
    assert sorted(git(root, "diff", "--cached", "--name-only").split()) == ["a.txt", "b.txt"]
    events = [ev for ev in runs.audit(run_id)["events"] if ev["type"] == "sandbox_policy"]
    assert sorted(ev["detail"]["itemIndex"] for ev in events) == [0, 1]
    assert all(ev["detail"]["policy"] == {"sandbox": "workspace-write"} for ev in events)
    assert all(ev["detail"]["provenance"] == {"source": "fanout isolation: worktree"} for ev in events)
    assert all(event_violations(ev) == [] for ev in events)
    # each call was a dispatch of its own, debited once
    debits = [ev for ev in runs.audit(run_id)["events"] if ev["type"] == "usage_debit"]
    assert sorted(d["detail"]["item"]["itemIndex"] for d in debits) == [0, 1]
    assert all(d["detail"]["source"] == "engine" and d["detail"]["model"] == "codex" for d in debits)
    assert all(event_violations(d) == [] for d in debits)
    assert [d["detail"]["seq"] for d in debits] == [1, 2]


def test_codex_without_a_worktree_stays_read_only(tmp_path: Path) -> None:
    root, log = _codex_workspace(tmp_path)
    runs = Runs(root)
    run_id = runs.plan(FANOUT.replace("ISOLATION", "none"), {"files": ["a.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    assert [c["argv"][:3] for c in _calls(log)] == [["exec", "-s", "read-only"]]
    assert _calls(log)[0]["cwd"] == str(root)
    assert not (root / "a.txt").exists()
    events = [ev for ev in runs.audit(run_id)["events"] if ev["type"] == "sandbox_policy"]
    assert [ev["detail"]["policy"] for ev in events] == [{"sandbox": "read-only"}]


def test_the_builtin_codex_template_is_read_only_unless_handed_a_worktree(tmp_path: Path) -> None:
    codex = load_config(tmp_path).get("codex")
    assert codex.argv_for("do it") == ["codex", "exec", "-s", "read-only", "--", "do it"]
    assert codex.argv_for("do it", "workspace-write")[3] == "workspace-write"
    # a prompt that looks like the placeholder is still only the prompt
    assert codex.argv_for("{sandbox}")[3:] == ["read-only", "--", "{sandbox}"]


@pytest.mark.parametrize(
    "argv",
    [
        '["x", "-s", "{sandbox}", "{sandbox}", "{prompt}"]',
        '["x", "--sandbox={sandbox}", "{prompt}"]',
    ],
)
def test_a_sandbox_placeholder_must_be_one_whole_element(tmp_path: Path, argv: str) -> None:
    (tmp_path / ".vivary").mkdir()
    (tmp_path / ".vivary" / "agents.toml").write_text(f"[agents.mine]\nargv = {argv}\n")
    with pytest.raises(AgentConfigError, match="sandbox"):
        load_config(tmp_path)
