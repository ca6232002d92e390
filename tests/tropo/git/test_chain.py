"""A chain store in real repositories: documents round-trip through commits, writers that
race on one ref all land one after another, and a writer that loses every race stops
after MAX_RACE_RETRIES with the chain's conflict error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pygit2
import pytest

from tropo.git import chain
from tropo.git.refs import RefRaceError, read_ref

REF = "refs/vivary/test/chain"


def git(cwd: Path, *args: str) -> str:
    """What the real git program prints (these tests read the chain as a person would)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _repo(repo_dir: Path) -> pygit2.Repository:
    return pygit2.Repository(str(repo_dir))


def _count(repo: pygit2.Repository, tip: str | None) -> int:
    return 0 if tip is None else int(chain.read(repo, tip, "count.json")["n"])


def test_a_document_round_trips_through_a_commit_on_the_ref(repo_dir: Path) -> None:
    repo = _repo(repo_dir)
    doc: dict[str, Any] = {"b": [1, 2.5, None, True], "a": {"ü": "x\ny"}}
    first = chain.append(repo, REF, None, chain.Append({"doc.json": chain.encode(doc)}, "first\n"), "test: one")
    assert read_ref(repo, REF) == first
    assert chain.read(repo, first, "doc.json") == doc
    assert chain.read(repo, first, "absent.json") is None
    assert git(repo_dir, "show", f"{REF}:doc.json") == '{"a":{"\\u00fc":"x\\ny"},"b":[1,2.5,null,true]}'
    assert chain.encode({"b": 1, "a": 2}, indent=1) == b'{\n "a": 2,\n "b": 1\n}'
    second = chain.append(repo, REF, first, chain.Append({"doc.json": b"not json"}, "second\n"), "test: two")
    assert git(repo_dir, "rev-parse", f"{second}^").strip() == first
    assert git(repo_dir, "log", "-1", "--format=%s", REF).strip() == "second"
    with pytest.raises(ValueError):
        chain.read(repo, second, "doc.json")


def test_an_append_from_a_stale_tip_or_onto_an_existing_chain_moves_nothing(repo_dir: Path) -> None:
    repo = _repo(repo_dir)
    change = chain.Append({"count.json": b'{"n":1}'}, "one\n")
    first = chain.append(repo, REF, None, change, "test")
    with pytest.raises(RefRaceError) as created:
        chain.append(repo, REF, None, change, "test")
    assert (created.value.expected, created.value.actual) == (None, first)
    second = chain.append(repo, REF, first, change, "test")
    with pytest.raises(RefRaceError) as stale:
        chain.append(repo, REF, first, change, "test")
    assert (stale.value.expected, stale.value.actual) == (first, second)
    assert read_ref(repo, REF) == second


def test_update_writes_what_decide_says_leaves_the_ref_on_none_and_fast_forwards(repo_dir: Path) -> None:
    git(repo_dir, "config", "core.logAllRefUpdates", "always")
    repo = _repo(repo_dir)
    seen: list[str | None] = []

    def once(tip: str | None) -> tuple[chain.Decision, str]:
        seen.append(tip)
        return (chain.Append({"count.json": b'{"n":1}'}, "one\n") if tip is None else None), "value"

    tip, value = chain.update(repo, REF, once, "test: once")
    assert value == "value" and tip == read_ref(repo, REF) and tip is not None
    assert chain.update(repo, REF, once, "test: once") == (tip, "value")  # nothing to write
    assert seen == [None, tip]
    later = chain.append(repo, "refs/vivary/test/other", None, chain.Append({}, "later\n", [tip]), "test")
    assert chain.update(repo, REF, lambda _tip: (later, None), "test: forward") == (later, None)
    assert read_ref(repo, REF) == later
    assert git(repo_dir, "reflog", "-1", "--format=%gs", REF).strip() == "test: forward"


def test_a_writer_that_loses_every_race_stops_with_the_conflict_error(repo_dir: Path) -> None:
    repo = _repo(repo_dir)
    calls = 0

    def outrun(tip: str | None) -> tuple[chain.Decision, None]:
        """Another writer lands on the tip just read, every time, before this one writes."""
        nonlocal calls
        calls += 1
        chain.append(repo, REF, tip, chain.Append({"count.json": chain.encode({"n": calls})}, "other\n"), "other")
        return chain.Append({"count.json": b"{}"}, "mine\n"), None

    with pytest.raises(chain.ChainConflict) as lost:
        chain.update(repo, REF, outrun, "test: mine")
    assert calls == chain.MAX_RACE_RETRIES
    assert isinstance(lost.value, RefRaceError) and lost.value.name == REF
    assert lost.value.actual == read_ref(repo, REF)
    assert _count(repo, read_ref(repo, REF)) == chain.MAX_RACE_RETRIES  # only the other writer landed
    assert "mine" not in git(repo_dir, "log", "--format=%s", REF)


WRITER = textwrap.dedent(
    """
    import sys
    import pygit2
    from tropo.git import chain

    repo = pygit2.Repository(sys.argv[1])

    def decide(tip):
        n = 0 if tip is None else chain.read(repo, tip, "count.json")["n"]
        return chain.Append({"count.json": chain.encode({"n": n + 1})}, f"{sys.argv[2]} {n + 1}\\n"), None

    for _ in range(int(sys.argv[3])):
        chain.update(repo, sys.argv[4], decide, "race")
    """
)


def test_two_processes_racing_on_one_ref_lose_no_write(repo_dir: Path) -> None:
    rounds = 25
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(repo_dir), name, str(rounds), REF], stderr=subprocess.PIPE)
        for name in ("left", "right")
    ]
    for proc in writers:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    repo = _repo(repo_dir)
    assert _count(repo, read_ref(repo, REF)) == 2 * rounds
    subjects = git(repo_dir, "log", "--format=%s", REF).split("\n")[:-1]
    assert sorted(int(s.split()[1]) for s in subjects) == list(range(1, 2 * rounds + 1))
    assert {s.split()[0] for s in subjects} == {"left", "right"}
