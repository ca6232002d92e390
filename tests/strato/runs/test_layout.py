"""How a run's state is laid out in its commits (strato.runs.layout): a transition writes
only the entries it changed, every reader still gets the one document the engine holds
(read back from git by a store that has seen nothing), and runs written in the first
layout (the whole state as one `run.json`, as 9ac8bb2 wrote it) are read and resumed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pygit2
import pytest

from strato.runs.engine.machine import Engine
from strato.runs.layout import LayoutError, bucket
from strato.runs.service import Runs
from strato.runs.store import Outcome, RunStore, head_ref
from tests.support.flows import make_workspace
from tests.support.repos import git
from tests.support.runs import newer_format
from tropo.git import chain
from tropo.git.objects import write_commit
from tropo.git.refs import cas_ref

SPEC = """version: 1
contracts:
  R: {n: integer}
  V: {v: integer}
flows:
  entry: main
  main:
    input: {items: "integer[]"}
    output: {from: "${last.output}", contract: R}
    max_rounds: 3
    carry:
      seen:
        initial: "${setter.output.n}"
    steps:
      - id: a
        do: "a"
        out: R
        attempts: 2
        on_fail: rescue
      - id: rescue
        do: "rescue"
        out: R
      - id: setter
        after: [a]
        set: {n: "result.a.n"}
        out: R
      - id: sub
        after: [setter]
        run: child
        with: {n: "${setter.output.n}"}
      - id: fan
        after: [sub]
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "item ${item}"
              out: V
      - id: review
        after: [fan]
        gate: {on_approve: null, on_revise: a, on_kill: null}
      - id: last
        after: [review]
        do: "last ${sub.output.n}"
        out: R
  child:
    input: {n: integer}
    output: {from: "${c2.output}", contract: R}
    steps:
      - id: c1
        do: "c1 ${input.n}"
        out: R
      - id: c2
        after: [c1]
        do: "c2"
        out: R
"""


def linear(n: int) -> str:
    steps = "".join(f"      - id: s{i}\n        do: step {i}\n        out: R\n"
                    + (f"        after: [s{i - 1}]\n" if i else "") for i in range(n))
    return ("version: 1\ncontracts:\n  R: {n: integer}\nflows:\n  entry: main\n  main:\n    input: {}\n"
            f'    output: {{from: "${{s{n - 1}.output}}", contract: R}}\n    steps:\n{steps}')


def as_json(state: dict[str, Any]) -> str:
    return json.dumps(state, sort_keys=True)


def in_git(runs: Runs, run_id: str, outcome: Outcome) -> dict[str, Any]:
    """The run as a store that has read nothing before finds it in git, checked to be
    the state the operation left (and the one the service's own store gives next)."""
    repo = pygit2.Repository(str(runs.root))
    fresh = RunStore(repo).load(run_id)
    assert fresh.head == outcome.snap.head
    for entry in repo[fresh.head].peel(pygit2.Tree) / "state":  # every blob canonical JSON
        data = repo[entry.id].read_raw()
        assert chain.encode(json.loads(data)) == data, entry.name
    assert as_json(fresh.state) == as_json(outcome.snap.state) == as_json(runs.load(run_id).state)
    return fresh.state


def answer(runs: Runs, run_id: str, step: str, result: dict[str, Any]) -> Outcome:
    entry = next(e for e in runs.engine(runs.load(run_id), judge=False).ready() if e["id"] == step)
    outcome = runs.done(run_id, step, entry["dispatchToken"], result)
    in_git(runs, run_id, outcome)
    return outcome


def test_every_transition_leaves_in_git_the_state_the_engine_holds(tmp_path: Path) -> None:
    """Retries, routing, a `set` step, carry, a subflow, a consumer fanout, a gate sent
    round again, a usage report, a checkpoint restored and a cancel: after each one a
    store reading git from nothing finds exactly the state the engine left."""
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    planned = runs.plan(SPEC, {"items": [1, 2, 3]}, "r1")
    in_git(runs, "r1", planned)
    answer(runs, "r1", "a", {"output": {"wrong": 1}})  # breaks the contract: retried
    answer(runs, "r1", "a", {"output": {"n": 4}})
    state = in_git(runs, "r1", answer(runs, "r1", "sub/c1", {"output": {"n": 1}}))
    assert state["carry"]["seen"]["value"] == 4
    runs.commit("r1", "before-fan")
    answer(runs, "r1", "sub/c2", {"output": {"n": 2}})
    for index in range(3):
        answer(runs, "r1", f"fan/{index}", {"output": {"v": index}})
    dispatch = next(iter(runs.load("r1").state["dispatches"]))
    in_git(runs, "r1", runs.usage_report("r1", dispatch, {"usd": 0.25}))
    state = in_git(runs, "r1", runs.gate("r1", "review", "revise", note="again"))
    assert state["scope"]["steps"]["a"]["epoch"] == 1 and state["scope"]["rounds"] == 1
    answer(runs, "r1", "a", {"output": {"n": 5}})
    in_git(runs, "r1", runs.revert("r1", "before-fan"))
    answer(runs, "r1", "sub/c2", {"output": {"n": 2}})
    for index in range(3):
        answer(runs, "r1", f"fan/{index}", {"output": {"v": index}})
    in_git(runs, "r1", runs.gate("r1", "review", "approve"))
    state = in_git(runs, "r1", answer(runs, "r1", "last", {"output": {"n": 9}}))
    assert state["status"] == "completed" and state["output"] == {"n": 9}
    assert state["flowSpent"]["usd"] == 0.25
    runs.plan(SPEC, {"items": []}, "r2")
    answer(runs, "r2", "a", {"failure": "no"})
    state = in_git(runs, "r2", answer(runs, "r2", "a", {"failure": "no again"}))  # routed to rescue
    assert [state["scope"]["steps"][s]["status"] for s in ("a", "rescue", "setter")] == [
        "failed", "ready", "skipped"]
    runs.plan(SPEC, {"items": []}, "r3")
    assert in_git(runs, "r3", runs.cancel("r3", "enough"))["status"] == "cancelled"


def test_a_transition_writes_the_blobs_of_the_entries_it_changed_and_the_trees_above_them(
        tmp_path: Path) -> None:
    """One `done` in a 300-step run: the blobs holding the two steps it moved, the new
    dispatch and its generation, and the run's own fields; nothing else is rewritten."""
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    first = runs.plan(linear(300), {}, "r1").snap
    second = answer(runs, "r1", "s0", {"output": {"n": 1}}).snap
    dispatch = second.state["scope"]["steps"]["s1"]["dispatchId"]
    changed = git(ws.root, "diff-tree", "-r", "--name-only", first.head, second.head).split()
    assert sorted(changed) == sorted({"state/run.json", *(f"state/{bucket(k)}" for k in ("s0", "s1", dispatch))})
    listed = git(ws.root, "ls-tree", "--name-only", f"{second.head}:state").split()
    assert listed == sorted(["layout.json", "run.json", *{bucket(f"s{i}") for i in range(300)} | {
        bucket(dispatch), bucket(first.state["scope"]["steps"]["s0"]["dispatchId"])}])
    assert git(ws.root, "show", f"{second.head}:state/layout.json") == (
        '{"format":3,"tables":["dispatches","fanouts","generations","steps"]}')
    held = json.loads(git(ws.root, "show", f"{second.head}:state/{bucket('s1')}"))
    assert held["steps"]["s1"]["status"] == "ready" and held["generations"]["s1"] == 1
    assert all(bucket(key) == bucket("s1") for table in held.values() for key in table)


def _first_layout(runs: Runs, run_id: str, state: dict[str, Any], spec: str, message: str) -> str:
    """A run head as the first layout wrote it (9ac8bb2's `RunStore.create`): a commit of
    `run.json` (the whole state, canonical JSON) and `spec.yaml`, nothing else."""
    files = {"run.json": chain.encode(state), "spec.yaml": spec.encode()}
    commit = write_commit(runs.repo, files, [], message)
    cas_ref(runs.repo, head_ref(run_id), commit, None, "vivary: plan")
    return str(commit)


def test_a_run_in_the_first_layout_is_read_and_resumed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    planned = runs.plan(linear(4), {}, "new").snap
    state = {**json.loads(as_json(planned.state)), "id": "old"}
    message = git(ws.root, "log", "-1", "--format=%B", planned.head)
    old = _first_layout(runs, "old", state, linear(4), message)
    reader = Runs(ws.root)
    snap = reader.load("old")
    assert (snap.head, as_json(snap.state)) == (old, as_json(state))
    assert [e["type"] for e in reader.audit("old")["events"]] == ["planned", "ready"]
    assert [e["id"] for e in reader.engine(snap, judge=False).ready()] == ["s0"]
    first = answer(reader, "old", "s0", {"output": {"n": 1}}).snap
    assert git(ws.root, "ls-tree", "--name-only", first.head).split() == ["spec.yaml", "state"]
    assert git(ws.root, "rev-parse", f"{first.head}:spec.yaml") == git(ws.root, "rev-parse", f"{old}:spec.yaml")
    for step in ("s1", "s2", "s3"):
        last = answer(reader, "old", step, {"output": {"n": 1}}).snap
    assert last.state["status"] == "completed" and last.state["output"] == {"n": 1}
    assert [t["op"] for _, t in reader.store.history("old")] == ["plan"] + ["done"] * 4


def test_a_snapshot_is_its_own_copy_of_the_run(tmp_path: Path) -> None:
    """Two snapshots of one commit share what they only read: a change to one shows in
    neither the other nor the next transition."""
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    runs.plan(linear(3), {}, "r1")
    one, two = runs.load("r1"), runs.load("r1")
    one.state["scope"]["steps"]["s0"]["status"] = "tampered"
    one.state["dispatches"].clear()
    assert two.state["scope"]["steps"]["s0"]["status"] == "ready" and two.state["dispatches"]
    after = answer(runs, "r1", "s0", {"output": {"n": 1}}).snap
    assert after.state["scope"]["steps"]["s0"]["status"] == "succeeded"
    assert two.state["scope"]["steps"]["s0"]["status"] == "ready"


def test_operations_applied_together_leave_each_state_in_its_own_commit(tmp_path: Path) -> None:
    """`Runs.apply_all`: four `done`s in one pass over one state, each its own commit in
    order, and each commit, read by a store that has seen nothing, holds the state the
    engine had when its operation ended; the service's own view after them is the last,
    and the run goes on from it."""
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    before = runs.plan(linear(5), {}, "r1").snap.head
    seen: list[str] = []

    def done(i: int) -> tuple[str, Any, dict[str, Any]]:
        def act(e: Engine) -> None:
            e.step_done(f"s{i}", {"output": {"n": i}}, e.issued_token(f"s{i}"))
            seen.append(as_json(e.run))
        return "done", act, {"stepId": f"s{i}"}

    outcome = runs.apply_all("r1", [done(i) for i in range(4)])
    fresh = RunStore(pygit2.Repository(str(runs.root)))
    chain_ = fresh.since(outcome.snap.head, before)
    assert [(t["op"], t["stepId"]) for _, t in chain_] == [("done", f"s{i}") for i in range(4)]
    assert [as_json(fresh.at("r1", c).state) for c, _ in chain_] == seen
    assert as_json(runs.load("r1").state) == as_json(outcome.snap.state) == seen[-1]
    last = in_git(runs, "r1", answer(runs, "r1", "s4", {"output": {"n": 4}}))
    assert last["status"] == "completed" and last["output"] == {"n": 4}


@pytest.mark.parametrize("key", ["a.b", ".", "..", "x/y", "%41", "é", "sp ace", "-", "a\nb"])
def test_any_key_is_stored_and_read_back_as_itself(repo_dir: Path, key: str) -> None:
    store = RunStore(pygit2.Repository(str(repo_dir)))
    state = {"status": "running", "dispatches": {key: {"n": 1}}, "generations": {key: 2}}
    head = store.create("r1", state, "spec\n", {"op": "plan"})
    assert RunStore(pygit2.Repository(str(repo_dir))).load("r1").state == state
    assert git(repo_dir, "fsck", "--no-progress", "--strict") == ""
    assert head == store.head("r1")


@pytest.mark.parametrize("layout", [b'{"format":4}', b'{"format":2.0,"tables":[]}', b'{"format":true}',
                                    b'{"format":2,"tables":["fanouts"]}', b'[3]'])
def test_a_state_in_a_newer_format_is_refused_not_misread(repo_dir: Path, layout: bytes) -> None:
    """A newer format, or a marker that only looks like a known one (2.0, true), or a
    format-2 state holding format 3's table."""
    store = RunStore(pygit2.Repository(str(repo_dir)))
    store.create("r1", {"status": "running"}, "spec\n", {"op": "plan"})
    tree = store.repo[store.head("r1")].peel(pygit2.Tree)
    inner = store.repo[tree["state"].id]
    builder = store.repo.TreeBuilder(inner)
    builder.insert("layout.json", store.repo.create_blob(layout), pygit2.GIT_FILEMODE_BLOB)
    top = store.repo.TreeBuilder(tree)
    top.insert("state", builder.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("t", "t@example.com")
    commit = store.repo.create_commit(None, sig, sig, "x", top.write(), [])
    with pytest.raises(LayoutError, match=r"a run state this version cannot read|unknown tables"):
        RunStore(store.repo).at("r1", str(commit))


def test_a_run_in_a_newer_format_is_one_line_at_the_terminal_and_listed_as_unreadable(tmp_path: Path) -> None:
    """`show` and `next` refuse it in one line (exit 1, `run_unreadable`); `list` still
    lists every run, it among them; `gates` lists the others' gates."""
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    runs.plan(linear(2), {}, "ok")
    runs.plan(linear(2), {}, "later")
    newer_format(ws.root, head_ref("later"))
    for command in ("show", "next"):
        proc = ws.strato("flow", command, "later", "--json")
        assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "run_unreadable", proc
        text = ws.strato("flow", command, "later")
        assert text.returncode == 1 and len(text.stderr.strip().splitlines()) == 1
        assert "cannot read" in text.stderr
    code, listed = ws.strato_json("flow", "list")
    assert code == 0 and [(r["runId"], r["status"]) for r in listed["runs"]] == [
        ("later", "unreadable"), ("ok", "running")]
    assert ws.strato("flow", "gates").returncode == 0
