"""Claims at their edges, written against what mutation testing left alive in
``exo/claims.py`` (docs/testing.md): who a holder is when a claim commit names nobody,
the exact refusals people read, and what a release leaves behind here and on the remote."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from exo import claims
from tests.support.coordination import ITEM, clone, make_remote
from tests.support.repos import commit_all, git, write_files

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


# Written against the run of 2026-12-02 (afternoon): the rule a refused releaser reads,
# what a forced release records and where, and what a published local claim returns.

_OTHERS_CLAIM = ("only the holder releases it (override with --force --reason TEXT, "
                 "which is recorded)")


def _commit_on(root: Path, branch: str, files: dict[str, str], message: str) -> str:
    """A commit on ``branch`` made with plain git, the checkout left on ``main``."""
    git(root, "checkout", "-q", branch)
    write_files(root, files)
    tip = commit_all(root, message)
    git(root, "checkout", "-q", "main")
    return tip


def _parents(root: Path, commit: str) -> list[str]:
    return git(root, "rev-list", "--parents", "-n", "1", commit).split()[1:]


def test_force_needs_a_reason_that_says_something(ws: Path) -> None:
    won = claims.claim(_repo(ws), "item", ITEM, "connie")
    for reason in (None, "", " \n\t"):
        with pytest.raises(claims.ClaimError) as info:
            claims.release(_repo(ws), "item", "dave", force=True, reason=reason)
        assert str(info.value) == (
            "--force needs --reason TEXT; the reason is recorded on refs/exo/released/item"
        )
    assert git(ws, "rev-parse", "claim/item").strip() == won.commit
    assert git(ws, "for-each-ref", "refs/exo") == ""


def test_a_release_by_another_agent_spells_out_the_rule(ws: Path) -> None:
    claims.claim(_repo(ws), "item", ITEM, "connie")
    with pytest.raises(claims.ClaimRefused) as named:
        claims.release(_repo(ws), "item", "dave")
    assert str(named.value) == f"claim/item is held by @connie, not @dave; {_OTHERS_CLAIM}"
    assert named.value.holder == "connie"
    git(ws, "branch", "claim/other", "main")  # by hand: no claim commit names anyone
    with pytest.raises(claims.ClaimRefused) as nobody:
        claims.release(_repo(ws), "other", "dave")
    assert str(nobody.value) == (
        f"claim/other is held by an agent this clone cannot tell, not @dave; {_OTHERS_CLAIM}"
    )
    assert nobody.value.holder is None
    assert _claim_refs(ws) == ["refs/heads/claim/item", "refs/heads/claim/other"]


def test_a_refusal_for_unmerged_work_counts_the_commits(ws: Path) -> None:
    claims.claim(_repo(ws), "item", ITEM, "connie")
    _commit_on(ws, "claim/item", {"work.md": "work\n"}, "work")
    _commit_on(ws, "claim/item", {"more.md": "more\n"}, "more")
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(ws), "item", "connie")
    assert str(info.value) == (
        "claim/item has 2 unmerged commit(s); merge them or pass --force --reason TEXT"
    )


def test_a_claim_commit_that_changes_more_than_the_item_names_nobody(ws: Path) -> None:
    """The holder is the assignee set on the one file the claim commit changed; a commit
    carrying the trailer that also changes another file is no claim anyone holds."""
    git(ws, "branch", "claim/item", "main")
    _commit_on(ws, "claim/item", {ITEM: "---\nstatus: active\nassignee: mallory\n---\n# Item\n",
                                  OTHER: "# Other, changed along\n"},
               "exo: claim item for @mallory\n\nExo-Claim: item")
    with pytest.raises(claims.ClaimRefused) as info:
        claims.release(_repo(ws), "item", "mallory")
    assert info.value.holder is None
    assert str(info.value).startswith("claim/item is held by an agent this clone cannot tell")


def test_a_forced_release_here_is_recorded_here_and_chains_onto_the_last_record(
    ws: Path,
) -> None:
    git(ws, "branch", "claim/item", "main")  # a claim branch that names nobody
    first_tip = git(ws, "rev-parse", "claim/item").strip()
    first = claims.release(_repo(ws), "item", "dave", force=True, reason="  nobody's  \n")
    assert (first.holder, first.forced, first.local) == (None, True, first_tip)
    assert first.record is not None
    assert git(ws, "rev-parse", "refs/exo/released/item").strip() == first.record
    assert git(ws, "log", "-1", "--format=%B", first.record) == (
        "exo: forced release of item held by an unknown holder, by @dave\n\n"
        "nobody's\n\nExo-Released: item\nExo-Released-By: dave\n\n"
    )
    assert _parents(ws, first.record) == [first_tip]
    assert git(ws, "rev-parse", f"{first.record}^{{tree}}").strip() == git(
        ws, "rev-parse", f"{first_tip}^{{tree}}").strip()
    # A plain claim and release by its holder leaves the record alone.
    claims.claim(_repo(ws), "item", ITEM, "connie")
    git(ws, "merge", "-q", "--ff-only", "claim/item")
    claims.release(_repo(ws), "item", "connie")
    assert git(ws, "rev-parse", "refs/exo/released/item").strip() == first.record
    # The next forced release builds on it: earlier record first, then the dropped tip.
    second_claim = claims.claim(_repo(ws), "item", ITEM, "erin")
    second = claims.release(_repo(ws), "item", "dave", force=True, reason="again")
    assert second.holder == "erin" and second.record is not None
    assert _parents(ws, second.record) == [first.record, second_claim.commit]
    assert git(ws, "rev-parse", "refs/exo/released/item").strip() == second.record
    assert _claim_refs(ws) == []


def test_a_forced_release_of_a_local_tip_ahead_of_the_remote_records_both_tips(
    remote: Path,
) -> None:
    alice = clone(remote, "alice")
    won = claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    ahead = _commit_on(alice, "claim/item", {"work.md": "unpushed work\n"}, "work")
    out = claims.release(_repo(alice), "item", "alice", force=True, remote="origin",
                         reason="dropping it")
    assert out.record is not None and (out.local, out.holder) == (ahead, "alice")
    # the local tip first (its tree is the record's), then the remote's
    assert _parents(alice, out.record) == [ahead, won.commit]
    assert git(alice, "rev-parse", f"{out.record}^{{tree}}").strip() == git(
        alice, "rev-parse", f"{ahead}^{{tree}}").strip()
    assert git(remote, "rev-parse", "refs/exo/released/item").strip() == out.record
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    assert _claim_refs(alice) == []


def test_a_plain_release_on_a_remote_leaves_its_records_alone(remote: Path) -> None:
    alice, bob = clone(remote, "alice"), clone(remote, "bob")
    claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    record = claims.release(_repo(bob), "item", "bob", force=True, remote="origin",
                            reason="alice is away").record
    claims.claim(_repo(bob), "item", ITEM, "bob", remote="origin")
    git(bob, "merge", "-q", "--ff-only", "claim/item")
    out = claims.release(_repo(bob), "item", "bob", remote="origin")
    assert (out.forced, out.record, out.holder) == (False, None, "bob")
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    assert git(remote, "rev-parse", "refs/exo/released/item").strip() == record
    assert git(bob, "rev-parse", "refs/exo/released/item").strip() == record


def test_a_forced_release_of_a_claim_the_remote_never_had_is_recorded_here_only(
    remote: Path,
) -> None:
    one = clone(remote, "one")
    claims.claim(_repo(one), "item", ITEM, "connie")  # never pushed
    out = claims.release(_repo(one), "item", "dave", remote="origin", force=True,
                         reason="stale")
    assert git(one, "rev-parse", "refs/exo/released/item").strip() == out.record
    assert git(remote, "for-each-ref", "refs/exo", "refs/heads/claim") == ""


def test_a_local_claim_published_later_says_what_it_replaced(remote: Path) -> None:
    """The in-process form of a claim interrupted before its push: the same agent's
    branch, made here, is published by a claim with the remote."""
    one = clone(remote, "one")
    delta = "changes/delta.md"  # assigned to dora in the workspace
    local = claims.claim(_repo(one), "delta", delta, "connie")
    assert (local.previous_assignee, local.changed, local.worktree, local.resumed) == (
        "dora", True, None, False)
    assert git(one, "log", "-1", "--format=%B", local.commit) == (
        "exo: claim delta for @connie\n\nExo-Claim: delta\n\n"
    )
    with pytest.raises(claims.ClaimRefused) as again:  # without the remote: a second claim
        claims.claim(_repo(one), "delta", delta, "connie")
    assert str(again.value) == "delta is already claimed by @connie (claim/delta)"
    out = claims.claim(_repo(one), "delta", delta, "connie", remote="origin")
    assert (out.id, out.path, out.commit, out.previous_assignee, out.changed, out.resumed,
            out.worktree, out.remote, out.branch, out.assignee) == (
        "delta", delta, local.commit, "dora", True, True, None, "origin", "claim/delta",
        "connie")
    assert git(remote, "rev-parse", "claim/delta").strip() == local.commit


def test_a_forced_release_is_logged_where_git_logs_every_ref(ws: Path) -> None:
    """git keeps no reflog for ``refs/exo/`` by default; with ``logAllRefUpdates=always``
    the record's reflog says what moved it."""
    git(ws, "config", "core.logAllRefUpdates", "always")
    git(ws, "branch", "claim/item", "main")
    claims.release(_repo(ws), "item", "dave", force=True, reason="r")
    assert git(ws, "reflog", "show", "--format=%gs", "refs/exo/released/item").splitlines() == [
        "exo: forced release of item"
    ]


def test_an_item_already_assigned_to_its_claimer_is_still_held_by_them(remote: Path) -> None:
    """The item named the claimer before the claim (assigned ahead of the work), so the
    claim commit changes nothing: its holder was unreadable, so the claimer could not
    release the claim, nor publish it after an interrupted push."""
    one = clone(remote, "one")
    delta = "changes/delta.md"  # assigned to dora in the workspace
    made = claims.claim(_repo(one), "delta", delta, "dora")
    assert (made.changed, made.previous_assignee) == (False, "dora")
    assert git(one, "log", "-1", "--format=%B", made.commit) == (
        "exo: claim delta for @dora\n\nExo-Claim: delta\nExo-Claim-Path: changes/delta.md\n\n"
    )
    assert claims.claimant(_repo(one), made.commit, "delta") == "dora"
    with pytest.raises(claims.ClaimRefused) as other:
        claims.release(_repo(one), "delta", "dave")
    assert other.value.holder == "dora"
    published = claims.claim(_repo(one), "delta", delta, "dora", remote="origin")
    assert (published.resumed, published.commit) == (True, made.commit)
    out = claims.release(_repo(one), "delta", "dora", remote="origin")
    assert (out.holder, out.forced, out.record) == ("dora", False, None)
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    assert _claim_refs(one) == []


def test_a_claim_whose_worktree_cannot_be_added_is_made_and_says_so(ws: Path,
                                                                  tmp_path: Path) -> None:
    """The worktree's admin name is the path's last component: a second worktree of the
    same name elsewhere is refused after the claim branch exists, and the error says so."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    claims.claim(_repo(ws), "item", ITEM, "connie", worktree=tmp_path / "a" / "wt")
    with pytest.raises(claims.ClaimError) as info:
        claims.claim(_repo(ws), "other", OTHER, "connie", worktree=tmp_path / "b" / "wt")
    assert str(info.value) == (
        "claimed other, but a worktree named 'wt' already exists; choose another path"
    )
    assert _claim_refs(ws) == ["refs/heads/claim/item", "refs/heads/claim/other"]
