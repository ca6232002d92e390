"""The cold check's work split with a forked child: the same answer as one process, and
the parent doing the child's half whenever the child fails in any way."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.repos import commit_all, write_files
from tests.support.vaults import make_vault, tropo_json
from tropo.check import halves
from tropo.check.workspace import open_workspace
from tropo.git.snapshot import Source


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any batch of two or more is split, on any machine (CI may have one core, or none idle)."""
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    monkeypatch.setattr(halves, "_spare_cores", lambda: 2.0)


def _pids(part: Sequence[int], seen: bool) -> list[tuple[int, int, bool]]:
    return [(item * item, os.getpid(), seen) for item in part]


def _same(found: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    return found


def test_the_second_half_is_worked_by_a_child_and_comes_back_in_order(forking: None) -> None:
    first, second = halves.run(list(range(10)), _pids, _same, _same)
    assert [square for square, _, _ in first + second] == [n * n for n in range(10)]
    assert {pid for _, pid, _ in first} == {os.getpid()} and all(seen for *_, seen in first)
    assert {pid for _, pid, _ in second} != {os.getpid()} and not any(seen for *_, seen in second)


def test_a_small_batch_a_busy_machine_or_a_second_thread_is_worked_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halves, "_spare_cores", lambda: 2.0)
    assert halves.run([1, 2, 3], _pids, _same, _same) == [[(1, os.getpid(), True), (4, os.getpid(), True),
                                                            (9, os.getpid(), True)]]
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    assert len(halves.run([1, 2, 3], _pids, _same, _same)) == 2
    monkeypatch.setattr(halves, "_spare_cores", lambda: 0.4)
    assert len(halves.run([1, 2, 3], _pids, _same, _same)) == 1
    monkeypatch.setattr(halves, "_spare_cores", lambda: 2.0)
    monkeypatch.setattr(halves.threading, "active_count", lambda: 2)
    assert len(halves.run([1, 2, 3], _pids, _same, _same)) == 1


def _fails_in_the_child(part: Sequence[int], seen: bool) -> list[tuple[int, int, bool]]:
    if not seen:
        raise RuntimeError("the child fails")
    return _pids(part, seen)


def _dies_in_the_child(part: Sequence[int], seen: bool) -> list[tuple[int, int, bool]]:
    if not seen:
        os._exit(0)  # ends "well" having sent nothing
    return _pids(part, seen)


def _unsendable(found: list[tuple[int, int, bool]]) -> object:
    return object() if found and not found[0][2] else found  # marshal refuses it in the child


@pytest.mark.parametrize(("work", "encode"), [(_fails_in_the_child, _same), (_dies_in_the_child, _same),
                                              (_pids, _unsendable)],
                         ids=["raises", "exits-silently", "unsendable"])
def test_a_failing_child_costs_time_not_results(forking: None, work, encode) -> None:  # type: ignore[no-untyped-def]
    first, second = halves.run(list(range(6)), work, encode, _same)
    assert [square for square, _, _ in first + second] == [n * n for n in range(6)]
    assert {pid for _, pid, _ in second} == {os.getpid()}  # done again here


def test_the_parent_failing_reaps_the_child(forking: None) -> None:
    def parent_fails(part: Sequence[int], seen: bool) -> list[int]:
        if seen:
            raise RuntimeError("the parent fails")
        return list(part)

    with pytest.raises(RuntimeError, match="the parent fails"):
        halves.run(list(range(6)), parent_fails, _same, _same)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind, not even a zombie


@pytest.mark.parametrize("dated", [False, True], ids=["memoized", "dated"])
def test_a_split_check_finds_what_one_process_finds(repo_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                      dated: bool) -> None:
    make_vault(repo_dir)  # derives created and updated: a document that declares one asks history
    write_files(repo_dir, {f"notes/n{i:03}.md": f"---\nrelated: [n{i + 1:03}]\n---\n# N {i}\n" for i in range(40)})
    # The last document in walk order, so in the child's half: only it asks for history.
    write_files(repo_dir, {"zz/last.md": "---\ncreated: 2020-01-01\n---\n" if dated else "# Last\n"})
    (repo_dir / "notes" / "binary.md").write_bytes(b"---\ntags: [a]\n---\n\xff\n")  # not UTF-8
    commit_all(repo_dir)

    def analysed(fork: bool, use_cache: bool) -> tuple[object, bool]:
        monkeypatch.setattr(halves, "MIN_ITEMS", 2 if fork else 10**9)
        monkeypatch.setattr(halves, "_spare_cores", lambda: 2.0)
        ws = open_workspace(repo_dir, Source.worktree(), use_cache=use_cache)
        return ws.documents, ws.dated

    alone = analysed(False, False)
    assert alone[1] is dated
    assert analysed(True, False) == alone
    assert analysed(True, True) == alone  # the split run fills the caches...
    assert analysed(False, True) == alone  # ...with what one process reads back
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    assert tropo_json("check", cwd=repo_dir) == tropo_json("check", "--no-cache", cwd=repo_dir)
