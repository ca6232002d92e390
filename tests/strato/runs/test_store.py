"""The run store on its own, in one process: the commits and refs a run is made of, read
back with the real `git`. The engine tests reach the store through whole runs; these pin
what they leave loose (prefixes, checkpoints, the heads and tips listings, the reflog,
the bytes written), found by mutation testing (docs/testing.md)."""

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

from strato.runs.store import (
    AmbiguousRunId,
    CheckpointNotFound,
    RunNotFound,
    RunSnapshot,
    RunStore,
    Transition,
    check_run_id,
    head_ref,
    parse_message,
    valid_label,
)
from tests.support.repos import git
from tropo.git.objects import write_commit
from tropo.git.refs import RefRaceError, cas_ref

SPEC = "# the spec bytes: the store keeps them as given and never reads them\n"


@pytest.fixture
def store(repo_dir: Path) -> RunStore:
    return RunStore(pygit2.Repository(str(repo_dir)))


def _root(store: RunStore) -> Path:
    return Path(store.repo.workdir)


def _plan(store: RunStore, run_id: str, **state: object) -> RunSnapshot:
    store.create(run_id, {"status": "running", **state}, SPEC, {"op": "plan", "runId": run_id})
    return store.load(run_id)


def test_a_run_is_one_parentless_commit_of_its_state_and_its_frozen_spec(store: RunStore) -> None:
    head = store.create("r1", {"b": 1, "a": [1, "é"]}, SPEC,
                        {"stepId": "s", "op": "plan", "decision": "go", "label": "v1", "x": 1})
    root = _root(store)
    assert git(root, "rev-parse", head_ref("r1")).strip() == head
    assert git(root, "rev-list", "--parents", "-n1", head).split() == [head]
    assert git(root, "ls-tree", "--name-only", head).split() == ["spec.yaml", "state"]
    assert git(root, "ls-tree", "--name-only", f"{head}:state").split() == ["layout.json", "run.json"]
    assert git(root, "show", f"{head}:state/layout.json") == '{"format":3,"tables":[]}'
    # canonical state: sorted keys, no spaces, ASCII (equal states are equal blobs)
    assert git(root, "show", f"{head}:state/run.json") == '{"a":[1,"\\u00e9"],"b":1}'
    assert git(root, "show", f"{head}:spec.yaml") == SPEC
    assert git(root, "log", "-1", "--format=%B", head) == (
        'run: plan s go v1\n\n{"decision":"go","label":"v1","op":"plan","stepId":"s","x":1}\n\n')
    snap = store.load("r1")
    assert snap == RunSnapshot("r1", head, {"a": [1, "é"], "b": 1})
    assert store.head("r1") == head
    assert store.spec_text(snap) == SPEC
    assert store.spec_key(snap) == git(root, "rev-parse", f"{head}:spec.yaml").strip()
    assert list(store.history("r1")) == [
        (head, {"decision": "go", "label": "v1", "op": "plan", "stepId": "s", "x": 1})]


def test_a_run_id_is_created_once_and_a_bad_one_writes_nothing(store: RunStore) -> None:
    head = _plan(store, "r1").head
    with pytest.raises(RefRaceError):
        store.create("r1", {"status": "other"}, SPEC, {"op": "plan"})
    assert store.head("r1") == head
    for bad in ("bad id", "-r", "", "r" * 65, "r/x", "r1\n"):
        with pytest.raises(RunNotFound) as info:
            store.create(bad, {}, SPEC, {"op": "plan"})
        assert str(info.value) == f"not a run id: {bad!r}"
    assert check_run_id("r" * 64) == "r" * 64
    assert git(_root(store), "for-each-ref", "--format=%(refname)") == f"{head_ref('r1')}\n"


def test_transitions_chain_on_the_head_keep_the_spec_and_are_read_back_oldest_first(
        store: RunStore) -> None:
    first = _plan(store, "r1")
    second = store.transition(first, {"status": "running", "n": 1}, {"op": "done", "stepId": "a"})
    third = store.transition(second, {"status": "completed"}, {"op": "cancel"})
    root = _root(store)
    assert third == store.load("r1") == RunSnapshot("r1", store.head("r1"), {"status": "completed"})
    assert git(root, "rev-list", "--parents", "-n1", third.head).split() == [third.head, second.head]
    assert git(root, "log", "-1", "--format=%s", second.head).strip() == "run: done a"
    assert git(root, "show", f"{second.head}:state/run.json") == '{"n":1,"status":"running"}'
    assert store.spec_key(third) == store.spec_key(first)
    assert store.spec_text(third) == SPEC
    assert [(c, t["op"]) for c, t in store.history("r1")] == [
        (first.head, "plan"), (second.head, "done"), (third.head, "cancel")]
    assert store.since(third.head, first.head) == [
        (second.head, {"op": "done", "stepId": "a"}), (third.head, {"op": "cancel"})]
    assert store.since(third.head, third.head) == []


def test_a_commit_without_a_spec_stays_without_one_and_reads_as_empty(store: RunStore) -> None:
    """A head written without `spec.yaml` (by hand, or by a tool that froze none), in the
    first layout: its transitions add none, and the spec text is empty rather than an
    error."""
    commit = write_commit(store.repo, {"run.json": b'{"status":"running"}'}, [], '{"op":"plan"}')
    cas_ref(store.repo, head_ref("r1"), commit, None, "test")
    snap = store.load("r1")
    assert snap.state == {"status": "running"} and store.spec_text(snap) == ""
    after = store.transition(snap, {"status": "done"}, {"op": "done"})
    assert git(_root(store), "ls-tree", "--name-only", after.head).split() == ["state"]
    assert store.spec_text(after) == ""
    assert store.history("r1").__next__() == (str(commit), {"op": "plan"})


def test_a_commit_without_a_state_is_not_a_run(store: RunStore) -> None:
    commit = str(write_commit(store.repo, {"spec.yaml": SPEC.encode()}, [], "x\n\n{}"))
    with pytest.raises(RunNotFound) as info:
        store.at("r1", commit)
    assert str(info.value) == f"run 'r1': commit {commit[:12]} has no run state"


def test_a_run_is_named_by_its_id_or_by_a_prefix_only_it_starts_with(store: RunStore) -> None:
    for run_id in ("abc1", "abc2", "abd", "x", "x1", "zeta"):
        _plan(store, run_id, id=run_id)
    assert store.resolve("abc1") == "abc1" and store.resolve("abd") == "abd"
    assert store.resolve("x") == "x"  # an id is itself even when it prefixes another
    assert store.resolve("ze") == "zeta" and store.resolve("abc2") == "abc2"
    loaded = store.load("z")
    assert (loaded.run_id, loaded.state["id"]) == ("zeta", "zeta")
    with pytest.raises(RunNotFound) as not_found:
        store.resolve("not an id")
    assert str(not_found.value) == "not a run id: 'not an id'"
    with pytest.raises(AmbiguousRunId) as info:
        store.resolve("abc")
    assert str(info.value) == "run id prefix 'abc' is ambiguous: abc1, abc2"
    assert info.value.candidates == ["abc1", "abc2"]
    with pytest.raises(AmbiguousRunId) as info:
        store.resolve("a")
    assert str(info.value) == "run id prefix 'a' is ambiguous: abc1, abc2, abd"
    for missing in ("abz", "y"):
        with pytest.raises(RunNotFound) as not_found:
            store.load(missing)
        assert str(not_found.value) == f"no run {missing!r}"
        with pytest.raises(RunNotFound) as not_found:
            store.head(missing)
        assert str(not_found.value) == f"no run {missing!r}"
    with pytest.raises(RunNotFound) as not_found:
        store.head("abc")  # head() takes the id itself, never a prefix
    assert str(not_found.value) == "no run 'abc'"


def test_an_ambiguous_prefix_shows_ten_candidates_and_says_if_there_are_more(store: RunStore) -> None:
    ids = [f"r{i:02}" for i in range(11)]
    for run_id in ids[:10]:
        _plan(store, run_id)
    with pytest.raises(AmbiguousRunId) as info:
        store.resolve("r")
    assert str(info.value) == f"run id prefix 'r' is ambiguous: {', '.join(ids[:10])}"
    _plan(store, ids[10])
    with pytest.raises(AmbiguousRunId) as info:
        store.resolve("r")
    assert str(info.value) == f"run id prefix 'r' is ambiguous: {', '.join(ids[:10])}, ..."
    assert info.value.candidates == ids


def test_run_ids_heads_and_tips_list_runs_and_leave_checkpoints_out(store: RunStore) -> None:
    assert (store.run_ids(), store.heads(), store.tips()) == ([], {}, {})
    b = _plan(store, "b")
    a = _plan(store, "a")
    store.save_checkpoint(a, "c1")
    a2 = store.transition(a, {"status": "done"}, {"op": "done"})
    assert store.run_ids() == ["a", "b"]
    assert store.heads() == {"a": a2.head, "b": b.head}
    when = {r: int(git(_root(store), "log", "-1", "--format=%ct", h)) for r, h in store.heads().items()}
    assert store.tips() == {"a": (a2.head, when["a"]), "b": (b.head, when["b"])}


def test_a_checkpoint_is_a_ref_to_a_past_head_and_can_be_moved(store: RunStore) -> None:
    first = _plan(store, "r1", n=0)
    store.save_checkpoint(first, "v1")
    second = store.transition(first, {"status": "running", "n": 1}, {"op": "done"})
    store.save_checkpoint(second, "v2")
    assert store.checkpoint("r1", "v1") == first
    store.save_checkpoint(second, "v1")  # saving again moves it
    assert store.checkpoint("r1", "v1") == RunSnapshot("r1", second.head, second.state)
    assert store.checkpoints("r1") == ["v1", "v2"]
    assert git(_root(store), "rev-parse", "refs/vivary/runs/r1/checkpoints/v1").strip() == second.head
    assert store.head("r1") == second.head


def test_a_missing_or_malformed_checkpoint_label_names_what_there_is(store: RunStore) -> None:
    snap = _plan(store, "r1")
    with pytest.raises(CheckpointNotFound) as info:
        store.checkpoint("r1", "v1")
    assert (str(info.value), info.value.available) == ("no checkpoint 'v1' (available: none)", [])
    store.save_checkpoint(snap, "b")
    store.save_checkpoint(snap, "a")
    for label in ("v1", "a..b", "x.lock", "a/b", "../head"):
        with pytest.raises(CheckpointNotFound) as info:
            store.checkpoint("r1", label)
        assert str(info.value) == f"no checkpoint {label!r} (available: a, b)"
        assert info.value.available == ["a", "b"]


@pytest.mark.parametrize(("label", "valid"), [
    ("v1", True), ("v1.0_rc-2", True), ("9", True), ("x" * 100, True),
    ("a..b", False), ("x.lock", False), ("a.", False), ("a/b", False), ("-a", False),
    (".a", False), ("", False), ("x" * 101, False), ("a b", False),
])
def test_a_checkpoint_label_is_one_safe_ref_name_component(label: str, valid: bool) -> None:
    assert valid_label("r1", label) is valid


def test_with_every_ref_update_logged_the_reflog_names_each_operation(store: RunStore) -> None:
    """Git keeps no reflog for refs outside refs/heads unless core.logAllRefUpdates is
    `always`; then each move says what moved it."""
    root = _root(store)
    git(root, "config", "core.logAllRefUpdates", "always")
    snap = _plan(store, "r1")
    store.save_checkpoint(snap, "c1")
    snap = store.transition(snap, snap.state, {"op": "done", "stepId": "a"})
    snap = store.transition(snap, snap.state, {"events": []})
    store.save_checkpoint(snap, "c1")

    def reflog(ref: str) -> list[str]:
        return git(root, "reflog", "show", "--format=%gs", ref).splitlines()

    assert reflog(head_ref("r1")) == ["vivary:", "vivary: done", "vivary: plan"]
    assert reflog("refs/vivary/runs/r1/checkpoints/c1") == ["vivary: checkpoint c1"] * 2


def test_a_transition_message_is_read_with_or_without_its_subject() -> None:
    assert parse_message('run: done a\n\n{"op":"done"}\n') == {"op": "done"}
    assert parse_message('{"op":"plan"}') == {"op": "plan"}
    assert parse_message('run: x\n\n{"note":"a\\n\\nb"}') == {"note": "a\n\nb"}
    with pytest.raises(json.JSONDecodeError):
        parse_message("run: done a")


def test_what_a_store_remembers_of_its_last_commit_never_hides_another_writer(store: RunStore) -> None:
    """A store keeps the last commit it wrote or read in memory, so its next transition
    reads nothing back; another store (another process) and plain git moving the ref
    in between are still seen, and each update decides from the head it finds."""
    seen: list[int] = []

    def count(snap: RunSnapshot) -> Iterator[Transition]:
        seen.append(snap.state["n"])
        yield {**snap.state, "n": snap.state["n"] + 1}, {"op": "done"}

    other = RunStore(pygit2.Repository(store.repo.path))
    _plan(store, "r1", n=0)
    for n in range(1, 7):
        snap = (store if n % 2 else other).update("r1", "done", count)
        assert (seen[-1], snap.state["n"]) == (n - 1, n)
    older = list(store.history("r1"))[2][0]
    root = _root(store)
    git(root, "update-ref", head_ref("r1"), older)  # a person rewinds it with git
    assert store.load("r1").state == other.load("r1").state == {"status": "running", "n": 2}
    snap = store.update("r1", "done", lambda s: [({**s.state, "n": 9}, {"op": "done"})])
    assert git(root, "show", f"{snap.head}:state/run.json") == '{"n":9,"status":"running"}'
    assert git(root, "rev-list", "--parents", "-n1", snap.head).split() == [snap.head, older]
    assert store.spec_text(snap) == other.spec_text(other.load("r1")) == SPEC


def _edit(state: dict[str, Any], edit: tuple[str, str, int | None]) -> None:
    """One edit of a run's tables: set (or, with None, drop) one entry."""
    table, key, value = edit
    node = state["scope"]["steps"] if table == "steps" else state["dispatches"]
    if value is None:
        node.pop(key, None)
    else:
        node[key] = {"status": ("ready", "running", "done")[value % 3], "n": value}


EDITS = st.lists(st.tuples(st.sampled_from(["steps", "dispatches"]), st.sampled_from(["a", "b", "c", "d"]),
                           st.none() | st.integers(0, 5)), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS, split=st.integers(1, 4))
def test_several_transitions_at_once_are_a_chain_of_the_states_each_left(
        store: RunStore, edits: list[tuple[str, str, int | None]], split: int) -> None:
    """An update that yields several states commits each on the one before and moves the
    ref once: every commit holds exactly the state as it stood when it was yielded (read
    back by a store that remembers nothing), and the store's own view after it is the
    last, its tables' entries and statuses included."""
    run_id = f"r{uuid.uuid4().hex[:8]}"
    git(_root(store), "config", "core.logAllRefUpdates", "always")
    _plan(store, run_id, scope={"steps": {"a": {"status": "ready", "n": 0}}}, dispatches={"x": {"n": 1}})
    before = store.load(run_id)
    expected: list[dict[str, Any]] = []

    def decide(snap: RunSnapshot) -> Iterator[Transition]:
        expected.clear()
        for at, edit in enumerate(edits):
            _edit(snap.state, edit)
            if at % split == split - 1 or at == len(edits) - 1:
                expected.append(json.loads(json.dumps(snap.state)))
                yield snap.state, {"op": "done", "n": at}

    after = store.update(run_id, "done", decide)
    fresh = RunStore(pygit2.Repository(store.repo.path))
    chain = [commit for commit, _ in fresh.history(run_id)][1:]
    assert [fresh.at(run_id, c).state for c in chain] == expected
    assert after.head == chain[-1] == store.head(run_id)
    assert git(_root(store), "rev-list", "--count", f"{before.head}..{after.head}").strip() == str(len(expected))
    reflog = git(_root(store), "reflog", "show", "--format=%gs", head_ref(run_id)).splitlines()
    assert len(reflog) == 2  # the plan, then one move for them all
    assert store.load(run_id).state == expected[-1]
    running = {k for k, v in expected[-1]["scope"]["steps"].items() if v["status"] == "running"}
    table = store.load(run_id).state["scope"]["steps"]
    assert table.having(["running"]) == running and table.count(["running"]) == len(running)


def test_several_transitions_land_all_or_none(store: RunStore) -> None:
    """A decision that fails after yielding some states leaves the ref where it was."""
    first = _plan(store, "r1", n=0)

    def decide(snap: RunSnapshot) -> Iterator[Transition]:
        yield {**snap.state, "n": 1}, {"op": "done"}
        raise ValueError("refused half way")

    with pytest.raises(ValueError, match="half way"):
        store.update("r1", "done", decide)
    assert store.head("r1") == first.head
    assert store.load("r1").state == {"status": "running", "n": 0}


def test_several_transitions_that_lose_a_race_are_decided_again_on_the_winner(store: RunStore) -> None:
    """Another writer landing while they are decided: none of them lands on the old head;
    they are decided again from the winner's, and chain on it."""
    _plan(store, "r1", n=0)
    other = RunStore(pygit2.Repository(store.repo.path))
    tries: list[int] = []

    def decide(snap: RunSnapshot) -> Iterator[Transition]:
        tries.append(snap.state["n"])
        state = dict(snap.state)
        for _ in range(3):
            state["n"] += 1
            yield state, {"op": "done"}
        if len(tries) == 1:  # another clone's transition lands before the ref moves
            other.update("r1", "done", lambda s: [({**s.state, "n": 100}, {"op": "cancel"})])

    after = store.update("r1", "done", decide)
    assert tries == [0, 100]
    assert [t["op"] for _, t in store.history("r1")] == ["plan", "cancel", "done", "done", "done"]
    assert after.state["n"] == store.load("r1").state["n"] == RunStore(store.repo).load("r1").state["n"] == 103
