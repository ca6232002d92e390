"""Review against a base: the base's signers decide, so a branch cannot trust itself."""

from __future__ import annotations

import copy

from strato.guard import engine
from strato.guard.review import review
from tests.conftest import git
from tests.strato.guard.conftest import POLICY, Key, Workspace, make_key, ssh_sign

RID = "feat:9"


def override(ws: Workspace, key: Key, rationale: str) -> None:
    ask = {
        "resource_id": RID,
        "from_state": "review",
        "to_state": "released",
        "rationale": rationale,
    }
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    engine.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})


def start(ws: Workspace, key: Key) -> str:
    """main trusts ``key`` and pins its (empty) notes; a branch registers a resource and
    reaches review."""
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main: no ledgers yet")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    return base


def test_override_by_a_base_signer_passes_review(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    override(ws, key, "hotfix | urgent")
    ws.pin()
    report = review(ws.repo, base)
    assert report.ok
    assert [r.kind for r in report.rows] == ["register", "transition", "deviation"]
    dev = report.rows[-1]
    assert dev.signer == "alice@example.com" and dev.status == "ok"
    md = report.markdown()
    assert "passed" in md and "alice@example.com" in md and "hotfix \\| urgent" in md


def test_branch_that_trusts_its_own_key_is_refused(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    mallory = make_key(ws.tmp, "ed25519", "mallory")
    ws.trust(key.signers_line("alice@example.com"), mallory.signers_line("mallory@evil"))
    override(ws, mallory, "trust me")  # accepted locally: HEAD trusts mallory
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    dev = report.rows[-1]
    assert dev.kind == "deviation" and dev.status.startswith("refused:")
    assert "not an allowed signer" in dev.status
    assert dev.signer == "mallory@evil (not verified)"
    assert "**failed**" in report.markdown()


def test_entries_before_the_base_keep_their_own_trust_root(ws: Workspace, key: Key) -> None:
    start(ws, key)
    override(ws, key, "old decision")
    ws.pin()
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    # main later rotates alice out; the old override stays valid, nothing new is listed
    bob = make_key(ws.tmp, "ecdsa", "bob")
    ws.trust(bob.signers_line("bob@example.com"))
    report = review(ws.repo, "HEAD")
    assert report.ok and report.rows == []
