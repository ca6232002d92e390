"""The pre-push check's edges the mutation runs of issue 27 found unpinned: which refs are
checked, a remote that cannot be asked (fails closed), notes found on the remote's
shared ref or fetched past the pin, every branch checked, a push from a bare
repository, the notes commits about to be pushed judged for their signature, and each
branch's own notes ref pushed (or a warning saying why not)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from strato.guard import engine, pin, prepush, store, team
from tests.support.guard import POLICY, Workspace
from tests.support.repos import git
from tropo.git import remote as gitremote
from tropo.git import repo as gitrepo
from tropo.git.remote import Push, RefUpdate

A, B, ZERO = "a" * 40, "b" * 40, "0" * 40


def test_only_branches_created_or_moved_are_checked_for_their_pin(tmp_path: Path) -> None:
    updates = (
        RefUpdate("refs/heads/main", A, "refs/heads/main", ZERO),
        RefUpdate("refs/heads/claim/x", B, "refs/heads/claim/x", ZERO),  # a claim branch
        RefUpdate("refs/tags/v1", B, "refs/tags/v1", ZERO),  # not a branch
        RefUpdate("(delete)", ZERO, "refs/heads/gone", B),  # a branch deleted
        RefUpdate("(delete)", ZERO, "refs/tags/old", B),
    )
    assert prepush._branches(Push(tmp_path, "origin", "url", updates)) == [("main", A)]


def _main_pinned(ws: Workspace) -> tuple[Push, str]:
    """main pins the notes commit of a fresh ledger; the push of main to origin (a bare
    remote with nothing yet), and the notes commit pinned."""
    bare = ws.tmp / "remote.git"
    git(ws.tmp, "init", "-q", "--bare", str(bare))
    git(ws.root, "remote", "add", "origin", str(bare))
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    head = ws.pin()
    return Push(ws.root, "origin", str(bare), (RefUpdate("refs/heads/main", head, "refs/heads/main", ZERO),)), \
        git(ws.root, "rev-parse", store.REF).strip()


def test_a_branch_ref_the_remote_cannot_be_asked_about_fails_closed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    push, pinned = _main_pinned(ws)
    real = gitremote.remote_oid

    def flaky(cwd: Path, remote: str, ref: str) -> str | None:
        if ref == team.branch_ref("main"):
            raise gitremote.RemoteError("cannot read 'origin': connection reset")
        return real(cwd, remote, ref)

    monkeypatch.setattr(gitremote, "remote_oid", flaky)
    assert prepush.pins_pushed(push) == [
        f"main pins notes commit {pinned[:12]}, which origin lacks (it has no guard notes): push the "
        f"notes (`git push origin {store.REF}`), or fetch them and re-pin (`{pin.FIX}`) if they moved"
    ]


def test_the_branchs_own_notes_ref_is_asked_of_the_pushing_repositorys_remote(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    push, pinned = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", f"{pinned}:{team.branch_ref('main')}")
    monkeypatch.chdir(ws.tmp)  # not the work tree: `origin` means nothing here
    assert prepush.pins_pushed(push) == []


def test_a_push_from_a_bare_repository_has_no_work_tree_pin_to_commit(ws: Workspace) -> None:
    bare = ws.tmp / "mirror.git"
    git(ws.tmp, "clone", "-q", "--bare", str(ws.root), str(bare))
    head = git(bare, "rev-parse", "HEAD").strip()
    push = Push(bare, "origin", "url", (RefUpdate("refs/heads/main", head, "refs/heads/main", ZERO),))
    assert prepush._uncommitted(gitrepo.require(bare), push) == []


def test_only_a_current_work_tree_pin_left_uncommitted_refuses(ws: Workspace) -> None:
    head = ws.commit({"a.txt": "a\n"})
    push = Push(ws.root, "origin", "url", (RefUpdate("refs/heads/main", head, "refs/heads/main", ZERO),))
    (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / pin.PIN_PATH).write_text("1" * 40 + "\n")  # notes this clone lacks: not current
    assert prepush._uncommitted(ws.repo, push) == []
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    tip = pin.write(ws.repo)
    assert tip is not None
    assert prepush._uncommitted(ws.repo, push) == [
        f"main: the work tree pins notes commit {tip[:12]} but the branch does not: commit it "
        f"(`git add {pin.PIN_PATH} && git commit`)"
    ]


def test_a_pin_the_remotes_shared_notes_contain_needs_no_branch_notes_ref(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    push, _ = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)  # shared notes only, no branch ref
    monkeypatch.chdir(ws.tmp)  # not the work tree: the remote is the pushing repository's
    assert prepush.pins_pushed(push) == []


def test_remote_notes_past_the_pin_are_fetched_to_find_it(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    push, pinned = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)
    other = ws.tmp / "other"
    git(ws.tmp, "clone", "-q", push.url, str(other))
    git(other, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    engine.register(gitrepo.require(other), {"resource_id": "svc:other", **copy.deepcopy(POLICY)})
    git(other, "push", "-q", "--no-verify", "origin", store.REF)  # origin's notes moved past the pin
    assert git(other, "rev-parse", store.REF).strip() not in ws.repo
    monkeypatch.chdir(ws.tmp)  # not the work tree: the remote is the pushing repository's
    assert prepush.pins_pushed(push) == []
    assert git(ws.root, "rev-parse", store.REF).strip() == pinned  # found, and no ref written


def test_every_branch_pushed_is_checked_whatever_the_ones_before_it_pinned(ws: Workspace) -> None:
    push, shared = _main_pinned(ws)
    a = git(ws.root, "rev-parse", "HEAD").strip()  # pins notes origin's shared ref contains
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)
    engine.register(ws.repo, {"resource_id": "svc:b", **copy.deepcopy(POLICY)})
    b = ws.pin()  # pins notes only origin's refs/notes/vivary/branches/b holds
    own = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "push", "-q", "--no-verify", "origin", f"{own}:{team.branch_ref('b')}")
    c = ws.commit({pin.PIN_PATH: "garbage\n"}, "a garbage pin")
    missing = "1" * 40
    d = ws.commit({pin.PIN_PATH: missing + "\n"}, "pins notes nobody has")
    push = Push(ws.root, "origin", push.url, tuple(
        RefUpdate(f"refs/heads/{name}", sha, f"refs/heads/{name}", ZERO)
        for name, sha in (("d", d), ("c", c), ("b", b), ("a", a))
    ))
    assert prepush.pins_pushed(push) == [
        f"c: its {pin.PIN_PATH} is not a commit id: run `{pin.FIX}`",
        f"d pins notes commit {missing[:12]}, which origin lacks (it has guard notes at {shared[:12]}): "
        f"push the notes (`git push origin {store.REF}`), or fetch them and re-pin (`{pin.FIX}`) if they moved",
    ]


def test_a_second_push_verifies_the_notes_on_top_of_the_remotes(ws: Workspace) -> None:
    push, _ = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)  # origin has our notes
    engine.register(ws.repo, {"resource_id": "svc:more", **copy.deepcopy(POLICY)})  # one more on top
    assert prepush.check(push) == []


def test_the_notes_commits_about_to_be_pushed_are_judged_for_their_signature(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HEAD requires signed notes: the unsigned notes commit after origin's tip (asked of
    the pushing repository's remote) is a break, named by its id; origin's own are not."""
    ws.commit({".vivary/guard/config.toml": "require_signed_notes = true\n"}, "notes must be signed")
    push, _ = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)
    engine.register(ws.repo, {"resource_id": "svc:more", **copy.deepcopy(POLICY)})
    new = git(ws.root, "rev-parse", store.REF).strip()
    monkeypatch.chdir(ws.tmp)  # not the work tree: `origin` means nothing here
    assert prepush.check(push) == [f"notes commit {new[:12]} is not signed by a trusted key: unsigned"]


def test_a_remote_that_cannot_be_asked_leaves_the_ledgers_checked_whole(ws: Workspace) -> None:
    push, _ = _main_pinned(ws)
    nowhere = Push(ws.root, str(ws.tmp / "missing.git"), "url", push.updates)
    assert prepush.check(nowhere) == []


def test_the_check_names_a_work_tree_pin_left_uncommitted(ws: Workspace) -> None:
    push, _ = _main_pinned(ws)
    engine.register(ws.repo, {"resource_id": "svc:more", **copy.deepcopy(POLICY)})
    tip = pin.write(ws.repo)
    assert tip is not None
    assert prepush.check(push) == [
        f"main: the work tree pins notes commit {tip[:12]} but the branch does not: commit it "
        f"(`git add {pin.PIN_PATH} && git commit`)"
    ]


def test_each_branch_pinning_notes_here_gets_its_own_notes_ref_whatever_the_ones_before(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Branch a pins notes this clone lacks (skipped, no warning), b's are on origin
    already (nothing to push), c's move the older value origin has under
    refs/notes/vivary/branches/c (the lease is what origin had); all asked of and pushed
    to the pushing repository's remote."""
    push, older = _main_pinned(ws)
    b = git(ws.root, "rev-parse", "HEAD").strip()
    for name in ("b", "c"):
        git(ws.root, "push", "-q", "--no-verify", "origin", f"{older}:{team.branch_ref(name)}")
    a = ws.commit({pin.PIN_PATH: "1" * 40 + "\n"}, "pins notes nobody has")
    engine.register(ws.repo, {"resource_id": "svc:c", **copy.deepcopy(POLICY)})
    c = ws.pin()
    newer = git(ws.root, "rev-parse", store.REF).strip()
    push = Push(ws.root, "origin", push.url, tuple(
        RefUpdate(f"refs/heads/{name}", sha, f"refs/heads/{name}", ZERO) for name, sha in (("a", a), ("b", b), ("c", c))
    ))
    monkeypatch.chdir(ws.tmp)
    assert prepush.sync_notes(push) == []
    refs = git(ws.root, "ls-remote", "origin", "refs/notes/vivary/branches/*").split()
    assert refs == [older, team.branch_ref("b"), newer, team.branch_ref("c")]
    assert git(ws.root, "for-each-ref", "refs/notes/vivary/branches/") == ""  # a push fetches no refs


def test_branches_pinning_nothing_are_not_asked_about(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """One branch has no pin file, one pins `none`: neither is checked nor carries notes."""
    push, _ = _main_pinned(ws)
    git(ws.root, "push", "-q", "--no-verify", "origin", store.REF)
    nothing = ws.commit({pin.PIN_PATH: pin.NONE + "\n"}, "pins no ledgers")
    git(ws.root, "rm", "-q", pin.PIN_PATH)
    git(ws.root, "commit", "-q", "-m", "no pin")
    unpinned = git(ws.root, "rev-parse", "HEAD").strip()
    push = Push(ws.root, "origin", push.url, tuple(
        RefUpdate(f"refs/heads/{name}", sha, f"refs/heads/{name}", ZERO) for name, sha in (("n", nothing), ("u", unpinned))
    ))
    monkeypatch.chdir(ws.tmp)
    assert prepush.pins_pushed(push) == [] and prepush.sync_notes(push) == []
    assert git(ws.root, "ls-remote", "origin", "refs/notes/vivary/branches/*") == ""


def test_a_remote_that_cannot_be_asked_is_named_for_each_branch(ws: Workspace) -> None:
    push, _ = _main_pinned(ws)
    nowhere = str(ws.tmp / "missing.git")
    warnings = prepush.sync_notes(Push(ws.root, nowhere, "url", push.updates))
    assert len(warnings) == 2 and warnings[0].startswith(f"guard ledgers not merged into {nowhere}'s: ")
    assert warnings[1].startswith(f"guard notes of main not pushed: cannot read {nowhere!r}: ")


def test_a_remote_that_refuses_the_branchs_notes_ref_is_named(ws: Workspace) -> None:
    """origin's own hook declines refs/notes/vivary/branches/*: a warning line says so
    (the push of the branch itself is judged by :func:`prepush.pins_pushed`)."""
    push, _ = _main_pinned(ws)
    hook = Path(push.url) / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase $1 in refs/notes/vivary/branches/*) exit 1;; esac\n')
    hook.chmod(0o755)
    assert prepush.sync_notes(push) == ["guard notes of main not pushed: [remote rejected] (hook declined)"]
    assert git(ws.root, "ls-remote", "origin", "refs/notes/vivary/branches/*").strip() == ""
