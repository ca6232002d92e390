"""The oracle served from one interpreter (tests/support/sides.py) answers as its console
script does as a fresh process: the same exit code, stdout and stderr, and the same files
written, for help, usage errors, refusals, JSON reports and environment-driven writes.
The parity tests that use it rest on this."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.sides import served
from tests.support.trees import tree

CASES = [
    ("create-vivary", ["--help"]),
    ("create-vivary", ["capabilities", "--json"]),
    ("create-vivary", ["capabilities", "--preset", "nope"]),
    ("create-vivary", ["doctor", "{base}/missing", "--json"]),
    ("create-vivary", ["init", "{base}/ws", "--preset", "writing", "--json"]),
    ("create-vivary", ["init", "{base}/ws", "--adapter", "claude"]),
    ("create-vivary", ["wizard", "{base}/ws"]),
    ("create-vivary", ["init", "ws", "--preset", "coding", "--json"]),  # relative: the cwd counts
    ("tropo", ["check", "--json"]),
    ("create-vivary", ["no-such-command", "--bad-flag"]),
    ("tropo", ["check", "--root", "{base}", "--json"]),
    ("exo", ["board", "--root", "{base}"]),
]


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[f"{n} {' '.join(a)}" for n, a in CASES])
def test_served_answers_as_the_process_does(
    tmp_path: Path, upstream: Callable[[str], Path], name: str, argv: list[str]
) -> None:
    script = upstream(name)
    seen = []
    for side in ("process", "served"):
        base = tmp_path / side
        base.mkdir()
        log = base / "receipts.jsonl"
        line = [a.replace("{base}", str(base)) for a in argv]
        env = {"VIVARY_RECEIPT_LOG": str(log)}
        if side == "process":
            proc = subprocess.run([str(script), *line], cwd=base, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, check=False, env={**os.environ, **env})
        else:
            proc = served(script, line, base, env)
        text = [t.replace(str(base), "BASE") for t in (proc.stdout, proc.stderr)]
        files = {k: v for k, v in tree(base).items() if k != "receipts.jsonl"}
        seen.append((proc.returncode, *text, files, log.exists()))
    assert seen[1] == seen[0]


def test_a_served_call_leaves_no_environment_behind(tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    script = upstream("create-vivary")
    log = tmp_path / "receipts.jsonl"
    served(script, ["capabilities"], tmp_path, {"VIVARY_RECEIPT_LOG": str(log)})
    assert log.exists()
    log.unlink()
    served(script, ["capabilities"], tmp_path)  # the next call has this process's environment only
    assert not log.exists()
