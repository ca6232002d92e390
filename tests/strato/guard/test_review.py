"""Review against a base: the base's signers decide, so a branch cannot trust itself."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from strato.guard import config, engine, signedops, store
from strato.guard.review import MAX_CELL, _cell, review
from strato.guard.verify import Break
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    drop_ledger,
    ledger_text,
    make_key,
    notes_commit,
    put_ledger,
    reseal,
    resign,
    ssh_sign,
)
from tests.support.repos import git
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.notes import anchor_id
from tropo.git.revspec import spelled
from tropo.untrusted import visible

RID = "feat:9"


def override(ws: Workspace, key: Key, rationale: str) -> None:
    ask = {
        "resource_id": RID,
        "from_state": "review",
        "to_state": "released",
        "rationale": rationale,
    }
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})


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


def test_the_report_lists_each_new_line_as_json_and_as_a_table(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    override(ws, key, "ship it")
    ws.pin()
    report = review(ws.repo, base)
    head = git(ws.root, "rev-parse", "HEAD").strip()
    made_at = git(ws.root, "rev-parse", "HEAD~1").strip()  # the entries name the commit they were made at
    fingerprint = str(report.rows[-1].rationale).split("(")[1].split(")")[0]
    rows = [
        ("register", "registered", None, "draft", None, None, "ok"),
        ("transition", "applied", "draft", "review", None, None, "ok"),
        ("deviation", "deviation", "review", "released", "alice@example.com",
         f"authorized by alice@example.com ({fingerprint}): ship it", "ok"),
    ]
    want = [
        {"resource_id": RID, "line": n, "kind": kind, "outcome": outcome, "from_state": src,
         "to_state": dst, "signer": signer, "rationale": why, "git_head": made_at, "status": status}
        for n, (kind, outcome, src, dst, signer, why, status) in enumerate(rows, 1)
    ]
    found = report.to_json()
    assert found["entries"] == want
    assert {k: found[k] for k in ("ok", "base", "head", "base_notes")} == {
        "ok": True, "base": base, "head": head, "base_notes": None
    }
    assert found["verify"] == report.verify.to_json() and found["verify"]["entries"] == 3
    assert report.markdown().splitlines() == [
        f"### Guard review passed: `{base[:12]}..{head[:12]}`",
        "",
        "3 ledger entries added since the base; signers checked against the base's "
        "`.vivary/guard/allowed_signers`.",
        "",
        "| resource | line | kind | outcome | transition | signer | rationale | status |",
        "|---|---|---|---|---|---|---|---|",
        f"| ` {RID} ` | ` 1 ` | ` register ` | ` registered ` |  → ` draft ` |  |  | ` ok ` |",
        f"| ` {RID} ` | ` 2 ` | ` transition ` | ` applied ` | ` draft ` → ` review ` |  |  | ` ok ` |",
        f"| ` {RID} ` | ` 3 ` | ` deviation ` | ` deviation ` | ` review ` → ` released ` "
        f"| ` alice@example.com ` | ` {want[2]['rationale']} ` | ` ok ` |",
    ]


def test_a_failed_review_lists_its_breaks(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    base = ws.pin()
    git(ws.root, "update-ref", "-d", store.REF)  # notes started over: the same resource again
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    head = ws.pin("repin the new notes")
    report = review(ws.repo, base)
    assert not report.ok and len(report.rows) == 1
    md = report.markdown()
    assert md.startswith(f"### Guard review **failed**: `{base[:12]}..{head[:12]}`\n\n1 ledger entry added")
    breaks = md.split("\nBreaks:\n", 1)[1].splitlines()
    assert breaks == [f"- {_cell(str(b))}" for b in report.verify.breaks] and breaks
    assert md.endswith("`\n") and "\n\nBreaks:\n" in md


def test_a_cell_shows_edge_spaces_and_is_cut_at_its_limit() -> None:
    assert _cell(None) == _cell("") == ""
    assert _cell(" a  ") == "` U+0020aU+0020U+0020 `"
    assert _cell("a b") == "` a b `" and _cell("X b X") == "` X b X `"
    assert _cell("a`b``c") == "``` a`b``c ```"
    assert _cell("x" * MAX_CELL) == f"` {'x' * MAX_CELL} `"
    assert _cell("x" * (MAX_CELL + 1)) == f"` {'x' * (MAX_CELL - 1)}… `"
    assert visible("a\u00a0b\u200bc\nd") == "aU+00A0bU+200BcU+000Ad"
    assert visible(None) == "" and visible(7) == "7"


def test_a_base_ledger_in_the_older_layout_cannot_be_rewritten(ws: Workspace, key: Key) -> None:
    """The base keeps a ledger as one note (no line blobs to compare): its bytes decide."""
    start(ws, key)
    anchor = anchor_id(store.anchor_content(RID))
    text = ledger_text(ws, anchor)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    git(ws.root, "update-ref", "-d", store.REF)  # the notes as an older release wrote them
    note = ws.tmp / "ledger.txt"
    note.write_text(text)
    git(ws.root, "notes", "--ref=vivary/guard", "add", "-F", str(note), anchor)
    assert store.ledgers(ws.repo, gitrefs.read_ref(ws.repo, store.REF))[0].legacy
    base = ws.pin()
    git(ws.root, "checkout", "-q", "-b", "next")
    put_ledger(ws, anchor, text.replace('"agent"', '"human"', 1))  # moved to line blobs, edited
    ws.pin()
    found = [str(b) for b in review(ws.repo, base).verify.breaks]
    assert f"{RID!r} line 1: line of the base's ledger rewritten or removed" in found, found


def test_a_head_without_notes_does_not_descend_from_the_base_notes(ws: Workspace, key: Key) -> None:
    start(ws, key)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    base = ws.pin()
    tip = git(ws.root, "rev-parse", store.REF).strip()
    ws.commit({".vivary/guard/notes-tip": "none\n"}, "pins no notes")
    report = review(ws.repo, base)
    assert str(report.verify.breaks[0]) == (
        f"{store.REF} does not descend from the base's notes commit {tip[:12]} "
        "(rewritten or force-pushed)"
    )


def test_a_base_named_by_a_tag_and_a_branch_is_refused_with_any_suffix(ws: Workspace, key: Key) -> None:
    start(ws, key)
    git(ws.root, "tag", "main", "feature")
    for rev in ("main", "main~0", "main^{commit}", "main:", "main@{0}"):
        with pytest.raises(gitrepo.RevisionError) as caught:
            review(ws.repo, rev)
        assert str(caught.value) == (
            "'main' is ambiguous (refs/tags/main, refs/heads/main): pass the full ref you mean"
        ), rev
    assert spelled(ws.repo, "refs/heads/main~0") == "refs/heads/main~0"


def test_an_entry_naming_no_commit_id_is_refused(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    anchor = anchor_id(store.anchor_content(RID))
    entries = [json.loads(line) for line in ledger_text(ws, anchor).splitlines()]
    real = entries[1]["git_head"]
    for claim in (real.upper(), real + "\n", real[:39], " " + real):
        put_ledger(ws, anchor, reseal([entries[0], {**entries[1], "git_head": claim}]))
        ws.pin()
        report = review(ws.repo, base)
        assert report.rows[1].status == (
            f"refused: claims commit {str(claim)[:12]}, which this repository lacks"
        ), claim


def _merged_base(ws: Workspace, key: Key) -> tuple[str, str, str]:
    """A reviewed feature merged into main and pinned there: its ledger's anchor, the
    base commit and the ledger's text as the base holds it."""
    start(ws, key)
    anchor = anchor_id(store.anchor_content(RID))
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    base = ws.pin()
    return anchor, base, ledger_text(ws, anchor)


def test_a_base_ledger_that_lost_its_last_newline_names_its_last_line(ws: Workspace, key: Key) -> None:
    anchor, base, text = _merged_base(ws, key)
    # no line differs, but the bytes do: the first line that lost its newline is named
    for cut, line in ((text[:-1], 2), (text.split("\n", 1)[0], 1)):
        put_ledger(ws, anchor, cut)
        ws.pin()
        found = [str(b) for b in review(ws.repo, base).verify.breaks]
        assert f"{RID!r} line {line}: line of the base's ledger rewritten or removed" in found, found


@pytest.mark.parametrize(
    ("rev", "refs"),
    [
        ("heads/main", ["refs/heads/main", "refs/tags/heads/main"]),
        ("origin/main", ["refs/tags/origin/main", "refs/remotes/origin/main"]),
        ("origin", ["refs/tags/origin", "refs/remotes/origin/HEAD"]),
    ],
)
def test_every_ref_a_short_name_could_mean_is_named(
    ws: Workspace, key: Key, rev: str, refs: list[str]
) -> None:
    """Anyone who can push a tag could otherwise choose which commit is the base."""
    start(ws, key)
    main = git(ws.root, "rev-parse", "main").strip()
    for ref in refs:
        git(ws.root, "update-ref", ref, main)
    with pytest.raises(gitrepo.RevisionError) as caught:
        spelled(ws.repo, rev)
    assert str(caught.value) == f"{rev!r} is ambiguous ({', '.join(refs)}): pass the full ref you mean"
    for ref in refs:
        assert spelled(ws.repo, ref) == ref
    with pytest.raises(gitrepo.RevisionError, match="ambiguous"):
        review(ws.repo, "main", base_notes=rev)


@pytest.mark.parametrize(("options", "ok"), [('valid-before="20200101"', False), ('valid-before="29990101"', True)])
def test_signers_are_judged_at_the_time_of_review_by_default(
    ws: Workspace, key: Key, options: str, ok: bool
) -> None:
    ws.trust(key.signers_line("alice@example.com", options))
    base = ws.pin("main")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "work")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    if options:  # the same name without the window, so that the branch can write it at all
        ws.trust(key.signers_line("alice@example.com"))
    override(ws, key, "ship")
    ws.pin()
    report = review(ws.repo, base)
    assert report.ok == ok, report.verify.breaks
    assert report.rows[-1].status.startswith("ok" if ok else "refused: key SHA256:")


def test_a_missing_pin_is_named_with_the_fix(ws: Workspace, key: Key) -> None:
    """A head whose pin file was deleted while the base has one is a break naming the fix."""
    base = start(ws, key)
    git(ws.root, "rm", "-q", ".vivary/guard/notes-tip")
    git(ws.root, "commit", "-q", "-m", "no pin")
    fix = "run `strato guard pin --from local && git add .vivary/guard/notes-tip` and commit it"
    assert [str(b) for b in review(ws.repo, base).verify.breaks] == [
        f"the head has no .vivary/guard/notes-tip but the base has one: {fix}"
    ]
    ws.pin()
    pinned = review(ws.repo, base)
    assert pinned.ok and pinned.rows, pinned.verify.breaks

def test_an_unreadable_base_ledger_is_a_break_and_the_next_ones_are_still_compared(
    ws: Workspace, key: Key
) -> None:
    """A base whose pinned notes hold lines without their note: nothing to judge the head
    by for that ledger; the base's other ledgers must still survive byte for byte."""
    start(ws, key)
    others = [f"feat:{n}" for n in range(10, 20)]
    for rid in others:
        engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    anchors = sorted(anchor_id(store.anchor_content(rid)) for rid in [RID, *others])
    first, last = anchors[0], anchors[-1]  # the order ledgers are read in
    last_rid = next(r for r in [RID, *others] if anchor_id(store.anchor_content(r)) == last)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    git(ws.root, "notes", "--ref=vivary/guard", "remove", first)
    base = ws.pin()
    git(ws.root, "checkout", "-q", "-b", "next")
    put_ledger(ws, last, ledger_text(ws, last).replace('"agent"', '"human"', 1))
    ws.pin()
    found = [str(b) for b in review(ws.repo, base).verify.breaks]
    assert f"note {first}: the base's ledger is unreadable: ledger lines under ledgers/ but no note" in found
    assert f"{last_rid!r} line 1: line of the base's ledger rewritten or removed" in found, found


def test_base_notes_named_by_hand_stand_for_a_missing_pin(ws: Workspace, key: Key) -> None:
    """A base made before pinning: ``--base-notes`` names the notes it accepted."""
    from strato.guard.errors import GuardError

    start(ws, key)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    git(ws.root, "rm", "-q", ".vivary/guard/notes-tip")
    git(ws.root, "commit", "-q", "-m", "main: no pin")
    base = git(ws.root, "rev-parse", "HEAD").strip()
    accepted = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "update-ref", "refs/heads/accepted", accepted)
    git(ws.root, "checkout", "-q", "-b", "next")
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "review", "to_state": "draft"})
    ws.pin()
    with pytest.raises(GuardError) as caught:
        review(ws.repo, base)
    assert caught.value.error_type == "review_unpinned"
    for name in (accepted, "accepted"):
        report = review(ws.repo, base, base_notes=name)
        assert report.ok and report.base_notes == accepted, report.verify.breaks
        assert [(r.line, r.kind) for r in report.rows] == [(3, "transition")]
    with pytest.raises(GuardError) as caught:
        review(ws.repo, base, base_notes="0" * 40)
    assert caught.value.error_type == "review_unpinned"


def test_each_base_ledger_break_names_its_resource_line_and_note(ws: Workspace, key: Key) -> None:
    anchor, base, text = _merged_base(ws, key)
    git(ws.root, "checkout", "-q", "-b", "next")
    cases = [
        (lambda: put_ledger(ws, anchor, text.replace('"agent"', '"human"', 1)),
         Break(RID, 1, "line of the base's ledger rewritten or removed", anchor)),
        (lambda: git(ws.root, "notes", "--ref=vivary/guard", "remove", anchor),
         Break(RID, None, "ledger of the base unreadable in the head: ledger lines under ledgers/ but no note",
               anchor)),
        (lambda: drop_ledger(ws, anchor), Break(RID, None, "ledger of the base was deleted", anchor)),
    ]
    for change, want in cases:
        put_ledger(ws, anchor, text)
        change()
        ws.pin()
        assert want in review(ws.repo, base).verify.breaks, want


def test_a_new_register_line_claiming_a_missing_commit_is_refused_at_line_1(ws: Workspace, key: Key) -> None:
    base = start(ws, key)
    anchor = anchor_id(store.anchor_content(RID))
    entries = [json.loads(line) for line in ledger_text(ws, anchor).splitlines()]
    put_ledger(ws, anchor, reseal([{**entries[0], "git_head": "1" * 40}]))
    ws.pin()
    why = f"{RID!r} line 1: claims commit 111111111111, which this repository lacks"
    assert why in [str(b) for b in review(ws.repo, base).verify.breaks]


def test_a_second_note_for_a_ledger_is_a_break_naming_its_object(ws: Workspace, key: Key) -> None:
    """Attack: a note under ``ab/cdef...`` beside the flat ``abcdef...`` one, which ``git
    notes show`` prints first. The break names the object that has two notes."""
    base = start(ws, key)
    anchor = anchor_id(store.anchor_content(RID))
    fake = ws.tmp / "fake.txt"
    fake.write_text('{"kind":"deviation","to_state":"released","resolved_by":"human"}\n')
    blob = git(ws.root, "hash-object", "-w", str(fake)).strip()
    fanned = subprocess.run(
        ["git", "mktree"], cwd=ws.root, input=f"100644 blob {blob}\t{anchor[2:]}\n",
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    notes_commit(ws, f"040000 tree {fanned}\t{anchor[:2]}\n")
    ws.pin()
    why = "two notes on one object (flat and fanned out); git shows both concatenated"
    assert Break(None, None, why, anchor) in review(ws.repo, base).verify.breaks


def test_a_notes_ref_naming_a_tree_is_the_one_break_of_the_review(ws: Workspace, key: Key) -> None:
    """Attack: a force-push points the notes ref at a tree. Review judges nothing else and
    still says which base, head and base notes it looked at."""
    _, base, _ = _merged_base(ws, key)
    accepted = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "checkout", "-q", "-b", "next")
    tree = git(ws.root, "rev-parse", f"{store.REF}^{{tree}}").strip()
    head = ws.commit({"CODE.md": "x\n", ".vivary/guard/notes-tip": tree + "\n"}, "next: pins a tree")
    brk = {"resource_id": None, "line": None, "anchor": None,
           "message": f"{store.REF} names a tree ({tree[:12]}), not a notes commit"}
    assert review(ws.repo, base).to_json() == {
        "ok": False, "base": base, "head": head, "base_notes": accepted, "entries": [],
        "verify": {"ok": False, "ref": store.REF, "tip": tree, "resources": 0, "entries": 0,
                   "first_break": brk, "breaks": [brk]},
    }


def _unpinned_base(ws: Workspace, key: Key) -> tuple[str, str]:
    """A base made before pinning (its ledgers merged, no pin file): the base commit and
    the notes commit it accepted, which ``--base-notes`` names."""
    start(ws, key)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    git(ws.root, "rm", "-q", ".vivary/guard/notes-tip")
    git(ws.root, "commit", "-q", "-m", "main: no pin")
    return git(ws.root, "rev-parse", "HEAD").strip(), git(ws.root, "rev-parse", store.REF).strip()


def test_a_branch_that_leaves_an_unpinned_base_s_notes_alone_has_nothing_to_pin(
    ws: Workspace, key: Key
) -> None:
    """Neither pin nor notes moved: nothing new to judge, nothing to pin."""
    base, accepted = _unpinned_base(ws, key)
    git(ws.root, "checkout", "-q", "-b", "next")
    ws.commit({"CODE.md": "x\n"}, "next: code only")
    report = review(ws.repo, base, base_notes=accepted)
    assert report.ok and report.rows == [], report.verify.breaks


def test_notes_commits_the_base_accepted_are_not_judged_again(ws: Workspace, key: Key) -> None:
    """The base wrote its notes unsigned, then began to require signed notes commits: only
    those past the base's pin are judged, or no repository could turn the rule on."""
    ws.trust(key.signers_line("alice@example.com"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    ws.commit({config.CONFIG_PATH: "require_signed_notes = true\n"}, "main: notes must be signed")
    base = ws.pin("main: pins its unsigned notes")
    accepted = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    resign(ws, key, accepted)
    ws.pin()
    report = review(ws.repo, base)
    assert report.ok and [(r.line, r.kind) for r in report.rows] == [(2, "transition")], report.verify.breaks


def test_a_notes_ref_rewound_behind_a_tip_named_by_since_is_a_break(ws: Workspace, key: Key) -> None:
    """Attack: the branch rewinds the notes past a commit the remote already has, and
    there is no reflog to tell (a fresh clone). ``since`` names the remote's tip."""
    base = start(ws, key)
    published = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "update-ref", store.REF, f"{published}~1")
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    ws.pin()
    assert review(ws.repo, base).ok  # nothing else tells
    assert [str(b) for b in review(ws.repo, base, since=[published]).verify.breaks] == [
        f"{store.REF} was rewritten: {published[:12]} is not in its history"
    ]


def test_a_branch_that_deletes_the_pin_is_a_break(ws: Workspace, key: Key) -> None:
    """Attack: the notes left as the base had them, the pin file deleted. Once merged, the
    next review would have no accepted notes to start from."""
    _, base, _ = _merged_base(ws, key)
    tip = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "checkout", "-q", "-b", "next")
    git(ws.root, "rm", "-q", ".vivary/guard/notes-tip")
    git(ws.root, "commit", "-q", "-m", "next: no pin")
    fix = "run `strato guard pin --from local && git add .vivary/guard/notes-tip` and commit it"
    assert [str(b) for b in review(ws.repo, base).verify.breaks] == [
        f"{store.REF} does not descend from the base's notes commit {tip[:12]} (rewritten or force-pushed)",
        f"the head has no .vivary/guard/notes-tip but the base has one: {fix}",
    ]


def test_entries_written_after_the_pin_are_not_part_of_the_pull_request(ws: Workspace, key: Key) -> None:
    """The branch pinned, then wrote one more entry: review judges what the pin names
    (what merging makes the base accept), so the later entry is neither shown nor accepted."""
    base = start(ws, key)
    ws.pin()
    shown = len(review(ws.repo, base).rows)
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "review", "to_state": "draft"})
    later = review(ws.repo, base)
    assert later.ok and len(later.rows) == shown
    assert all(row.to_state != "draft" or row.kind == "register" for row in later.rows)


@pytest.mark.parametrize(("now_s", "ok"), [(1893456000 - 10, True), (1893456000 + 10, False)])
def test_signed_notes_commits_are_judged_at_the_time_of_review(
    ws: Workspace, key: Key, now_s: int, ok: bool
) -> None:
    """Attack: notes commits signed by a key the base trusts until 2030-01-01, reviewed
    after it expired. The key's window is read at ``now_s``, as for ledger signatures."""
    ws.trust(key.signers_line("alice@example.com", 'valid-before="20300101"'))
    base = ws.pin("main: alice until 2030")
    git(ws.root, "checkout", "-q", "-b", "feature")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    resign(ws, key, None)
    ws.pin()
    tip = git(ws.root, "rev-parse", store.REF).strip()
    found = [str(b) for b in review(ws.repo, base, now_s=now_s).verify.breaks]
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key.path}.pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert found == ([] if ok else [
        f"notes commit {tip[:12]} is not signed by a trusted key: key {fingerprint} "
        "is not an allowed signer for namespace git"
    ])
