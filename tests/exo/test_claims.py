"""Claims on real repositories: branch creation, pushes to bare remotes, release."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo import claims
from tests.support.coordination import clone, make_remote
from tests.support.repos import commit_all, git, write_files

ITEM = "changes/item.md"
EXO = Path(sys.executable).parent / "exo"
TEXT = "---\nstatus: active\nproject: p\n---\n# Item\n\nbody\n"


def _make(root: Path) -> str:
    write_files(root, {ITEM: TEXT, "changes/other.md": "# Other\n"})
    return commit_all(root)


def _repo(root: Path) -> pygit2.Repository:
    return pygit2.Repository(str(root))


def _branches(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/heads/claim",
               "refs/remotes").split()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def test_claim_commit_changes_one_line_and_leaves_checkout_alone(repo_dir: Path) -> None:
    head = _make(repo_dir)
    (repo_dir / "changes/other.md").write_text("# Other, edited\n")  # a dirty tree
    git(repo_dir, "add", "changes/other.md")
    status = git(repo_dir, "status", "--porcelain")
    index = (repo_dir / ".git/index").read_bytes()
    made = claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    assert made.branch == "claim/item" and made.changed and made.previous_assignee is None
    assert git(repo_dir, "rev-parse", "claim/item^").strip() == head
    diff = git(repo_dir, "diff", "--unified=0", head, "claim/item")
    assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] \
        == ["+assignee: connie"]
    assert git(repo_dir, "rev-parse", "HEAD").strip() == head
    assert git(repo_dir, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo_dir, "status", "--porcelain") == status
    assert (repo_dir / ".git/index").read_bytes() == index
    assert (repo_dir / ITEM).read_text() == TEXT


def test_second_claim_is_refused_naming_the_holder(repo_dir: Path) -> None:
    _make(repo_dir)
    first = claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    with pytest.raises(claims.ClaimRefused, match="@connie") as info:
        claims.claim(_repo(repo_dir), "item", ITEM, "dave")
    assert info.value.holder == "connie"
    assert git(repo_dir, "rev-parse", "claim/item").strip() == first.commit
    assert claims.holders(_repo(repo_dir), {"item": ITEM, "other": "changes/other.md"}) \
        == {"item": "connie"}



def test_a_claim_branch_records_who_claimed_in_its_reflog(repo_dir: Path) -> None:
    _make(repo_dir)
    claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    reflog = git(repo_dir, "reflog", "show", "--format=%gs", "refs/heads/claim/item")
    assert reflog.splitlines() == ["exo: claim item for @connie"]


def test_losing_a_local_race_names_the_winner_by_its_branch(repo_dir: Path) -> None:
    """The loser of a local race: its check found no claim branch, then another process
    created one before its compare-and-swap. ``_create`` is called at that moment (the
    branch exists now), which is exactly what the loser's process meets."""
    base = _make(repo_dir)
    won = claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    with pytest.raises(claims.ClaimRefused) as info:
        claims._create(_repo(repo_dir), "refs/heads/claim/item", pygit2.Oid(hex=base),
                       "exo: claim item for @dave", "item", ITEM)
    assert str(info.value) == "item is already claimed by @connie (claim/item)"
    assert info.value.holder == "connie"
    assert git(repo_dir, "rev-parse", "claim/item").strip() == won.commit

def test_claim_losing_between_its_check_and_its_swap_names_the_winner(
    repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``claim`` itself in the loser's window: it found no claim branch, and another
    claimer's branch appears before its compare-and-swap (here, once its claim commit is
    built: the real claim of another agent, made at that moment)."""
    _make(repo_dir)
    build, won = claims._build_claim, []

    def build_then_lose(*args: Any) -> Any:
        made = build(*args)
        if not won:
            won.append(None)
            won.append(claims.claim(_repo(repo_dir), "item", ITEM, "connie"))
        return made

    monkeypatch.setattr(claims, "_build_claim", build_then_lose)
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(repo_dir), "item", ITEM, "dave")
    assert str(info.value) == "item is already claimed by @connie (claim/item)"
    assert info.value.holder == "connie"
    assert git(repo_dir, "rev-parse", "claim/item").strip() == won[1].commit


def test_a_tracking_ref_belongs_to_the_longest_remote_name_it_fits(repo_dir: Path) -> None:
    """Remotes ``up`` and ``up/claim``: ``refs/remotes/up/claim/claim/x`` is remote
    ``up/claim``'s claim of ``x``, not remote ``up``'s claim of ``claim/x``."""
    base = _make(repo_dir)
    for name in ("up", "up/claim"):
        git(repo_dir, "remote", "add", name, str(repo_dir))
    git(repo_dir, "update-ref", "refs/remotes/up/claim/claim/x", base)
    git(repo_dir, "update-ref", "refs/remotes/up/claim/y", base)
    assert claims.claim_refs(_repo(repo_dir)) == {
        "x": ["refs/remotes/up/claim/claim/x"], "y": ["refs/remotes/up/claim/y"]}


def test_the_longest_id_a_branch_can_hold_is_claimed_and_one_byte_more_is_refused(
    repo_dir: Path,
) -> None:
    """A name part of 250 bytes is the longest whose ``.lock`` file fits in 255; a whole
    ref name of 1,000 bytes is the longest claimed (libgit2 reads none over 1,024)."""
    longest = "a" * 250
    write_files(repo_dir, {f"changes/{longest}.md": TEXT})
    commit_all(repo_dir)
    made = claims.claim(_repo(repo_dir), longest, f"changes/{longest}.md", "connie")
    assert made.branch == f"claim/{longest}"
    deep = "/".join(["b" * 250] * 3 + ["c" * (1000 - len(claims.BRANCHES) - 753)])
    assert len(claims.branch_ref(deep).encode()) == 1000
    for item_id in (longest + "a", deep + "c"):
        with pytest.raises(claims.ClaimError) as info:
            claims.branch_ref(item_id)
        assert str(info.value) == (f"{item_id[:40]!r}... ({len(item_id)} characters) is too "
                                   "long to name a git branch; rename the item")


def test_repository_states_that_cannot_be_claimed_from(repo_dir: Path) -> None:
    with pytest.raises(claims.ClaimError, match="no commits"):
        claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    _make(repo_dir)
    git(repo_dir, "checkout", "-q", "--detach")
    with pytest.raises(claims.ClaimError, match="detached"):
        claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    git(repo_dir, "checkout", "-q", "main")
    with pytest.raises(claims.ClaimError, match="cannot name a git branch"):
        claims.claim(_repo(repo_dir), "a..b", ITEM, "connie")
    os.symlink("item.md", repo_dir / "changes/link.md")
    commit_all(repo_dir)
    with pytest.raises(claims.ClaimRefused, match="symlink"):
        claims.claim(_repo(repo_dir), "link", "changes/link.md", "connie")
    (repo_dir / "changes/bad.md").write_text("---\nstatus: [\n---\n")
    commit_all(repo_dir)
    with pytest.raises(claims.ClaimRefused, match="not valid YAML"):
        claims.claim(_repo(repo_dir), "bad", "changes/bad.md", "connie")
    assert _branches(repo_dir) == []


def test_release_refuses_unmerged_work_unless_forced(repo_dir: Path) -> None:
    _make(repo_dir)
    claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    released = claims.release(_repo(repo_dir), "item", "connie")
    assert released.local is not None and _branches(repo_dir) == []
    with pytest.raises(claims.ClaimRefused, match="not claimed"):
        claims.release(_repo(repo_dir), "item", "connie")
    claims.claim(_repo(repo_dir), "item", ITEM, "connie")
    git(repo_dir, "checkout", "-q", "claim/item")
    write_files(repo_dir, {"work.md": "work\n"})
    commit_all(repo_dir, "work")
    git(repo_dir, "checkout", "-q", "main")
    with pytest.raises(claims.ClaimRefused, match="1 unmerged commit"):
        claims.release(_repo(repo_dir), "item", "connie")
    assert _branches(repo_dir) == ["refs/heads/claim/item"]
    git(repo_dir, "merge", "-q", "--no-edit", "claim/item")
    claims.release(_repo(repo_dir), "item", "connie")  # merged now
    claims.claim(_repo(repo_dir), "other", "changes/other.md", "dave")
    git(repo_dir, "checkout", "-q", "claim/other")
    write_files(repo_dir, {"more.md": "more\n"})
    commit_all(repo_dir, "more")
    git(repo_dir, "checkout", "-q", "main")
    assert claims.release(_repo(repo_dir), "other", "dave", force=True, reason="abandoned").forced
    assert _branches(repo_dir) == []


def test_worktree_checkout_and_release_guard(repo_dir: Path, tmp_path: Path) -> None:
    _make(repo_dir)
    where = tmp_path / "connie-item"
    made = claims.claim(_repo(repo_dir), "item", ITEM, "connie", worktree=where)
    assert made.worktree == str(where.resolve())
    assert "assignee: connie" in (where / ITEM).read_text()
    assert git(where, "symbolic-ref", "HEAD").strip() == "refs/heads/claim/item"
    with pytest.raises(claims.ClaimRefused, match="checked out in"):
        claims.release(_repo(repo_dir), "item", "connie")
    with pytest.raises(claims.ClaimError, match="already exists"):
        claims.claim(_repo(repo_dir), "other", "changes/other.md", "dave", worktree=where)
    assert _branches(repo_dir) == ["refs/heads/claim/item"]


def test_remote_claim_first_push_wins(remote: Path) -> None:
    one, two = clone(remote, "one"), clone(remote, "two")
    won = claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    assert won.remote == "origin"
    assert git(remote, "rev-parse", "claim/item").strip() == won.commit
    with pytest.raises(claims.ClaimRefused, match="@connie") as info:
        claims.claim(_repo(two), "item", ITEM, "dave", remote="origin")
    assert info.value.holder == "connie"
    # The loser keeps no branch of its own, only the remote-tracking view of the winner.
    assert _branches(two) == ["refs/remotes/origin/HEAD", "refs/remotes/origin/claim/item",
                              "refs/remotes/origin/main"]
    assert claims.holders(_repo(two), {"item": ITEM}) == {"item": "connie"}
    # Without --remote a clone that has seen the remote claim still refuses.
    with pytest.raises(claims.ClaimRefused, match="origin/claim/item"):
        claims.claim(_repo(two), "item", ITEM, "dave")
    # Release on the remote from the winner's clone.
    claims.release(_repo(one), "item", "connie", remote="origin")
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    assert claims.claim(_repo(two), "item", ITEM, "dave", remote="origin").remote == "origin"


def test_unreachable_remote_leaves_nothing_behind(remote: Path, tmp_path: Path) -> None:
    one = clone(remote, "one")
    git(one, "remote", "add", "gone", str(tmp_path / "missing.git"))
    with pytest.raises(claims.ClaimRefused, match="nothing claimed"):
        claims.claim(_repo(one), "item", ITEM, "connie", remote="gone")
    assert _branches(one) == ["refs/remotes/origin/HEAD", "refs/remotes/origin/main"]
    git(one, "config", "exo.remote", "gone")
    assert claims.default_remote(_repo(one)) == "gone"


def test_a_remote_that_declines_the_push_leaves_nothing_behind(remote: Path) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho no claims here >&2\nexit 1\n")
    hook.chmod(0o755)
    one = clone(remote, "one")
    with pytest.raises(claims.ClaimRefused, match="declined"):
        claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    assert _branches(one) == ["refs/remotes/origin/HEAD", "refs/remotes/origin/main"]
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""


def test_only_the_holder_releases_and_a_forced_release_is_recorded(remote: Path) -> None:
    """Issue 13: a clone whose user never claimed deleted alice's remote branch."""
    alice, bob = clone(remote, "alice"), clone(remote, "bob")
    won = claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    with pytest.raises(claims.ClaimRefused, match="held by @alice, not @bob") as info:
        claims.release(_repo(bob), "item", "bob", remote="origin")
    assert info.value.holder == "alice"
    assert git(remote, "rev-parse", "claim/item").strip() == won.commit
    with pytest.raises(claims.ClaimError, match="--reason"):
        claims.release(_repo(bob), "item", "bob", force=True, remote="origin")
    assert git(remote, "rev-parse", "claim/item").strip() == won.commit
    forced = claims.release(_repo(bob), "item", "bob", force=True, remote="origin",
                            reason="alice is on leave")
    assert forced.holder == "alice" and forced.record is not None
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    # The record is on the remote, names who and why, and keeps the dropped tip reachable.
    assert git(remote, "rev-parse", "refs/exo/released/item").strip() == forced.record
    shown = git(remote, "log", "-1", "--format=%B", "refs/exo/released/item")
    assert "held by @alice, by @bob" in shown and "alice is on leave" in shown
    assert git(remote, "rev-parse", "refs/exo/released/item^1").strip() == won.commit
    # A second forced release builds on the first record instead of replacing it.
    claims.claim(_repo(clone(remote, "carol")), "item", ITEM, "carol", remote="origin")
    again = claims.release(_repo(bob), "item", "bob", force=True, remote="origin",
                           reason="second")
    assert git(remote, "rev-parse", "refs/exo/released/item^1").strip() == forced.record
    assert git(remote, "rev-parse", "refs/exo/released/item").strip() == again.record


def test_a_remote_claim_that_moved_after_it_was_read_is_not_deleted(remote: Path) -> None:
    alice = clone(remote, "alice")
    won = claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    moved = git(remote, "commit-tree", "-p", won.commit, "-m", "work pushed meanwhile",
                f"{won.commit}^{{tree}}").strip()
    # Between alice's read and her delete, another push moves the branch (the remote's
    # pre-receive hook plays that other pusher, once).
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n[ -e moved ] && exit 0\ntouch moved\n"
                    f"git update-ref refs/heads/claim/item {moved} {won.commit}\n")
    hook.chmod(0o755)
    with pytest.raises(claims.ClaimRefused, match="moved since it was read"):
        claims.release(_repo(alice), "item", "alice", remote="origin")
    assert git(remote, "rev-parse", "claim/item").strip() == moved
    assert _branches(alice)[0] == "refs/heads/claim/item"  # the local claim is kept too


def test_a_claim_killed_before_its_push_is_published_by_the_retry(remote: Path) -> None:
    """Issue 13: kill -9 between the local branch and the push blocked the retry."""
    one = clone(remote, "one")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ntouch pushing\nsleep 300\n")
    hook.chmod(0o755)
    proc = subprocess.Popen([str(EXO), "claim", "item", "--agent", "connie", "--remote",
                             "origin"], cwd=one, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (remote / "pushing").exists():
        assert proc.poll() is None, "the claim ended before its push started"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    hook.unlink()
    local = git(one, "rev-parse", "claim/item").strip()
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    with pytest.raises(claims.ClaimRefused, match="@connie"):
        claims.claim(_repo(one), "item", ITEM, "dave", remote="origin")
    again = claims.claim(_repo(one), "item", ITEM, "connie", remote="origin")
    assert again.commit == local and again.previous_assignee is None and again.resumed
    assert git(remote, "rev-parse", "claim/item").strip() == local
    # Retrying once more, already published, is still fine and changes nothing.
    assert claims.claim(_repo(one), "item", ITEM, "connie", remote="origin").commit == local


def test_a_forced_release_deletes_nothing_when_its_record_cannot_land(remote: Path) -> None:
    """The delete and the record are one atomic push: a record ref that moved on the
    remote after it was read rejects both, so no release goes unrecorded."""
    alice, bob = clone(remote, "alice"), clone(remote, "bob")
    won = claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n[ -e moved ] && exit 0\ntouch moved\n"
                    f"git update-ref refs/exo/released/item {won.commit}\n")
    hook.chmod(0o755)
    with pytest.raises(claims.ClaimRefused, match="not deleted"):
        claims.release(_repo(bob), "item", "bob", force=True, remote="origin", reason="r")
    assert git(remote, "rev-parse", "claim/item").strip() == won.commit
    assert git(bob, "for-each-ref", "refs/exo/released") == ""


handles = st.text(alphabet="ab.-_1", min_size=1, max_size=4)


@settings(max_examples=15, deadline=None)
@given(claimer=handles, releaser=handles, forced=st.booleans())
def test_release_succeeds_exactly_for_the_holder_or_with_force(claimer: str, releaser: str,
                                                               forced: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        git(root, "init", "-q")
        _make(root)
        made = claims.claim(_repo(root), "item", ITEM, claimer)
        try:
            done = claims.release(_repo(root), "item", releaser, force=forced,
                                  reason="r" if forced else None)
        except claims.ClaimRefused as refused:
            assert not forced and releaser != claimer and refused.holder == claimer
            assert git(root, "rev-parse", "claim/item").strip() == made.commit
        else:
            assert forced or releaser == claimer
            assert done.holder == claimer and (done.record is not None) == forced
            assert _branches(root) == []
