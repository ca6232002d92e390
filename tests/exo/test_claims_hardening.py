"""Claims under the findings of the security review of 2026-12-02: a failed retry never
deletes a branch it did not create, a remote name is never an option to git, and a ref
or an id that git cannot use is a one-line error, not a traceback. Real git, real bare
remotes, the real ``exo`` command where the exit code and the one line are the behaviour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from exo import claims
from hooks import install as installer
from tests.support.coordination import ITEM, clone, make_remote
from tests.support.repos import git

EXO = Path(sys.executable).parent / "exo"
KEPT = ("; kept your local claim/item (it may carry work): retry once origin takes it, "
        "or rename it to keep its commits (git branch -m claim/item NEW-NAME)")


def _repo(root: Path) -> pygit2.Repository:
    return pygit2.Repository(str(root))


def _exo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXO), *args], cwd=cwd, capture_output=True, text=True,
                          check=False)


def _tip(root: Path, ref: str) -> str:
    return git(root, "rev-parse", ref).strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def _work_on_claim(where: Path) -> str:
    """A work commit on the claim branch checked out at ``where``; its oid."""
    (where / "work.txt").write_text("work\n")
    git(where, "add", "work.txt")
    git(where, "commit", "-q", "-m", "work")
    return _tip(where, "HEAD")


def test_a_failed_publish_keeps_the_branch_its_work_and_its_worktree(remote: Path) -> None:
    alice = clone(remote, "alice")
    wt = alice.parent / "wt"
    claims.claim(_repo(alice), "item", ITEM, "alice", worktree=wt)
    work = _work_on_claim(wt)
    git(alice, "remote", "set-url", "origin", str(alice.parent / "nonexistent.git"))
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    assert str(info.value).startswith("cannot push to 'origin': ")
    assert str(info.value).endswith("; nothing claimed" + KEPT)
    assert _tip(alice, "refs/heads/claim/item") == work
    assert _tip(wt, "HEAD") == work and git(wt, "symbolic-ref", "HEAD").strip() == (
        "refs/heads/claim/item")


def test_a_lost_publish_keeps_the_local_work_and_names_the_winner(remote: Path) -> None:
    alice, bob = clone(remote, "alice"), clone(remote, "bob")
    wt = alice.parent / "wt"
    claims.claim(_repo(alice), "item", ITEM, "alice", worktree=wt)
    work = _work_on_claim(wt)
    git(wt, "worktree", "remove", str(wt))  # not checked out: the work alone must keep it
    won = claims.claim(_repo(bob), "item", ITEM, "bob", remote="origin")
    git(alice, "config", "exo.remote", "origin")
    proc = _exo(alice, "claim", "item", "--agent", "alice")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("exo: item is already claimed by @bob (origin/claim/item)"
                           f"{KEPT}\n")
    assert _tip(alice, "refs/heads/claim/item") == work
    assert _tip(remote, "refs/heads/claim/item") == won.commit
    # Renamed as told, the work stays and the item can be looked at again.
    git(alice, "branch", "-m", "claim/item", "alice-item")
    assert _tip(alice, "alice-item") == work


def test_a_claim_this_call_created_is_still_removed_when_its_push_fails(remote: Path) -> None:
    alice = clone(remote, "alice")
    git(alice, "remote", "set-url", "origin", str(alice.parent / "nonexistent.git"))
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    assert str(info.value).endswith("; nothing claimed")
    assert git(alice, "for-each-ref", "refs/heads/claim") == ""


def test_a_forced_release_from_another_clone_sticks_through_the_holders_next_push(
    remote: Path,
) -> None:
    alice, lead = clone(remote, "alice"), clone(remote, "lead")
    installer.install(alice, ("pre-push",))
    claims.claim(_repo(alice), "item", ITEM, "alice", remote="origin")
    claims.release(_repo(lead), "item", "lead", force=True, remote="origin",
                   reason="alice left the team")
    # Something unrelated (a tag: this workspace's graph would not pass the push check).
    git(alice, "tag", "unrelated")
    git(alice, "push", "-q", "origin", "unrelated")
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""
    assert _tip(remote, "refs/tags/unrelated") == _tip(alice, "HEAD")


@pytest.mark.parametrize("verb", ["claim", "release"])
@pytest.mark.parametrize("how", ["flag", "config"])
def test_a_remote_name_that_git_would_read_as_an_option_is_refused(
    remote: Path, verb: str, how: str
) -> None:
    alice = clone(remote, "alice")
    pwned = alice.parent / "PWNED"
    name = f"--upload-pack=touch {pwned};"
    if verb == "release":
        claims.claim(_repo(alice), "item", ITEM, "alice")
    if how == "config":
        git(alice, "config", "exo.remote", name)
        proc = _exo(alice, verb, "item", "--agent", "alice")
    else:
        proc = _exo(alice, verb, "item", "--agent", "alice", f"--remote={name}")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"exo: {name!r}: a remote name cannot start with '-'\n"
    assert not pwned.exists()
    refs = git(alice, "for-each-ref", "--format=%(refname)", "refs/heads/claim").split()
    assert refs == (["refs/heads/claim/item"] if verb == "release" else [])


def _refs(root: Path) -> str:
    return git(root, "for-each-ref", "--format=%(refname) %(objectname)")


def test_a_dangling_symbolic_claim_ref_is_a_one_line_error_and_nothing_changes(
    remote: Path,
) -> None:
    alice = clone(remote, "alice")
    git(alice, "symbolic-ref", "refs/heads/claim/item", "refs/heads/nope")
    before = _refs(alice)
    line = ("exo: refs/heads/claim/item does not point at a commit; delete it (git update-ref "
            "-d --no-deref refs/heads/claim/item) or repair it\n")
    for args in (["board"], ["claim", "item", "--agent", "a"],
                 ["claim", "item", "--agent", "a", "--remote", "origin"],
                 ["release", "item", "--agent", "a"]):
        proc = _exo(alice, *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", line), args
    assert _refs(alice) == before
    assert git(alice, "symbolic-ref", "refs/heads/claim/item").strip() == "refs/heads/nope"
    assert git(remote, "for-each-ref", "refs/heads/claim") == ""


@pytest.mark.parametrize("length", [300, 5000])
def test_an_id_too_long_for_a_branch_is_a_one_line_error(remote: Path, length: int) -> None:
    alice = clone(remote, "alice")
    item = "a" * length
    proc = _exo(alice, "release", "--agent", "a", "--", item)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"exo: {item[:40]!r}... ({length} characters) is too long to name "
                           "a git branch; rename the item\n")
    with pytest.raises(claims.ClaimError, match="too long to name a git branch"):
        claims.claim(_repo(alice), item, ITEM, "alice")
    with pytest.raises(claims.ClaimError, match="too long to name a git branch"):
        claims.release(_repo(alice), item, "alice", remote="origin")


def test_only_claim_branches_of_configured_remotes_are_claims(remote: Path) -> None:
    alice, bob = clone(remote, "alice"), clone(remote, "bob")
    git(bob, "push", "-q", "--no-verify", "origin", "HEAD:refs/heads/wip/claim/item")
    git(alice, "fetch", "-q", "origin")
    assert claims.claim_refs(_repo(alice)) == {}
    assert claims.holders(_repo(alice), {"item": ITEM}) == {}
    # A remote named ``claim``: its main is no item, its claim branch is the item's.
    git(alice, "remote", "add", "claim", str(remote))
    won = claims.claim(_repo(bob), "item", ITEM, "bob", remote="origin")
    git(alice, "fetch", "-q", "claim")
    assert claims.claim_refs(_repo(alice)) == {"item": ["refs/remotes/claim/claim/item"]}
    assert claims.holders(_repo(alice), {"item": ITEM}) == {"item": "bob"}
    with pytest.raises(claims.ClaimRefused) as info:
        claims.claim(_repo(alice), "item", ITEM, "alice")
    assert str(info.value) == "item is already claimed by @bob (claim/claim/item)"
    assert _tip(alice, "refs/remotes/claim/claim/item") == won.commit
    # The phantom under wip/ never blocked anything: after the real claim is released,
    # alice claims the item.
    claims.release(_repo(bob), "item", "bob", remote="origin")
    git(alice, "fetch", "-q", "--prune", "claim")
    assert claims.claim(_repo(alice), "item", ITEM, "alice").branch == "claim/item"
