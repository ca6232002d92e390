"""`strato guard sync` and `merge-pins --resolve` in process against a real bare remote
(issue 27's mutation run reached neither): what is fetched, merged and pushed with a
lease, a race lost to a concurrent push, and a pin conflict git left in the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from strato.guard import pin, store, team
from strato.guard.errors import GuardError
from tests.support.guard import Workspace, anchor, refused_tip, register_tip
from tests.support.repos import git
from tropo.git import refs as gitrefs


def _remote(ws: Workspace, tmp_path: Path) -> Path:
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    return remote


def _on(remote: Path, ref: str = store.REF) -> str | None:
    found = git(remote, "for-each-ref", "--format=%(objectname)", ref).strip()
    return found or None


def _other(ws: Workspace, remote: Path, rid: str) -> str:
    """Another clone registers ``rid`` and pushes its notes; their tip (not in ``ws``)."""
    root = ws.tmp / "other"
    git(ws.tmp, "clone", "-q", str(remote), str(root))
    if _on(remote) is not None:
        git(root, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    tip = register_tip(Workspace(root, ws.tmp), rid)
    git(root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    return tip


def _anchors(ws: Workspace, tip: str | None) -> set[str]:
    return {kept.anchor for kept in store.ledgers(ws.repo, tip)}


def test_sync_pushes_notes_the_remote_lacks_and_then_has_nothing_to_push(ws: Workspace, tmp_path: Path) -> None:
    remote = _remote(ws, tmp_path)
    local = register_tip(ws, "sync:a")
    assert team.sync(ws.repo, "origin") == {"remote": "origin", "notes_tip": local, "pushed": local}
    assert _on(remote) == local
    assert team.sync(ws.repo, "origin") == {"remote": "origin", "notes_tip": local, "pushed": None}


def test_sync_of_a_clone_with_no_notes_pushes_nothing(ws: Workspace, tmp_path: Path) -> None:
    remote = _remote(ws, tmp_path)
    assert team.sync(ws.repo, "origin") == {"remote": "origin", "notes_tip": None, "pushed": None}
    assert _on(remote) is None


def test_sync_behind_the_remote_fetches_its_notes_and_keeps_the_ref(ws: Workspace, tmp_path: Path) -> None:
    remote = _remote(ws, tmp_path)
    local = register_tip(ws, "sync:behind")
    git(ws.root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    theirs = _other(ws, remote, "sync:ahead")
    assert theirs not in ws.repo
    done = team.sync(ws.repo, "origin")
    assert done == {"remote": "origin", "notes_tip": theirs, "pushed": None}
    assert theirs in ws.repo and gitrefs.read_ref(ws.repo, store.REF) == local


def test_sync_pushes_the_union_of_forked_notes_and_keeps_the_ref_on_its_own(
    ws: Workspace, tmp_path: Path
) -> None:
    remote = _remote(ws, tmp_path)
    theirs = _other(ws, remote, "sync:theirs")
    local = register_tip(ws, "sync:ours")
    done = team.sync(ws.repo, "origin")
    merged = done["notes_tip"]
    assert done == {"remote": "origin", "notes_tip": merged, "pushed": merged} and merged not in (local, theirs)
    assert _on(remote) == merged and _anchors(ws, merged) == {anchor("sync:theirs"), anchor("sync:ours")}
    assert gitrefs.read_ref(ws.repo, store.REF) == local


def test_sync_refuses_notes_that_grew_one_ledger_differently_and_pushes_nothing(
    ws: Workspace, tmp_path: Path
) -> None:
    remote = _remote(ws, tmp_path)
    register_tip(ws, "sync:one")
    git(ws.root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    other = Workspace(tmp_path / "b", tmp_path)
    git(tmp_path, "clone", "-q", str(remote), str(other.root))
    git(other.root, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    theirs = refused_tip(other, "sync:one")
    git(other.root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    refused_tip(ws, "sync:one")
    with pytest.raises(GuardError) as caught:
        team.sync(ws.repo, "origin")
    assert caught.value.error_type == "notes_conflict" and f"--onto {theirs}" in caught.value.message
    assert _on(remote) == theirs


def test_sync_mirrors_every_pushed_branchs_pinned_notes_unless_told_not_to(
    ws: Workspace, tmp_path: Path
) -> None:
    remote = _remote(ws, tmp_path)
    local = register_tip(ws, "sync:mirror")
    git(ws.root, "push", "-q", "origin", f"{store.REF}:{team.branch_ref('pr-1')}")
    git(ws.root, "update-ref", team.branch_ref("stale"), local)
    team.sync(ws.repo, "origin", mirror=False)
    assert git(ws.root, "for-each-ref", "--format=%(refname)", team.BRANCHES).split() == [
        team.branch_ref("stale")]
    team.sync(ws.repo, "origin")
    assert git(ws.root, "for-each-ref", "--format=%(refname)", team.BRANCHES).split() == [
        team.branch_ref("pr-1")]
    assert _on(remote) == local


def test_sync_with_a_remote_it_cannot_read_is_one_line(ws: Workspace, tmp_path: Path) -> None:
    register_tip(ws, "sync:nowhere")
    for mirror in (True, False):
        with pytest.raises(GuardError) as caught:
            team.sync(ws.repo, str(tmp_path / "no-such-remote"), mirror=mirror)
        assert caught.value.error_type == "sync_failed" and "\n" not in caught.value.message
        assert "no-such-remote" in caught.value.message


def test_sync_whose_push_fails_is_one_line_and_moves_nothing(ws: Workspace, tmp_path: Path) -> None:
    """The remote reads but will not take a push (its receive-pack fails, as on a
    read-only mirror): one line naming the push."""
    remote = _remote(ws, tmp_path)
    theirs = _other(ws, remote, "sync:ro-theirs")
    register_tip(ws, "sync:ro-ours")
    git(ws.root, "config", "remote.origin.receivepack", "false")
    with pytest.raises(GuardError) as caught:
        team.sync(ws.repo, "origin")
    assert caught.value.error_type == "sync_failed"
    assert caught.value.message.startswith("cannot push to 'origin': ")
    assert _on(remote) == theirs


def _racing_hook(remote: Path, one: str, other: str, times: int) -> None:
    """A concurrent push, ``times`` times: while a push is being received, the remote's
    notes ref moves from ``one`` to ``other`` or back (outside git's quarantine, as
    another push lands). The test writes this hook; nothing runs from a work tree."""
    hook = remote / "hooks" / "pre-receive"
    count = remote / "raced"
    hook.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{count}" 2>/dev/null || echo 0)\n'
        f'[ "$n" -ge {times} ] && exit 0\n'
        f'echo $((n + 1)) > "{count}"\n'
        f'[ "$(git rev-parse {store.REF})" = {one} ] && to={other} || to={one}\n'
        f"env -u GIT_QUARANTINE_PATH git update-ref {store.REF} $to\n"
    )
    hook.chmod(0o755)


def test_a_sync_that_loses_a_race_fetches_merges_and_pushes_again(ws: Workspace, tmp_path: Path) -> None:
    remote = _remote(ws, tmp_path)
    first = _other(ws, remote, "race:first")
    ahead = register_tip(Workspace(tmp_path / "other", tmp_path), "race:second")  # on top of first
    git(tmp_path / "other", "push", "-q", str(remote), f"{ahead}:refs/heads/parked-notes")
    _racing_hook(remote, first, ahead, 1)
    local = register_tip(ws, "race:ours")
    done = team.sync(ws.repo, "origin")
    assert (remote / "raced").read_text().strip() == "1" and first != ahead
    merged = done["pushed"]
    assert merged is not None and _on(remote) == merged == done["notes_tip"]
    assert _anchors(ws, merged) == {anchor("race:first"), anchor("race:second"), anchor("race:ours")}
    assert gitrefs.read_ref(ws.repo, store.REF) == local


def test_a_sync_that_keeps_losing_gives_up_in_one_line(ws: Workspace, tmp_path: Path) -> None:
    remote = _remote(ws, tmp_path)
    first = _other(ws, remote, "race:moving")
    ahead = register_tip(Workspace(tmp_path / "other", tmp_path), "race:moved")
    git(tmp_path / "other", "push", "-q", str(remote), f"{ahead}:refs/heads/parked-notes")
    _racing_hook(remote, first, ahead, 1000)
    git(ws.root, "update-ref", "-d", store.REF)
    register_tip(ws, "race:never")
    with pytest.raises(GuardError) as caught:
        team.sync(ws.repo, "origin")
    assert (caught.value.error_type, caught.value.message) == (
        "sync_failed", "origin's guard notes kept moving; try again")
    assert (remote / "raced").read_text().strip() == str(team.MAX_ATTEMPTS)


def _conflicted(ws: Workspace, ours: str, theirs: str) -> None:
    """A merge in ``ws`` that left ``ours`` and ``theirs`` as the two sides of the pin."""
    ws.commit({pin.PIN_PATH: "none\n"}, "base pin")
    git(ws.root, "checkout", "-q", "-b", "theirs")
    ws.commit({pin.PIN_PATH: theirs + "\n"}, "their pin")
    git(ws.root, "checkout", "-q", "-")
    ws.commit({pin.PIN_PATH: ours + "\n"}, "our pin")
    git(ws.root, "merge", "-q", "theirs", check=False)
    assert git(ws.root, "ls-files", "--unmerged", "--", pin.PIN_PATH).strip()


def test_resolve_writes_the_pin_of_both_sides_union(ws: Workspace) -> None:
    ours = register_tip(ws, "resolve:a")
    git(ws.root, "update-ref", "-d", store.REF)
    theirs = register_tip(ws, "resolve:b")
    _conflicted(ws, ours, theirs)
    merged = team.resolve(ws.repo)
    assert merged is not None and (ws.root / pin.PIN_PATH).read_text() == f"{merged}\n"
    assert _anchors(ws, merged) == {anchor("resolve:a"), anchor("resolve:b")}


@pytest.mark.parametrize("bad", ["ours", "theirs"])
def test_resolve_names_the_side_that_is_not_a_pin(ws: Workspace, bad: str) -> None:
    tip = register_tip(ws, "resolve:c")
    _conflicted(ws, *(("garbage", tip) if bad == "ours" else (tip, "garbage")))
    with pytest.raises(GuardError) as caught:
        team.resolve(ws.repo)
    word = "our" if bad == "ours" else "their"
    assert (caught.value.error_type, caught.value.message) == (
        "invalid_usage", f"{word} pin is not a guard pin (a notes commit id or `none`): not merged")


def test_resolve_without_a_conflict_resolves_nothing(ws: Workspace) -> None:
    ws.commit({pin.PIN_PATH: "none\n"}, "a pin")
    with pytest.raises(GuardError) as caught:
        team.resolve(ws.repo)
    assert (caught.value.error_type, caught.value.message) == (
        "invalid_usage", f"{pin.PIN_PATH} is not in conflict: nothing to resolve")


def test_resolve_of_a_pin_one_side_deleted_resolves_nothing(ws: Workspace) -> None:
    """A delete/modify conflict leaves only one side's pin: there is no union to write."""
    tip = register_tip(ws, "resolve:gone")
    ws.commit({pin.PIN_PATH: "none\n"}, "base pin")
    git(ws.root, "checkout", "-q", "-b", "theirs")
    ws.commit({pin.PIN_PATH: tip + "\n"}, "their pin")
    git(ws.root, "checkout", "-q", "-")
    git(ws.root, "rm", "-q", pin.PIN_PATH)
    git(ws.root, "commit", "-q", "-m", "no pin")
    git(ws.root, "merge", "-q", "theirs", check=False)
    assert git(ws.root, "ls-files", "--unmerged", "--", pin.PIN_PATH).strip()
    with pytest.raises(GuardError) as caught:
        team.resolve(ws.repo)
    assert caught.value.message == f"{pin.PIN_PATH} is not in conflict: nothing to resolve"


def test_resolve_with_an_index_git_cannot_read_is_one_line(ws: Workspace) -> None:
    (ws.root / ".git" / "index").write_bytes(b"not an index")
    with pytest.raises(GuardError) as caught:
        team.resolve(ws.repo)
    assert caught.value.error_type == "invalid_usage" and "\n" not in caught.value.message
    assert caught.value.message.startswith(f"cannot read the conflicted {pin.PIN_PATH}: git ls-files: ")
