"""Verify resumes from what it accepted before (``strato/guard/accepted.py``): after
appends, only the lines since are checked, and every one of them is judged as a full
check would judge it; a ledger that does not start with the accepted lines is checked
in full."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from strato.guard import accepted, cache, engine, layout, ledger, ledgertrees, running, signedops, store
from strato.guard.verify import check_ledger, verify_repository
from tests.support.guard import (
    GROWN_FORTH,
    GROWN_RID,
    POLICY,
    Key,
    Workspace,
    grown,
    ledger_text,
    put_ledger,
    reseal,
    ssh_sign,
)
from tests.support.repos import git
from tropo.git import notes

RID = GROWN_RID
ANCHOR = notes.anchor_id(store.anchor_content(RID))
FORTH = GROWN_FORTH


def record(ws: Workspace) -> accepted.Accepted | None:
    return accepted.read(cache.GuardCache(ws.repo), ANCHOR)


def test_after_appends_verify_reads_only_the_lines_since_what_it_accepted(ws: Workspace) -> None:
    grown(ws)
    before = record(ws)
    assert before is not None and before.lines == 2  # the last transition's own verify
    middle = git(ws.root, "rev-parse", f"{store.REF}:{'/'.join(layout.entry_path(ANCHOR, 1))}").strip()
    loose = Path(ws.repo.path) / "objects" / middle[:2] / middle[2:]
    kept = loose.read_bytes()
    loose.unlink()  # line 2 is accepted: neither read nor needed again
    report = verify_repository(ws.repo)
    assert report.ok and report.entries == 3
    after = record(ws)
    assert after is not None and after.lines == 3 and after.fold.current_state == "draft"
    shutil.rmtree(cache.GuardCache(ws.repo).root)  # cold: the full check reads every line
    report = verify_repository(ws.repo)
    assert not report.ok and "object is missing" in report.breaks[0].message
    loose.write_bytes(kept)
    shutil.rmtree(cache.GuardCache(ws.repo).root)
    cold = verify_repository(ws.repo)
    assert cold.ok and cold.entries == 3 and record(ws) == after  # the same record either way


def test_a_forged_line_after_the_accepted_ones_is_judged(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice"))
    grown(ws)
    assert verify_repository(ws.repo).ok
    entries = [json.loads(line) for line in ledger_text(ws, ANCHOR).splitlines()]
    forged = {  # an override nobody signed, sealed onto the accepted chain
        **entries[1],
        "kind": "deviation",
        "outcome": "deviation",
        "resolved_by": "human",
        "rationale": "trust me",
        "verdict": {"authorization": {"principal": "alice"}},
    }
    put_ledger(ws, ANCHOR, reseal([*entries, forged]))
    before = record(ws)
    assert before is not None and before.lines == 3  # the resumed path is the one judging
    report = verify_repository(ws.repo)
    assert not report.ok
    (brk,) = [b for b in report.breaks if b.line is not None]
    assert (brk.resource_id, brk.line) == (RID, 4) and "authorization" in brk.message
    assert record(ws) == before  # nothing broken is accepted


def test_a_ledger_that_does_not_start_with_the_accepted_lines_is_checked_in_full(ws: Workspace) -> None:
    grown(ws)
    assert verify_repository(ws.repo).ok
    entries = [json.loads(line) for line in ledger_text(ws, ANCHOR).splitlines()]
    entries[1]["verdict"]["met"] = False  # line 2 rewritten and the chain resealed
    put_ledger(ws, ANCHOR, reseal([*entries, copy.deepcopy(entries[1])]))
    report = verify_repository(ws.repo)
    lines = [b for b in report.breaks if b.line is not None]
    assert lines and (lines[0].resource_id, lines[0].line) == (RID, 2)
    assert "met" in lines[0].message


def test_a_tail_checked_from_an_accepted_state_shows_only_its_own_lines(ws: Workspace) -> None:
    """``check_ledger`` from ``start`` (the state after the accepted lines) shows its
    ``on_entry`` the tail's lines, numbered in the whole ledger, and no register line."""
    grown(ws)
    entries = [json.loads(line) for line in ledger_text(ws, ANCHOR).splitlines()]
    start = ledger.fold(entries[:2], RID)
    shown: list[tuple[int, str, str | None]] = []
    state = check_ledger(
        entries[2:], RID, lambda rid, line, entry: None,
        lambda rid, line, entry, signer, problem: shown.append((line, entry["to_state"], problem)),
        start=start,
    )
    assert shown == [(3, "draft", None)] and state.length == 3 and state.current_state == "draft"


def test_a_running_record_naming_fewer_lines_is_judged_by_the_full_check(ws: Workspace) -> None:
    """The notes' running-state record names the first two lines only (true of them): it
    is judged against the lines it names, so verify resumed from two accepted lines says
    what a cold verify says."""
    grown(ws)
    entries = [json.loads(line) for line in ledger_text(ws, ANCHOR).splitlines()]
    shorter = running.render(running.of_state(ledger.fold(entries[:2], RID)))
    repo, old = ws.repo, git(ws.root, "rev-parse", store.REF).strip()
    tree = notes.tree_of(repo, old)
    assert tree is not None
    new = notes.insert(repo, tree, [running.STATE, ANCHOR], repo.create_blob(shorter))
    notes.commit(repo, store.REF, old, new, "a running-state record of two lines\n")
    before = record(ws)
    assert before is not None and before.lines == 2
    resumed = verify_repository(ws.repo)
    shutil.rmtree(cache.GuardCache(ws.repo).root)
    cold = verify_repository(ws.repo)
    assert resumed.ok and cold.ok and resumed.entries == cold.entries == 3


def test_a_signed_line_accepted_at_an_older_head_is_not_read_again(ws: Workspace, key: Key) -> None:
    """An override signed at commit C was accepted; HEAD has moved on since. C's trust
    root (C and its allowed_signers) is what the record names, so verify still resumes:
    an accepted line's object is not needed."""
    ws.trust(key.signers_line("alice"))
    (ws.root / "NOTES.md").write_text("n\n")
    policy = copy.deepcopy(POLICY)
    policy["graph"] = {**policy["graph"], "released": ["archived"]}
    policy["terminal"] = ["archived"]
    engine.register(ws.repo, {"resource_id": RID, **policy})
    assert engine.transition(ws.repo, FORTH)["status"] == "applied"
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": "ship it"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
    archive = {"resource_id": RID, "from_state": "released", "to_state": "archived"}
    assert engine.transition(ws.repo, archive)["status"] == "applied"  # verifies the 3 lines first
    before = record(ws)
    assert before is not None and before.lines == 3 and before.signers
    ws.commit({"LATER.md": "x\n"}, "HEAD moves on")
    middle = git(ws.root, "rev-parse", f"{store.REF}:{'/'.join(layout.entry_path(ANCHOR, 1))}").strip()
    (Path(ws.repo.path) / "objects" / middle[:2] / middle[2:]).unlink()
    report = verify_repository(ws.repo)
    assert report.ok and report.entries == 4, [str(b) for b in report.breaks]


def test_a_tail_line_that_is_not_utf8_is_a_break_on_its_line(ws: Workspace) -> None:
    """A fourth line that is not UTF-8, past three accepted ones, with no running-state
    record to judge: verify resumes, and names the line in the whole ledger."""
    grown(ws)
    assert verify_repository(ws.repo).ok
    before = record(ws)
    assert before is not None and before.lines == 3
    repo, old = ws.repo, git(ws.root, "rev-parse", store.REF).strip()
    tree = notes.tree_of(repo, old)
    assert tree is not None
    bare = repo.get(ledgertrees.without_state(repo, tree, ANCHOR))
    new = notes.insert(repo, bare, layout.entry_path(ANCHOR, 3), repo.create_blob(b"\xff\xfe\n"))
    notes.commit(repo, store.REF, old, new, "a line that is not UTF-8\n")
    assert [(b.resource_id, b.line, b.message) for b in verify_repository(repo).breaks] == [
        (RID, 4, "ledger is not UTF-8")
    ]


def test_verify_of_one_anchor_checks_it_whatever_ledgers_come_before_it(ws: Workspace) -> None:
    """``anchor=`` (a transition's own pre-check): the ledgers before it in the notes tree
    are skipped, not the end of the walk."""
    rids = ["one:a", "one:b", "one:c"]
    for rid in rids:
        engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    last = max(notes.anchor_id(store.anchor_content(rid)) for rid in rids)
    put_ledger(ws, last, ledger_text(ws, last) + "not json\n")
    found = verify_repository(ws.repo, anchor=last).breaks
    assert [(b.anchor, b.line) for b in found if b.line is not None] == [(last, 2)]
