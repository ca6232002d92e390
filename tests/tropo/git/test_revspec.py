"""The one resolver of a typed revision: a full ref or an object id as given, a short
name as git reads it, and a short name several refs answer to refused, naming them."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from tests.support.repos import git
from tropo.git import repo as gitrepo
from tropo.git.revspec import AmbiguousRevision, resolve_commit, spelled


@pytest.fixture
def two(repo_dir: Path) -> tuple[pygit2.Repository, str, str]:
    """A repository with two commits: ``first`` (tagged ``v1``) and ``second`` (main, HEAD)."""
    git(repo_dir, "commit", "-q", "--allow-empty", "-m", "first")
    git(repo_dir, "tag", "v1")
    git(repo_dir, "commit", "-q", "--allow-empty", "-m", "second")
    first = git(repo_dir, "rev-parse", "HEAD~1").strip()
    second = git(repo_dir, "rev-parse", "HEAD").strip()
    return gitrepo.require(repo_dir), first, second


def _id(repo: pygit2.Repository, rev: str) -> str:
    return str(resolve_commit(repo, rev).id)


def test_an_object_id_full_or_abbreviated_is_taken_as_given(two: tuple[pygit2.Repository, str, str]) -> None:
    repo, first, second = two
    assert _id(repo, first) == first
    assert _id(repo, first[:9]) == first
    assert _id(repo, f"{second}~1") == first


def test_a_full_object_id_is_never_read_as_a_ref_of_that_name(
    two: tuple[pygit2.Repository, str, str],
) -> None:
    repo, first, _ = two
    absent = "ab" * 20
    git(Path(repo.workdir), "tag", absent, first)  # git would read the tag when no such object exists
    with pytest.raises(gitrepo.RevisionError, match="names no object here"):
        resolve_commit(repo, absent)


def test_a_full_ref_is_taken_as_given_and_must_exist(two: tuple[pygit2.Repository, str, str]) -> None:
    repo, first, second = two
    root = Path(repo.workdir)
    git(root, "tag", "main", first)  # `main` is now ambiguous; the full refs are not
    assert _id(repo, "refs/heads/main") == second
    assert _id(repo, "refs/tags/main") == first
    assert _id(repo, "refs/heads/main~1") == first
    git(root, "update-ref", "refs/heads/refs/heads/gone", first)  # what git would fall back to
    with pytest.raises(gitrepo.RevisionError, match="'refs/heads/gone' names no ref here") as info:
        resolve_commit(repo, "refs/heads/gone")
    assert not isinstance(info.value, AmbiguousRevision)


def test_a_short_name_one_ref_answers_to_resolves_as_git_reads_it(
    two: tuple[pygit2.Repository, str, str],
) -> None:
    repo, first, second = two
    git(Path(repo.workdir), "update-ref", "refs/remotes/origin/main", first)
    assert _id(repo, "main") == second
    assert _id(repo, "v1") == first
    assert _id(repo, "origin/main") == first
    assert _id(repo, "HEAD^") == first
    assert spelled(repo, "origin/main~0") == "refs/remotes/origin/main~0"
    assert spelled(repo, "HEAD") == "HEAD"


def test_a_tag_named_like_a_branch_is_refused_naming_both(two: tuple[pygit2.Repository, str, str]) -> None:
    repo, first, _ = two
    git(Path(repo.workdir), "tag", "main", first)
    with pytest.raises(AmbiguousRevision) as info:
        resolve_commit(repo, "main~1")
    assert str(info.value) == "'main' is ambiguous (refs/tags/main, refs/heads/main): pass the full ref you mean"


def test_a_tag_named_like_a_remote_tracking_branch_is_refused_naming_both(
    two: tuple[pygit2.Repository, str, str],
) -> None:
    repo, first, second = two
    root = Path(repo.workdir)
    git(root, "update-ref", "refs/remotes/origin/main", second)
    git(root, "tag", "origin/main", first)
    assert git(root, "rev-parse", "origin/main").strip() == first  # git itself picks the tag
    with pytest.raises(AmbiguousRevision, match=r"\(refs/tags/origin/main, refs/remotes/origin/main\)"):
        resolve_commit(repo, "origin/main")
    with pytest.raises(AmbiguousRevision):
        spelled(repo, "origin/main@{0}")


def test_an_abbreviated_id_that_is_also_a_ref_name_is_refused(
    two: tuple[pygit2.Repository, str, str],
) -> None:
    repo, first, second = two
    short = second[:10]
    git(Path(repo.workdir), "branch", short, first)  # git would read the branch, not the object
    with pytest.raises(AmbiguousRevision) as info:
        resolve_commit(repo, short)
    assert str(info.value) == (
        f"{short!r} is ambiguous (refs/heads/{short}, object {short}): pass the full ref or object id you mean"
    )


@pytest.mark.parametrize("rev", ["nope", "refs/heads/nope", "-all", "", "main..HEAD"])
def test_a_missing_revision_names_no_commit(two: tuple[pygit2.Repository, str, str], rev: str) -> None:
    with pytest.raises(gitrepo.RevisionError) as info:
        resolve_commit(two[0], rev)
    assert not isinstance(info.value, AmbiguousRevision)


def test_head_is_read_first_and_a_missing_orig_head_by_the_rules(
    two: tuple[pygit2.Repository, str, str],
) -> None:
    repo, first, second = two
    root = Path(repo.workdir)
    git(root, "tag", "HEAD", first)  # git reads .git/HEAD first; a pushed tag cannot shadow it
    assert _id(repo, "HEAD") == second
    git(root, "tag", "ORIG_HEAD", first)
    git(root, "branch", "ORIG_HEAD", first)
    assert not (Path(repo.path) / "ORIG_HEAD").exists()  # no root ref: the tag and the branch compete
    with pytest.raises(AmbiguousRevision, match=r"\(refs/tags/ORIG_HEAD, refs/heads/ORIG_HEAD\)"):
        resolve_commit(repo, "ORIG_HEAD")
