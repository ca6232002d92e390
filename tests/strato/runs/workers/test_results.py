"""An item's result in its claim commit is written by a teammate's clone, so it is read
as untrusted input: whatever bytes an adversary puts there, decoding either refuses them
(ValueError) or yields only the three record calls of the allow-list, for the fanout and
item the claim names, each guarded to apply once; evidence is learned only from a
result this clone wrote."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.runs.dispatch.fanout import record_attempt, record_dispatch, record_item
from strato.runs.workers import results
from strato.runs.workers.shared import Operation
from tests.support.repos import git, write_files
from tests.support.runs import fanout_spec, strato
from tests.support.workers import all_calls, finished, machines, share, transitions, worker

PATH, BASE, INDEX = "fan", "fan.e0.a0", 3
MADE = {"dispatchId": "d-1", "stage": 0, "attempt": 1, "usage": {"ms": 5}, "telemetry": {"model": "m"},
        "inputs": "sha256:ab"}
VERDICT = {"output": {"text": "ok"}, "failure": None, "events": [["judged", {"stage": 0}]],
           "evidence": [{"lane": "x"}]}
ITEM = {"index": INDEX, "item": "c", "attempts": [{"stage": 0, "attempt": 1, "result": {"text": "ok"},
                                                   "failure": None}], "calls": [], "status": "succeeded",
        "output": {"text": "ok"}}
DETAIL = {"stepId": PATH, "item": INDEX}


def _ops() -> list[Operation]:
    return [
        Operation("fanout_dispatch", partial(record_dispatch, path=PATH, index=INDEX, stage=0, attempt=1), DETAIL),
        Operation("fanout_attempt", partial(record_attempt, path=PATH, index=INDEX, made=MADE, verdict=VERDICT),
                  DETAIL),
        Operation("fanout_item", partial(record_item, path=PATH, item=ITEM),
                  {**DETAIL, "worker": {"id": "w-1", "machine": "m", "claim": f"{BASE}.i{INDEX}"}}),
    ]


def _calls(ops: list[Operation]) -> list[tuple[str, Any, dict[str, Any]]]:
    out = []
    for op in ops:
        assert isinstance(op.action, partial)
        once, call, path, base, index, args = op.action.func, *op.action.args
        assert once is results._once and (path, base, index) == (PATH, BASE, INDEX)
        out.append((op.op, call, args))
    return out


def test_a_result_reads_back_as_the_record_calls_it_was_made_of() -> None:
    raw = results.encode(_ops())
    mine = _calls(results.decode(raw, PATH, BASE, INDEX, own=True))
    assert [(op, call) for op, call, _ in mine] == [
        ("fanout_dispatch", record_dispatch), ("fanout_attempt", record_attempt), ("fanout_item", record_item)]
    assert mine[1][2]["verdict"] == VERDICT and mine[2][2]["item"] == ITEM
    # a teammate's result: the same calls, but its evidence is not learned here
    theirs = _calls(results.decode(raw, PATH, BASE, INDEX, own=False))
    assert theirs[1][2]["verdict"] == {**VERDICT, "evidence": []}


def _mutate(doc: dict[str, Any], where: int, key: str, value: Any) -> bytes:
    doc = json.loads(json.dumps(doc))
    target = doc["ops"][where]
    for part in key.split(".")[:-1]:
        target = target[part]
    target[key.split(".")[-1]] = value
    return json.dumps(doc).encode()


@pytest.mark.parametrize(("where", "key", "value"), [
    (0, "call", "system"),  # not a record call
    (0, "call", "record_item"),  # a record call under another op's name
    (0, "call", ["record_item"]),
    (0, "args", ["fan", 3]),
    (0, "args.path", "other"),  # another fanout's
    (0, "args.index", 4),  # another item's
    (0, "args.attempt", 0),
    (0, "args.stage", True),
    (0, "args.argv", ["sh", "-c", "id"]),  # an argument the call does not take
    (1, "args.made.usage", {"usd": -1}),  # usage an agent's report could not carry
    (1, "args.made.dispatchId", ""),
    (1, "args.verdict.events", [["gate_decided", {}]]),  # only `judged` events
    (2, "args.item.index", 4),
    (2, "args.item.status", "pending"),
    (2, "args.item.commit", "HEAD~1"),  # a commit id, never a revision to resolve
    (2, "detail.item", 4),
    (2, "detail.person", "someone"),
])
def test_a_result_altered_anywhere_is_refused(where: int, key: str, value: Any) -> None:
    doc = json.loads(results.encode(_ops()))
    with pytest.raises(ValueError):
        results.decode(_mutate(doc, where, key, value), PATH, BASE, INDEX, own=True)


def test_a_result_without_its_item_or_in_another_shape_is_refused() -> None:
    doc = json.loads(results.encode(_ops()))
    for raw in (json.dumps({**doc, "ops": doc["ops"][:2]}), json.dumps({**doc, "version": 2}), "[]", "{}"):
        with pytest.raises(ValueError):
            results.decode(raw.encode(), PATH, BASE, INDEX, own=True)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["record_dispatch", "record_attempt", "record_item", "fanout_item", PATH, "judged"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["op", "call", "args", "detail", "ops", "version", "path", "index", "item", "stage",
                         "attempt", "made", "verdict", "status", "stepId", "worker"]) | st.text(max_size=6),
        inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(doc=JSON, ops=st.lists(JSON, max_size=4))
def test_whatever_bytes_an_adversary_writes_only_the_allowed_record_calls_come_out(doc: Any, ops: list[Any]) -> None:
    for raw in (json.dumps(doc), json.dumps({"version": 1, "ops": ops})):
        try:
            decoded = results.decode(raw.encode(), PATH, BASE, INDEX, own=False)
        except ValueError:
            continue
        for op, call, args in _calls(decoded):
            assert call in (record_dispatch, record_attempt, record_item) and op == results.OPS[call.__name__]
            assert args["path"] == PATH and args.get("index", args.get("item", {}).get("index")) == INDEX


def test_a_forged_result_on_the_remote_is_given_up_and_its_item_run_again(tmp_path: Path) -> None:
    bare, (planner, hand) = machines(tmp_path, 2)
    write_files(planner, {"fan.yaml": fanout_spec("slow")})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=g1",
                          "--input", 'items=["a", "b", "c"]', "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    # someone who may push writes a `done` claim for item 0 whose result names a program
    forged = {"version": 1, "ops": [{"op": "fanout_item", "call": "system", "args": {"argv": ["id"]},
                                     "detail": {}}]}
    _push_done_claim(planner, "refs/vivary/runs/r1/claims/fan.e0.a0.i0",
                     {"lease.json": json.dumps({"state": "done", "worker": "w-x"}).encode(),
                      "result.json": json.dumps(forged).encode()})
    code, report, err = finished(worker(hand, "--run", "r1", "--interval", "0.05", "--idle-exit", "30"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    assert "released fan.e0.a0.i0 of run r1: its result does not read as one" in err
    history = transitions(bare, "r1")
    assert Counter(t["item"] for t in history if t["op"] == "fanout_item") == Counter(range(3))
    assert all(t.get("detail", {}).get("argv") is None for t in history)
    assert sorted(c for c in all_calls(tmp_path, "g1") if not c.endswith("-check")) == ["a", "b", "c", "finish"]


def _push_done_claim(root: Path, ref: str, files: dict[str, bytes]) -> None:
    """Push a `done` claim commit holding ``files`` to ``ref``, as a worker would have."""
    def stdin(*args: str, data: bytes) -> str:
        return subprocess.run(["git", *args], cwd=root, input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    blobs = {name: stdin("hash-object", "-w", "--stdin", data=data) for name, data in files.items()}
    tree = stdin("mktree", data="".join(f"100644 blob {oid}\t{name}\n" for name, oid in blobs.items()).encode())
    commit = git(root, "commit-tree", tree, "-m", "claim: done").strip()
    git(root, "push", "-q", "origin", f"{commit}:{ref}")


def test_a_result_whose_worker_died_before_any_fold_is_folded_by_another_and_not_run_again(
    tmp_path: Path,
) -> None:
    bare, (planner, hand) = machines(tmp_path, 2)
    write_files(planner, {"fan.yaml": fanout_spec("slow")})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=d1",
                          "--input", 'items=["a", "b", "c"]', "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    # a worker landed item 0's result in its claim, then died before anyone folded it (a
    # fold that never comes leaves the worker idle: --idle-exit ends it, and the run's
    # status says so, instead of a hang)
    made = {**MADE, "dispatchId": "d-dead"}
    right = {"text": "right"}
    item = {"index": 0, "item": "a", "status": "succeeded", "output": right, "calls": [],
            "attempts": [{"stage": 0, "attempt": 1, "result": right, "failure": None}]}
    detail = {"stepId": "fan", "item": 0}
    ops = [
        Operation("fanout_dispatch", partial(record_dispatch, path="fan", index=0, stage=0, attempt=1), detail),
        Operation("fanout_attempt", partial(record_attempt, path="fan", index=0, made=made,
                                            verdict={**VERDICT, "output": right, "evidence": []}), detail),
        Operation("fanout_item", partial(record_item, path="fan", item=item),
                  {**detail, "worker": {"id": "w-dead", "machine": "gone", "claim": "fan.e0.a0.i0"}}),
    ]
    lease = {"state": "done", "worker": "w-dead", "machine": "gone", "item": 0, "stepId": "fan"}
    _push_done_claim(planner, "refs/vivary/runs/r1/claims/fan.e0.a0.i0",
                     {"lease.json": json.dumps(lease).encode(), "result.json": results.encode(ops)})
    code, report, err = finished(worker(hand, "--run", "r1", "--interval", "0.05", "--idle-exit", "30"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    assert report["resultsFolded"] == 3  # the dead worker's and its own two
    history = transitions(bare, "r1")
    done = [t for t in history if t["op"] == "fanout_item"]
    assert Counter(t["item"] for t in done) == Counter(range(3))
    assert [t["worker"]["id"] for t in done if t["item"] == 0] == ["w-dead"]
    # item 0 was not run again: no call for it, its dispatch debited once
    assert not {"a", "a-check"} & set(all_calls(tmp_path, "d1"))
    debits = [ev["detail"]["dispatchId"] for t in history for ev in t.get("events", []) if ev["type"] == "usage_debit"]
    assert debits.count("d-dead") == 1
