"""Shared fixtures: real git repositories in temporary directories, isolated from the
user's own git configuration."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import settings

# No wall-clock limit in any test (hypothesis's default 200 ms deadline is one): on a
# loaded 2-core machine it fails tests that prove nothing about speed.
settings.register_profile("vivary", deadline=None)
settings.load_profile("vivary")


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    saved = dict(os.environ)
    os.environ.update(
        {
            "HOME": str(home),
            # the user's own config (agents, trust approvals) is the test's, never the machine's
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "Test Committer",
            "GIT_COMMITTER_EMAIL": "committer@example.com",
        }
    )
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real git binary and return its stdout."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


Writer = Callable[[dict[str, str]], None]


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    """An empty git repository (no commits yet)."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    return root


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit_all(root: Path, message: str = "commit") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()





def editable_extra_command(extra: str, python: str = sys.executable) -> str:
    """The line a missing extra's message gives in the developer's venv (the clone installed
    with `pip install -e`): the clone's own source, through the interpreter that runs us."""
    root = Path(__file__).resolve().parent.parent
    return f"{shlex.quote(python)} -m pip install -e {shlex.quote(f'{root}[{extra}]')}"


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
    from tests.tropo.cdp import find_chromium

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


def pytest_sessionstart(session: pytest.Session) -> None:
    if in_ci() and (gaps := ci_requirements()):
        raise pytest.UsageError("CI=true but " + "; ".join(gaps))


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after the skip reasons
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    """The run's last lines (after the skip reasons) say in one line what this machine
    lacks, with the install commands: a newcomer need not read hundreds of skips."""
    yield
    if gaps := ci_requirements():
        terminalreporter.write_line("not on this machine, so their tests skip: " + "; ".join(gaps))


def upstream_bin(name: str) -> Path | None:
    """An upstream Vivary CLI used as an oracle, from ``$VIVARY_UPSTREAM`` (a virtualenv;
    ``make upstream`` builds ``.upstream``), or None when it is not installed."""
    candidates = []
    if os.environ.get("VIVARY_UPSTREAM"):
        candidates.append(Path(os.environ["VIVARY_UPSTREAM"]))
    candidates.append(Path(__file__).resolve().parent.parent / ".upstream")
    for venv in candidates:
        exe = venv / "bin" / name
        if exe.is_file():
            return exe
    return None


@pytest.fixture
def upstream() -> Callable[[str], Path]:
    """The path of an upstream CLI; skips loudly when the oracle is absent (fails in CI)."""

    def find(name: str) -> Path:
        exe = upstream_bin(name)
        if exe is None:
            missing(f"upstream {name} not installed: run `make upstream` to compare")
        return exe

    return find
