"""Tampering with ledgers through real git (``git notes``, ``git update-ref``) and what
:func:`verify_repository` reports: the resource and the first broken line."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from strato.guard import engine, layout, ledger, signedops, store
from strato.guard.errors import GuardError
from strato.guard.verify import Break, EntryHeadTrust, check_ledger, verify_repository
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    ledger_text,
    make_key,
    put_ledger,
    reseal,
    ssh_sign,
)
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RID = "svc:api"


@pytest.fixture
def busy(ws: Workspace, key: Key) -> Workspace:
    """A resource with register, refused, applied and a signed deviation (4 lines)."""
    ws.trust(key.signers_line("alice"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    engine.register(ws.repo, {"resource_id": "svc:other", **copy.deepcopy(POLICY)})
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, move)["status"] == "refused"
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, move)["status"] == "applied"
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": "ok"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    sig = ssh_sign(key, ns, payload.encode(), ws.tmp)
    signedops.override(ws.repo, {**ask, "authorization": sig})
    assert verify_repository(ws.repo).ok
    return ws


def anchor(ws: Workspace, rid: str = RID) -> str:
    from tropo.git.notes import anchor_id

    return anchor_id(store.anchor_content(rid))


def lines(ws: Workspace) -> list[str]:
    return ledger_text(ws, anchor(ws)).splitlines()


def put(ws: Workspace, text: str, target: str | None = None) -> None:
    """Overwrite a ledger the way anyone who can push the notes ref can."""
    put_ledger(ws, target or anchor(ws), text)


def first_break(ws: Workspace, **kw: Any) -> tuple[str | None, int | None, str]:
    report = verify_repository(ws.repo, **kw)
    assert not report.ok
    chain = [b for b in report.breaks if b.line is not None] or report.breaks
    brk = chain[0]
    return brk.resource_id, brk.line, brk.message


def test_clean_repository_verifies(busy: Workspace) -> None:
    report = verify_repository(busy.repo)
    assert report.ok and report.resources == 2 and report.entries == 5


def test_edited_line(busy: Workspace) -> None:
    text = lines(busy)
    assert '"refused"' in text[1]
    text[1] = text[1].replace('"refused"', '"applied"')
    put(busy, "\n".join(text) + "\n")
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "edited" in message


def test_deleted_and_reordered_lines(busy: Workspace) -> None:
    text = lines(busy)
    put(busy, "\n".join([text[0], text[2], text[3]]) + "\n")
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "dropped or reordered" in message
    put(busy, "\n".join([text[0], text[2], text[1], text[3]]) + "\n")
    assert first_break(busy)[:2] == (RID, 2)


def test_forged_chain_is_caught_by_the_notes_history(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[1]["outcome"] = "applied"  # pretend the refused attempt passed
    entries[1]["to_state"] = "review"
    put(busy, reseal(entries[:2]))
    report = verify_repository(busy.repo)
    assert not report.ok
    assert any(
        "rewritten, not appended to" in b.message and b.resource_id == RID for b in report.breaks
    )


def test_forged_unsigned_deviation_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    del entries[-1]["verdict"]["authorization"]
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4) and "unsigned" in message


def test_forged_signature_of_another_entry_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[-1]["verdict"]["authorization"]["rationale"] = "changed"
    entries[-1]["rationale"] = entries[-1]["rationale"].replace(": ok", ": changed")
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4) and "does not verify" in message


def test_illegal_step_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)][:2]
    entries[1].update(from_state="draft", to_state="released", outcome="applied")
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "not in the policy" in message


def test_note_moved_to_another_resource(busy: Workspace) -> None:
    text = ledger_text(busy, anchor(busy))
    put(busy, text, anchor(busy, "svc:other"))
    report = verify_repository(busy.repo)
    assert any(
        b.message == "note does not belong to the resource it registers" for b in report.breaks
    )


def test_rewound_notes_ref_is_caught_by_reflog_and_since(busy: Workspace) -> None:
    tip = git(busy.root, "rev-parse", store.REF).strip()
    git(busy.root, "update-ref", store.REF, f"{store.REF}~1")
    report = verify_repository(busy.repo)
    assert any("was rewritten" in b.message for b in report.breaks)
    # a fresh clone has no reflog; --since (the remote's tip) still catches it
    git(busy.root, "reflog", "expire", "--expire=all", "--all")
    git(busy.root, "update-ref", "refs/remotes/origin/guard-notes", tip)
    assert verify_repository(busy.repo).ok
    report = verify_repository(busy.repo, since=[tip])
    assert [b.message for b in report.breaks] == [
        f"{store.REF} was rewritten: {tip[:12]} is not in its history"
    ]


def test_operations_refuse_a_broken_ledger(busy: Workspace) -> None:
    text = lines(busy)
    put(busy, "\n".join(text[:2] + text[3:]) + "\n")
    from strato.guard.errors import GuardError

    with pytest.raises(GuardError) as info:
        engine.history(busy.repo, {"resource_id": RID})
    assert info.value.error_type == "ledger_corrupt" and "line 3" in info.value.message


def test_wrong_types_and_deep_json_are_breaks_not_crashes(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[1]["from_state"] = ["draft"]
    put(busy, reseal(entries))
    assert first_break(busy)[1:] == (2, "from_state has the wrong type")
    put(busy, lines(busy)[0] + "\n" + "[" * 50_000 + "]" * 50_000 + "\n")
    assert first_break(busy)[1:] == (2, "not JSON")


def test_a_break_says_where_it_is() -> None:
    assert str(Break("svc:api", 3, "edited")) == "'svc:api' line 3: edited"
    assert str(Break("svc:api", None, "deleted")) == "'svc:api': deleted"
    assert str(Break(None, None, "two notes", "ab12")) == "note ab12: two notes"
    assert str(Break(None, 2, "bad", "ab12")) == "note ab12 line 2: bad"
    assert str(Break(None, None, "refs/notes/x names a tree")) == "refs/notes/x names a tree"
    assert Break("svc:api", 3, "edited", "ab12").to_json() == {
        "resource_id": "svc:api", "line": 3, "message": "edited", "anchor": "ab12"
    }


def test_the_report_as_json_names_the_first_break(busy: Workspace) -> None:
    tip = git(busy.root, "rev-parse", store.REF).strip()
    assert verify_repository(busy.repo).to_json() == {
        "ok": True, "ref": store.REF, "tip": tip, "resources": 2, "entries": 5,
        "first_break": None, "breaks": [],
    }
    text = lines(busy)
    put(busy, "\n".join([text[0], text[1].replace('"refused"', '"applied"'), *text[2:]]) + "\n")
    report = verify_repository(busy.repo).to_json()
    first = {
        "resource_id": RID, "line": 2, "message": "entry_digest does not match the entry (edited)",
        "anchor": anchor(busy),
    }
    assert report["ok"] is False and report["first_break"] == first
    assert report["breaks"][0] == first and report["tip"] != tip
    assert report["resources"] == 2 and report["entries"] == 1  # svc:other's register line


def test_the_entries_own_commit_is_its_trust_root(ws: Workspace, key: Key) -> None:
    """Each entry is judged by the signers of the commit it names, at its own time; a
    commit that is not here means HEAD."""
    empty = EntryHeadTrust(ws.repo)
    before = git(ws.root, "rev-parse", "HEAD").strip()
    trusting = ws.trust(key.signers_line("alice"))
    blob = git(ws.root, "rev-parse", "HEAD:.vivary/guard/allowed_signers").strip()
    trust = EntryHeadTrust(ws.repo)
    assert trust.key(before) == f"{before}:-"
    assert trust.key(trusting) == trust.key(None) == trust.key("f" * 40) == f"{trusting}:{blob}"
    assert empty.key(None) == trust.key(None)  # HEAD is read when asked, not when made
    judged, at_s = trust("svc:api", 2, {"ts_ms": 1_796_183_405_999, "git_head": before})
    assert at_s == 1_796_183_405
    with pytest.raises(GuardError, match=f"no .vivary/guard/allowed_signers in commit {before[:12]}"):
        judged()
    judged, _ = trust("svc:api", 2, {"ts_ms": 0, "git_head": 7})  # not a commit id: HEAD
    assert [s.principals for s in judged()] == [("alice",)]
    assert trust.signers({"git_head": trusting}) is judged()  # read once per commit


def test_a_repository_without_commits_has_no_trust_root(repo_dir: Path) -> None:
    trust = EntryHeadTrust(gitrepo.require(repo_dir))
    assert trust.key(None) == "-"
    with pytest.raises(GuardError, match=r"in the repository \(no commits\)"):
        trust.signers({})


def test_a_recorded_signer_that_is_not_the_signature_is_a_break(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    honest = copy.deepcopy(entries)
    entries[-1]["verdict"]["authorization"]["fingerprint"] = "SHA256:" + "A" * 43
    put(busy, reseal(entries))
    why = "the entry's rationale or recorded signer does not match the signature"
    assert first_break(busy) == (RID, 4, why)
    entries = copy.deepcopy(honest)
    entries[-1]["rationale"] += " (and more)"
    put(busy, reseal(entries))
    assert first_break(busy) == (RID, 4, why)


def test_every_entry_is_seen_with_its_signer_up_to_the_first_break(busy: Workspace) -> None:
    seen: list[tuple[str, int, str | None, str | None]] = []

    def collect(rid: str, line: int, entry: dict[str, Any], signer: Any, problem: str | None) -> None:
        seen.append((rid, line, signer.principal if signer else None, problem))

    assert verify_repository(busy.repo, on_entry=collect).ok
    assert seen == [(RID, n, "alice" if n == 4 else None, None) for n in (1, 2, 3, 4)] + [
        ("svc:other", 1, None, None)
    ]
    entries = [json.loads(line) for line in lines(busy)]
    entries[2]["resolved_by"] = "human"
    put(busy, reseal(entries))
    seen.clear()
    assert not verify_repository(busy.repo, on_entry=collect).ok
    assert seen[:3] == [
        (RID, 1, None, None), (RID, 2, None, None),
        (RID, 3, None, "resolved_by 'human': a transition is resolved by 'agent'"),
    ]
    assert (RID, 4) not in [s[:2] for s in seen]
    entries[2]["resolved_by"] = "agent"
    put(busy, reseal([*entries[:3], entries[2]]))  # replayed: the fold refuses what derive passed
    seen.clear()
    assert not verify_repository(busy.repo, on_entry=collect).ok
    assert seen[:4] == [
        (RID, 1, None, None), (RID, 2, None, None), (RID, 3, None, None),
        (RID, 4, None, "starts at 'draft' but the resource was at 'review'"),
    ]


def test_a_forged_register_line_is_a_break_at_line_1(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[0]["resolved_by"] = "human"
    put(busy, reseal(entries))
    assert first_break(busy) == (RID, 1, "the register line is resolved by 'agent'")
    entries[0]["resolved_by"] = "agent"
    del entries[0]["verdict"]["graph_version"]  # refused by derive before the fold reads it
    put(busy, reseal(entries))
    assert first_break(busy) == (RID, 1, "the register line carries exactly its resource and policy")


def test_a_notes_ref_naming_a_tree_is_one_break(busy: Workspace) -> None:
    tip = git(busy.root, "rev-parse", store.REF).strip()
    tree = git(busy.root, "rev-parse", f"{tip}^{{tree}}").strip()
    git(busy.root, "update-ref", store.REF, tree)
    report = verify_repository(busy.repo)
    assert [str(b) for b in report.breaks] == [
        f"{store.REF} names a tree ({tree[:12]}), not a notes commit"
    ]
    assert report.resources == 0 and report.tip == tree


@pytest.mark.parametrize(
    ("options", "ok"),
    [('valid-before="20200101"', False), ('valid-after="29990101"', False), ('valid-before="29990101"', True)],
)
def test_notes_commits_to_push_are_judged_by_signers_valid_now(
    ws: Workspace, key: Key, options: str, ok: bool
) -> None:
    """The pushed notes commits' signatures are checked against HEAD's signers at the time
    of the check: a key that expired, or is not valid yet, signs nothing."""
    from tests.support.guard import at_review, resign

    ws.trust(key.signers_line("alice@example.com", options))
    at_review(ws)
    pushed = git(ws.root, "rev-parse", f"{store.REF}~1").strip()
    resign(ws, key, pushed)
    found = [str(b) for b in verify_repository(ws.repo, since=[pushed]).breaks]
    tip = git(ws.root, "rev-parse", store.REF).strip()
    if ok:
        assert found == []
    else:
        assert len(found) == 1, found
        assert found[0].startswith(f"notes commit {tip[:12]} is not signed by a trusted key: key SHA256:")
        assert found[0].endswith(" is not an allowed signer for namespace git")


def test_each_commit_has_its_own_signers(ws: Workspace, key: Key) -> None:
    """Signers read for one commit are never used for another: after a rotation an
    entry naming the new commit is judged by the new signers."""
    bob = make_key(ws.tmp, "ed25519", "bob")
    alice_era = ws.trust(key.signers_line("alice"))
    bob_era = ws.trust(bob.signers_line("bob"))
    trust = EntryHeadTrust(ws.repo)
    assert [s.principals for s in trust.signers({"git_head": alice_era})] == [("alice",)]
    assert [s.principals for s in trust.signers({"git_head": bob_era})] == [("bob",)]
    assert [s.principals for s in trust.signers({"git_head": None})] == [("bob",)]


def test_a_signature_moved_to_a_commit_that_no_longer_trusts_its_key_is_a_break(
    ws: Workspace, key: Key
) -> None:
    """alice signs a deviation while trusted; a later line signed by her, edited to claim
    the commit where bob replaced her, is judged by bob's signers, not hers."""
    ws.trust(key.signers_line("alice"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    ws.commit({"NOTES.md": "n\n"}, "notes")
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    back = {"resource_id": RID, "from_state": "review", "to_state": "draft", "rationale": "again"}
    assert engine.transition(ws.repo, move)["status"] == "applied"
    for _ in range(2):
        payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **back})
        signedops.override(ws.repo, {**back, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
        assert engine.transition(ws.repo, move)["status"] == "applied"
    bob = make_key(ws.tmp, "ed25519", "bob")
    bob_era = ws.trust(bob.signers_line("bob"))
    assert verify_repository(ws.repo).ok
    entries = [json.loads(line) for line in lines(ws)]
    assert [e["kind"] for e in entries[3:5]] == ["transition", "deviation"]
    entries[4]["git_head"] = bob_era
    put(ws, reseal(entries))
    rid, line, message = first_break(ws)
    assert (rid, line) == (RID, 5) and "is not an allowed signer" in message, message


def test_a_bad_signature_says_what_to_sign(busy: Workspace) -> None:
    from strato.guard import authz

    entries = [json.loads(line) for line in lines(busy)]
    auth = entries[-1]["verdict"]["authorization"]
    auth["rationale"] = "changed"
    entries[-1]["rationale"] = entries[-1]["rationale"].replace(": ok", ": changed")
    put(busy, reseal(entries))
    payload = authz.override_payload(RID, "review", "released", "changed", entries[-1]["prev_digest"])
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4)
    assert message.endswith(f"; sign exactly {payload!r} in namespace {authz.NS_OVERRIDE}"), message


def test_a_recorded_principal_the_trust_root_does_not_give_the_key_is_a_break(busy: Workspace) -> None:
    """The writer of a line chose its principal: a valid signature by alice's key, recorded
    as mallory's (rationale and all), is not mallory's approval."""
    entries = [json.loads(line) for line in lines(busy)]
    recorded = entries[-1]["verdict"]["authorization"]
    assert recorded["principal"] == "alice"
    recorded["principal"] = "mallory"
    entries[-1]["rationale"] = entries[-1]["rationale"].replace("authorized by alice ", "authorized by mallory ", 1)
    put(busy, reseal(entries))
    line, why = first_break(busy)[1:]
    assert line == 4 and f"key {recorded['fingerprint']} is not an allowed signer for 'mallory'" in why
    recorded["principal"] = None
    put(busy, reseal(entries))
    assert first_break(busy)[1:] == (4, "the entry's recorded signer names no principal")


def test_an_empty_ledger_is_a_break_that_shows_no_entry() -> None:
    """Nothing to show: `on_entry` is not called, and the break is the fold's own."""
    shown: list[int] = []
    with pytest.raises(ledger.LedgerBreak) as caught:
        check_ledger([], RID, lambda rid, line, entry: None, lambda *row: shown.append(row[1]))
    assert (caught.value.line, caught.value.message) == (1, "empty ledger") and shown == []


def test_a_base_ledger_of_its_register_line_alone_is_not_judged_again(ws: Workspace, key: Key) -> None:
    """Review passes over the base's lines, its register line too: a base ledger of just
    that line, made at a commit since amended away, is accepted as the base holds it."""
    from strato.guard.review import review

    ws.trust(key.signers_line("alice"))
    ws.commit({"NOTES.md": "n\n"}, "work")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    made_at = json.loads(lines(ws)[0])["git_head"]
    git(ws.root, "commit", "-q", "--amend", "-m", "work, amended")
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    git(ws.root, "gc", "-q", "--prune=now")
    assert git(ws.root, "cat-file", "-e", made_at, check=False) == "" and ws.repo.get(made_at) is None
    base = ws.pin()
    report = review(ws.repo, base)
    assert report.ok and report.rows == [], [str(b) for b in report.verify.breaks]
    assert report.verify.entries == 1


@pytest.mark.parametrize("what", ["blob", "missing object"])
def test_a_notes_ref_naming_a_blob_or_nothing_is_one_break(busy: Workspace, what: str) -> None:
    """A ref file written by hand (or a remote's) may name any id, even one this
    repository lacks: the break names what it found."""
    readme = git(busy.root, "rev-parse", "HEAD:README.md").strip()
    target = readme if what == "blob" else "0123456789ab" + "c" * 28
    (busy.root / ".git" / store.REF).write_text(target + "\n")
    report = verify_repository(busy.repo)
    assert [str(b) for b in report.breaks] == [
        f"{store.REF} names a {what} ({target[:12]}), not a notes commit"
    ]
    assert report.resources == 0 and report.tip == target


def test_a_ledger_rewritten_in_the_notes_history_is_a_break_on_its_note(busy: Workspace) -> None:
    """After the line-precise breaks, each line the notes commit changed or removed, with
    the resource and the note it was done to."""
    entries = [json.loads(line) for line in lines(busy)]
    entries[1].update(outcome="applied", to_state="review")
    put(busy, reseal(entries[:2]))
    sha = git(busy.root, "rev-parse", store.REF).strip()[:12]
    note = anchor(busy)
    rewritten = [
        Break(RID, None, f"ledger rewritten, not appended to, in notes commit {sha}: a line {what} "
              f"(ledgers/{note}/00/00/{n:02})", note)
        for n, what in ((1, "changed"), (2, "removed"), (3, "removed"))
    ]
    assert verify_repository(busy.repo).breaks == [
        Break(RID, 2, "outcome 'applied' does not follow from the verdict", note), *rewritten
    ]


def test_a_deleted_notes_ref_is_a_rewrite_of_each_tip_it_had(busy: Workspace) -> None:
    """No notes at all verify, unless a tip the ref had (here the remote's) is named."""
    tip = git(busy.root, "rev-parse", store.REF).strip()
    git(busy.root, "update-ref", "-d", store.REF)  # and its reflog with it
    assert verify_repository(busy.repo).to_json() == {
        "ok": True, "ref": store.REF, "tip": None, "resources": 0, "entries": 0,
        "first_break": None, "breaks": [],
    }
    older = git(busy.root, "rev-parse", f"{tip}~1").strip()
    assert verify_repository(busy.repo, since=[tip, older]).breaks == [
        Break(None, None, f"{store.REF} was rewritten: {old[:12]} is not in its history") for old in (tip, older)
    ]


def test_a_deletion_recorded_in_the_reflog_is_not_a_tip(busy: Workspace) -> None:
    """A reflog may record the ref's deletion (a zero new id, as the reftable backend
    keeps it) before it was made again: that zero is no earlier tip to descend from."""
    tip = git(busy.root, "rev-parse", store.REF).strip()
    log = busy.root / ".git" / "logs" / store.REF
    who = "A U Thor <author@example.com> 1796219600 +0000"
    log.write_text(log.read_text() + f"{tip} {gitrefs.ZERO} {who}\tdeleted\n{gitrefs.ZERO} {tip} {who}\tmade again\n")
    assert [str(e.oid_new) for e in busy.repo.references[store.REF].log()][:2] == [tip, gitrefs.ZERO]
    assert verify_repository(busy.repo).ok


def test_what_verify_accepted_it_records_and_a_warm_verify_checks_nothing_again(busy: Workspace) -> None:
    """The cache keeps the accepted ledger's blob, size, lines and, per signed line, its
    commit with that commit's signers blob; while they all hold (HEAD may move on) a
    warm verify re-checks nothing, so it writes no cache entry either."""
    from strato.guard import cache

    tip = gitrefs.read_ref(busy.repo, store.REF)
    assert tip is not None
    (kept,) = [k for k in store.ledgers(busy.repo, tip) if k.anchor == anchor(busy)]
    made_at = json.loads(lines(busy)[3])["git_head"]
    signers_blob = git(busy.root, "rev-parse", f"{made_at}:.vivary/guard/allowed_signers").strip()
    accepted = cache.Remembered(
        kept.blob, len(kept.data), 4, ((made_at, f"{made_at}:{signers_blob}"),), kept.running_id
    )
    known = cache.GuardCache(busy.repo)
    assert known.record(anchor(busy)) == accepted
    entry = known.root / "ledgers" / f"{anchor(busy)}.json"
    written = entry.stat().st_ino
    busy.commit({"later.md": "later\n"}, "later work")
    assert verify_repository(busy.repo).to_json()["entries"] == 5
    assert entry.stat().st_ino == written  # not replaced: a hit
    shutil.rmtree(known.root)  # cold: every ledger checked and counted again
    assert verify_repository(busy.repo).to_json()["entries"] == 5
    assert known.record(anchor(busy)) == accepted  # the line's own commit, not HEAD
    assert sorted(p.name for p in entry.parent.iterdir()) == sorted(f"{anchor(busy, r)}.json" for r in (RID, "svc:other"))


def test_a_ledger_the_engine_read_but_verify_never_accepted_is_checked(busy: Workspace) -> None:
    """Reading a ledger caches its chain of digests, not a verdict: verify still judges
    a line whose signature was cut out and the chain resealed."""
    from strato.guard import cache

    entries = [json.loads(line) for line in lines(busy)]
    del entries[-1]["verdict"]["authorization"]
    put(busy, reseal(entries))
    assert engine.history(busy.repo, {"resource_id": RID})["current_state"] == "released"
    chain = cache.GuardCache(busy.repo).record(anchor(busy))
    assert chain is not None and chain.lines == 4 and chain.verified is None
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4) and "unsigned" in message


@pytest.mark.parametrize(
    "defect",
    ["lines without a note", "another resource's ledger", "no register line", "an edited line", "a false running state"],
)
def test_a_note_that_is_no_ledger_of_its_own_is_one_break_and_the_next_ledgers_are_checked(
    busy: Workspace, defect: str
) -> None:
    """The first note (by anchor) is spoilt; the one after it is still counted and checked."""
    entries = {RID: 4, "svc:other": 1}
    first, then = sorted(entries, key=lambda rid: anchor(busy, rid))
    note = anchor(busy, first)
    if defect == "lines without a note":
        git(busy.root, "notes", "--ref=vivary/guard", "remove", note)
        want = Break(None, None, "ledger lines under ledgers/ but no note", note)
    elif defect == "a false running state":
        from strato.guard import running

        repo, tip = busy.repo, gitrefs.read_ref(busy.repo, store.REF)
        tree = notes.insert(repo, notes.tree_of(repo, tip), [running.STATE, note], repo.create_blob(b"{}\n"))
        notes.commit(repo, store.REF, tip, tree, "hand-edited running state\n")
        want = Break(first, None, f"the running-state blob under {running.STATE}/ is not one the guard writes", note)
    elif defect == "an edited line":
        put(busy, ledger_text(busy, note).replace('"draft"', '"DRAFT"', 1), note)
        want = Break(first, 1, "entry_digest does not match the entry (edited)", note)
    else:
        text = ledger_text(busy, anchor(busy, then)) if defect == "another resource's ledger" else "[]\n"
        put(busy, text, note)
        rid = then if defect == "another resource's ledger" else None
        want = Break(rid, 1, "note does not belong to the resource it registers", note)
    report = verify_repository(busy.repo)
    assert report.breaks[0] == want, [str(b) for b in report.breaks]
    read = sum(entries.values()) if defect == "a false running state" else entries[then]  # its lines were read
    assert (report.resources, report.entries) == (2, read)


def test_on_entry_sees_each_line_as_it_is_written(busy: Workspace) -> None:
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    verify_repository(busy.repo, on_entry=lambda rid, line, entry, signer, why: seen.update({(rid, line): entry}))
    assert [seen[(RID, n)] for n in (1, 2, 3, 4)] == [json.loads(line) for line in lines(busy)]


def test_review_checks_a_met_file_predicate_again_in_the_commit_under_review(ws: Workspace, key: Key) -> None:
    """verify passes review's head on to derive: NOTES.md existed when the step was taken,
    but the commit under review has none, so the step is refused there."""
    from strato.guard.review import review

    ws.trust(key.signers_line("alice"))
    base = ws.pin("main: no ledgers yet")
    git(ws.root, "checkout", "-q", "-b", "feature")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})[
        "status"
    ] == "applied"
    (ws.root / "NOTES.md").unlink()
    head = ws.pin()
    assert verify_repository(ws.repo).ok  # the record is taken where no commit is under review
    report = review(ws.repo, base)
    assert [(r.line, r.status) for r in report.rows] == [
        (1, "ok"),
        (2, f"refused: predicate 'notes' is recorded as met but NOTES.md is not in the reviewed commit {head[:12]}"),
    ]


def test_a_running_state_true_of_the_ledgers_first_lines_is_no_break(busy: Workspace) -> None:
    """A record an older append left (3 of the 4 lines) is checked against those lines."""
    from strato.guard import running

    repo, note = busy.repo, anchor(busy)
    tip = gitrefs.read_ref(repo, store.REF)
    older = layout.running_blob(notes.tree_of(repo, git(busy.root, "rev-parse", f"{tip}~1").strip()), note)
    assert older is not None and running.parse(older[1]) is not None and running.parse(older[1]).lines == 3
    tree = notes.insert(repo, notes.tree_of(repo, tip), [running.STATE, note], repo.create_blob(older[1]))
    notes.commit(repo, store.REF, tip, tree, "an older running state\n")
    assert verify_repository(busy.repo).ok


def test_only_the_notes_commits_after_since_are_judged(ws: Workspace, key: Key) -> None:
    """Every notes commit is signed by a key HEAD does not trust; given the remote's tip,
    only the commit after it (the one a push sends) is judged."""
    from tests.support.guard import at_review, resign

    ws.trust(key.signers_line("alice@example.com"))
    at_review(ws)
    resign(ws, make_key(ws.tmp, "ed25519", "mallory"), None)
    tip = git(ws.root, "rev-parse", store.REF).strip()
    pushed = git(ws.root, "rev-parse", f"{store.REF}~1").strip()
    found = [b.message for b in verify_repository(ws.repo, since=[pushed]).breaks]
    assert len(found) == 1 and found[0].startswith(f"notes commit {tip[:12]} is not signed by a trusted key: "), found
