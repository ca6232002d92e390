"""Under `--json` an error is one JSON object on stdout as well as one line on stderr,
for tropo, exo and strato alike (a script that asked for JSON always gets an object)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.console import run
from tests.support.workspaces import scaffold


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["tropo", "check", "--rev", "nope", "--json"], 2),
        (["tropo", "blast", "nosuch", "--json"], 1),
        (["tropo", "diff", "nope..HEAD", "--json"], 2),
        (["tropo", "impact", "nosuch", "--json"], 1),
        (["tropo", "review", "--rev", "nope", "--json"], 2),
        (["vivary", "review", "--pack", "nope", "--json"], 2),
        (["vivary", "trust", "no-such.toml", "--json"], 1),
        (["vivary", "trust", "--show", "--json"], 1),
        (["exo", "release", "nosuch", "--agent", "@x", "--json"], 1),
        (["exo", "claim", "nosuch", "--agent", "@me", "--json"], 1),
        (["exo", "board", "--json", "--root", "/"], 2),
        (["strato", "flow", "show", "nope", "--json"], 1),
        (["strato", "flow", "validate", "missing.yaml", "--json"], 2),
        (["strato", "decide-request", "missing.json", "--actor", "a", "--json"], 2),
    ],
)
def test_errors_under_json_are_one_object_on_stdout_and_one_line_on_stderr(
    tmp_path: Path, argv: list[str], code: int
) -> None:
    scaffold(tmp_path / "ws")
    proc = run(argv[0], *argv[1:], cwd=tmp_path / "ws")
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)  # exactly one JSON document
    assert isinstance(doc, dict) and doc
    plain = run(argv[0], *[a for a in argv[1:] if a != "--json"], cwd=tmp_path / "ws")
    assert plain.returncode == code and not plain.stdout.lstrip().startswith("{")
