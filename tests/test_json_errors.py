"""Under `--json` an error is one JSON document on stdout as well as one line on stderr,
for every leaf command of every console script, and the document is the one shape
(tropo/console.py): `{"ok": false, "error": {"code", "message"}, "exitCode"}`, the message
the stderr line says and the exit code the process ends with. A command whose published
error document differs keeps it, and is pinned here as that document (DOCUMENTED)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.clitree import LEAVES, MISSING, bad_argv, options
from tests.support.console import run
from tests.support.workspaces import scaffold

BIN = Path(sys.executable).parent

# the documented error documents that are not the common one, by leaf (a prefix names a group)
DOCUMENTED = {
    # Stratum's guard envelope, on stdout with or without --json
    "strato guard": lambda doc: set(doc) == {"status", "error_type", "message"} and doc["status"] == "error",
    # Stratum's compile-speckit error
    "strato flow compile-speckit": lambda doc: set(doc) == {"status", "error_type", "message"},
    # vivary-stratum's validator report
    "strato flow validate": lambda doc: set(doc) == {"valid", "errors"} and doc["valid"] is False,
}
# create-vivary 0.3's published error document carries the message as a string
TEXT_ERRORS = ("create-vivary",)
# the failure a bad argument meets, where it is not the exit code's own (2 "usage", 1 "refused")
CODES = {
    "strato agent": "not_a_repository",
    "strato decide-request": "invalid_capsule",
    "strato distill": "not_a_repository",
    "strato eval": "config_error",
    "strato flow": "config_error",
    "strato flow migrate": "usage",
    "strato heartbeat": "not_a_repository",
    "strato lanes": "config_error",
    "strato mcp": "not_a_repository",
    "strato query": "config_error",
    "vivary hooks": "not_a_repository",
    "vivary serve": "not_a_repository",
    "vivary trust": "not_a_repository",
    **{f"tropo {name}": "config_error"
       for name in ("blast", "check", "fix", "graph", "log", "signal", "stats", "types", "view")},
}


def _by_prefix(table: dict[str, Any], name: str) -> Any:
    """The entry of the longest prefix of `name` (a leaf, or the group it is in) in `table`."""
    words = name.split()
    for n in range(len(words), 0, -1):
        if " ".join(words[:n]) in table:
            return table[" ".join(words[:n])]
    return None


def _assert_error_document(name: str, doc: Any, returncode: int, stderr: str) -> None:
    """`doc` is the error document `name` promises, naming the exit code and saying what
    the one stderr line says."""
    documented = _by_prefix(DOCUMENTED, name)
    if documented is not None:
        assert documented(doc), (name, doc)
        return
    [line] = stderr.splitlines()
    error = doc.get("error") if isinstance(doc, dict) else None
    if name.split()[0] in TEXT_ERRORS:
        assert isinstance(error, str) and doc == {"ok": False, "error": error, "exitCode": returncode}, (name, doc)
        message = error
    else:
        code = _by_prefix(CODES, name) or ("usage" if returncode == 2 else "refused")
        assert isinstance(error, dict), (name, doc)
        message = error.get("message")
        assert doc == {"ok": False, "error": {"code": code, "message": message}, "exitCode": returncode}, (name, doc)
    assert isinstance(message, str) and message, (name, doc)
    assert line.endswith(f": {message}") or line == f"error: {message} (see {name} --help)", (line, message)


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
        (["strato", "eval", "show", "nope", "--json"], 1),
        (["strato", "flow", "validate", "missing.yaml", "--json"], 2),
        (["strato", "decide-request", "missing.json", "--actor", "a", "--json"], 2),
        (["strato", "flow", "cancel", "nope", "--json"], 2),
        (["strato", "query", "flow", "nope", "--json"], 1),
        (["strato", "help", "nope", "--json"], 2),
        (["strato", "models", "extra", "--json"], 2),
        (["strato", "distill", "stats", "--projects-root", ".", "--json"], 2),
        (["strato", "worker", "--remote", "nope", "--run", "r1", "--json"], 2),
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
    if doc.get("ok") is False:
        assert set(doc) == {"ok", "error", "exitCode"} and doc["exitCode"] == code, doc
        assert set(doc["error"]) >= {"code", "message"} and doc["error"]["message"] in proc.stderr, doc
        assert re.fullmatch(r"[a-z][a-z_]*", doc["error"]["code"]), doc
    plain = run(argv[0], *[a for a in argv[1:] if a != "--json"], cwd=tmp_path / "ws")
    assert plain.returncode == code and not plain.stdout.lstrip().startswith("{")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("tree")
    subprocess.run([BIN / "create-vivary", "init", "ws", "--commit"], cwd=where, check=True, capture_output=True)
    (where / "ws" / "bad.txt").write_text("not what any command asks for\n")
    return where / "ws"


def _status(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("name", sorted(n for n, c in LEAVES.items() if "--json" in options(c)))
def test_a_bad_argument_under_json_is_the_error_document_of_its_command(name: str, workspace: Path) -> None:
    argv = bad_argv(name, LEAVES[name])
    before = _status(workspace)
    proc = run(argv[0], *argv[1:], cwd=workspace, input="")
    made = (workspace / MISSING).exists()
    shutil.rmtree(workspace / MISSING, ignore_errors=True)  # else the next leaf would find a repository there
    assert not made, f"{argv} created the missing --root"
    assert proc.returncode in (1, 2), (argv, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, (argv, proc.stderr)
    _assert_error_document(name, json.loads(proc.stdout), proc.returncode, proc.stderr)  # one document
    assert _status(workspace) == before, argv  # nothing written


def test_the_pin_fails_for_a_document_of_another_shape() -> None:
    """The check above can fail: the old shapes (a string `error`, a `code` beside it, no
    `exitCode`) and a wrong exit code are each refused."""
    line = "tropo: config error: nope\n"
    good = {"ok": False, "error": {"code": "config_error", "message": "config error: nope"}, "exitCode": 2}
    _assert_error_document("tropo check", good, 2, line)
    for bad, code in [
        ({"ok": False, "error": "config error: nope", "exitCode": 2}, 2),
        ({"ok": False, "error": "config error: nope", "code": "config_error"}, 2),
        ({**good, "exitCode": 1}, 2),
        (good, 1),
        ({**good, "error": {"code": "usage", "message": "config error: nope"}}, 2),
        ({**good, "error": {"code": "config_error", "message": "something else"}}, 2),
    ]:
        with pytest.raises(AssertionError):
            _assert_error_document("tropo check", bad, code, line)
