"""`tropo check`'s second core: a cold check's documents worked in pieces by the command
and a forked child, the caches written by another; the same answer as one process, the
parent doing a failed child's pieces itself, and no child left behind."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.repos import commit_all, write_files
from tests.support.vaults import make_vault, tropo_json
from tropo.check import spread
from tropo.check.workspace import open_workspace
from tropo.cli import halves
from tropo.cli.main import collector_paused
from tropo.git.snapshot import Source

Row = tuple[int, int, bool]


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any batch of two or more is split, on any machine (CI may have one core, and
    pytest a helper thread)."""
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    monkeypatch.setattr(halves, "_second_core_idle", lambda: True)
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def _pids(start: int, stop: int, seen: bool) -> list[Row]:
    return [(item * item, os.getpid(), seen) for item in range(start, stop)]


def _same(found: Any) -> Any:
    return found


def _children() -> set[int]:
    """This process's children, zombies included (Linux: other tests may leave some)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    """Every child a test's forks made is reaped by the time it returns."""
    before = _children()
    yield
    assert _children() <= before


def test_pieces_are_worked_by_both_processes_and_come_back_in_order(forking: None, tmp_path: Path) -> None:
    def both(start: int, stop: int, seen: bool) -> list[Row]:
        """Each process holds its first piece until the other has taken one too."""
        (tmp_path / f"took-{seen}").touch()
        while not (tmp_path / f"took-{not seen}").exists():
            os.sched_yield()
        return _pids(start, stop, seen)

    found = halves.TwoProcesses().split(10, both, _same, _same)
    assert [square for square, _, _ in found] == [n * n for n in range(10)]
    mine = [seen for _, pid, seen in found if pid == os.getpid()]
    theirs = [seen for _, pid, seen in found if pid != os.getpid()]
    assert mine and all(mine) and theirs and not any(theirs)  # only this process's are seen


def test_each_piece_is_taken_once(forking: None) -> None:
    found = halves.TwoProcesses().split(5000, _pids, _same, _same)
    assert [square for square, _, _ in found] == [n * n for n in range(5000)]


def test_a_small_batch_or_a_second_thread_is_worked_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halves, "_second_core_idle", lambda: True)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    here = [(n * n, os.getpid(), True) for n in range(3)]
    assert halves.TwoProcesses().split(3, _pids, _same, _same) == here  # below MIN_ITEMS
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert halves.TwoProcesses().split(3, _pids, _same, _same) == here
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(halves, "_second_core_idle", lambda: False)
    assert halves.TwoProcesses().split(3, _pids, _same, _same) == here


@pytest.mark.parametrize(("cores", "others", "load", "idle"), [
    ({0, 1}, 0, 9.0, True),  # nothing else runs now, whatever ran in the last minute
    ({0, 1}, 1, 0.0, False),  # a busy core (``yes``) now
    ({0, 1, 2, 3}, 2, 0.0, True), ({0}, 0, 0.0, False),
    ({0, 1}, None, 1.6, True), ({0, 1}, None, 1.8, False),  # no /proc: the load average
])
def test_a_child_only_where_a_second_core_is_idle(monkeypatch: pytest.MonkeyPatch, cores: set[int],
                                                  others: int | None, load: float, idle: bool) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: cores)
    monkeypatch.setattr(halves, "_others_running", lambda: others)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert halves._second_core_idle() is idle


def test_what_runs_beside_this_process_is_counted_without_it() -> None:
    found = halves._others_running()
    assert found is not None and found >= 0  # this process, running as it reads, is not counted


def _fails_in_the_child(start: int, stop: int, seen: bool) -> list[Row]:
    if not seen:
        raise RuntimeError("the child fails")
    return _pids(start, stop, seen)


def _dies_in_the_child(start: int, stop: int, seen: bool) -> list[Row]:
    if not seen:
        os._exit(0)  # ends "well" having sent nothing
    return _pids(start, stop, seen)


def _unsendable(found: list[Row]) -> object:
    return object() if found and not found[0][2] else found  # marshal refuses it in the child


@pytest.mark.parametrize(("work", "encode"), [(_fails_in_the_child, _same), (_dies_in_the_child, _same),
                                              (_pids, _unsendable)],
                         ids=["raises", "exits-silently", "unsendable"])
def test_a_failing_child_costs_time_not_results(forking: None, work: Any, encode: Any) -> None:
    found = halves.TwoProcesses().split(6, work, encode, _same)
    assert [square for square, _, _ in found] == [n * n for n in range(6)]
    assert {pid for _, pid, _ in found} == {os.getpid()}  # what the child took, done again here


def test_the_parent_failing_reaps_the_child(forking: None, tmp_path: Path) -> None:
    def parent_fails(start: int, stop: int, seen: bool) -> list[int]:
        """The child holds its first piece until the parent has taken one (else, on a busy
        machine, it may take them all and the parent never works nor fails)."""
        if seen:
            (tmp_path / "parent-took").touch()
            raise RuntimeError("the parent fails")
        while not (tmp_path / "parent-took").exists():
            os.sched_yield()
        return list(range(start, stop))

    with pytest.raises(RuntimeError, match="the parent fails"):
        halves.TwoProcesses().split(6, parent_fails, _same, _same)


def test_a_write_aside_runs_in_a_child_that_the_command_waits_for(forking: None, tmp_path: Path) -> None:
    forks = halves.TwoProcesses()
    forks.split(4, _pids, _same, _same)  # worth a child: so is the write after it
    forks.aside(lambda: (tmp_path / "written").write_text(str(os.getpid())))
    forks.wait()
    assert int((tmp_path / "written").read_text()) != os.getpid()
    forks.split(1, _pids, _same, _same)  # not worth a child: the write is done here, at once
    forks.aside(lambda: (tmp_path / "written").write_text(str(os.getpid())))
    assert int((tmp_path / "written").read_text()) == os.getpid() and not forks.writers


def test_without_a_spreader_the_library_works_here_and_at_once(tmp_path: Path) -> None:
    assert spread.split(3, _pids, _same, _same) == [(n * n, os.getpid(), True) for n in range(3)]
    spread.aside(lambda: (tmp_path / "now").write_text("x"))
    assert (tmp_path / "now").read_text() == "x"


@pytest.mark.parametrize("dated", [False, True], ids=["memoized", "dated"])
def test_a_split_check_finds_what_one_process_finds(repo_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    forking: None, dated: bool) -> None:
    make_vault(repo_dir)  # derives created and updated: a document that declares one asks history
    write_files(repo_dir, {f"notes/n{i:03}.md": f"---\nrelated: [n{i + 1:03}]\n---\n# N {i}\n" for i in range(40)})
    # The last document in walk order, so in the child's half: only it asks for history.
    write_files(repo_dir, {"zz/last.md": "---\ncreated: 2020-01-01\n---\n" if dated else "# Last\n"})
    (repo_dir / "notes" / "binary.md").write_bytes(b"---\ntags: [a]\n---\n\xff\n")  # not UTF-8
    commit_all(repo_dir)

    def analysed(fork: bool, use_cache: bool) -> tuple[object, bool]:
        monkeypatch.setattr(halves, "MIN_ITEMS", 2 if fork else 10**9)
        forks = halves.TwoProcesses()
        with spread.spreading(forks):
            ws = open_workspace(repo_dir, Source.worktree(), use_cache=use_cache)
            found = ws.documents, ws.dated
        forks.wait()
        return found

    alone = analysed(False, False)
    assert alone[1] is dated
    assert analysed(True, False) == alone
    assert analysed(True, True) == alone  # the split run fills the caches (from a child)...
    assert (repo_dir / ".git" / "vivary" / "parse.v4").is_file()
    assert analysed(False, True) == alone  # ...with what one process reads back
    (repo_dir / "notes" / "n000.md").write_text("---\nrelated: [nowhere]\n---\n# Changed\n")
    alone = analysed(False, False)
    assert analysed(True, True) == alone  # the memo answers the others here; the changed one a piece
    monkeypatch.setattr(halves, "MIN_ITEMS", 2)
    cold = tropo_json("check", cwd=repo_dir)
    assert cold == tropo_json("check", "--no-cache", cwd=repo_dir) == tropo_json("check", cwd=repo_dir)


def test_after_a_paused_command_the_first_allocation_scans_nothing_it_kept() -> None:
    kept: list[object] = []

    @collector_paused
    def command() -> None:
        kept.extend([i] for i in range(50_000))  # tracked objects that outlive the command

    gc.collect()
    command()
    assert gc.isenabled() and gc.get_count()[0] < 1000  # young generation emptied: kept went old
    assert any(kept[0] is seen for seen in gc.get_objects(generation=2))
    gc.freeze()  # a caller that froze some objects keeps them frozen
    try:
        frozen = gc.get_freeze_count()
        command()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
