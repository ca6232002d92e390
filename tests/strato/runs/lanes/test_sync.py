"""Lanes between clones, against a real bare remote and two clones: the first push
creates the remote's lanes, a clone behind fast-forwards, two clones that diverged
(with and without a common ancestor) are merged into one log, every piece of evidence
folded once in the order it was taken, and a remote whose evidence cannot be read is
refused with one line and nothing moves."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from strato.runs.lanes.store import MAX_MERGE_DEPTH, REF, LanesCorrupt, LaneStore, evidence_id
from tests.support.approvals import approve_agents
from tests.support.flows import Workspace
from tests.support.lanes import LANE, judged_workspace, lane_evidence, run_once
from tests.support.repos import git


def _two_clones(tmp_path: Path) -> tuple[Workspace, Workspace, Path]:
    """Workspace `a` pushed to a bare remote, and `b` cloned from it with the same agents."""
    (tmp_path / "a").mkdir()
    a = judged_workspace(tmp_path / "a")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(a.root, "remote", "add", "origin", str(bare))
    git(a.root, "push", "-q", "origin", "HEAD")
    (tmp_path / "b").mkdir()
    b = Workspace(tmp_path / "b" / "ws", a.plan_file)
    git(tmp_path, "clone", "-q", str(bare), str(b.root))
    shutil.copytree(a.root / ".vivary", b.root / ".vivary")
    approve_agents(b.root)  # another clone is another repository: approved there too
    return a, b, bare


def _sync(ws: Workspace) -> str:
    proc = ws.strato("lanes", "--sync", "origin", check=True)
    return proc.stdout.strip()


def _view(ws: Workspace) -> dict[str, Any]:
    code, view = ws.strato_json("lanes")
    assert code == 0
    return view


def _ids(ws: Workspace) -> list[str]:
    return [evidence_id(item) for item in LaneStore(ws.runs().repo).log()]


def test_two_clones_that_diverged_are_merged_into_one_log(tmp_path: Path) -> None:
    a, b, bare = _two_clones(tmp_path)
    runs_a, runs_b = a.runs(), b.runs()
    for n in range(3):
        run_once(runs_a, f"a{n}", "hello")
    for n in range(2):  # b earns evidence of its own before it ever sees a's: no common history
        run_once(runs_b, f"b{n}", "hello")
    assert "pushed" in _sync(a)
    assert git(bare, "rev-parse", REF).strip() == git(a.root, "rev-parse", REF).strip()
    before_a, before_b = set(_ids(a)), set(_ids(b))
    assert "pushed" in _sync(b)  # merged, then pushed with a lease on a's tip
    merged = git(b.root, "rev-parse", REF).strip()
    assert git(bare, "rev-parse", REF).strip() == merged
    assert len(git(b.root, "rev-list", "--parents", "-n1", REF).split()) == 3  # a merge commit
    assert sorted(_ids(b)) == sorted(before_a | before_b)  # every piece of evidence, once
    assert _view(b)["lanes"][0]["clean"] == 5 and _view(b)["lanes"][0]["verified"] == 5
    assert "up to date" in _sync(a) and _view(a) == _view(b)  # a fast-forwards to the merge

    # diverged again, now with a common ancestor: a verifies twice more, b fails once and
    # then verifies twice (a fresh streak: checked whatever the draw), later
    run_once(runs_a, "a-late0", "hello")
    run_once(runs_a, "a-late1", "hello")
    bad = run_once(runs_b, "b-bad", "forbidden")
    assert bad["status"] == "failed"
    run_once(runs_b, "b-late0", "hello")
    run_once(runs_b, "b-late1", "hello")
    _sync(b)
    assert "pushed" in _sync(a)  # a is the one to merge this time: its own evidence is older than b's
    assert "up to date" in _sync(b)
    assert _view(a) == _view(b) and git(bare, "rev-parse", REF).strip() == git(a.root, "rev-parse", REF).strip()
    [row] = _view(a)["lanes"]
    assert row["lane"] == LANE and row["failures"] == 1
    assert row["clean"] == 2 and row["lastReset"].startswith("failure: ensure[0] failed")
    assert len(_ids(a)) == len(set(_ids(a))) == 10

    # b's runs are not in a: their clean evidence cannot be confirmed here, and says why
    code, report = a.strato_json("lanes", "--check")
    assert code == 1 and report["findings"]
    assert all("'b" in f and f.endswith("(the run is not in this clone)") for f in report["findings"])
    # with every run's ref here too, the merged lanes replay against the runs they name
    git(b.root, "push", "-q", "origin", "refs/vivary/runs/*:refs/vivary/runs/*")
    git(a.root, "fetch", "-q", "origin", "refs/vivary/runs/*:refs/vivary/runs/*")
    code, report = a.strato_json("lanes", "--check")
    assert code == 0, report


def test_the_merge_folds_evidence_in_the_order_it_was_taken_not_side_by_side(tmp_path: Path) -> None:
    """a's three clean checks are older than b's failure: in time order the failure is the
    last word (streak 0), though b, merging, holds it and a's evidence arrives after."""
    a, b, _bare = _two_clones(tmp_path)
    LaneStore(a.runs().repo).record([lane_evidence("clean", n) for n in (1, 2, 3)])
    _sync(a)
    LaneStore(b.runs().repo).record([lane_evidence("clean", 5)])
    LaneStore(b.runs().repo).record([lane_evidence("failure", 6)])
    _sync(b)
    log = LaneStore(b.runs().repo).log()
    assert [item["at"][-3:-1] for item in log] == ["01", "02", "03", "05", "06"]
    [row] = _view(b)["lanes"]
    assert row["clean"] == 0 and row["failures"] == 1 and row["verified"] == 5


def test_a_remote_whose_evidence_cannot_be_read_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    a, b, bare = _two_clones(tmp_path)
    run_once(a.runs(), "a0", "hello")
    _sync(a)
    run_once(b.runs(), "b0", "hello")
    # someone pushes a lanes commit whose message is not evidence on top of a's
    text = git(a.root, "show", f"{REF}:lanes.json")
    blob = _stdin(a.root, text, "hash-object", "-w", "--stdin")
    tree = _stdin(a.root, f"100644 blob {blob}\tlanes.json\n", "mktree")
    forged = git(a.root, "commit-tree", tree, "-p", REF, "-m", "lanes: trust me\n\nnot evidence").strip()
    git(a.root, "push", "-q", "origin", f"{forged}:{REF}")
    ours = git(b.root, "rev-parse", REF).strip()
    proc = b.strato("lanes", "--sync", "origin")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "refusing to merge origin's refs/vivary/lanes" in proc.stderr and "not JSON" in proc.stderr
    assert git(b.root, "rev-parse", REF).strip() == ours
    assert git(bare, "rev-parse", REF).strip() == forged
    assert "refs/vivary/lanes-incoming" not in git(b.root, "for-each-ref")
    code, doc = b.strato_json("lanes", "--sync", "origin")
    assert code == 1 and doc["ok"] is False and "refusing" in doc["error"]["message"]


def test_sync_with_an_unreachable_remote_is_one_line_and_exit_1(tmp_path: Path) -> None:
    a, _b, _bare = _two_clones(tmp_path)
    run_once(a.runs(), "a0", "hello")
    git(a.root, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    proc = a.strato("lanes", "--sync", "gone")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "gone" in proc.stderr
    assert a.strato("lanes", "--sync", "origin", "--check").returncode == 2


def _stdin(cwd: Path, text: str, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=text, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_evidence_ids_are_stable_and_tell_pieces_apart() -> None:
    item = {"kind": "clean", "lane": LANE, "runId": "r", "stepId": "w", "attempt": 1, "at": "t"}
    assert evidence_id(item) == evidence_id(json.loads(json.dumps(item, sort_keys=False)))
    assert evidence_id(item) != evidence_id({**item, "attempt": 2})


def test_merges_nested_past_any_history_we_write_are_refused_not_walked_forever(tmp_path: Path) -> None:
    """Every level of these merges shares its ancestry with the next: walked naively the
    log would take exponential time; each commit's log is computed once, and past
    MAX_MERGE_DEPTH the chain is refused as corrupt."""
    a, _b, _bare = _two_clones(tmp_path)
    store = LaneStore(a.runs().repo)
    store.record([lane_evidence("clean", 1)])
    tree = git(a.root, "rev-parse", f"{REF}^{{tree}}").strip()
    tip = git(a.root, "rev-parse", REF).strip()
    for n in range(MAX_MERGE_DEPTH + 2):
        side = git(a.root, "commit-tree", tree, "-p", tip, "-m", f"lanes: side {n}\n\n[]").strip()
        tip = git(a.root, "commit-tree", tree, "-p", tip, "-p", side, "-m", f"lanes: merge {n}\n\n[]").strip()
        if n == MAX_MERGE_DEPTH // 2:
            assert [i["at"] for i in store.log(tip)] == [lane_evidence("clean", 1)["at"]]
    with pytest.raises(LanesCorrupt, match="nested"):
        store.log(tip)
