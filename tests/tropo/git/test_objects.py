"""tropo.git.objects against the real git: loose objects written here get packed."""

from __future__ import annotations

from pathlib import Path

from tests.support.repos import commit_all, git
from tropo.git import objects
from tropo.git import repo as gitrepo
from tropo.git.types import hash_blob


def counts(root: Path) -> dict[str, str]:
    return dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())


def test_gc_auto_packs_when_git_judges_there_are_too_many(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    # git estimates the loose objects from those whose id starts with 17: commit two of them
    seventeen = [d for d in (f"blob {n}\n".encode() for n in range(5000)) if hash_blob(d).startswith("17")]
    for n, data in enumerate(seventeen[:2]):
        (repo_dir / f"f{n}").write_bytes(data)
    commit_all(repo_dir)
    git(repo_dir, "config", "gc.auto", "1")  # (after the commit, whose own gc --auto would pack)
    git(repo_dir, "config", "gc.autoDetach", "false")  # so that it is done when we look
    assert counts(repo_dir)["count"] != "0"
    objects.gc_auto(repo)
    assert counts(repo_dir)["count"] == "0" and counts(repo_dir)["in-pack"] != "0"
