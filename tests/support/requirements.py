"""What a test needs from the machine (the upstream oracle, a Chromium, ssh-keygen, node)
and how a missing one is said: a loud skip on a developer's machine, a failure under CI."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.cdp import find_chromium
from tests.support.layout import ROOT


def editable_extra_command(extra: str, python: str = sys.executable) -> str:
    """The line a missing extra's message gives in the developer's venv (the clone installed
    with `pip install -e`): the clone's own source, through the interpreter that runs us."""
    return f"{shlex.quote(python)} -m pip install -e {shlex.quote(f'{ROOT}[{extra}]')}"


def in_ci() -> bool:
    """``CI=true`` (what .ci/run runs under): a missing requirement fails, never skips."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> NoReturn:
    """Skip loudly on a developer's machine; fail under CI, where a skip would let the
    run go green while proving less than it claims."""
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def ci_requirements() -> list[str]:
    """What CI must have: the oracle suite, a Chromium, ssh-keygen; each one missing, said."""
    gaps = []
    if upstream_bin("tropo") is None:
        gaps.append("the upstream Vivary suite (the oracle) is missing: run `make upstream`")
    if find_chromium() is None:
        gaps.append("no Chromium for the browser tests: apt-get install chromium")
    if shutil.which("ssh-keygen") is None:
        gaps.append("no ssh-keygen for the guard tests: apt-get install openssh-client")
    if shutil.which("node") is None:
        gaps.append("no node to re-derive the collation table: apt-get install nodejs")
    return gaps


def upstream_bin(name: str) -> Path | None:
    """An upstream Vivary CLI used as an oracle, from ``$VIVARY_UPSTREAM`` (a virtualenv;
    ``make upstream`` builds ``.upstream``), or None when it is not installed."""
    candidates = []
    if os.environ.get("VIVARY_UPSTREAM"):
        candidates.append(Path(os.environ["VIVARY_UPSTREAM"]))
    candidates.append(ROOT / ".upstream")
    for venv in candidates:
        exe = venv / "bin" / name
        if exe.is_file():
            return exe
    return None
