from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import remote as gitremote


def _clone_pair(tmp_path: Path) -> tuple[Path, Path, str]:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    one = tmp_path / "one"
    git(tmp_path, "clone", "-q", str(bare), str(one))
    write_files(one, {"a.md": "a\n"})
    head = commit_all(one)
    git(one, "push", "-q", "origin", "HEAD:refs/heads/main")
    two = tmp_path / "two"
    git(tmp_path, "clone", "-q", str(bare), str(two))
    return one, two, head


def test_create_only_push_has_one_winner(tmp_path: Path) -> None:
    one, two, head = _clone_pair(tmp_path)
    write_files(two, {"b.md": "b\n"})
    other = commit_all(two)
    ref = "refs/heads/claim/x"
    first = gitremote.push_ref(one, "origin", head, ref, None)
    assert first.ok and not first.rejected
    second = gitremote.push_ref(two, "origin", other, ref, None)
    assert second.rejected and not second.ok
    assert gitremote.remote_oid(two, "origin", ref) == head
    assert gitremote.fetch_ref(two, "origin", ref, "refs/remotes/origin/claim/x") == head
    # Deleting needs the value we expect there.
    assert gitremote.push_ref(two, "origin", None, ref, other).rejected
    assert gitremote.push_ref(two, "origin", None, ref, head).ok
    assert gitremote.remote_oid(one, "origin", ref) is None
    assert gitremote.fetch_ref(one, "origin", ref, "refs/remotes/origin/claim/x") is None


def test_unreachable_remote_is_a_remote_error(tmp_path: Path) -> None:
    one, _two, head = _clone_pair(tmp_path)
    git(one, "remote", "add", "gone", str(tmp_path / "missing.git"))
    with pytest.raises(gitremote.RemoteError, match="gone"):
        gitremote.push_ref(one, "gone", head, "refs/heads/claim/x", None)
    with pytest.raises(gitremote.RemoteError):
        gitremote.remote_oid(one, "gone", "refs/heads/claim/x")
    with pytest.raises(gitremote.RemoteError):
        gitremote.push_ref(one, "no-such-remote", head, "refs/heads/claim/x", None)


def test_fetch_objects_brings_the_commit_and_writes_no_ref(tmp_path: Path) -> None:
    one, two, _head = _clone_pair(tmp_path)
    write_files(one, {"c.md": "c\n"})
    newer = commit_all(one)
    git(one, "push", "-q", "origin", "HEAD:refs/heads/main")
    refs = git(two, "for-each-ref")
    assert git(two, "cat-file", "-t", newer, check=False) == ""
    gitremote.fetch_objects(two, "origin", "refs/heads/main")
    assert git(two, "cat-file", "-t", newer).strip() == "commit"
    assert git(two, "for-each-ref") == refs and not (two / ".git" / "FETCH_HEAD").exists()
    with pytest.raises(gitremote.RemoteError, match="refs/heads/nope"):
        gitremote.fetch_objects(two, "origin", "refs/heads/nope")


def test_a_remote_name_is_never_read_as_an_option(tmp_path: Path) -> None:
    """The remote follows ``--``: ``--upload-pack=CMD`` / ``--receive-pack=CMD`` as a
    remote name is a remote git cannot find, and CMD never runs."""
    one, _, head = _clone_pair(tmp_path)
    ref = "refs/heads/main"
    for option, call in (
        ("--receive-pack", lambda r: gitremote.push_ref(one, r, head, "refs/heads/x", None)),
        ("--upload-pack", lambda r: gitremote.remote_oid(one, r, ref)),
        ("--upload-pack", lambda r: gitremote.fetch_objects(one, r, ref)),
        ("--upload-pack", lambda r: gitremote.fetch_ref(one, r, ref, "refs/remotes/x/main")),
    ):
        pwned = tmp_path / "PWNED"
        with pytest.raises(gitremote.RemoteError):
            call(f"{option}=touch {pwned};")
        assert not pwned.exists(), option


def test_fetch_refs_mirrors_exactly_the_refs_named(tmp_path: Path) -> None:
    one, two, head = _clone_pair(tmp_path)
    write_files(one, {"d.md": "d\n"})
    newer = commit_all(one)
    for ref, oid in (("refs/vivary/x/head", newer), ("refs/vivary/x/other", newer), ("refs/vivary/x/back", head)):
        git(one, "push", "-q", "origin", f"{oid}:{ref}")
    write_files(two, {"e.md": "e\n"})
    git(two, "update-ref", "refs/vivary/x/back", commit_all(two))  # here elsewhere: forced to the remote's
    gitremote.fetch_refs(two, "origin", ["refs/vivary/x/head", "refs/vivary/x/back"], have=["refs/vivary/x/back"])
    assert git(two, "rev-parse", "refs/vivary/x/head", "refs/vivary/x/back").split() == [newer, head]
    assert git(two, "for-each-ref", "refs/vivary/x/other") == ""  # not named: not fetched
    assert not (two / ".git" / "FETCH_HEAD").exists()
    with pytest.raises(gitremote.RemoteError, match="refs/vivary/x/nope"):
        gitremote.fetch_refs(two, "origin", ["refs/vivary/x/head", "refs/vivary/x/nope"])
