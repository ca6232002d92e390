"""Usage errors under `--json` (tropo/console.py): every one of our five commands, run
as the installed console script, prints the error document on stdout and one line on
stderr, exits 2 and writes nothing; without `--json` the same one line on stderr and
nothing on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

USAGE_ERRORS = [
    (["tropo", "check", "--json", "--rev"], "requires an argument"),  # an option without its value
    (["tropo", "graph", "--json", "--no-such-option"], "No such option"),
    (["exo", "claim", "--json"], "Missing argument 'ID'"),  # a missing argument
    (["strato", "flow", "validate", "--json"], "Missing argument 'FILE'"),
    (["strato", "no-such-command", "--json"], "No such command"),
    (["vivary", "hooks", "check", "--json", "--base"], "requires an argument"),
    (
        ["create-vivary", "init", "ws", "--json", "--preset", "nope"],
        "Invalid value for '--preset'",
    ),  # bad value
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_a_usage_error_under_json_is_one_object_on_stdout_and_one_line_on_stderr(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    proc = subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    if argv[0] == "create-vivary":  # the published create-vivary's document: the message as a string
        said = doc["error"]
        assert doc == {"ok": False, "error": said, "exitCode": 2}
    else:
        said = doc["error"]["message"]
        assert doc == {"ok": False, "error": {"code": "usage", "message": said}, "exitCode": 2}
    assert message in said
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr
    assert "Traceback" not in proc.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_without_json_a_usage_error_is_one_line_on_stderr_naming_the_help(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    words = [a for a in argv[1:] if a != "--json"]
    proc = subprocess.run(
        [str(BIN / argv[0]), *words], cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: ") and message in line and line.endswith(" --help)")
    assert list(tmp_path.iterdir()) == []


def test_an_error_that_is_not_about_usage_keeps_its_own_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(BIN / "strato"), "flow", "validate", str(tmp_path / "missing.yaml")],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "missing.yaml" in proc.stderr
