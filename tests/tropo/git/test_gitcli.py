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


def test_a_started_command_says_what_records_says_and_raises_git_own_line(repo_dir: Path) -> None:
    (repo_dir / "a.md").write_text("a\n")
    with gitcli.Started(repo_dir, "ls-files", "-z", "--others") as started:
        assert started.records() == gitcli.records(repo_dir, "ls-files", "-z", "--others") == ["a.md"]
    with pytest.raises(gitcli.GitError, match="Needed a single revision"), \
            gitcli.Started(repo_dir, "rev-parse", "--verify", "no-such-rev") as failing:
        failing.records()


def test_a_started_command_never_read_is_still_reaped(repo_dir: Path) -> None:
    for n in range(3000):  # more than a pipe holds: git blocks until someone reads
        (repo_dir / f"untracked-file-with-a-long-name-{n:05}.md").write_text("x")
    with gitcli.Started(repo_dir, "ls-files", "-z", "--others") as started:
        pass
    assert started._proc.returncode == 0  # read to its end and waited for, not left blocked
