"""Every leaf command of every console script, found by walking click's command tree
(tests/support/clitree.py, so a new command is covered the day it is added), shows an
example in its help. Its JSON error document is pinned by tests/test_json_errors.py."""

from __future__ import annotations

import pytest

from tests.support.clitree import LEAVES, forwards
from tests.support.console import run


def test_the_walk_finds_every_console_script_and_the_known_leaves() -> None:
    assert {name.split()[0] for name in LEAVES} == {"strato", "tropo", "exo", "create-vivary", "vivary"}
    assert len([n for n, c in LEAVES.items() if not forwards(c)]) >= 87
    assert {"tropo fix", "strato distill stats", "strato heartbeat show", "strato mcp install"} <= set(LEAVES)


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_every_leaf_shows_an_example_in_its_help(name: str) -> None:
    proc = run(*name.split(), "--help")  # the script's own click command, in process
    assert proc.returncode == 0 and "Example" in proc.stdout, f"{name} --help has no example"
