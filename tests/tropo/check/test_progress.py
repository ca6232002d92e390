"""A check that reads every document shows progress on a terminal, and only there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.repos import commit_all
from tests.support.vaults import make_vault
from tropo.check.progress import DELAY_ENV

DOCS = 300


def _workspace(root: Path) -> Path:
    make_vault(root, {f"notes/n{i:03}.md": f"# Note {i}\n" for i in range(DOCS)})
    return root


def _check(root: Path, *, terminal: bool) -> tuple[int, str, bytes]:
    """(exit code, stdout, what reached stderr) of a full check, stderr a real pty or a pipe."""
    env = {**os.environ, DELAY_ENV: "0"}  # a long walk, without waiting a second for it
    argv = [sys.executable, "-m", "tropo", "check", "--no-cache", "--root", str(root)]
    if not terminal:
        proc = subprocess.run(argv, capture_output=True, env=env, check=False)
        return proc.returncode, proc.stdout.decode(), proc.stderr
    master, slave = os.openpty()
    try:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env) as child:
            os.close(slave)
            seen = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed its end
                    break
                if not chunk:
                    break
                seen += chunk
            out = child.stdout.read().decode() if child.stdout else ""
            code = child.wait()
    finally:
        os.close(master)
    return code, out, seen


def test_progress_is_drawn_on_a_terminal_and_erased(repo_dir: Path) -> None:
    root = _workspace(repo_dir)
    commit_all(root)
    code, out, err = _check(root, terminal=True)
    assert code == 0 and f"{DOCS + 4} document(s)" in out
    assert b"tropo: 64/" in err and b"documents read" in err
    assert err.endswith(b"\r\x1b[K")  # the line is gone before the report
    assert b"\r" not in out.encode()


def test_nothing_reaches_a_pipe(repo_dir: Path) -> None:
    root = _workspace(repo_dir)
    commit_all(root)
    code, out, err = _check(root, terminal=False)
    assert (code, err) == (0, b"")
    assert f"{DOCS + 4} document(s)" in out
