"""Fanout in engine mode: items in their own git worktrees (removed afterwards),
changes merged back in item order, conflicts failing cleanly, `require` settlement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strato.agents import trust
from strato.runs.dispatch import merge
from strato.runs.engine.state import Refused
from tests.support.approvals import approve_spec
from tests.support.flows import Workspace, make_workspace
from tests.support.repos import git

SIMPLE = """
version: 1
contracts:
  Edit: {file: string}
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
          require: REQUIRE
          merge: sequential
          steps:
            - do: "Edit ${item}"
              out: Edit
              ensure:
                - file_exists: "${item}"
      - id: count
        after: [edit]
        set:
          count: "len(result.edit)"
        out: Sum
"""


def _simple(isolation: str = "worktree", require: str = "all") -> str:
    return SIMPLE.replace("ISOLATION", isolation).replace("REQUIRE", require)


def _worktrees_dir(root: Path) -> Path:
    return root / ".git" / "vivary" / "worktrees"


def test_items_edit_different_files_in_worktrees_and_are_merged(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"shared.txt": "base\n"})
    ws.agents([
        {"match": "Edit a.txt", "replies": [{"write": {"a.txt": "from a\n"}, "json": {"file": "a.txt"}}]},
        {"match": "Edit b.txt", "replies": [{"write": {"b.txt": "from b\n", "shared.txt": "base\nb was here\n"},
                                             "json": {"file": "b.txt"}}]},
    ])
    runs = ws.runs()
    run_id = runs.plan(_simple(), {"files": ["a.txt", "b.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    assert snap.state["output"] == {"count": 2}
    assert (ws.root / "a.txt").read_text() == "from a\n"
    assert (ws.root / "shared.txt").read_text() == "base\nb was here\n"
    # the edits happened in worktrees, not in the workspace
    cwds = {Path(p) for p in _logged_cwds(ws.plan_file)}
    assert ws.root not in cwds and len(cwds) == 2
    assert all(str(_worktrees_dir(ws.root)) in str(c) for c in cwds)
    # worktrees are gone, and staged in the index for the person to commit
    assert not any(_worktrees_dir(ws.root).rglob("*.txt"))
    assert "vivary" not in git(ws.root, "worktree", "list")
    assert git(ws.root, "branch", "--list").strip() in ("* main", "* master")
    assert sorted(git(ws.root, "diff", "--cached", "--name-only").split()) == ["a.txt", "b.txt", "shared.txt"]


def _logged_cwds(plan_file: Path) -> list[str]:
    import json

    return [json.loads(line)["cwd"] for line in Path(f"{plan_file}.log").read_text().splitlines()]


def test_a_merge_conflict_fails_the_step_and_leaves_the_workspace_as_it_was(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"shared.txt": "base\n"})
    ws.agents([
        {"match": "Edit a.txt", "replies": [{"write": {"a.txt": "a\n", "shared.txt": "from a\n"}, "json": {"file": "a.txt"}}]},
        {"match": "Edit b.txt", "replies": [{"write": {"b.txt": "b\n", "shared.txt": "from b\n"}, "json": {"file": "b.txt"}}]},
    ])
    runs = ws.runs()
    run_id = runs.plan(_simple(), {"files": ["a.txt", "b.txt"]}).snap.run_id
    before = git(ws.root, "status", "--porcelain")
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    assert "fanout merge failed: item 1 conflicts on shared.txt" in snap.state["failure"]["reason"]
    assert (ws.root / "shared.txt").read_text() == "base\n"
    assert not (ws.root / "a.txt").exists()
    assert git(ws.root, "status", "--porcelain") == before


def test_a_worktree_that_cannot_be_created_fails_the_item(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Edit", "replies": [{"write": {"a.txt": "x"}, "json": {"file": "a.txt"}}]}])
    runs = ws.runs()
    run_id = runs.plan(_simple(require="any"), {"files": ["a.txt"]}).snap.run_id
    _worktrees_dir(ws.root).mkdir(parents=True)
    (_worktrees_dir(ws.root) / run_id).write_text("in the way")
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    item = snap.state["scope"]["steps"]["edit"]["fanout"]["items"][0]
    assert item["failureKind"] == "worktree"
    assert "fanout require any not met (0/1 succeeded)" in snap.state["failure"]["reason"]
    assert ws.prompts() == []


def test_require_k_counts_successes_and_output_keeps_nulls(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.txt": "a", "c.txt": "c"})
    ws.agents([{"match": "Edit", "replies": [{"json": {"file": "whatever"}}]}])
    runs = ws.runs()
    run_id = runs.plan(_simple("none", "2"), {"files": ["a.txt", "b.txt", "c.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    output = snap.state["scope"]["steps"]["edit"]["output"]
    assert output[1] is None and output[0] == {"file": "whatever"}
    items = snap.state["scope"]["steps"]["edit"]["fanout"]["items"]
    assert [it["status"] for it in items] == ["succeeded", "failed", "succeeded"]
    assert "identical evidence" in items[1]["failure"]


def _with_pre_merge(commands: str) -> str:
    return _simple().replace("merge: sequential", f"merge: sequential\n          pre_merge: {commands}")


def _two_items(ws: Workspace) -> None:
    ws.agents([
        {"match": "Edit a.txt", "replies": [{"write": {"a.txt": "a\n"}, "json": {"file": "a.txt"}}]},
        {"match": "Edit b.txt", "replies": [{"write": {"b.txt": "b\n"}, "json": {"file": "b.txt"}}]},
    ])


def test_pre_merge_commands_run_in_the_root_before_the_merge(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _two_items(ws)
    # the first command proves the items' files are not merged yet when it runs
    spec = _with_pre_merge('["test ! -e a.txt && echo first > pre.log", "echo second >> pre.log"]')
    runs = ws.runs()
    approve_spec(ws.root, spec)
    run_id = runs.plan(spec, {"files": ["a.txt", "b.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    assert (ws.root / "pre.log").read_text() == "first\nsecond\n"
    assert (ws.root / "a.txt").read_text() == "a\n"
    events = runs.audit(run_id)["events"]
    kinds = [e["type"] for e in events]
    assert kinds.index("fanout_pre_merge") < kinds.index("fanout_merge")
    pre = next(e for e in events if e["type"] == "fanout_pre_merge")
    assert pre["detail"] == {"commands": ["test ! -e a.txt && echo first > pre.log", "echo second >> pre.log"],
                             "failure": None}


def test_a_failing_pre_merge_command_fails_the_step_and_merges_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _two_items(ws)
    spec = _with_pre_merge('["echo lint broke >&2; exit 3", "touch never-run"]')
    runs = ws.runs()
    approve_spec(ws.root, spec)
    run_id = runs.plan(spec, {"files": ["a.txt", "b.txt"]}).snap.run_id
    before = git(ws.root, "status", "--porcelain")
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    assert snap.state["failure"]["reason"] == (
        "fanout pre_merge failed: pre_merge 'echo lint broke >&2; exit 3' exited 3: lint broke"
    )
    assert not (ws.root / "a.txt").exists() and not (ws.root / "never-run").exists()
    assert git(ws.root, "status", "--porcelain") == before


def test_pre_merge_is_not_run_when_require_is_not_met(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Edit", "replies": [{"say": "no json"}]}])
    runs = ws.runs()
    approve_spec(ws.root, _with_pre_merge('["touch ran"]'))
    run_id = runs.plan(_with_pre_merge('["touch ran"]'), {"files": ["a.txt"]}).snap.run_id
    snap = runs.drive(run_id)
    assert "fanout require all not met (0/1 succeeded)" in snap.state["failure"]["reason"]
    assert not (ws.root / "ran").exists()


def test_pre_merge_of_a_spec_no_longer_approved_runs_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _two_items(ws)
    spec = _with_pre_merge('["touch ran"]')
    runs = ws.runs()
    approve_spec(ws.root, spec)
    run_id = runs.plan(spec, {"files": ["a.txt", "b.txt"]}).snap.run_id
    trust.revoke(ws.root, "spec", "spec.yaml")  # as on a clone the run ref was fetched into
    head = runs.load(run_id).head
    with pytest.raises(Refused) as refused:
        ws.runs().drive(run_id)
    assert refused.value.code == "untrusted" and "sh -c 'touch ran'" in str(refused.value)
    assert not (ws.root / "ran").exists() and ws.prompts() == [] and runs.load(run_id).head == head


def test_a_settle_decided_again_after_a_lost_race_applies_the_merge_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path, {"shared.txt": "base\n"})
    ws.agents([
        {"match": "Edit a.txt", "replies": [{"write": {"a.txt": "from a\n"}, "json": {"file": "a.txt"}}]},
        {"match": "Edit b.txt", "replies": [{"write": {"b.txt": "from b\n"}, "json": {"file": "b.txt"}}]},
    ])
    runs = ws.runs()
    run_id = runs.plan(_simple(), {"files": ["a.txt", "b.txt"]}).snap.run_id
    settle, raced = merge.settle, []

    def racing(*args: Any) -> None:
        if not raced:  # another writer lands a transition while this one decides
            raced.append(ws.runs().apply(run_id, "note", lambda eng: eng.emit("noted")))
        settle(*args)

    monkeypatch.setattr(merge, "settle", racing)
    snap = runs.drive(run_id)
    assert raced and snap.state["status"] == "completed", snap.state.get("failure")
    assert (ws.root / "a.txt").read_text() == "from a\n" and (ws.root / "b.txt").read_text() == "from b\n"
    assert sorted(git(ws.root, "diff", "--cached", "--name-only").split()) == ["a.txt", "b.txt"]
