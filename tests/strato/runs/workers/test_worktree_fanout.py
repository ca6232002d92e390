"""A worktree fanout carried by workers on several clones: each item runs in a worktree
of the clone that claimed it, its edits come back as a commit on the item's ref pushed
with its result, and one settling worker merges exactly the recorded commits in item
order (`pre_merge` first), as a local `strato run` of the same spec merges them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import pytest

from tests.support.approvals import approve_spec
from tests.support.repos import git, write_files
from tests.support.runs import calls, strato, wait_for
from tests.support.workers import claim_refs, finished, machines, remote_run, share, transitions, worker

SPEC = """\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
      items: "string[]"
    output:
      from: "${finish.output}"
      contract: Note
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: worktree
          require: all
          merge: sequential
          pre_merge: ["echo checked >> pre-merge.log"]
          steps:
            - do: "write ${item} ${input.tag}"
              agent: claude
              out: Note
      - id: finish
        after: [fan]
        do: "slow finish ${input.tag}"
        agent: claude
        out: Note
"""


def _plan(roots: list[Path], items: list[str], tag: str, spec: str = SPEC) -> None:
    """Approve the spec on every machine (its `pre_merge` runs only where approved) and
    plan it on the first, shared through the remote."""
    for root in roots:
        approve_spec(root, spec, "fan.yaml")
    write_files(roots[0], {"fan.yaml": spec})
    code, _, err = strato(roots[0], "flow", "plan", str(roots[0] / "fan.yaml"), "--input", f"tag={tag}",
                          "--input", f"items={json.dumps(items)}", "--id", "r1")
    assert code == 0, err
    share(roots[0], "r1")


def _local(root: Path, items: list[str], tag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The same spec run by `strato run` on one clone alone: its exit code."""
    approve_spec(root, SPEC, "fan.yaml")
    write_files(root, {"fan.yaml": SPEC})
    monkeypatch.setenv("CALLS_DIR", str(tmp_path))
    monkeypatch.setenv("SLOW_S", "0.05")
    code, _, _ = strato(root, "run", str(root / "fan.yaml"), "--input", f"tag={tag}",
                        "--input", f"items={json.dumps(items)}")
    return code


def _staged(root: Path) -> dict[str, str]:
    """What the merge left in the index: each changed file and its content."""
    names = git(root, "diff", "--cached", "--name-only").split()
    return {name: git(root, "show", f":{name}") for name in names}


def _settler(bare: Path, hands: dict[str, Path], reports: list[dict[str, object]]) -> Path:
    [settle] = [t for t in transitions(bare, "r1") if t["op"] == "fanout_settle"]
    by_worker = {str(r["worker"]): root for r, root in zip(reports, hands.values(), strict=True)}
    return by_worker[settle["worker"]["id"]]


def test_items_run_on_two_clones_and_one_worker_merges_them_as_a_local_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare, (planner, one, two, alone) = machines(tmp_path, 4)
    items = ["a", "b", "c", "d"]
    _plan([planner, one, two], items, "w1")
    go = tmp_path / "go"
    env = {"GO_FILE": str(go)}
    procs = [worker(root, "--run", "r1", "--interval", "0.05", env=env) for root in (one, two)]
    # each worker runs one item at a time: two items started means one on each clone
    def started() -> bool:
        for proc in procs:  # a worker that ended before the go would wait forever: say why
            assert proc.poll() is None, finished(proc)
        return len(calls(tmp_path, "w1")) >= 2

    wait_for(started, "both workers start an item")
    go.touch()
    reports = []
    for proc in procs:
        code, report, err = finished(proc)
        assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
        reports.append(report)
    history = transitions(bare, "r1")
    done = [t for t in history if t["op"] == "fanout_item"]
    assert sorted(t["item"] for t in done) == [0, 1, 2, 3]
    assert len({t["worker"]["id"] for t in done}) == 2  # items ran on both clones
    # each item's commit is on its ref, as the run recorded it: the item's edit on its base
    state = remote_run(bare, "r1")
    recorded = state["scope"]["steps"]["fan"]["fanout"]["items"]
    for item in recorded:
        ref = f"refs/vivary/runs/r1/items/fan.e0.a0.i{item['index']}"
        assert git(bare, "rev-parse", ref).strip() == item["commit"]
        assert git(bare, "rev-parse", f"{item['commit']}^").strip() == item["base"]
        name = f"{items[item['index']]}.txt"
        assert git(bare, "diff", "--name-only", item["base"], item["commit"]).split() == [name]
    settler = _settler(bare, {"one": one, "two": two}, reports)
    assert (settler / "pre-merge.log").read_text() == "checked\n"  # pre_merge ran, once, where it merged
    assert [t["op"] for t in history].count("fanout_settle") == 1
    # the same spec run alone on one clone leaves the same files, staged the same way
    assert _local(alone, items, "w1", tmp_path, monkeypatch) == 0
    assert _staged(settler) == _staged(alone) == {f"{i}.txt": f"{i} w1\n" for i in items}
    assert git(settler, "write-tree") == git(alone, "write-tree")
    # the merge is on the remote too, as the settling transition recorded it
    [merge] = [ev["detail"] for t in history for ev in t.get("events", []) if ev["type"] == "fanout_merge"]
    assert git(bare, "rev-parse", "refs/vivary/runs/r1/items/fan.e0.a0.merged").strip() == merge["commit"]
    assert git(bare, "rev-parse", f"{merge['commit']}^{{tree}}") == git(settler, "write-tree")
    # `concurrency: 2` across both machines: the items held two slots between them
    names = {ref.rsplit("/", 1)[1] for ref in claim_refs(bare, "r1")}
    assert names == {"fan.e0.a0.s0", "fan.e0.a0.s1", "fan.e0.a0.settle", "finish.g1",
                     *(f"fan.e0.a0.i{i}" for i in range(4))}


def test_a_conflicting_item_fails_the_fanout_as_it_does_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare, (planner, one, two, alone) = machines(tmp_path, 4)
    items = ["a", "clash1", "clash2"]
    _plan([planner, one, two], items, "w2")
    procs = [worker(root, "--run", "r1", "--interval", "0.05") for root in (one, two)]
    reports = []
    for proc in procs:
        _, report, err = finished(proc)
        assert report is not None and report["runs"] == {"r1": "failed"}, err
        reports.append(report)
    state = remote_run(bare, "r1")
    assert state["failure"]["reason"] == "fanout merge failed: item 2 conflicts on shared.txt"
    settler = _settler(bare, {"one": one, "two": two}, reports)
    assert _staged(settler) == {} and not (settler / "a.txt").exists()  # nothing merged
    assert _local(alone, items, "w2", tmp_path, monkeypatch) == 1
    assert remote_run(alone, _only_run(alone))["failure"]["reason"] == state["failure"]["reason"]
    assert _staged(alone) == {}


def _only_run(root: Path) -> str:
    [ref] = git(root, "for-each-ref", "--format=%(refname)", "refs/vivary/runs/*/head").split()
    return ref.split("/")[3]


def test_a_killed_workers_item_runs_again_elsewhere_and_is_merged_once(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    items = ["a", "b", "c"]
    _plan([planner, one, two], items, "w3")
    first = worker(one, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05", env={"SLOW_S": "30"})
    wait_for(lambda: calls(tmp_path, "w3"), "the first worker's agent starts")
    [(step, pid)] = [line.split() for line in (tmp_path / "calls-w3.log").read_text().splitlines()]
    first.kill()
    first.wait()
    with contextlib.suppress(ProcessLookupError):  # its orphan agent
        os.kill(int(pid), signal.SIGKILL)
    code, report, err = finished(worker(two, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    assert report["takeovers"] == 1
    assert sorted(calls(tmp_path, "w3")) == sorted([*items, step, "finish"])  # the killed one twice
    history = transitions(bare, "r1")
    assert sorted(t["item"] for t in history if t["op"] == "fanout_item") == [0, 1, 2]
    [merge] = [ev for t in history for ev in t.get("events", []) if ev["type"] == "fanout_merge"]
    assert merge["detail"]["items"] == [0, 1, 2]
    assert _staged(two) == {f"{i}.txt": f"{i} w3\n" for i in items}



# Whoever can push moves an item's ref to a commit of their own after the item landed
# (here from the settling clone itself, just before the merge, and fetched there).
PLANT = """\
          pre_merge:
            - |
              evil=$(echo pwned | git hash-object -w --stdin)
              tree=$(printf '100644 blob %s\\tevil.txt\\n' "$evil" | git mktree)
              git push -q -f origin "$(git commit-tree "$tree" -m planted):refs/vivary/runs/r1/items/fan.e0.a0.i0"
              git fetch -q origin '+refs/vivary/runs/r1/*:refs/vivary/runs/r1/*'
"""


def test_a_moved_item_ref_is_not_what_gets_merged(tmp_path: Path) -> None:
    spec = SPEC.replace('          pre_merge: ["echo checked >> pre-merge.log"]\n', PLANT)
    bare, (planner, one) = machines(tmp_path, 2)
    _plan([planner, one], ["a", "b"], "w4", spec)
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    planted = git(bare, "rev-parse", "refs/vivary/runs/r1/items/fan.e0.a0.i0").strip()
    [item] = [i for i in remote_run(bare, "r1")["scope"]["steps"]["fan"]["fanout"]["items"] if i["index"] == 0]
    assert git(bare, "show", "-s", "--format=%s", planted).strip() == "planted" != item["commit"]
    assert _staged(one) == {"a.txt": "a w4\n", "b.txt": "b w4\n"}  # the recorded commits, nothing planted




def test_a_worker_where_the_spec_is_not_approved_leaves_the_fanout_to_others(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    _plan([planner, two], ["a", "b"], "w5")  # not approved on `one`: its pre_merge may not run there
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05", "--idle-exit", "1"))
    assert code == 0 and report is not None and report["claimed"] == 0, err
    assert err.count("skipped fan of run r1: this spec is not approved") == 1
    assert calls(tmp_path, "w5") == [] and remote_run(bare, "r1")["status"] == "running"
    code, report, err = finished(worker(two, "--run", "r1", "--interval", "0.05"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    assert (two / "pre-merge.log").exists() and not (one / "pre-merge.log").exists()
