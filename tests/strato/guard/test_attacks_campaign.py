"""An attack campaign against ``strato guard review`` beyond issue 12's list: real git,
real ssh-keygen, the CLI as a subprocess. The attacker controls every byte of the branch
and of the notes ref; the tests pin what review must still refuse, report cleanly, or
print without misleading a reader.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.agents.lastjson import last_json_object
from strato.guard import config, descriptors, engine, signedops, store
from strato.guard.canonical import sha256_hex
from strato.guard.errors import GuardError
from strato.guard.review import _cell, review
from tests.support import console
from tests.support.guard import (
    POLICY,
    RID,
    Key,
    Workspace,
    anchor,
    at_review,
    ci,
    forge,
    git_verifies,
    ledger,
    ledger_text,
    make_key,
    notes_commit,
    origin_with_main,
    pull_request,
    put_ledger,
    resign,
    sign_override,
)
from tests.support.repos import git
from tropo.untrusted import default_ignorable


def cli(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return console.run("strato", "guard", *args, "--root", ws.root)  # a traceback raises


@pytest.fixture
def base(ws: Workspace, key: Key) -> str:
    """main trusts alice and pins no ledgers; ``feature`` is checked out. The base."""
    ws.trust(key.signers_line("alice@example.com"))
    sha = ws.pin("main: trust alice, no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    return sha


# --- crashes: a notes tree the attacker built by hand ------------------------------------


@pytest.mark.parametrize("target", ["head", "missing"])
def test_gitlink_named_like_a_note_is_reported_not_a_traceback(
    ws: Workspace, base: str, target: str
) -> None:
    """A submodule entry (mode 160000) under a 40-hex name is no ledger: review and
    verify must not crash reading it as one."""
    at_review(ws)
    sha = git(ws.root, "rev-parse", "HEAD").strip() if target == "head" else "1" * 40
    notes_commit(ws, f"160000 commit {sha}\t{anchor('release:ghost')}\n")
    ws.pin()
    for args in (("review", "--base", base), ("review", "--base", base, "--markdown"), ("verify",)):
        proc = cli(ws, *args)
        assert proc.returncode in (0, 1), proc.stderr


def test_gitlink_replacing_a_base_ledger_is_a_break(ws: Workspace, key: Key) -> None:
    """The base's ledger swapped for a submodule entry under the same name: deleted."""
    ws.trust(key.signers_line("alice@example.com"))
    at_review(ws)
    main = ws.pin("main: ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    tip = git(ws.root, "rev-parse", store.REF).strip()
    listing = [
        line for line in git(ws.root, "ls-tree", tip).splitlines() if not line.endswith(anchor())
    ]
    head = git(ws.root, "rev-parse", "HEAD").strip()
    tree = subprocess.run(
        ["git", "mktree"],
        cwd=ws.root,
        input="\n".join([*listing, f"160000 commit {head}\t{anchor()}"]) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(ws.root, "update-ref", store.REF, git(ws.root, "commit-tree", tree, "-p", tip, "-m", "x").strip())
    ws.pin()
    proc = cli(ws, "review", "--base", main, "--json")
    assert proc.returncode == 1
    messages = [b["message"] for b in json.loads(proc.stdout)["verify"]["breaks"]]
    assert any(m.startswith("ledger of the base") for m in messages), messages  # deleted or unreadable


# --- misleading the reader: Markdown a rendered PR comment obeys -------------------------

LURE = "![ok](https://evil.example/p.png) [approved](https://evil.example) @org/admins *x* _y_ # h"


def test_markdown_cells_carry_no_links_images_or_mentions(ws: Workspace, base: str) -> None:
    """A resource id is the registrant's free text, and registering is legitimate: the
    review passes, so its comment must show the id as text, not as an image or link."""
    (ws.root / "NOTES.md").write_text("n\n")
    engine.register(ws.repo, {"resource_id": LURE, **copy.deepcopy(POLICY)})
    ws.pin()
    proc = cli(ws, "review", "--base", base, "--markdown")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "evil" in line)
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert len(cells) == 8, row  # the table keeps its eight columns
    assert cells[0].strip() == f"` {LURE} `"  # a code span: shown, never rendered


@given(st.text(max_size=300))
def test_cell_is_one_code_span_of_the_visible_text(text: str) -> None:
    """Whatever a cell holds, it is one code span (so no Markdown or HTML inside is
    obeyed) that no backtick run inside can close and no ``|`` can split, holding the
    text with every character that hides or reorders text shown as ``U+XXXX``."""
    out = _cell(text)
    if not out:
        assert text == ""
        return
    fence = re.match("`+", out)
    assert fence and out.endswith(" " + fence.group())
    inner = out[len(fence.group()) + 1 : -len(fence.group()) - 1]
    assert all(len(run) < len(fence.group()) for run in re.findall("`+", inner))
    assert not re.search(r"(?<!\\)\|", inner), out
    shown = inner.replace("\\|", "|")
    hidden = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
    assert not any(unicodedata.category(c) in hidden or (c.isspace() and c != " ") for c in shown)
    assert not any(default_ignorable(c) for c in shown)
    assert shown == shown.strip(" ")  # "release:9 " must not look like "release:9"
    assert len(shown) <= 200 and (shown.endswith("…") or len(text) <= 200)


def test_bidi_override_in_a_resource_id_is_shown_not_obeyed(ws: Workspace, base: str) -> None:
    rid = "release:1\u202edelcfer\u202c"  # shows as "release:1refcled" when obeyed
    (ws.root / "NOTES.md").write_text("n\n")
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    ws.pin()
    for args in (("--markdown",), ()):
        proc = cli(ws, "review", "--base", base, *args)
        assert proc.returncode == 0, proc.stderr
        assert "\u202e" not in proc.stdout and "U+202E" in proc.stdout


@pytest.mark.parametrize("ignorable", ["\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0041"])
def test_an_invisible_character_in_a_resource_id_is_shown(ws: Workspace, base: str, ignorable: str) -> None:
    """A PR registers ``release:1.0`` plus a default-ignorable character (a combining
    grapheme joiner, a Hangul filler, a variation selector, a tag): rendered, it must not
    pass for the real ``release:1.0``."""
    (ws.root / "NOTES.md").write_text("n\n")
    for rid in ("release:1.0", f"release:1.0{ignorable}"):
        engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    ws.pin()
    proc = cli(ws, "review", "--base", base, "--markdown")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [re.split(r"(?<!\\)\|", line)[1].strip() for line in proc.stdout.splitlines() if "release:" in line]
    assert sorted(ids) == ["` release:1.0 `", f"` release:1.0U+{ord(ignorable):04X} `"]
    assert ignorable not in proc.stdout


def test_verify_names_a_broken_ledger_with_its_invisible_characters_shown(ws: Workspace) -> None:
    """`verify`'s breaks name the resource: one that looks like `release:1.0` but is not
    must not pass for it in a CI log."""
    rid = "release:1.0\u034f"
    (ws.root / "NOTES.md").write_text("n\n")
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    [entry] = ledger(ws, rid)
    put_ledger(ws, anchor(rid), json.dumps({**entry, "rationale": "rewritten"}) + "\n")
    proc = cli(ws, "verify")
    assert proc.returncode == 1 and "release:1.0U+034F" in proc.stderr, proc.stderr
    assert "\u034f" not in proc.stderr


def test_plain_output_prints_forged_text_without_control_characters(
    ws: Workspace, key: Key, base: str
) -> None:
    """The plain report is read in CI logs: a forged signer name (a carriage return and
    an erase-line sequence that would overwrite "refused" with "ok") is printed escaped."""
    at_review(ws)
    signedops.override(ws.repo, sign_override(ws, key, "ship"))
    entries = ledger(ws)
    lie = "mallory\r\x1b[2Kok     release:9 line 3 deviation"
    auth = {**entries[-1]["verdict"]["authorization"], "principal": lie}
    forge(ws, [*entries[:-1], {**entries[-1], "verdict": {"authorization": auth}}])
    ws.pin()
    proc = cli(ws, "review", "--base", base)
    assert proc.returncode == 1
    assert not [line for line in proc.stdout.splitlines() if line.startswith("ok") and "line 3" in line]
    assert "refused" in proc.stdout and "malloryU+000DU+001B[2Kok" in proc.stdout


# --- guarantees that hold, pinned ---------------------------------------------------------


def test_merge_of_an_attacker_history_that_rewrote_a_line_is_a_break(ws: Workspace, key: Key) -> None:
    """A notes commit with two parents, one of them an attacker's rewrite of the base's
    ledger: the merge keeps the honest bytes, but its history rewrote them."""
    ws.trust(key.signers_line("alice@example.com"))
    at_review(ws)
    main = ws.pin("main: ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    honest = git(ws.root, "rev-parse", store.REF).strip()
    entries = ledger(ws)
    forge(ws, [entries[0], {**entries[1], "rationale": "rewritten"}])
    evil = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "update-ref", store.REF, honest)
    notes_commit(ws, "", parents=[honest, evil])
    ws.pin()
    assert not review(ws.repo, main).ok


def test_require_signed_notes_is_read_from_the_base_not_the_branch(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice@example.com", 'namespaces="git"'))
    ws.commit({config.CONFIG_PATH: "require_signed_notes = true\n"}, "main: require signed notes")
    main = ws.pin("main: no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({config.CONFIG_PATH: "require_signed_notes = false\n"}, "feature: relax")
    at_review(ws)
    ws.pin()
    report = review(ws.repo, main)
    assert not report.ok
    assert any("unsigned" in str(b) for b in report.verify.breaks)


def test_entries_past_the_branchs_pin_are_neither_shown_nor_accepted(ws: Workspace, base: str) -> None:
    """A stale pin on the branch: review judges the pinned notes, which are exactly what
    the base accepts once merged, so an entry written after the pin gains nothing."""
    at_review(ws)
    ws.pin()
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "review", "to_state": "draft"})
    report = review(ws.repo, base)
    assert report.ok and [row.to_state for row in report.rows] == ["draft", "review"]


@pytest.mark.parametrize("base_has_ledgers", [True, False])
def test_a_branch_cannot_repoint_the_pin_without_moving_its_notes(
    ws: Workspace, base: str, base_has_ledgers: bool
) -> None:
    """The pin is what the next review takes as already accepted. A branch that leaves the
    notes ref where the base pinned it but points the pin at another notes commit gets that
    commit judged: every line it adds is in the review, none is accepted unseen."""
    if base_has_ledgers:
        git(ws.root, "checkout", "-q", "main")
        at_review(ws)
        base = ws.pin("main: pins its ledgers")
        git(ws.root, "checkout", "-q", "-B", "feature")
    pinned = git(ws.root, "rev-parse", "-q", "--verify", store.REF, check=False).strip()
    if pinned:  # a notes commit past the pinned one, kept under another ref
        unjudged = git(ws.root, "commit-tree", f"{pinned}^{{tree}}", "-p", pinned, "-m", "x").strip()
    else:  # notes written, kept under another ref, and the notes ref deleted again
        engine.register(ws.repo, {"resource_id": "release:other", **copy.deepcopy(POLICY)})
        unjudged = git(ws.root, "rev-parse", store.REF).strip()
        git(ws.root, "update-ref", "-d", store.REF)
    git(ws.root, "update-ref", "refs/notes/elsewhere", unjudged)
    ws.commit({".vivary/guard/notes-tip": unjudged + "\n"}, "feature: repoint the pin")
    report = review(ws.repo, base)  # every line the repointed pin adds is judged and shown
    added = [(row.resource_id, row.line) for row in report.rows]
    assert added == ([] if base_has_ledgers else [("release:other", 1)]), report.verify.breaks


# --- ledger lines no writer of ours makes ----------------------------------------------


def raw_ledger(ws: Workspace, text: str, rid: str = RID) -> None:
    """Replace the ledger's bytes with ``text`` in the layout review reads."""
    put_ledger(ws, anchor(rid), text)


@pytest.mark.parametrize(
    "bad", ['{"entry_digest":"x","ts_ms":' + "9" * 5000 + "}", '{"entry_digest":' + "[" * 200_000],
    ids=["5000-digits", "200000-brackets"],  # the id is in PYTEST_CURRENT_TEST: kept short
)
def test_a_huge_number_in_a_ledger_line_is_a_break_not_a_traceback(
    ws: Workspace, base: str, bad: str
) -> None:
    """Python refuses to read integers of more than 4,300 digits (a ValueError that is no
    JSONDecodeError), and nesting too deep: the line is a break like any unreadable one."""
    at_review(ws)
    raw_ledger(ws, ledger_text(ws, anchor()) + bad + "\n")
    ws.pin()
    for args in (("review", "--base", base, "--json"), ("verify",)):
        proc = cli(ws, *args)
        assert proc.returncode == 1, proc.stderr
    assert json.loads(cli(ws, "review", "--base", base, "--json").stdout)["verify"]["breaks"][0]["line"] == 3


def test_a_huge_number_on_stdin_is_a_usage_error(ws: Workspace, base: str) -> None:
    proc = console.run("strato", "guard", "transition", "--root", ws.root,
                       input='{"resource_id":' + "1" * 5000 + "}")  # a traceback raises
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_line_with_duplicate_keys_is_a_break(ws: Workspace, base: str) -> None:
    """``{..."to_state":"released",...,"to_state":"draft"...}``: a reader of ``git notes
    show`` sees the first value, JSON parsers judge the last. The line's raw digest holds
    (it is sealed over its own bytes), so only refusing duplicates keeps one reading."""
    at_review(ws)
    before = git(ws.root, "rev-parse", store.REF).strip()
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "review", "to_state": "draft"})
    text = ledger_text(ws, anchor())
    git(ws.root, "update-ref", store.REF, before)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")  # a fresh clone has no reflog
    last = text.splitlines()[-1]
    prev = json.loads(last)["prev_digest"]
    rest = last[len('{"entry_digest":"') + 64 + 2 :].replace(
        '"to_state":"draft"', '"to_state":"released","to_state":"draft"'
    )
    assert rest != last[len('{"entry_digest":"') + 64 + 2 :]
    sealed = '{"entry_digest":"' + sha256_hex("{" + rest + prev) + '",' + rest
    raw_ledger(ws, "".join(line + "\n" for line in [*text.splitlines()[:-1], sealed]))
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    assert "duplicate" in str(report.verify.breaks[0]), report.verify.breaks


@pytest.mark.parametrize("text", ['{"version":' + "1" * 5000 + "}", "[" * 100_000, '{"a":1,"a":2}'],
                         ids=["5000-digits", "100000-brackets", "duplicate-key"])
def test_untrusted_json_elsewhere_is_refused_not_a_crash(text: str) -> None:
    """upgrades.json (a branch's file) and a judge's stdout are read by the same rules."""
    with pytest.raises(GuardError):
        descriptors.parse(text.encode())
    assert last_json_object(text) in (None, {"a": 2})


def test_a_second_note_under_a_fanout_path_is_a_break(ws: Workspace, base: str) -> None:
    """``ab/cdef...`` next to ``abcdef...``: review reads the flat note, ``git notes
    show`` prints both concatenated (the fanned-out one first). A reader of git would see
    the attacker's text as the ledger, so two notes on one object are refused."""
    at_review(ws)
    fake = ws.tmp / "fake.txt"
    fake.write_text('{"kind":"deviation","to_state":"released","resolved_by":"human"}\n')
    blob = git(ws.root, "hash-object", "-w", str(fake)).strip()
    sub = subprocess.run(
        ["git", "mktree"],
        cwd=ws.root,
        input=f"100644 blob {blob}\t{anchor()[2:]}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    notes_commit(ws, f"040000 tree {sub}\t{anchor()[:2]}\n")
    assert git(ws.root, "notes", "--ref=vivary/guard", "show", anchor()).startswith('{"kind":"deviation"')
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    assert any("two notes on one object" in str(b) for b in report.verify.breaks), report.verify.breaks


# --- the CI recipe, run literally --------------------------------------------------------


def test_a_tag_named_like_the_base_cannot_replace_it_in_the_ci_recipe(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """``origin/main`` is ambiguous once someone pushes a tag of that name: git and
    libgit2 prefer ``refs/tags/origin/main`` to ``refs/remotes/origin/main``, and a
    fresh clone fetches every tag. The attacker's tag names their own commit as the base
    (their signers, their pin); the recipe must still judge by the real base."""
    remote = origin_with_main(ws, key, tmp_path)

    mallory = make_key(tmp_path, "ed25519", "mallory")
    own = {".vivary/guard/allowed_signers": mallory.signers_line("mallory@evil")}
    pull_request(ws, mallory, "attack", "release:2", own)
    git(ws.root, "tag", "origin/main", "attack")  # the base it wants: its own tree, its own pin
    git(ws.root, "push", "-q", "origin", "attack", "refs/tags/origin/main", store.REF)
    bad = ci(remote, "attack", tmp_path / "ci-attack")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "passed" not in bad.stdout


def test_an_ambiguous_base_name_is_refused(ws: Workspace, base: str) -> None:
    at_review(ws)
    ws.pin()
    git(ws.root, "branch", "-q", "-f", "main", base)
    git(ws.root, "tag", "main", "feature")  # a tag that would win over the branch
    proc = cli(ws, "review", "--base", "main")
    assert proc.returncode == 2 and "ambiguous" in proc.stderr and "refs/tags/main" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert cli(ws, "review", "--base", "refs/heads/main").returncode == 0


@pytest.mark.parametrize("what", ["blob", "tree", "tag"])
def test_a_notes_ref_naming_no_commit_is_reported_not_a_traceback(
    ws: Workspace, base: str, what: str
) -> None:
    """A force-pushed notes ref may name any object; git does not insist on a commit."""
    at_review(ws)
    tip = git(ws.root, "rev-parse", store.REF).strip()
    if what == "tag":
        git(ws.root, "tag", "-a", "-m", "t", "notes-tag", tip)
        target = git(ws.root, "rev-parse", "notes-tag").strip()
    else:
        target = git(ws.root, "rev-parse", f"{tip}^{{tree}}").strip()
        if what == "blob":
            target = git(ws.root, "rev-parse", "HEAD:README.md").strip()
    git(ws.root, "update-ref", store.REF, target)
    ws.pin()
    for args in (("review", "--base", base), ("verify",)):
        proc = cli(ws, *args)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "not a notes commit" in proc.stderr, proc.stderr


def test_a_second_note_under_an_uppercase_name_is_a_break(ws: Workspace, base: str) -> None:
    """git reads ``ABCDEF...`` as the note on ``abcdef...`` (and concatenates it with the
    lowercase one); a reader that skipped it would judge text git does not show."""
    at_review(ws)
    fake = ws.tmp / "fake.txt"
    fake.write_text('{"kind":"deviation","to_state":"released","resolved_by":"human"}\n')
    blob = git(ws.root, "hash-object", "-w", str(fake)).strip()
    notes_commit(ws, f"100644 blob {blob}\t{anchor().upper()}\n")
    assert '"kind":"deviation"' in git(ws.root, "notes", "--ref=vivary/guard", "show", anchor())
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    assert any("two notes on one object" in str(b) for b in report.verify.breaks), report.verify.breaks


# --- signed notes commits ------------------------------------------------------------------


def test_a_notes_signature_by_a_key_for_another_namespace_is_refused_like_git(
    ws: Workspace, key: Key
) -> None:
    """alice may sign overrides only; her signature on a notes commit (namespace git)
    is no signature a base that requires them accepts, as ``git verify-commit`` says."""
    allowed = key.signers_line("alice@example.com", 'namespaces="stratum-guard-override"')
    ws.commit(
        {".vivary/guard/allowed_signers": allowed, config.CONFIG_PATH: "require_signed_notes = true\n"},
        "main: notes must be signed",
    )
    main = ws.pin("main: no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    at_review(ws)
    resign(ws, key, None)
    ws.pin()
    tip = git(ws.root, "rev-parse", store.REF).strip()
    assert not git_verifies(ws, tip, allowed)
    report = review(ws.repo, main)
    assert not report.ok
    assert all("not an allowed signer for namespace git" in str(b) for b in report.verify.breaks)


def test_a_signed_merge_does_not_vouch_for_an_unsigned_parent(ws: Workspace, key: Key) -> None:
    """With signed notes required, every notes commit after the base's pin must be
    signed, including an attacker's unsigned side history that a signed merge joins."""
    ws.commit(
        {
            ".vivary/guard/allowed_signers": key.signers_line("alice@example.com"),
            config.CONFIG_PATH: "require_signed_notes = true\n",
        },
        "main: notes must be signed",
    )
    main = ws.pin("main: no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    at_review(ws)
    resign(ws, key, None)
    signed = git(ws.root, "rev-parse", store.REF).strip()
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "review", "to_state": "draft"})
    unsigned = git(ws.root, "rev-parse", store.REF).strip()
    tree = git(ws.root, "rev-parse", f"{unsigned}^{{tree}}").strip()
    merge = git(
        ws.root,
        "-c", "gpg.format=ssh", "-c", f"user.signingkey={key.path}",
        "commit-tree", "-S", tree, "-p", signed, "-p", unsigned, "-m", "merge",
    ).strip()
    git(ws.root, "update-ref", store.REF, merge)
    ws.pin()
    report = review(ws.repo, main)
    assert not report.ok
    assert [b.message for b in report.verify.breaks] == [
        f"notes commit {unsigned[:12]} is not signed by a trusted key: unsigned"
    ]


def test_an_override_signature_replayed_on_another_resource_is_refused(
    ws: Workspace, key: Key, base: str
) -> None:
    """alice's signed deviation for release:9, copied onto release:10 (same policy, same
    state, every digest recomputed): the payload names the resource and the ledger head."""
    at_review(ws)
    signedops.override(ws.repo, sign_override(ws, key, "ship"))
    deviation = ledger(ws)[-1]
    other = "release:10"
    engine.register(ws.repo, {"resource_id": other, **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, {"resource_id": other, "from_state": "draft", "to_state": "review"})
    forge(ws, [*ledger(ws, other), deviation], other)
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    refused = [r for r in report.rows if r.resource_id == other and r.kind == "deviation"]
    assert refused and refused[0].status.startswith("refused") and "verify" in refused[0].status
    assert [r.status for r in report.rows if r.resource_id == RID] == ["ok"] * 3


def test_an_ambiguous_base_notes_name_is_refused(ws: Workspace, base: str) -> None:
    """``--base-notes accepted`` (a branch the CI keeps) loses to a pushed tag ``accepted``."""
    at_review(ws)
    ws.pin()
    git(ws.root, "branch", "-q", "accepted", store.REF)
    git(ws.root, "tag", "accepted", "HEAD")
    proc = cli(ws, "review", "--base", "refs/heads/main", "--base-notes", "accepted")
    assert proc.returncode == 2 and "ambiguous" in proc.stderr, proc.stderr
    ok = cli(ws, "review", "--base", "refs/heads/main", "--base-notes", "refs/heads/accepted")
    assert ok.returncode == 0, ok.stderr
