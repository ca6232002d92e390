"""A fanout step's growing members kept apart (strato.runs.parts, layout format 3): every
commit still reads back as exactly the state the engine held (as JSON: 1, 1.0 and true
told apart), an item's transition writes a few small blobs whatever the fanout's size,
a run planned in format 2 stays in format 2, and parts that do not fit are refused."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.runs import layout, parts
from strato.runs.store import RunSnapshot, RunStore, Transition, head_ref
from tests.support.repos import git
from tropo.git import chain

SPEC = "spec\n"
MISSING = object()

# JSON values whose equal-looking variants differ as JSON: 1, 1.0, true; 0, 0.0, -0.0, false
SCALARS = st.sampled_from([1, 1.0, True, 0, 0.0, -0.0, False, None, "", "a", "é"])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["k", "n", "status"]), inner, max_size=3), max_leaves=6)
MEMBERS = st.fixed_dictionaries({}, optional={
    "items": st.lists(VALUES, max_size=5),
    "settled": st.dictionaries(st.sampled_from(["0.0.1", "1.0.1", "10.0.1", "2.1.2"]), VALUES, max_size=4),
    "dispatched": st.lists(st.sampled_from(["0.0.1", "1.0.1", "2.1.2"]), max_size=4),
})


def js(value: Any) -> bytes:
    return chain.encode(value)


@given(old=MEMBERS, new=MEMBERS, rest=st.dictionaries(st.sampled_from(["stage", "x"]), SCALARS, max_size=2))
def test_the_parts_that_changed_are_exactly_those_whose_json_differs(
        old: dict[str, Any], new: dict[str, Any], rest: dict[str, Any]) -> None:
    step = {"status": "running", "fanout": {**rest, **new}}
    stripped, members = parts.split(step)
    assert js(parts.join(stripped, parts.entries("fan", members).items())) == js(step)
    before = parts.entries("fan", old)
    after = dict(before)
    for key, value in parts.changed("fan", new, old, MISSING, False).items():
        if value is MISSING:
            del after[key]
        else:
            assert key not in before or js(before[key]) != js(value)  # nothing written for nothing
            after[key] = value
    assert {k: js(v) for k, v in after.items()} == {k: js(v) for k, v in parts.entries("fan", new).items()}


def _twin(value: Any) -> Any:
    """An equal value (as Python compares) that is other JSON where it can be: 1 and
    true, 0 and false, each number as a float or an int."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return float(value) if isinstance(value, int) else (True if value == 1 else -0.0 if value == 0 else value)
    if isinstance(value, list):
        return [_twin(v) for v in value]
    if isinstance(value, dict):
        return {k: _twin(v) for k, v in value.items()}
    return value


@given(old=MEMBERS)
def test_an_element_made_equal_but_other_json_is_written(old: dict[str, Any]) -> None:
    """`==` says 1 == 1.0 == True; the stored JSON must not."""
    new = _twin(old)
    written = parts.changed("fan", new, old, MISSING, False)
    before, after = parts.entries("fan", old), parts.entries("fan", new)
    assert set(written) == {k for k in after if js(after[k]) != js(before[k])}


OPS = st.lists(st.tuples(st.sampled_from(["get", "set", "twin", "append", "iterate", "pop", "sort", "slice",
                                          "del", "reversed", "put", "take", "drop", "clear"]),
                         st.integers(0, 4), VALUES), max_size=8)


def _operate(members: dict[str, Any], op: tuple[str, int, Any]) -> None:
    """One thing engine code may do to a taken step's members (an element handed out is
    changed in place, as consumer items are)."""
    kind, k, value = op
    items, settled = members.get("items"), members.get("settled")
    if isinstance(items, list) and items:
        i = k % len(items)
        if kind == "get" and isinstance(items[i], dict):
            items[i]["status"] = value
        elif kind == "set":
            items[i] = value
        elif kind == "twin":
            items[i] = _twin(items[i])
        elif kind == "iterate":
            for it in items:
                if isinstance(it, list):
                    it.append(value)
        elif kind == "pop":
            popped = items.pop(i)
            if isinstance(popped, dict):
                popped["x"] = 1  # a private copy: the committed one is untouched
        elif kind == "sort":
            items.sort(key=lambda v: js(v))
        elif kind == "slice":
            items[0:1] = [value]
        elif kind == "del":
            del items[i]
        elif kind == "reversed":
            for it in reversed(items):
                if isinstance(it, dict):
                    it.clear()
    if isinstance(items, list) and kind == "append":
        items.append(value)
    if isinstance(settled, dict):
        key = ("0.0.1", "1.0.1", "10.0.1", "2.1.2", "9.9.9")[k]
        if kind == "put":
            settled[key] = value
        elif kind == "take" and isinstance(settled.get(key), dict):
            settled[key]["output"] = value
        elif kind == "drop":
            settled.pop(key, None)
        elif kind == "clear":
            settled.clear()


@given(old=MEMBERS, ops=OPS)
def test_a_taken_step_reports_exactly_what_was_changed_in_it(old: dict[str, Any], ops: list[Any]) -> None:
    """Its members track what was handed out or written, and only that is compared: the
    parts found changed are exactly those whose JSON differs, and the committed members
    it was taken from never change."""
    committed = json.loads(js(old))
    frozen = js(committed)
    taken = parts.taken("fan", {"status": "running", "fanout": committed})
    for op in ops:
        _operate(taken["fanout"], op)
    new = {m: taken["fanout"][m] for m in committed}
    written = parts.changed("fan", new, committed, MISSING, True)
    assert js(committed) == frozen
    before, after = parts.entries("fan", committed), parts.entries("fan", json.loads(js(new)))
    assert written.keys() == {k for k in before.keys() | after.keys()
                              if k not in before or k not in after or js(before[k]) != js(after[k])}
    assert all(v is MISSING if k not in after else js(v) == js(after[k]) for k, v in written.items())


def test_a_step_that_is_not_a_fanout_is_stored_whole() -> None:
    for value in ({"status": "done"}, {"fanout": None}, {"fanout": {"items": "x"}}, [1], "s"):
        assert parts.split(value) == (value, {})


@pytest.fixture
def store(repo_dir: Path) -> RunStore:
    return RunStore(pygit2.Repository(str(repo_dir)))


def _fan(n: int) -> dict[str, Any]:
    items = [{"index": i, "item": f"i{i}", "status": "pending"} for i in range(n)]
    return {"status": "running", "epoch": 1, "fanout": {"items": items}}


EDITS = st.lists(st.tuples(st.sampled_from(["item", "twin", "settle", "unsettle", "dispatch", "drop", "gone"]),
                           st.integers(0, 3), VALUES), min_size=1, max_size=10)


def _edit(state: dict[str, Any], edit: tuple[str, int, Any]) -> None:
    """One edit of a fanout step's members, as the engine makes them (and a few it never
    makes: a member dropped, the step gone and planned again)."""
    kind, k, value = edit
    steps = state["scope"]["steps"]
    if kind == "gone":
        steps.pop("fan") if "fan" in steps else steps.__setitem__("fan", _fan(3))
        return
    fan = steps.get("fan")
    if fan is None:
        return
    members = fan["fanout"]
    if kind == "item" and k < len(members.get("items", [])):
        members["items"][k] = {"index": k, "status": "done", "output": value}
    elif kind == "twin" and k < len(members.get("items", [])):
        members["items"][k] = _twin(members["items"][k])
    elif kind == "settle":
        members.setdefault("settled", {})[f"{k}.0.1"] = {"output": value, "failure": None}
    elif kind == "unsettle":
        members.get("settled", {}).pop(f"{k}.0.1", None)
    elif kind == "dispatch":
        members.setdefault("dispatched", []).append(f"{k}.0.1")
    elif kind == "drop":
        members.pop(("items", "settled", "dispatched")[k % 3], None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS, split=st.integers(1, 3))
def test_every_commit_reads_back_as_the_state_it_was_written_from(
        store: RunStore, edits: list[tuple[str, int, Any]], split: int) -> None:
    """Edits of a fanout's members, several transitions at a time: a store that has read
    nothing finds each commit's state byte for byte as JSON, then again after the next
    update (made from the view the writer kept)."""
    run_id = f"r{uuid.uuid4().hex[:8]}"
    store.create(run_id, {"status": "running", "scope": {"steps": {"fan": _fan(3), "b": {"status": "ready"}}}},
                 SPEC, {"op": "plan"})
    expected: list[bytes] = []

    def decide(snap: RunSnapshot) -> Iterator[Transition]:
        expected.clear()
        for at, edit in enumerate(edits):
            _edit(snap.state, edit)
            if at % split == split - 1 or at == len(edits) - 1:
                expected.append(js(snap.state))
                yield snap.state, {"op": "done", "n": at}

    for _ in range(2):
        store.update(run_id, "done", decide)
        fresh = RunStore(pygit2.Repository(store.repo.path))
        chain_ = [commit for commit, _ in fresh.history(run_id)][-len(expected):]
        assert [js(fresh.at(run_id, c).state) for c in chain_] == expected
        assert js(store.load(run_id).state) == expected[-1]


def _sizes(store: RunStore, old: str, new: str) -> list[int]:
    """The sizes of the state blobs ``new`` wrote over ``old``."""
    root = Path(store.repo.workdir)
    changed = git(root, "diff-tree", "-r", "--name-only", old, new).split()
    return [len(store.repo.revparse_single(f"{new}:{path}").read_raw()) for path in changed]


def test_an_item_writes_a_few_small_blobs_whatever_the_fanout_size(store: RunStore) -> None:
    """Recording one item of a 20- and of a 2,000-item fanout (its dispatch, its attempt,
    the item) rewrites blobs of the same few hundred bytes, not the step's entry."""
    written = {}
    for n in (20, 2000):
        run_id = f"f{n}"
        store.create(run_id, {"status": "running", "scope": {"steps": {"fan": _fan(n)}}}, SPEC, {"op": "plan"})
        before = store.load(run_id)

        def decide(snap: RunSnapshot) -> Iterator[Transition]:
            fan = snap.state["scope"]["steps"]["fan"]
            fan["fanout"].setdefault("dispatched", []).append("7.0.1")
            yield snap.state, {"op": "fanout_dispatch"}
            fan["fanout"].setdefault("settled", {})["7.0.1"] = {"output": {"text": "ok"}, "failure": None}
            yield snap.state, {"op": "fanout_attempt"}
            fan["fanout"]["items"][7] = {"index": 7, "item": "i7", "status": "succeeded"}
            yield snap.state, {"op": "fanout_item"}

        after = store.update(run_id, "item", decide)
        written[n] = _sizes(store, before.head, after.head)
        assert js(RunStore(pygit2.Repository(store.repo.path)).load(run_id).state) == js(after.state)
    assert max(written[2000]) < 2000 and len(written[2000]) <= 8
    assert git(Path(store.repo.workdir), "show", f"{head_ref('f20')}:state/layout.json") == (
        '{"format":3,"tables":["fanouts","steps"]}')


def test_a_run_planned_in_format_2_stays_in_format_2(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone of the version before format 3 may be working on it: it must keep
    reading every commit (the step's members stay in its entry)."""
    with monkeypatch.context() as patch:
        patch.setitem(layout.WRITES, 0, 2)  # as that version planned it
        store.create("old", {"status": "running", "scope": {"steps": {"fan": _fan(3)}}}, SPEC, {"op": "plan"})

    def decide(snap: RunSnapshot) -> Iterator[Transition]:
        snap.state["scope"]["steps"]["fan"]["fanout"]["items"][1]["status"] = "done"
        yield snap.state, {"op": "fanout_item"}

    snap = store.update("old", "item", decide)
    root = Path(store.repo.workdir)
    assert git(root, "show", f"{snap.head}:state/layout.json") == '{"format":2,"tables":["steps"]}'
    held = json.loads(git(root, "show", f"{snap.head}:state/{layout.bucket('fan')}"))
    assert held["steps"]["fan"]["fanout"]["items"][1]["status"] == "done"
    assert js(RunStore(pygit2.Repository(store.repo.path)).load("old").state) == js(snap.state)


def _with_bucket(store: RunStore, run_id: str, edit: dict[str, Any]) -> str:
    """The run's head with parts edited (key -> value, None: removed) in their buckets."""
    repo = store.repo
    tree = repo[store.head(run_id)].peel(pygit2.Tree)
    state = repo[tree["state"].id]
    builder = repo.TreeBuilder(state)
    for key, value in edit.items():
        name = layout.bucket(key)
        held = json.loads(repo[state[name].id].read_raw()) if name in state else {}
        table = held.setdefault(parts.TABLE, {})
        table.pop(key) if value is None else table.__setitem__(key, value)
        builder.insert(name, repo.create_blob(chain.encode(held)), pygit2.GIT_FILEMODE_BLOB)
    top = repo.TreeBuilder(tree)
    top.insert("state", builder.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("t", "t@example.com")
    return str(repo.create_commit(None, sig, sig, "x", top.write(), []))


@pytest.mark.parametrize("edit", [
    {"fan/items/1": None},  # an element missing
    {"fan/items": "3"},  # a length that is not a number
    {"fan/items/7": {}},  # one element too many
    {"ghost/items": 0},  # the parts of no step
    {"fan/settled/0.0.1": 1},  # elements of a member with no length
    {"fan/other": 0},  # a member that is not kept apart
])
def test_parts_that_do_not_fit_are_refused_not_misread(store: RunStore, edit: dict[str, Any]) -> None:
    store.create("r1", {"status": "running", "scope": {"steps": {"fan": _fan(3)}}}, SPEC, {"op": "plan"})
    commit = _with_bucket(store, "r1", edit)
    with pytest.raises(layout.LayoutError, match="the parts of step"):
        RunStore(pygit2.Repository(store.repo.path)).at("r1", commit)
