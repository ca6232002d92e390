"""The pre-push hook verifies guard ledgers and carries them to the remote."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

from hooks import install as installer
from strato.guard import engine, pin, store
from tests.support.guard import POLICY, Workspace, ledger_text, put_ledger
from tests.support.repos import git
from tropo.git import repo as gitrepo


def _remote(ws: Workspace) -> Path:
    bare = ws.tmp / "remote.git"
    git(ws.tmp, "init", "-q", "--bare", str(bare))
    git(ws.root, "remote", "add", "origin", str(bare))
    installer.install(ws.root, ("pre-push",))
    return bare


def test_ledgers_travel_with_a_push(ws: Workspace) -> None:
    bare = _remote(ws)
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    git(ws.root, "push", "-q", "origin", "main")
    assert git(bare, "rev-parse", store.REF).strip() == git(ws.root, "rev-parse", store.REF).strip()


def test_a_tampered_ledger_refuses_the_push(ws: Workspace) -> None:
    bare = _remote(ws)
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    text = ledger_text(ws, anchor)
    put_ledger(ws, anchor, text.replace('"initial":"draft"', '"initial":"released"'))
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=ws.root, capture_output=True, text=True,
                          check=False)
    assert proc.returncode != 0
    assert "guard:" in proc.stderr and "push refused" in proc.stderr
    assert git(bare, "for-each-ref").strip() == ""  # nothing left this clone


def _pinned_main(ws: Workspace, rid: str = "svc:api") -> str:
    """Register ``rid`` and commit the pin on main, as a contributor does; the notes tip."""
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    ws.pin()
    return git(ws.root, "rev-parse", store.REF).strip()


def _push(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "origin", *args], cwd=ws.root, capture_output=True, text=True,
                          check=False)


def _other_clone(ws: Workspace, bare: Path, name: str = "other") -> Path:
    other = ws.tmp / name
    git(ws.tmp, "clone", "-q", str(bare), str(other))
    git(other, "fetch", "-q", "origin", f"{store.REF}:{store.REF}", check=False)
    return other


def test_a_branch_and_the_notes_it_pins_travel_together(ws: Workspace) -> None:
    bare = _remote(ws)
    pinned = _pinned_main(ws)
    proc = _push(ws, "main")
    assert proc.returncode == 0, proc.stderr
    assert git(bare, "rev-parse", store.REF).strip() == pinned
    assert git(bare, "show", f"main:{pin.PIN_PATH}").strip() == pinned


def test_notes_that_diverged_from_origins_travel_merged(ws: Workspace) -> None:
    """Another clone pushed notes of another ledger: the hook merges ours with origin's
    (nobody's entries lost) and the branch leaves with the pin origin now contains."""
    bare = _remote(ws)
    git(ws.root, "push", "-q", "origin", "main")
    other = _other_clone(ws, bare)
    engine.register(gitrepo.require(other), {"resource_id": "svc:other", **copy.deepcopy(POLICY)})
    git(other, "push", "-q", "--no-verify", "origin", store.REF)  # origin's notes: another history
    theirs = git(other, "rev-parse", store.REF).strip()
    pinned = _pinned_main(ws)
    proc = _push(ws, "main")
    assert proc.returncode == 0, proc.stderr
    merged = git(bare, "rev-parse", store.REF).strip()
    assert git(bare, "rev-parse", f"{merged}^1", f"{merged}^2").split() == [pinned, theirs]
    assert git(bare, "show", f"main:{pin.PIN_PATH}").strip() == pinned


def test_notes_that_do_not_merge_travel_under_the_branchs_own_ref(ws: Workspace) -> None:
    """Both clones registered the same resource: the shared notes keep origin's (named in a
    warning, with the command that re-appends), and the branch's pinned notes travel under
    refs/notes/vivary/branches/main, where its review finds them."""
    bare = _remote(ws)
    git(ws.root, "push", "-q", "origin", "main")
    other = _other_clone(ws, bare)
    engine.register(gitrepo.require(other), {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    git(other, "push", "-q", "--no-verify", "origin", store.REF)  # origin's notes: another history
    theirs = git(other, "rev-parse", store.REF).strip()
    pinned = _pinned_main(ws)
    proc = _push(ws, "main")
    assert proc.returncode == 0, proc.stderr
    assert "guard ledgers not merged into origin's: both sides appended to the ledger of 'svc:api'" in proc.stderr
    assert git(bare, "rev-parse", store.REF).strip() == theirs
    assert git(bare, "rev-parse", "refs/notes/vivary/branches/main").strip() == pinned


def test_a_branch_pinning_notes_the_remote_cannot_get_is_refused(ws: Workspace) -> None:
    bare = _remote(ws)
    git(ws.root, "push", "-q", "origin", "main")
    before = git(bare, "rev-parse", "main").strip()
    _pinned_main(ws)
    missing = "1" * 40  # a notes commit this clone never had
    ws.commit({pin.PIN_PATH: missing + "\n"}, "pins notes nobody has")
    proc = _push(ws, "main")
    assert proc.returncode == 1, proc.stderr
    assert f"guard: main pins notes commit {missing[:12]}, which origin lacks" in proc.stderr
    assert "push refused: 1 problem" in proc.stderr
    assert git(bare, "rev-parse", "main").strip() == before  # the branch did not leave

def test_origin_notes_past_the_pin_need_no_fetch(ws: Workspace) -> None:
    """Another clone appended after ours was pushed: the pin is in origin's notes, though
    this clone has not fetched them; checking that writes no local ref."""
    bare = _remote(ws)
    pinned = _pinned_main(ws)
    assert _push(ws, "main").returncode == 0
    other = _other_clone(ws, bare)
    engine.register(gitrepo.require(other), {"resource_id": "svc:other", **copy.deepcopy(POLICY)})
    git(other, "push", "-q", "--no-verify", "origin", store.REF)
    ws.commit({"more.txt": "more\n"})
    git(ws.root, "config", "--add", "remote.origin.fetch", "+refs/notes/*:refs/notes/*")  # a common set-up
    moved = git(ws.root, "rev-parse", "origin/main", "main").split()  # the push moves origin/main
    refs = git(ws.root, "for-each-ref").replace(*moved)
    proc = _push(ws, "main")
    assert proc.returncode == 0, proc.stderr
    assert git(bare, "rev-parse", "main").strip() == git(ws.root, "rev-parse", "main").strip()
    assert git(ws.root, "for-each-ref") == refs and not (ws.root / ".git" / "FETCH_HEAD").exists()
    assert git(ws.root, "rev-parse", store.REF).strip() == pinned


def test_a_garbage_pin_is_refused_without_echoing_it(ws: Workspace) -> None:
    bare = _remote(ws)
    ws.commit({pin.PIN_PATH: "\x1b]0;owned\x07\n"})
    proc = _push(ws, "main")
    assert proc.returncode == 1 and "\x1b" not in proc.stderr
    assert f"guard: main: its {pin.PIN_PATH} is not a commit id" in proc.stderr
    assert git(bare, "for-each-ref").strip() == ""


def test_a_branch_pinning_no_ledgers_pushes_without_notes(ws: Workspace) -> None:
    bare = _remote(ws)
    ws.pin()
    assert _push(ws, "main").returncode == 0
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
