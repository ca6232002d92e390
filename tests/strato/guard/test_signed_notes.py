"""Guard writes sign their notes commits the way `git commit -S` does when git is set up
to sign with SSH, and `git verify-commit` accepts every one; a signing failure writes
nothing."""

from __future__ import annotations

import copy

import pytest

from strato.guard import engine, store
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Key, Workspace
from tests.support.repos import git
from tropo.git import refs as gitrefs

RID = "svc:signed"
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}


def sign_with(ws: Workspace, key: Key, *, gpgsign: str = "true") -> None:
    signers = ws.tmp / "allowed_signers"
    signers.write_text(key.signers_line("notes@example.com", 'namespaces="git"'))
    for name, value in (
        ("gpg.format", "ssh"),
        ("user.signingkey", str(key.path)),
        ("commit.gpgsign", gpgsign),
        ("gpg.ssh.allowedSignersFile", str(signers)),
    ):
        git(ws.root, "config", name, value)


def notes_commits(ws: Workspace) -> list[str]:
    return git(ws.root, "rev-list", store.REF).split()


def write_some(ws: Workspace) -> None:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, MOVE)["status"] == "applied"


def test_every_guard_notes_commit_is_signed_and_verifies(ws: Workspace, key: Key) -> None:
    sign_with(ws, key)
    write_some(ws)
    commits = notes_commits(ws)
    assert len(commits) == 2
    for sha in commits:
        assert "gpgsig -----BEGIN SSH SIGNATURE-----" in git(ws.root, "cat-file", "commit", sha)
        git(ws.root, "verify-commit", sha)  # raises unless git itself accepts the signature
    assert verify_repository(ws.repo).ok


def test_signing_is_off_unless_configured_and_can_be_turned_off(
    ws: Workspace, key: Key
) -> None:
    write_some(ws)
    sign_with(ws, key)
    git(ws.root, "config", "vivary.signNotes", "false")  # the guard's own switch wins
    assert engine.transition(ws.repo, {**MOVE, "from_state": "review", "to_state": "draft"})[
        "status"
    ] == "applied"
    for sha in notes_commits(ws):
        assert "gpgsig" not in git(ws.root, "cat-file", "commit", sha)


def test_only_the_guard_switch_signs_notes(ws: Workspace, key: Key) -> None:
    sign_with(ws, key, gpgsign="false")
    git(ws.root, "config", "vivary.signNotes", "true")
    write_some(ws)
    for sha in notes_commits(ws):
        git(ws.root, "verify-commit", sha)


@pytest.mark.parametrize("broken", ["missing key", "not a boolean"])
def test_a_signing_failure_is_one_line_and_writes_nothing(
    ws: Workspace, key: Key, broken: str
) -> None:
    write_some(ws)
    sign_with(ws, key)
    if broken == "missing key":
        git(ws.root, "config", "user.signingkey", str(ws.tmp / "no-such-key"))
    else:
        git(ws.root, "config", "vivary.signNotes", "maybe")
    before = gitrefs.read_ref(ws.repo, store.REF)
    with pytest.raises(GuardError) as info:
        engine.transition(ws.repo, {**MOVE, "from_state": "review", "to_state": "draft"})
    assert info.value.error_type == "signing_failed"
    assert "\n" not in info.value.message
    assert gitrefs.read_ref(ws.repo, store.REF) == before
