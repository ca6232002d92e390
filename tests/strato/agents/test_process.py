"""The one way a program starts (strato/agents/process.py), with real processes: the
kept output is bounded while a copy sees every byte, a timeout stops the whole group
(a grandchild too), a program that cannot start is one line, and a program at the
terminal gets the bytes it was handed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from strato.agents import groups
from strato.agents.process import MAX_KEPT, Finished, run_attached, run_process


class Copy:
    def __init__(self) -> None:
        self.size, self.closed = 0, False

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)

    def close(self) -> None:
        self.closed = True


def test_the_kept_output_is_its_last_mebibyte_and_a_copy_sees_all_of_it(tmp_path: Path) -> None:
    copy = Copy()
    code = "import sys; sys.stdout.write('x' * (3 << 20)); print('{\"end\": 1}')"
    done = run_process([sys.executable, "-c", code], tmp_path, 60, copies=lambda: (copy, None))
    assert isinstance(done, Finished) and done.returncode == 0
    assert len(done.stdout) == MAX_KEPT and done.stdout.endswith('{"end": 1}\n')
    assert copy.size == (3 << 20) + len('{"end": 1}\n') and copy.closed


def test_a_timeout_stops_the_group_with_the_grandchild_it_forked(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    code = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    groups_seen: list[int] = []
    done = run_process([sys.executable, "-c", code], tmp_path, 2, on_start=groups_seen.append)
    assert isinstance(done, Finished) and done.returncode is None
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while groups.alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not groups.alive(grandchild) and groups.members(groups_seen[0]) == []


def test_the_exit_code_is_the_programs_own_even_when_its_pipes_outlive_it(tmp_path: Path) -> None:
    # waited for through a pidfd: the exit is seen, while a grandchild still holds stdout
    code = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print('ok', flush=True); sys.exit(3)")
    done = run_process([sys.executable, "-c", code], tmp_path, 60)
    assert isinstance(done, Finished) and done.returncode == 3 and done.stdout == "ok\n"


def test_a_program_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing-here")
    assert run_process([missing], tmp_path, 5) == f"program not found: {missing}"
    assert run_process([sys.executable], tmp_path / "no-folder", 5) == "No such file or directory"


def test_a_program_at_the_terminal_reads_what_it_is_handed(tmp_path: Path) -> None:
    code = "import sys; data = sys.stdin.read(); sys.stderr.write(data.upper()); sys.exit(len(data))"
    assert run_attached([sys.executable, "-c", code], stdin=b"abc", quiet=True) == (3, "ABC")
