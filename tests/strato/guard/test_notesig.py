"""Signed notes commits: real ``git commit-tree -S`` with SSH keys, checked natively the
way ``git verify-commit`` checks them, and a base that requires them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from strato.guard import notesig, signers, sshsig, store
from strato.guard.errors import GuardError
from strato.guard.review import review
from strato.guard.verify import verify_repository
from tests.support.guard import Key, Workspace, at_review, git_verifies, make_key, resign
from tests.support.repos import git
from tropo.git import repo as gitrepo


@pytest.mark.parametrize("who", ["alice", "mallory"])
def test_native_check_matches_git_verify_commit(ws: Workspace, key: Key, who: str) -> None:
    at_review(ws)
    signer = key if who == "alice" else make_key(ws.tmp, "ecdsa", "mallory")
    resign(ws, signer, None)
    tip = git(ws.root, "rev-parse", store.REF).strip()
    allowed = key.signers_line("alice@example.com")
    ours, why = notesig.signer_of(gitrepo.resolve_commit(ws.repo, tip), signers.parse(allowed), 0)
    assert (ours is not None) == git_verifies(ws, tip, allowed) == (who == "alice"), why


def required_base(ws: Workspace, key: Key) -> str:
    ws.commit(
        {
            ".vivary/guard/allowed_signers": key.signers_line("alice@example.com"),
            ".vivary/guard/config.toml": "require_signed_notes = true\n",
        },
        "main: notes must be signed",
    )
    base = ws.pin("main: no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    at_review(ws)
    return base


def test_base_requiring_signed_notes(ws: Workspace, key: Key, tmp_path: Path) -> None:
    base = required_base(ws, key)
    resign(ws, None, None)
    ws.pin()
    why = [str(b) for b in review(ws.repo, base).verify.breaks]
    assert why and all("is not signed by a trusted key: unsigned" in w for w in why)
    resign(ws, make_key(tmp_path, "ed25519", "mallory"), None)
    ws.pin()
    why = [str(b) for b in review(ws.repo, base).verify.breaks]
    assert why and all("is not an allowed signer for namespace git" in w for w in why)
    resign(ws, key, None)
    ws.pin()
    report = review(ws.repo, base)
    assert report.ok, [str(b) for b in report.verify.breaks]


def test_a_bad_signature_fails_even_when_not_required(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main")
    git(ws.root, "checkout", "-q", "-b", "feature")
    at_review(ws)
    resign(ws, make_key(ws.tmp, "ed25519", "mallory"), None)
    ws.pin()
    assert not review(ws.repo, base).ok
    resign(ws, None, None)
    ws.pin()
    assert review(ws.repo, base).ok


def test_verify_judges_the_notes_commits_it_would_push(ws: Workspace, key: Key) -> None:
    """``--since`` (the pre-push hook passes the remote's tip) marks what is new."""
    ws.commit(
        {
            ".vivary/guard/allowed_signers": key.signers_line("alice@example.com"),
            ".vivary/guard/config.toml": "require_signed_notes = true\n",
        },
        "notes must be signed",
    )
    at_review(ws)
    pushed = git(ws.root, "rev-parse", f"{store.REF}~1").strip()
    assert verify_repository(ws.repo).ok  # no --since: nothing is judged as new
    report = verify_repository(ws.repo, since=[pushed])
    assert [str(b) for b in report.breaks] == [
        f"notes commit {git(ws.root, 'rev-parse', store.REF).strip()[:12]} "
        "is not signed by a trusted key: unsigned"
    ]
    resign(ws, key, pushed)
    assert verify_repository(ws.repo, since=[pushed]).ok
    resign(ws, make_key(ws.tmp, "ed25519", "mallory"), pushed)
    assert not verify_repository(ws.repo, since=[pushed]).ok


# -- the native check, commit by commit (no ledgers needed: any commit carries a gpgsig) --


def chain(ws: Workspace, *signed_by: Key | None) -> list[str]:
    """Commits on top of HEAD made by the real ``git commit-tree``, each signed by its key
    (unsigned for None); their ids, oldest first."""
    tree = git(ws.root, "rev-parse", "HEAD^{tree}").strip()
    parent, made = git(ws.root, "rev-parse", "HEAD").strip(), []
    for n, key in enumerate(signed_by):
        sign = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key.path}"] if key else []
        args = [*sign, "commit-tree", *(["-S"] if key else []), tree, "-p", parent, "-m", f"notes {n}"]
        parent = git(ws.root, *args).strip()
        made.append(parent)
    return made


def _signer(ws: Workspace, sha: str, allowed: str, at_s: int = 0) -> tuple[str | None, str | None]:
    found, why = notesig.signer_of(gitrepo.resolve_commit(ws.repo, sha), signers.parse(allowed), at_s)
    return (found.principals[0] if found else None), why


def test_the_key_must_be_allowed_for_namespace_git_at_that_time(ws: Workspace, key: Key) -> None:
    (sha,) = chain(ws, key)
    fp = sshsig.PublicKey.from_openssh(*key.public.split()).fingerprint
    assert _signer(ws, sha, key.signers_line("alice", 'namespaces="git"')) == ("alice", None)
    refused = f"key {fp} is not an allowed signer for namespace git"
    assert _signer(ws, sha, key.signers_line("alice", 'namespaces="file"')) == (None, refused)
    window = key.signers_line("alice", 'valid-after="20200101",valid-before="20300101"')
    assert _signer(ws, sha, window, at_s=1_700_000_000) == ("alice", None)
    assert _signer(ws, sha, window, at_s=1_900_000_000) == (None, refused)
    expired = functools.partial(signers.parse, window)
    head = git(ws.root, "rev-parse", "HEAD").strip()
    assert notesig.unsigned_breaks(ws.repo, sha, [head], expired, 1_900_000_000, False) == [
        f"notes commit {sha[:12]} is not signed by a trusted key: {refused}"
    ]
    assert notesig.unsigned_breaks(ws.repo, sha, [head], expired, 1_700_000_000, True) == []


def test_a_signature_for_other_bytes_or_not_ascii_is_refused_with_the_reason(ws: Workspace, key: Key) -> None:
    signed, other = chain(ws, key, None)
    repo, allowed = ws.repo, key.signers_line("alice")
    armor = (gitrepo.resolve_commit(repo, signed).gpg_signature[0] or b"").decode()
    content = repo[other].read_raw().decode()
    moved = repo.create_commit_with_signature(content, armor)
    assert _signer(ws, str(moved), allowed) == (None, "signature does not verify")
    lines = armor.splitlines()
    lines[1] = "é" + lines[1][1:]  # libgit2 writes the header as given
    odd = repo.create_commit_with_signature(content, "\n".join(lines))
    assert gitrepo.resolve_commit(repo, str(odd)).gpg_signature[0] is not None
    assert _signer(ws, str(odd), allowed) == (
        None,
        "SSH signature armor is not valid base64 (truncated?)",
    )


def test_every_commit_after_the_stops_is_judged_unsigned_ones_only_when_required(
    ws: Workspace, key: Key
) -> None:
    mallory = make_key(ws.tmp, "ed25519", "mallory")
    old, bad, unsigned, good = chain(ws, key, mallory, None, key)
    trusted = functools.partial(signers.parse, key.signers_line("alice"))
    fp = sshsig.PublicKey.from_openssh(*mallory.public.split()).fingerprint
    why_bad = f"notes commit {bad[:12]} is not signed by a trusted key: key {fp} is not an allowed signer for namespace git"
    why_unsigned = f"notes commit {unsigned[:12]} is not signed by a trusted key: unsigned"
    assert notesig.unsigned_breaks(ws.repo, good, [old], trusted, 0, False) == [why_bad]
    assert notesig.unsigned_breaks(ws.repo, good, [old], trusted, 0, True) == [why_unsigned, why_bad]
    assert notesig.unsigned_breaks(ws.repo, good, [bad], trusted, 0, True) == [why_unsigned]


def test_a_root_nobody_can_use_fails_every_signed_commit_with_its_reason(ws: Workspace, key: Key) -> None:
    (signed,) = chain(ws, key)

    def unusable() -> list[signers.AllowedSigner]:
        raise GuardError("override_unavailable", "no allowed signers here")

    head = git(ws.root, "rev-parse", "HEAD").strip()
    assert notesig.unsigned_breaks(ws.repo, signed, [head], unusable, 0, False) == [
        f"notes commit {signed[:12]} is not signed by a trusted key: no allowed signers here"
    ]
