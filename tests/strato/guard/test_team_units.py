"""The team modules' edges in process (issue 27's mutation run found them unpinned): the
pin merge driver's own reads and writes, the remote ref a branch's notes wait under, a
re-append of a broken ledger, and the per-branch notes chains of one clone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strato.guard import branchnotes, pin, store, team, union
from strato.guard.errors import GuardError
from tests.support.guard import Workspace, anchor, put_ledger, refused_tip, register_tip, run
from tests.support.repos import git
from tropo.git import notes


def _forked(ws: Workspace) -> tuple[str, str]:
    """Two notes commits, each with a ledger of its own, forked from one with none."""
    first = register_tip(ws, "fork:a")
    git(ws.root, "update-ref", "-d", store.REF)
    return first, register_tip(ws, "fork:b")


def test_a_branchs_notes_wait_on_the_remote_under_its_name() -> None:
    assert team.branch_ref("pr-7") == "refs/notes/vivary/branches/pr-7"


def test_the_driver_writes_the_pin_of_the_union_over_ours(ws: Workspace, tmp_path: Path) -> None:
    ours, theirs = _forked(ws)
    files = [tmp_path / "ours", tmp_path / "theirs"]
    files[0].write_text(f"{ours}\n")
    files[1].write_text(f"{theirs}\n")
    merged = team.driver(ws.repo, files[0], files[1])
    assert merged is not None and files[0].read_text() == f"{merged}\n"
    assert {k.anchor for k in store.ledgers(ws.repo, merged)} == {anchor("fork:a"), anchor("fork:b")}


@pytest.mark.parametrize("bad", ["ours", "theirs"])
def test_the_driver_names_the_file_that_is_not_a_pin(ws: Workspace, tmp_path: Path, bad: str) -> None:
    files = {name: tmp_path / name for name in ("ours", "theirs")}
    for name, path in files.items():
        path.write_text("not a pin\n" if name == bad else "none\n")
    with pytest.raises(GuardError) as caught:
        team.driver(ws.repo, files["ours"], files["theirs"])
    assert caught.value.message.startswith(f"{files[bad]} is not a guard pin")
    assert files["ours"].read_text() == ("not a pin\n" if bad == "ours" else "none\n")


def test_a_pin_file_longer_than_a_pin_is_refused_whatever_it_starts_with(
    ws: Workspace, tmp_path: Path
) -> None:
    """A file is read only to one byte past the longest pin: a valid pin padded past it
    is no pin, even though its first bytes are one."""
    tip = register_tip(ws, "long:1")
    padded = tmp_path / "ours"
    padded.write_text(tip + "\n" + " " * pin.MAX_PIN)
    plain = tmp_path / "theirs"
    plain.write_text("none\n")
    with pytest.raises(GuardError, match="is not a guard pin"):
        team.driver(ws.repo, padded, plain)


def test_re_appending_a_broken_ledger_is_refused_as_corrupt(ws: Workspace) -> None:
    onto = register_tip(ws, "broken:1")
    put_ledger(ws, anchor("broken:1"), '{"not": "a ledger"}\n\xff\n')
    proc = run(ws, "reappend", "broken:1", "--onto", onto, "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error_type"] == "ledger_corrupt"
    assert "cannot re-append a broken ledger" in proc.stderr


def _pinning_branch(ws: Workspace, branch: str, tip: str | None) -> None:
    git(ws.root, "checkout", "-q", "-B", branch)
    (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
    pin.write_tip(ws.repo, tip)


def test_a_branch_pins_only_notes_this_clone_has(ws: Workspace) -> None:
    """`pinned`: no pin, a pin that is not a commit id or names notes this clone lacks, is
    no pin (no chain is kept); `none` and a notes commit here are."""
    tip = register_tip(ws, "pins:1")
    assert branchnotes.pinned(ws.repo) == (False, None)
    for text, want in (("none", (True, None)), (tip, (True, tip)), ("f" * 40, (False, None)),
                       ("garbage", (False, None))):
        (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / pin.PIN_PATH).write_text(text + "\n")
        assert branchnotes.pinned(ws.repo) == want, text
    (ws.root / pin.PIN_PATH).unlink()
    (ws.root / pin.PIN_PATH).symlink_to(ws.root / "README.md")  # never read through
    assert branchnotes.pinned(ws.repo) == (False, None)


def test_another_branchs_writes_are_foreign_only_when_this_pin_lacks_them(ws: Workspace) -> None:
    a = register_tip(ws, "own:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    b = register_tip(ws, "own:b")  # on top of a
    assert branchnotes.foreign(ws.repo, "pr-b", b, None) == "pr-a"
    assert branchnotes.foreign(ws.repo, "pr-b", b, a) is None  # its pin holds them
    assert branchnotes.foreign(ws.repo, "pr-b", b, b) is None  # and more after them
    assert branchnotes.foreign(ws.repo, "pr-a", b, None) is None  # its own
    assert branchnotes.foreign(ws.repo, "pr-b", None, None) is None  # no notes here
    git(ws.root, "update-ref", "-d", store.REF)
    c = register_tip(ws, "own:c")
    assert branchnotes.foreign(ws.repo, "pr-b", c, None) is None  # the ref does not hold them


def test_entering_a_branch_switches_to_its_chain_and_keeps_the_other(ws: Workspace) -> None:
    """pr-a wrote a and then a2 (unrecorded); pr-b, pinning none with its own record b,
    enters: the notes ref becomes b, pr-a's record keeps a2, and the current chain of
    pr-b is b; entering again changes nothing."""
    a = register_tip(ws, "sw:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    git(ws.root, "update-ref", "-d", store.REF)
    b = register_tip(ws, "sw:b")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-b"), b)
    git(ws.root, "update-ref", store.REF, a)
    a2 = register_tip(ws, "sw:a2")
    _pinning_branch(ws, "pr-b", None)
    assert branchnotes.current(ws.repo) == b
    said = branchnotes.enter(ws.repo)
    assert said == (f"the guard notes are now branch pr-b's (at {b[:12]}); "
                    f"branch pr-a's stay at {branchnotes.record_ref('pr-a')}")
    assert git(ws.root, "rev-parse", store.REF).strip() == b
    assert git(ws.root, "reflog", "show", "--format=%gs", store.REF).splitlines() == [
        "guard: the notes of branch pr-b"  # the switch, on a log started afresh
    ]
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-a")).strip() == a2
    assert branchnotes.enter(ws.repo) is None and branchnotes.current(ws.repo) == b


def test_a_branch_with_no_record_starts_from_its_pin_and_records_its_write(ws: Workspace) -> None:
    a = register_tip(ws, "rec:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    _pinning_branch(ws, "pr-c", None)
    assert branchnotes.current(ws.repo) is None
    assert branchnotes.enter(ws.repo) is not None
    assert git(ws.root, "for-each-ref", store.REF).strip() == ""  # none: no notes yet
    c = register_tip(ws, "rec:c")
    branchnotes.record(ws.repo)
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-c")).strip() == c
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-a")).strip() == a


def test_no_chain_is_kept_detached_or_where_the_project_does_not_pin(ws: Workspace) -> None:
    register_tip(ws, "plain:1")
    branchnotes.record(ws.repo)  # no pin in the work tree
    _pinning_branch(ws, "pr-d", None)
    git(ws.root, "checkout", "-q", "--detach")
    branchnotes.record(ws.repo)
    assert git(ws.root, "for-each-ref", branchnotes.RECORDS).strip() == ""


@pytest.mark.parametrize("pinned_newer", [True, False])
def test_entering_a_branch_joins_its_record_and_its_pin(ws: Workspace, pinned_newer: bool) -> None:
    """pr-a's record and its pin are one chain at two points (a pin merged in from the
    base is newer; a write made through the library, unpinned, makes the record newer):
    entering pr-a, whose notes ref holds pr-b's writes, puts it on the newer of the two."""
    a = register_tip(ws, "join:a")
    a2 = register_tip(ws, "join:a2")  # on top of a
    git(ws.root, "update-ref", "-d", store.REF)
    b = register_tip(ws, "join:b")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-b"), b)
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a if pinned_newer else a2)
    _pinning_branch(ws, "pr-a", a2 if pinned_newer else a)
    assert branchnotes.current(ws.repo) == a2
    assert branchnotes.enter(ws.repo) is not None
    assert git(ws.root, "rev-parse", store.REF).strip() == a2
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-b")).strip() == b


def test_with_no_other_branchs_writes_the_notes_ref_is_the_branchs_chain(ws: Workspace) -> None:
    """pr-a pins a, its last write recorded a2, a library write made a3: with no other
    branch's writes in it, the ref is pr-a's chain as it is, and entering moves nothing."""
    a = register_tip(ws, "same:a")
    register_tip(ws, "same:a2")
    record = branchnotes.record_ref("pr-a")
    git(ws.root, "update-ref", record, git(ws.root, "rev-parse", store.REF).strip())
    a3 = register_tip(ws, "same:a3")
    _pinning_branch(ws, "pr-a", a)
    assert branchnotes.current(ws.repo) == a3
    assert branchnotes.enter(ws.repo) is None
    assert git(ws.root, "rev-parse", store.REF).strip() == a3


def test_a_landed_branchs_writes_in_this_pin_are_not_another_branchs(ws: Workspace) -> None:
    """pr-a's writes reached pr-c's pin (pr-a landed, pr-c started from the base after):
    they are no other branch's, so pr-c stays on the notes ref as it is."""
    a = register_tip(ws, "landed:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    c = register_tip(ws, "landed:c")
    _pinning_branch(ws, "pr-c", a)
    assert branchnotes.current(ws.repo) == c
    assert branchnotes.enter(ws.repo) is None
    assert git(ws.root, "rev-parse", store.REF).strip() == c


def test_a_branch_whose_own_chain_holds_another_s_writes_stays_on_it(ws: Workspace) -> None:
    """pr-b was started on top of pr-a's writes (a stacked branch) and recorded b: the ref
    at b holds pr-a's, but b is pr-b's own chain, so nothing switches."""
    a = register_tip(ws, "stack:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    b = register_tip(ws, "stack:b")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-b"), b)
    _pinning_branch(ws, "pr-b", None)
    assert branchnotes.current(ws.repo) == b
    assert branchnotes.enter(ws.repo) is None
    assert git(ws.root, "rev-parse", store.REF).strip() == b


def _lock(ws: Workspace, ref: str) -> Path:
    """Another process mid-write on ``ref``: git's lock file beside it."""
    lock = ws.root / ".git" / (ref + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    return lock


def test_a_switch_that_loses_a_race_refuses_and_moves_nothing(ws: Workspace) -> None:
    a = register_tip(ws, "race:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    _pinning_branch(ws, "pr-b", None)
    _lock(ws, branchnotes.record_ref("pr-a"))
    with pytest.raises(GuardError) as caught:
        branchnotes.enter(ws.repo)
    assert (caught.value.error_type, caught.value.message) == (
        "ledger_busy", f"{store.REF} moved while switching branches; try again")
    assert git(ws.root, "rev-parse", store.REF).strip() == a


def test_each_write_moves_the_branchs_record_and_a_race_is_left_to_the_next(ws: Workspace) -> None:
    _pinning_branch(ws, "pr-e", None)
    first = register_tip(ws, "rec:e1")
    branchnotes.record(ws.repo)
    second = register_tip(ws, "rec:e2")
    branchnotes.record(ws.repo)
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-e")).strip() == second != first
    lock = _lock(ws, branchnotes.record_ref("pr-e"))
    register_tip(ws, "rec:e3")
    branchnotes.record(ws.repo)  # another write holds the record: no error, no move
    lock.unlink()
    assert git(ws.root, "rev-parse", branchnotes.record_ref("pr-e")).strip() == second


def _lines(ws: Workspace, tip: str | None) -> dict[str, int]:
    return {kept.anchor: kept.lines for kept in store.ledgers(ws.repo, tip)}


def test_a_union_takes_each_ledger_from_the_side_that_extends_the_other(ws: Workspace) -> None:
    base = register_tip(ws, "u:shared")
    ours = refused_tip(ws, "u:shared")  # two lines of the shared ledger
    git(ws.root, "update-ref", store.REF, base)
    register_tip(ws, "u:theirs")  # one line of it, and ledgers of their own,
    theirs = register_tip(ws, "u:extra-4")  # one sorting after the shared one
    assert anchor("u:extra-4") > anchor("u:shared")
    merged = union.merge(ws.repo, ours, theirs)
    assert merged is not None and merged not in (ours, theirs)
    assert [str(p) for p in ws.repo[merged].parent_ids] == [ours, theirs]
    want = {anchor("u:shared"): 2, anchor("u:theirs"): 1, anchor("u:extra-4"): 1}
    assert _lines(ws, merged) == want
    backwards = union.merge(ws.repo, theirs, ours)
    assert backwards is not None and _lines(ws, backwards) == _lines(ws, merged)
    assert union.merge(ws.repo, ours, base) == ours and union.merge(ws.repo, base, ours) == ours
    assert union.merge(ws.repo, ours, ours) == ours
    assert union.merge(ws.repo, None, ours) == ours and union.merge(ws.repo, ours, None) == ours


def test_two_sides_that_grew_one_ledger_differently_are_one_conflict_naming_reappend(
    ws: Workspace,
) -> None:
    base = register_tip(ws, "u:one")
    ours = refused_tip(ws, "u:one")
    git(ws.root, "update-ref", store.REF, base)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")  # the other clone's side
    refused_tip(ws, "u:one")
    extra = [f"u:extra-{n}" for n in range(6)]  # ledgers only theirs has, around u:one's
    for rid in extra:
        register_tip(ws, rid)
    theirs = git(ws.root, "rev-parse", store.REF).strip()
    assert any(anchor(rid) > anchor("u:one") for rid in extra)
    with pytest.raises(GuardError) as caught:
        union.merge(ws.repo, ours, theirs)
    assert caught.value.error_type == "notes_conflict"
    assert caught.value.message == (
        "both sides appended to the ledger of 'u:one' (its hash chain orders them): run "
        f"`strato guard reappend u:one --onto {theirs}` to re-derive this side's entries after theirs"
    )
    kept = union.merged_tree(ws.repo, ours, theirs, skip=anchor("u:one"))  # reappend's start
    held = {k.anchor: k.lines for k in store.ledgers(ws.repo, notes.make_commit(ws.repo, [ours], kept, "t\n"))}
    assert held == {anchor("u:one"): 2, **{anchor(rid): 1 for rid in extra}}


def test_a_union_that_cannot_sign_its_merge_commit_is_one_line(ws: Workspace) -> None:
    ours = register_tip(ws, "sign:a")
    git(ws.root, "update-ref", "-d", store.REF)
    theirs = register_tip(ws, "sign:b")
    for key, value in (("vivary.signNotes", "true"), ("gpg.format", "ssh"),
                       ("user.signingkey", str(ws.root / "no-such-key"))):
        git(ws.root, "config", key, value)
    with pytest.raises(GuardError) as caught:
        union.merge(ws.repo, ours, theirs)
    assert caught.value.error_type == "signing_failed" and caught.value.message
    assert "no-such-key" in caught.value.message or "sign" in caught.value.message


def test_the_switch_names_a_long_branch_in_its_log_line_cut_at_80(ws: Workspace) -> None:
    a = register_tip(ws, "long:a")
    git(ws.root, "update-ref", branchnotes.record_ref("pr-a"), a)
    long = "b" * 100
    _pinning_branch(ws, long, None)
    git(ws.root, "update-ref", branchnotes.record_ref(long), register_tip(ws, "long:b"))
    git(ws.root, "update-ref", store.REF, a)
    assert branchnotes.enter(ws.repo) is not None
    assert git(ws.root, "reflog", "show", "--format=%gs", store.REF).splitlines() == [
        "guard: the notes of branch " + "b" * 80
    ]


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe\n", b"none\n" + b" " * (pin.MAX_PIN - 6) + b"x"],
    ids=["not utf-8", "junk in the last byte a pin may have"],
)
def test_a_pin_file_that_is_no_pin_in_any_byte_is_refused_in_one_line(
    ws: Workspace, tmp_path: Path, data: bytes
) -> None:
    """Bytes that do not decode are no pin (one line, not a decoding crash), and the last
    of the ``MAX_PIN`` bytes a pin may have is read as any other."""
    assert len(data) <= pin.MAX_PIN
    files = [tmp_path / "ours", tmp_path / "theirs"]
    files[0].write_bytes(data)
    files[1].write_text("none\n")
    with pytest.raises(GuardError) as caught:
        team.driver(ws.repo, files[0], files[1])
    assert caught.value.message == f"{files[0]} is not a guard pin (a notes commit id or `none`): not merged"


def test_a_side_that_pins_none_merges_to_the_other_sides_pin(ws: Workspace, tmp_path: Path) -> None:
    """`none` (here padded to exactly the ``MAX_PIN`` bytes a pin may have) is no notes
    commit: the union is the other side's."""
    tip = register_tip(ws, "none:1")
    files = [tmp_path / "ours", tmp_path / "theirs"]
    files[0].write_bytes(b"none\n" + b" " * (pin.MAX_PIN - 5))
    files[1].write_text(f"{tip}\n")
    assert team.driver(ws.repo, files[0], files[1]) == tip and files[0].read_text() == f"{tip}\n"
