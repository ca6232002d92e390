"""The ledger, pure: every kind of break is found at its line with its reason, and a
chain of legal steps folds to the state it says. Lines are built here, sealed with the
digest rule of ``canonical``, so each test changes exactly one thing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from strato.guard import canonical, ledger
from strato.guard import policy as policy_mod
from tests.support.guard import POLICY
from tropo.canonical import DuplicateKeyError

RID = "compose:FEAT-7"
POL = policy_mod.parse(POLICY)


def register(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ts_ms": 1,
        "from_state": None,
        "to_state": "draft",
        "outcome": "registered",
        "kind": "register",
        "resolved_by": "agent",
        "idempotency_key": None,
        "payload_digest": POL.checksum,
        "rationale": None,
        "verdict": {
            "resource_id": RID,
            "policy": POL.to_json(),
            "checksum": POL.checksum,
            "graph_version": 1,
        },
    }
    return {**entry, **changes}


def step(
    src: str, dst: str, outcome: str = "applied", kind: str = "transition", **changes: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ts_ms": 2,
        "from_state": src,
        "to_state": dst,
        "outcome": outcome,
        "kind": kind,
        "resolved_by": "agent",
        "idempotency_key": None,
        "payload_digest": "p",
        "rationale": None,
        "verdict": None,
    }
    return {**entry, **changes}


def repolicy(at: str, raw: dict[str, Any], version: int = 2, by: str = "human") -> dict[str, Any]:
    new = policy_mod.parse(raw)
    verdict = {"policy": new.to_json(), "checksum": new.checksum, "graph_version": version}
    return step(
        at, at, "graph_version", "graph_version", resolved_by=by, payload_digest=new.checksum, verdict=verdict
    )


def chain(*entries: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The sealed entries and the ledger text, each line linked to the one before."""
    sealed, text, prev = [], "", ""
    for entry in entries:
        done, line = canonical.seal({**entry, "prev_digest": prev})
        sealed.append(done)
        text += line
        prev = done["entry_digest"]
    return sealed, text


def broken(text: str, known: int = 0, after: str = "") -> tuple[int, str]:
    with pytest.raises(ledger.LedgerBreak) as info:
        ledger.parse(text, known, after)
    return info.value.line, info.value.message


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


# -- parse ------------------------------------------------------------------------------


def test_a_chain_of_legal_steps_folds_to_its_state() -> None:
    entries, text = chain(
        register(),
        step("draft", "review", idempotency_key="k1"),
        step("review", "released", "refused", idempotency_key="k1"),
        step("review", "released", "deviation", "deviation", idempotency_key="k2"),
    )
    assert ledger.parse(text) == entries
    state = ledger.load(text, RID)
    assert (state.current_state, state.length, state.graph_version) == ("released", 4, 1)
    assert state.head == entries[-1]["entry_digest"]
    assert state.entries == entries
    assert dict(state.by_key) == {"k1": entries[1], "k2": entries[3]}  # the first with a key
    assert (state.checksum, state.policy_line) == (POL.checksum, 0)
    assert ledger.parse("") == []


def test_the_optional_git_head_is_taken_and_typed() -> None:
    entries, text = chain(register(git_head="a" * 40), step("draft", "review", git_head=None))
    assert ledger.parse(text) == entries
    _, bad = chain(register(git_head=5))
    assert broken(bad) == (1, "git_head has the wrong type")


def test_an_unterminated_last_line_is_named() -> None:
    _, text = chain(register(), step("draft", "review"))
    assert broken(text[:-1]) == (2, "last line is not terminated")
    assert broken(text + "{") == (3, "last line is not terminated")


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("not json\n", "not JSON"),
        ("[" * 100_000 + "\n", "not JSON"),  # nested too deeply
        ("[]\n", "not a ledger entry (wrong keys)"),
        ('"entry"\n', "not a ledger entry (wrong keys)"),
    ],
    ids=["not-json", "nested-100000-deep", "array", "string"],  # short: ids go into the env
)
def test_a_line_that_is_not_an_entry_is_named(second: str, message: str) -> None:
    _, text = chain(register())
    assert broken(text + second) == (2, message)


def test_nesting_too_deep_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(ValueError) as info:
        ledger.loads("[" * 100_000)
    assert str(info.value) == "nested too deeply"


def test_a_duplicate_key_is_refused_whichever_value_comes_first() -> None:
    _, text = chain(register(), step("draft", "review"))
    first, second = lines(text)
    twice = second.replace('"kind":"transition"', '"kind":"transition","kind":"register"')
    assert broken(first + twice) == (2, "duplicate key")
    with pytest.raises(DuplicateKeyError) as info:
        ledger.loads('{"a":1,"a":1}')
    assert str(info.value) == "duplicate key 'a'"


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"kind": ...},  # dropped
        {"entry_digest": ...},
    ],
)
def test_a_line_with_missing_or_extra_keys_is_refused(change: dict[str, Any]) -> None:
    _, text = chain(register())
    entry = json.loads(text)
    for key, value in change.items():
        if value is ...:
            del entry[key]
        else:
            entry[key] = value
    assert broken(canonical.canonical(entry) + "\n") == (1, "not a ledger entry (wrong keys)")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ts_ms", "1"),
        ("ts_ms", True),
        ("ts_ms", 1.5),
        ("from_state", 3),
        ("to_state", None),
        ("idempotency_key", 1),
        ("verdict", []),
        ("prev_digest", None),
        ("entry_digest", 0),
    ],
)
def test_a_value_of_the_wrong_type_is_named(key: str, value: Any) -> None:
    _, text = chain(register())
    entry = {**json.loads(text), key: value}
    assert broken(canonical.canonical(entry) + "\n") == (1, f"{key} has the wrong type")


def test_a_dropped_or_reordered_line_breaks_the_link() -> None:
    _, text = chain(register(), step("draft", "review"), step("review", "draft"))
    one, two, three = lines(text)
    message = "prev_digest does not link to the line before (dropped or reordered)"
    assert broken(one + three) == (2, message)
    assert broken(one + three + two) == (2, message)
    assert broken(two) == (1, message)  # the first line links to ""


def test_an_edited_line_is_found_at_its_number() -> None:
    _, text = chain(register(), step("draft", "review"), step("review", "draft"))
    one, two, three = lines(text)
    edited = two.replace('"ts_ms":2', '"ts_ms":3')
    assert broken(one + edited + three) == (2, "entry_digest does not match the entry (edited)")


def test_a_line_verifies_from_its_bytes_or_from_its_canonical_form() -> None:
    """Stratum's engine hashes the bytes, so ``1.50`` stays ``1.50``; a line whose bytes
    are not canonical verifies by re-serialising."""
    body = {k: v for k, v in step("draft", "review", verdict={"score": 1}).items()}
    _, first = chain(register())
    prev = json.loads(first)["entry_digest"]
    rest = canonical.canonical({**body, "prev_digest": prev})[1:].replace('"score":1', '"score":1.50')
    digest = canonical.sha256_hex("{" + rest + prev)
    raw = f'{canonical.ENTRY_PREFIX}{digest}",{rest}\n'
    assert digest != canonical.entry_digest(json.loads(raw), prev)
    assert ledger.parse(first + raw)[1]["verdict"] == {"score": 1.5}
    spaced = json.dumps(json.loads(lines(chain(register(), step("draft", "review"))[1])[1]), indent=None)
    assert not spaced.startswith(canonical.ENTRY_PREFIX)
    assert len(ledger.parse(first + spaced + "\n")) == 2


def test_known_lines_are_decoded_not_checked_and_later_lines_must_link_to_them() -> None:
    entries, text = chain(register(), step("draft", "review"), step("review", "draft"))
    one, two, three = lines(text)
    edited = one.replace('"ts_ms":1', '"ts_ms":9')  # the cache vouched for these bytes
    assert broken(edited + two + three) == (1, "entry_digest does not match the entry (edited)")
    with pytest.raises(ledger.LedgerBreak):
        ledger.parse(edited + two + three)  # by default every line is checked
    with pytest.raises(ledger.LedgerBreak):
        ledger.load(edited + two + three, RID)
    assert ledger.parse(edited + two + three, known=1)[1:] == entries[1:]
    assert ledger.parse(edited + two + three, known=2)[1:] == entries[1:]
    assert ledger.parse(text, known=3) == entries
    assert ledger.parse(text, known=2) == entries
    assert broken(one + two + three.replace('"ts_ms":2', '"ts_ms":3'), known=2) == (
        3,
        "entry_digest does not match the entry (edited)",
    )
    assert broken(one + three, known=1) == (
        2,
        "prev_digest does not link to the line before (dropped or reordered)",
    )


@pytest.mark.parametrize("odd", ["not json\n", "[]\n", '{"entry_digest":1}\n', "{}\n"])
def test_known_lines_that_do_not_decode_as_entries_are_checked_after_all(odd: str) -> None:
    _, text = chain(register(), step("draft", "review"))
    line, _ = broken(odd + text, known=1)
    assert line == 1


def test_known_lines_joined_into_more_values_are_checked_after_all() -> None:
    _, text = chain(register(), step("draft", "review"))
    one, two = lines(text)
    # two values on one "line": the joined array has more items than lines
    assert broken(one.rstrip("\n") + "," + one + two, known=1)[0] == 1


def test_a_tail_links_to_the_digest_it_follows() -> None:
    entries, text = chain(register(), step("draft", "review"), step("review", "draft"))
    _, two, three = lines(text)
    assert ledger.parse(two + three, after=entries[0]["entry_digest"]) == entries[1:]
    assert broken(two + three)[0] == 1


# -- the first line, unchecked ----------------------------------------------------------


def test_the_resource_a_note_claims_is_read_from_its_first_line_only() -> None:
    _, text = chain(register(), step("draft", "review"))
    assert ledger.resource_of(text.encode()) == RID
    assert ledger.resource_of(lines(text)[0].encode() + b"junk \xff\n") == RID
    assert ledger.first_entry(lines(text)[0] + "junk\n") == json.loads(lines(text)[0])
    assert ledger.resource_of(b"junk\n" + text.encode()) is None
    assert ledger.first_entry("[1]\n") is None
    assert ledger.resource_of(b'{"verdict":[1]}\n') is None
    assert ledger.resource_of(b'{"verdict":{"resource_id":5}}\n') is None
    assert ledger.resource_of(b'{"verdict":null}\n') is None
    assert ledger.resource_of(b'{"verdict": {"resource_id": "a b"}}\n{}\n') == "a b"


# -- fold and apply ---------------------------------------------------------------------


def folded(*entries: dict[str, Any]) -> tuple[int, str]:
    sealed, _ = chain(*entries)
    with pytest.raises(ledger.LedgerBreak) as info:
        ledger.fold(sealed, RID)
    return info.value.line, info.value.message


def test_an_empty_ledger_or_one_that_does_not_start_by_registering_is_broken() -> None:
    with pytest.raises(ledger.LedgerBreak) as info:
        ledger.fold([], RID)
    assert (info.value.line, info.value.message) == (1, "empty ledger")
    must = "the first entry must register the resource"
    assert folded(register(kind="transition")) == (1, must)
    assert folded(register(outcome="applied")) == (1, must)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"verdict": None}, "policy entry carries no policy"),
        ({"verdict": {"policy": []}}, "policy entry carries no policy"),
        ({"verdict": {"policy": {"graph": 5}}}, "policy is invalid: graph must be an object"),
        ({"payload_digest": "x"}, "policy checksum does not match the policy (tampered)"),
        ({"verdict": {"checksum": "x"}}, "policy checksum does not match the policy (tampered)"),
        ({"verdict": {"graph_version": None}}, "graph_version missing"),
        ({"verdict": {"graph_version": True}}, "graph_version missing"),
        (
            {"verdict": {"graph_version": 2}},
            "register entry must start at the initial state, graph_version 1",
        ),
        ({"to_state": "review"}, "register entry must start at the initial state, graph_version 1"),
        ({"verdict": {"resource_id": "other:1"}}, "ledger registers another resource (moved note)"),
    ],
)
def test_a_register_line_is_checked_field_by_field(changes: dict[str, Any], message: str) -> None:
    entry = register()
    for key, value in changes.items():
        entry[key] = {**entry["verdict"], **value} if key == "verdict" and value else value
    assert folded(entry) == (1, message)


def test_a_policy_whose_checksum_is_right_in_one_place_only_is_tampered() -> None:
    entry = register()
    entry["verdict"] = {**entry["verdict"], "checksum": None}
    assert folded(entry) == (1, "policy checksum does not match the policy (tampered)")


@pytest.mark.parametrize(
    ("later", "message"),
    [
        (step("draft", "review", "deviation"), "outcome 'deviation' does not fit kind 'transition'"),
        (step("draft", "review", "applied", "deviation"), "outcome 'applied' does not fit kind 'deviation'"),
        (step("review", "released"), "starts at 'review' but the resource was at 'draft'"),
        (step("draft", "released"), "edge draft->released is not in the policy"),
        (step("draft", "review", kind="note"), "unknown entry kind 'note'/'applied'"),
        (step("draft", "draft", kind="graph_version"), "unknown entry kind 'graph_version'/'applied'"),
    ],
)
def test_a_step_that_is_not_legal_here_is_named(later: dict[str, Any], message: str) -> None:
    assert folded(register(), later) == (2, message)


def test_a_ledger_of_one_line_is_the_registered_resource() -> None:
    sealed, _ = chain(register())
    state = ledger.fold(sealed, RID)
    assert (state.resource_id, state.head, state.length) == (RID, sealed[0]["entry_digest"], 1)
    assert (state.current_state, state.entries, state.policy_line) == ("draft", sealed, 0)


def test_a_policy_change_without_a_policy_is_broken_at_its_line() -> None:
    assert folded(register(), {**repolicy("draft", _grown()), "verdict": None}) == (
        2,
        "policy entry carries no policy",
    )


def test_a_refused_transition_leaves_the_state_where_it_was() -> None:
    sealed, _ = chain(register(), step("draft", "review", "refused"), step("draft", "review"))
    assert ledger.fold(sealed, RID).current_state == "review"


def _grown() -> dict[str, Any]:
    raw = copy.deepcopy(POLICY)
    raw["graph"]["draft"] = ["review", "parked"]
    raw["graph"]["parked"] = []
    return raw


def test_a_policy_change_replaces_the_policy_where_it_is_made() -> None:
    sealed, _ = chain(register(), step("draft", "review"), repolicy("review", _grown(), by="agent"))
    state = ledger.fold(sealed, RID)
    assert (state.graph_version, state.policy_line, state.length) == (2, 2, 3)
    assert state.policy.has_edge("draft", "parked")
    assert state.checksum == policy_mod.parse(_grown()).checksum
    assert state.head == sealed[-1]["entry_digest"]


def test_a_policy_change_is_checked_for_place_version_states_and_signing() -> None:
    stay = "a policy change must stay at the current state"
    moved = repolicy("draft", _grown())
    assert folded(register(), {**moved, "to_state": "review"}) == (2, stay)
    assert folded(
        register(), step("draft", "review"), {**moved, "from_state": "draft", "to_state": "review"}
    ) == (3, stay)
    assert folded(register(), repolicy("draft", _grown(), version=3)) == (
        2,
        "graph_version 3 does not follow 1",
    )
    assert folded(register(), repolicy("draft", _grown(), version=1)) == (
        2,
        "graph_version 1 does not follow 1",
    )
    smaller = copy.deepcopy(POLICY)
    smaller["graph"] = {"draft": ["released"]}
    smaller["edge_predicates"], smaller["stakes"] = {}, {}
    assert folded(register(), step("draft", "review"), repolicy("review", smaller)) == (
        3,
        "the new policy drops the current state",
    )
    frozen = copy.deepcopy(POLICY)
    frozen["terminal"] = ["released", "review"]
    assert folded(register(), repolicy("draft", frozen, by="agent")) == (
        2,
        "unsigned policy change is not additive: the terminal set is frozen",
    )
    sealed, _ = chain(register(), repolicy("draft", frozen, by="human"))
    assert ledger.fold(sealed, RID).policy.terminal == policy_mod.parse(frozen).terminal


def test_each_later_entry_is_shown_to_the_hook_with_the_state_it_applies_to() -> None:
    sealed, _ = chain(register(), step("draft", "review"), step("review", "draft"))
    seen: list[tuple[int, str, str]] = []

    def hook(line: int, entry: dict[str, Any], state: ledger.State) -> None:
        seen.append((line, entry["to_state"], state.current_state))
        if line == 3:
            raise ledger.LedgerBreak(line, "refused by the hook")

    with pytest.raises(ledger.LedgerBreak) as info:
        ledger.fold(sealed, RID, hook)
    assert str(info.value) == "line 3: refused by the hook"
    assert seen == [(2, "review", "draft"), (3, "draft", "review")]


def test_a_resumed_state_reads_its_entries_once_and_only_when_asked() -> None:
    sealed, _ = chain(register(), step("draft", "review"), step("review", "draft"))
    calls: list[int] = []

    def read() -> list[dict[str, Any]]:
        calls.append(1)
        return sealed[:2]

    state = ledger.State(RID, POL, 1, "review", sealed[1]["entry_digest"], length=2, read_entries=read)
    state.apply(sealed[2], 3)
    assert calls == [] and state.known == [] and state.length == 3
    assert state.entries == sealed[:2]  # what the reader gives; the appended line is on disk
    assert state.entries == sealed[:2] and calls == [1]


def test_a_break_names_the_ledger_and_the_line() -> None:
    brk = ledger.LedgerBreak(4, "not JSON")
    assert (str(brk), brk.line, brk.message) == ("line 4: not JSON", 4, "not JSON")
    err = brk.as_guard_error(RID)
    assert (err.error_type, err.message) == (
        "ledger_corrupt",
        "ledger of 'compose:FEAT-7' is broken at line 4: not JSON",
    )
