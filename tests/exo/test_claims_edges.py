"""Claims at their edges, written against what mutation testing left alive in
``exo/claims.py`` (docs/testing.md): who a holder is when a claim commit names nobody,
the exact refusals people read, and what a release leaves behind here and on the remote."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from exo import claims
from tests.conftest import commit_all, git, write_files
from tests.exo.workspaces import ITEM, clone, make_remote

OTHER = "changes/other.md"


def _repo(root: Path) -> pygit2.Repository:
    return pygit2.Repository(str(root))


def _claim_refs(root: Path) -> list[str]:
    """Every claim ref, local or remote-tracking, under any remote name."""
    refs = git(root, "for-each-ref", "--format=%(refname)").split()
    return [r for r in refs if "/claim/" in r or r.startswith("refs/heads/claim/")]


@pytest.fixture
def ws(repo_dir: Path) -> Path:
    write_files(repo_dir, {ITEM: "---\nstatus: active\n---\n# Item\n", OTHER: "# Other\n"})
    commit_all(repo_dir)
    return repo_dir


def test_a_claim_branch_that_names_nobody_has_no_holder(ws: Path) -> None:
    git(ws, "branch", "claim/item")  # a branch by hand: the item has no assignee there
    assert claims.holders(_repo(ws), {"item": ITEM}) == {}
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(ws), "item", ITEM, "dave")
    assert str(info.value) == "item is already claimed by another agent (claim/item)"
    assert info.value.holder is None


def test_a_claim_whose_item_is_gone_from_the_branch_has_no_holder(ws: Path) -> None:
    claims.claim(_repo(ws), "item", ITEM, "connie")
    assert claims.holders(_repo(ws), {"item": "changes/elsewhere.md"}) == {}
    assert claims.holders(_repo(ws), {"item": ITEM}) == {"item": "connie"}


def test_holders_skip_items_they_were_not_asked_about(ws: Path) -> None:
    claims.claim(_repo(ws), "item", ITEM, "connie")
    claims.claim(_repo(ws), "other", OTHER, "dave")
    assert claims.holders(_repo(ws), {"other": OTHER}) == {"other": "dave"}
    assert claims.holders(_repo(ws), {"item": ITEM, "other": OTHER}) == {
        "item": "connie",
        "other": "dave",
    }


def test_refusals_name_the_holder_and_the_short_branch(ws: Path) -> None:
    claims.claim(_repo(ws), "item", ITEM, "connie")
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(ws), "item", ITEM, "dave")
    assert str(info.value) == "item is already claimed by @connie (claim/item)"


def test_release_messages(repo_dir: Path, ws: Path) -> None:
    empty = repo_dir.parent / "empty"
    git(repo_dir.parent, "init", "-q", str(empty))
    with pytest.raises(claims.ClaimError) as no_commits:
        claims.release(_repo(empty), "item", "connie")
    assert str(no_commits.value) == "the repository has no commits yet; nothing to release"
    with pytest.raises(claims.ClaimRefused) as unclaimed:
        claims.release(_repo(ws), "item", "connie")
    assert str(unclaimed.value) == "item is not claimed"


def test_release_returns_what_it_deleted(ws: Path) -> None:
    won = claims.claim(_repo(ws), "item", ITEM, "connie")
    tip = git(ws, "rev-parse", "claim/item").strip()
    assert won.commit == tip
    git(ws, "merge", "-q", "--ff-only", "claim/item")
    out = claims.release(_repo(ws), "item", "connie")
    assert (out.id, out.branch, out.local, out.remote, out.forced) == (
        "item",
        "claim/item",
        tip,
        None,
        False,
    )
    assert _claim_refs(ws) == []


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def test_release_on_a_remote_leaves_no_claim_ref_anywhere(remote: Path) -> None:
    one, two = clone(remote, "one"), clone(remote, "two")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    git(two, "fetch", "-q", "origin", "+refs/heads/claim/*:refs/remotes/origin/claim/*")
    assert _claim_refs(two) == ["refs/remotes/origin/claim/item"]
    # released from the clone that only saw it: the remote branch and its tracking ref go
    out = claims.release(_repo(two), "item", "connie", remote="origin", force=True, reason="an edge case")
    assert (out.remote, out.local, out.forced) == ("origin", None, True)
    assert _claim_refs(two) == []
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    # the claimer's clone still holds its local branch until it releases too
    assert _claim_refs(one) == ["refs/heads/claim/item", "refs/remotes/origin/claim/item"]


def test_release_with_a_remote_of_a_claim_only_made_here(remote: Path) -> None:
    one = clone(remote, "one")
    claims.claim(_repo(one), "item", ITEM, "connie")  # never pushed
    out = claims.release(_repo(one), "item", "connie", remote="origin", force=True, reason="an edge case")
    assert (out.remote, out.local is not None) == ("origin", True)
    assert _claim_refs(one) == []


def test_release_of_nothing_with_a_remote_says_where_it_looked(remote: Path) -> None:
    one = clone(remote, "one")
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(one), "item", "connie", remote="origin")
    assert str(info.value) == "item is not claimed here or on origin"


def test_a_remote_that_declines_the_deletion_keeps_the_claim(remote: Path) -> None:
    one = clone(remote, "one")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho keep it >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(one), "item", "connie", remote="origin", force=True, reason="an edge case")
    message = str(info.value)
    assert message.startswith("claim/item not deleted on origin (") and message.endswith(
        "); it may have moved since it was read: fetch, look, and retry"
    ), message
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/claim").split() == [
        "refs/heads/claim/item"
    ]
    assert "refs/heads/claim/item" in _claim_refs(one)  # nothing released here either


def test_an_unreachable_remote_releases_nothing(remote: Path, tmp_path: Path) -> None:
    one = clone(remote, "one")
    claims.claim(_repo(one), "item", ITEM, "connie")
    git(one, "remote", "add", "gone", str(tmp_path / "missing.git"))
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(one), "item", "connie", remote="gone", force=True, reason="an edge case")
    assert str(info.value).endswith("; nothing released")
    assert _claim_refs(one) == ["refs/heads/claim/item"]


def test_a_remote_claim_seen_here_is_named_by_its_short_tracking_ref(remote: Path) -> None:
    one, two = clone(remote, "one"), clone(remote, "two")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    git(two, "fetch", "-q", "origin")
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(two), "item", ITEM, "dave")
    assert str(info.value) == "item is already claimed by @connie (origin/claim/item)"


def test_release_drops_a_tracking_ref_that_git_push_would_not(remote: Path) -> None:
    """With a fetch refspec that does not cover claim branches, ``git push`` leaves the
    tracking ref alone; release must still delete it, or the clone keeps refusing."""
    one, two = clone(remote, "one"), clone(remote, "two")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    git(two, "config", "remote.origin.fetch", "+refs/heads/main:refs/remotes/origin/main")
    git(two, "fetch", "-q", "origin", "+refs/heads/claim/item:refs/remotes/origin/claim/item")
    claims.release(_repo(two), "item", "connie", remote="origin", force=True, reason="an edge case")
    assert _claim_refs(two) == []
    assert claims.claim(_repo(two), "item", ITEM, "dave").id == "item"


def test_a_remote_that_cannot_be_pushed_to_releases_nothing(remote: Path, tmp_path: Path) -> None:
    """Fetching works, the push of the deletion cannot even start: nothing is deleted."""
    one = clone(remote, "one")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    git(one, "config", "remote.origin.pushurl", str(tmp_path / "missing.git"))
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(one), "item", "connie", remote="origin", force=True, reason="an edge case")
    assert str(info.value).endswith("; nothing released")
    assert "refs/heads/claim/item" in _claim_refs(one)
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/claim").split() == [
        "refs/heads/claim/item"
    ]


def test_losing_a_remote_race_names_the_winner_by_its_tracking_ref(remote: Path) -> None:
    one, two = clone(remote, "one"), clone(remote, "two")
    claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    with pytest.raises(claims.ClaimRefused) as info:  # two has not fetched: it learns by pushing
        claims.claim(_repo(two), "item", ITEM, "dave", remote="origin")
    assert str(info.value) == "item is already claimed by @connie (origin/claim/item)"


def test_a_branch_lock_that_never_goes_away_claims_nothing(ws: Path) -> None:
    lock = ws / ".git" / "refs" / "heads" / "claim" / "item.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")  # another writer (plain git) holds the branch's lock throughout
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(ws), "item", ITEM, "dave")
    assert str(info.value) == (
        "refs/heads/claim/item stayed locked by another process; nothing claimed"
    )
    assert _claim_refs(ws) == []


def test_claim_refusals_from_the_repository_state(ws: Path, repo_dir: Path) -> None:
    empty = repo_dir.parent / "unborn"
    git(repo_dir.parent, "init", "-q", str(empty))
    with pytest.raises(claims.ClaimError) as unborn:
        claims.claim(_repo(empty), "item", ITEM, "dave")
    assert str(unborn.value) == "the repository has no commits yet; commit the workspace first"
    git(ws, "checkout", "-q", "--detach")
    with pytest.raises(claims.ClaimError) as detached:
        claims.claim(_repo(ws), "item", ITEM, "dave")
    assert str(detached.value) == (
        "HEAD is detached; check out the branch the claim should start from"
    )
    git(ws, "checkout", "-q", "main")
    with pytest.raises(claims.ClaimRefused) as missing:
        claims.claim(_repo(ws), "ghost", "changes/ghost.md", "dave")
    assert str(missing.value) == "changes/ghost.md: not in HEAD; commit the item before claiming it"
    write_files(ws, {"changes/latin.md": ""})
    (ws / "changes" / "latin.md").write_bytes(b"# Caf\xe9\n")
    commit_all(ws)
    with pytest.raises(claims.ClaimRefused) as binary:
        claims.claim(_repo(ws), "latin", "changes/latin.md", "dave")
    assert str(binary.value) == "changes/latin.md: not UTF-8 text"
