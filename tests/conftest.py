"""Shared fixtures: real git repositories in temporary directories, isolated from the
user's own git configuration."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.repos import git
from tests.support.requirements import (
    ci_requirements,
    in_ci,
    missing,
    upstream_bin,
)

# Transitional: tests/strato still imports these from here; once it imports them from
# tests.support, this list goes (a conftest holds fixtures, not helpers).

# No wall-clock limit in any test (hypothesis's default 200 ms deadline is one): on a
# loaded 2-core machine it fails tests that prove nothing about speed.
settings.register_profile("vivary", deadline=None)
settings.load_profile("vivary")


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        fixture.scope in ("module", "class") for defs in info.name2fixturedefs.values() for fixture in defs
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """How `make test` (xdist, --dist loadgroup) hands tests to its two workers.

    The tests of a module that share a module fixture (a corpus, a scaffold, a built wheel)
    go to one worker as one group: handed out one by one, each worker built the fixture
    again. Then the slow tier first (a stable sort: the rest keeps its order), so no
    25-60 s test starts last while the other worker sits idle."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


@pytest.fixture
def no_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """`VIVARY_HEARTBEAT=0` for a test whose claim is a check (pre-commit, pre-merge-commit,
    pre-push, doctor, adopt) made in a workspace with our hooks: its commits still run
    post-commit, which stops at the switch instead of starting a heartbeat in the
    background after each commit. The heartbeat's own hook is tested in tests/strato/heartbeat."""
    monkeypatch.setenv("VIVARY_HEARTBEAT", "0")


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """`VIVARY_STOP_GRACE_S=0.2` for a test whose agents ignore SIGTERM and whose claim is
    that they are stopped all the same (SIGKILL after the grace), not the grace's length:
    each such stop waited the whole 5 s. The runners and dispatches it starts inherit it."""
    monkeypatch.setenv("VIVARY_STOP_GRACE_S", "0.2")


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    """An empty git repository (no commits yet)."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    return root


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
    if terminalreporter.config.option.markexpr == "not slow":
        terminalreporter.write_line(
            "the slow tier was left out (the deselected tests): `make test-all` or `CI=true make test` runs it"
        )


@pytest.fixture
def upstream() -> Callable[[str], Path]:
    """The path of an upstream CLI; skips loudly when the oracle is absent (fails in CI)."""

    def find(name: str) -> Path:
        exe = upstream_bin(name)
        if exe is None:
            missing(f"upstream {name} not installed: run `make upstream` to compare")
        return exe

    return find
