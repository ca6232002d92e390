"""The README's quick tour, run literally: each line of its shell block in a fresh
folder, in order, through `bash`, with this distribution's commands first on PATH. A
line that exits non-zero fails the test with the line and its output. The tour's lines
and how they run live in tests/support/tour.py: tests/test_wheel.py runs the same lines
from a built wheel. The docs pages' blocks are run by tests/test_docs_examples.py."""

from __future__ import annotations

from pathlib import Path

from tests.support.tour import SCAFFOLD, assert_the_tour_ran, run_lines, tour_lines


def test_every_line_of_the_quick_tour_runs_as_written(tmp_path: Path) -> None:
    lines = tour_lines()
    assert len(lines) > 20 and lines[0].startswith(SCAFFOLD[0]) and lines[1] == SCAFFOLD[1]
    run_lines(tmp_path, lines)
    assert_the_tour_ran(tmp_path)
