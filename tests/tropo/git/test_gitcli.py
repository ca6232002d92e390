"""The one door to the git binary: ``call`` hands back git's answer without raising and
sets ``env`` over this process's environment; ``run`` raises git's own last line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tropo.git import gitcli

_ONE_KEY = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "vivary.probe"}


def test_call_sets_env_over_the_process_environment(repo_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "from the process")
    kept = gitcli.call(repo_dir, "config", "--get", "vivary.probe", env=_ONE_KEY)
    assert (kept.returncode, kept.stdout) == (0, "from the process\n")
    over = gitcli.call(repo_dir, "config", "--get", "vivary.probe",
                       env={**_ONE_KEY, "GIT_CONFIG_VALUE_0": "from env"})
    assert over.stdout == "from env\n"


def test_call_reports_a_failure_instead_of_raising(repo_dir: Path) -> None:
    proc = gitcli.call(repo_dir, "rev-parse", "--verify", "no-such-rev")
    assert proc.returncode == 128
    assert proc.stderr.startswith("fatal: ")
    with pytest.raises(gitcli.GitError, match="fatal"):
        gitcli.run(repo_dir, "rev-parse", "--verify", "no-such-rev")


def test_call_feeds_stdin(repo_dir: Path) -> None:
    proc = gitcli.call(repo_dir, "hash-object", "--stdin", stdin="hello\n")
    assert proc.stdout.strip() == "ce013625030ba8dba906f756967f9e9ca394464a"
