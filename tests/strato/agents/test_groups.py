"""The grace between SIGTERM and SIGKILL (strato/agents/groups.py): 5 s, or the user's own
`VIVARY_STOP_GRACE_S`, read at each stop; with real process groups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strato.agents import groups

# On SIGTERM it takes a moment to finish cleanly (writes `clean`), then exits.
SLOW_TO_STOP = """
import os, signal, sys, time
def done(*_):
    time.sleep(0.3)
    open("clean", "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
open("ready", "w").close()
while True:
    time.sleep(0.05)
"""


@pytest.mark.parametrize(("value", "grace"), [
    (None, 5.0), ("0.2", 0.2), ("0", 0.0), ("12", 12.0),
    ("", 5.0), ("soon", 5.0), ("-1", 5.0), ("inf", 5.0), ("nan", 5.0),
])
def test_the_grace_is_five_seconds_or_a_number_the_environment_sets(
    value: str | None, grace: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv(groups.GRACE_ENV, raising=False)
    else:
        monkeypatch.setenv(groups.GRACE_ENV, value)
    assert groups.grace() == grace


def _started(tmp_path: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SLOW_TO_STOP], cwd=tmp_path, start_new_session=True)
    while not (tmp_path / "ready").exists():
        assert proc.poll() is None
        time.sleep(0.01)
    return proc


@pytest.mark.parametrize(("value", "killed"), [("60", False), ("0", True)])
def test_a_stop_gives_the_group_the_grace_the_environment_sets(
    value: str, killed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(groups.GRACE_ENV, value)
    proc = _started(tmp_path)
    try:
        assert groups.stop(proc.pid) is killed
        assert proc.wait() == (-9 if killed else 0)
        assert (tmp_path / "clean").exists() is not killed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
