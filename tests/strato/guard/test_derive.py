"""Re-deriving ledger entries (:mod:`strato.guard.derive`): honest lines made by the
engine pass, and each field a forger could change is refused with its own reason.

The ledgers are written once, by the real engine with real ssh-keygen signatures; every
case changes one field of one honest line and checks it against the state before it, as
verify does for each line of a ledger under review.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pygit2
import pytest

from strato.guard import authz, derive, descriptors, engine, ledger, signedops, store
from strato.guard.canonical import payload_digest
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Workspace, ledger_text, make_key, ssh_sign
from tests.support.repos import git
from tropo.git import repo as gitrepo
from tropo.git.notes import anchor_id
from tropo.git.types import Commit

Entry = dict[str, Any]


@dataclass
class Made:
    """Honest ledgers by resource, and the commits a reviewer would judge them at."""

    ledgers: dict[str, list[Entry]]
    head: Commit  # NOTES.md and PASSED exist
    bare: Commit  # neither exists; PASSED is a directory
    repo: pygit2.Repository

    def before(self, rid: str, line: int) -> ledger.State:
        """The state the 1-based ``line`` of ``rid``'s ledger applies to."""
        return ledger.fold(self.ledgers[rid][: line - 1], rid)

    def entry(self, rid: str, line: int) -> Entry:
        return copy.deepcopy(self.ledgers[rid][line - 1])


def _read(ws: Workspace, rid: str) -> list[Entry]:
    return [json.loads(line) for line in ledger_text(ws, anchor_id(store.anchor_content(rid))).splitlines()]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """``moves``: register, refused and applied transitions, a signed deviation, and an
    applied step whose deterministic predicate needs ``PASSED``. ``policy``: an unsigned
    upgrade, a signed migrate and a signed apply_upgrade."""
    tmp = tmp_path_factory.mktemp("derive")
    root = tmp / "ws"
    root.mkdir()
    git(root, "init", "-q")
    ws = Workspace(root, tmp)
    bare = ws.commit({"README.md": "# ws\n", "PASSED/keep": "a directory, not a file\n"}, "initial")
    key = make_key(tmp)
    ws.trust(key.signers_line("alice@example.com"))
    repo = ws.repo

    def sign(kind: str, body: dict[str, Any]) -> dict[str, Any]:
        payload, ns = engine.authorization_request(repo, {"kind": kind, **body})
        return {**body, "authorization": ssh_sign(key, ns, payload.encode(), tmp)}

    engine.register(repo, {"resource_id": "moves", **copy.deepcopy(POLICY)})
    move = {"resource_id": "moves", "from_state": "draft", "to_state": "review"}
    assert engine.transition(repo, move)["status"] == "refused"
    ws.commit({"NOTES.md": "n\n"}, "notes")
    assert engine.transition(repo, move)["status"] == "applied"
    ask = {"resource_id": "moves", "from_state": "review", "to_state": "draft", "rationale": "back"}
    signedops.override(repo, sign("override", ask))
    assert engine.transition(repo, move)["status"] == "applied"
    git(root, "rm", "-q", "-r", "PASSED")
    ws.commit({"PASSED": "ok\n"}, "tests passed")
    done = {"resource_id": "moves", "from_state": "review", "to_state": "released"}
    assert engine.transition(repo, done)["status"] == "applied"

    engine.register(repo, {"resource_id": "policy", **copy.deepcopy(POLICY)})
    grown = {**POLICY["graph"], "draft": ["review", "parked"], "parked": []}
    upgrade = {
        "resource_id": "policy",
        "new_graph": grown,
        "new_edge_predicates": copy.deepcopy(POLICY["edge_predicates"]),
        "new_terminal": ["released"],
        "new_stakes": dict(POLICY["stakes"]),
        "rationale": "grow",
    }
    assert signedops.upgrade(repo, upgrade)["status"] == "migrated"
    migrate = {"resource_id": "policy", "new_graph": {"draft": ["released"]}, "new_terminal": ["released"],
               "rationale": "drop review"}
    out = signedops.migrate(repo, sign("migrate", migrate))
    assert out["status"] == "migrated"
    checksum = engine.history(repo, {"resource_id": "policy"})["ledger"][-1]["payload_digest"]
    to_policy = {"graph": {"draft": ["review"], "review": []}, "edge_predicates": {},
                 "terminal": ["review"], "stakes": {}}
    items = [{"id": "d", "rationale": "r", "from_checksum": checksum, "to_policy": to_policy}]
    data = json.dumps({"version": 1, "descriptors": items}, indent=2)
    ws.commit({descriptors.PATH: data,
               descriptors.SIG_PATH: ssh_sign(key, authz.NS_DESCRIPTORS, data.encode(), tmp)})
    assert signedops.apply_upgrade(repo, {"resource_id": "policy", "descriptor_id": "d"})["status"] == "applied"

    ledgers = {rid: _read(ws, rid) for rid in ("moves", "policy")}
    assert [e["kind"] for e in ledgers["moves"]] == [
        "register", "transition", "transition", "deviation", "transition", "transition"
    ]
    assert [e["verdict"].get("operation") for e in ledgers["policy"][1:]] == [
        "upgrade", "migrate", "apply_upgrade"
    ]
    head = gitrepo.head_commit(repo)
    old = repo.get(bare)
    assert head is not None and isinstance(old, Commit)
    return Made(ledgers, head, old, repo)


# (resource, line): what each honest line is
REGISTER, REFUSED, APPLIED, DEVIATION, RELEASED = ("moves", 1), ("moves", 2), ("moves", 3), ("moves", 4), ("moves", 6)
UPGRADE, MIGRATE, APPLY = ("policy", 2), ("policy", 3), ("policy", 4)


def test_every_honest_line_is_what_its_inputs_imply(made: Made) -> None:
    for rid, lines in made.ledgers.items():
        derive.check_register(made.entry(rid, 1))
        for line in range(2, len(lines) + 1):
            derive.check(made.entry(rid, line), made.before(rid, line), made.head)


def _set(path: str, value: object) -> Callable[[Entry], None]:
    """Set a field, ``a.b.0.c`` reaching into the verdict's objects and lists."""

    def change(entry: Entry) -> None:
        *parents, last = path.split(".")
        at: Any = entry
        for part in parents:
            at = at[int(part)] if isinstance(at, list) else at[part]
        if isinstance(at, list):
            at[int(last)] = value
        else:
            at[last] = value

    return change


def _drop(path: str) -> Callable[[Entry], None]:
    def change(entry: Entry) -> None:
        *parents, last = path.split(".")
        at: Any = entry
        for part in parents:
            at = at[part]
        del at[last]

    return change


def _both(*changes: Callable[[Entry], None]) -> Callable[[Entry], None]:
    def change(entry: Entry) -> None:
        for one in changes:
            one(entry)

    return change


REGISTER_CASES = {
    "resolved by a human": (_set("resolved_by", "human"), "the register line is resolved by 'agent'"),
    "with a from_state": (_set("from_state", "draft"), "the register line has no from_state and no rationale"),
    "with a rationale": (_set("rationale", "r"), "the register line has no from_state and no rationale"),
    "with an idempotency_key": (_set("idempotency_key", "k"), "the register line carries no idempotency_key"),
    "with an extra verdict key": (
        _set("verdict.authorization", {}), "the register line carries exactly its resource and policy"
    ),
    "without its graph_version": (
        _drop("verdict.graph_version"), "the register line carries exactly its resource and policy"
    ),
    "with no verdict": (_set("verdict", None), "the register line carries exactly its resource and policy"),
    "with another payload_digest": (
        _set("payload_digest", "0" * 64), "the register line's payload_digest is not its policy checksum"
    ),
}


@pytest.mark.parametrize("case", REGISTER_CASES)
def test_a_register_line_carries_nothing_but_its_policy(made: Made, case: str) -> None:
    change, why = REGISTER_CASES[case]
    entry = made.entry(*REGISTER)
    change(entry)
    with pytest.raises(ValueError) as caught:
        derive.check_register(entry)
    assert str(caught.value) == why


EVIDENCE = "verdict.meta.guard_evidence.0"
RECORD = "verdict.predicates.0"
CASES: dict[str, tuple[tuple[str, int], Callable[[Entry], None], str]] = {
    "negative time": (APPLIED, _set("ts_ms", -1), "ts_ms is negative"),
    "a step off the graph": (
        REFUSED, _set("to_state", "released"), "edge draft->released is not in the policy"
    ),
    "a deviation off the graph": (
        DEVIATION, _set("to_state", "parked"), "edge review->parked is not in the policy"
    ),
    "a register line later": (APPLIED, _set("kind", "register"), "entry kind 'register' cannot follow the register line"),
    # transitions
    "a transition resolved by a human": (
        APPLIED, _set("resolved_by", "human"), "resolved_by 'human': a transition is resolved by 'agent'"
    ),
    "a transition with a rationale": (APPLIED, _set("rationale", "r"), "a transition carries no rationale"),
    "a payload_digest in capitals": (
        APPLIED, lambda e: e.update(payload_digest=e["payload_digest"].upper()), "payload_digest is not a sha256"
    ),
    "a payload_digest one digit short": (
        APPLIED, lambda e: e.update(payload_digest=e["payload_digest"][1:]), "payload_digest is not a sha256"
    ),
    "a payload_digest with a newline": (
        APPLIED, lambda e: e.update(payload_digest=e["payload_digest"] + "\n"), "payload_digest is not a sha256"
    ),
    "no verdict": (APPLIED, _set("verdict", None), "the verdict is not one the guard writes"),
    "an extra verdict key": (APPLIED, _set("verdict.authorization", {}), "the verdict is not one the guard writes"),
    "predicates not a list": (
        APPLIED, _set("verdict.predicates", {}), "the verdict does not record every predicate of the edge"
    ),
    "meta not an object": (
        APPLIED, _set("verdict.meta", []), "the verdict does not record every predicate of the edge"
    ),
    "evidence not a list": (
        APPLIED, _set("verdict.meta.guard_evidence", {}), "the verdict does not record every predicate of the edge"
    ),
    "a predicate left out": (
        APPLIED, _set("verdict.predicates", []), "the verdict does not record every predicate of the edge"
    ),
    "evidence left out": (
        APPLIED, _set("verdict.meta.guard_evidence", []), "the verdict does not record every predicate of the edge"
    ),
    "a record not an object": (APPLIED, _set(RECORD, "met"), "a predicate record is not an object"),
    "evidence not an object": (APPLIED, _set(EVIDENCE, "met"), "a predicate record is not an object"),
    "another predicate's id": (
        APPLIED, _set(f"{RECORD}.id", "other"), "the verdict records another predicate than 'notes'"
    ),
    "another predicate's type": (
        APPLIED, _set(f"{RECORD}.type", "judged"), "the verdict records another predicate than 'notes'"
    ),
    "another predicate's statement": (
        APPLIED, _set(f"{RECORD}.statement", "true"), "the verdict records another predicate than 'notes'"
    ),
    "evidence for another id": (
        APPLIED, _set(f"{EVIDENCE}.id", "other"), "the evidence is for another predicate than 'notes'"
    ),
    "evidence for another statement": (
        APPLIED, _set(f"{EVIDENCE}.statement", "true"), "the evidence is for another predicate than 'notes'"
    ),
    "met as a string": (APPLIED, _set(f"{EVIDENCE}.met", "true"), "predicate 'notes' is recorded inconsistently"),
    "met but recorded not_met": (
        APPLIED, _set(f"{RECORD}.verdict", "not_met"), "predicate 'notes' is recorded inconsistently"
    ),
    "not met but recorded met": (
        REFUSED, _set(f"{RECORD}.verdict", "met"), "predicate 'notes' is recorded inconsistently"
    ),
    "met with empty evidence": (APPLIED, _set(f"{EVIDENCE}.evidence", ""), "predicate 'notes' is met without evidence"),
    "met with evidence not a string": (
        APPLIED, _set(f"{EVIDENCE}.evidence", ["x"]), "predicate 'notes' is met without evidence"
    ),
    "other stakes": (RELEASED, _set("verdict.stakes", "default"), "the verdict's stakes are not the edge's"),
    "met without its predicates": (
        REFUSED, _both(_set("verdict.met", True), _set("verdict.clean", True)),
        "the verdict's met does not follow from its predicates",
    ),
    "met as 1": (APPLIED, _set("verdict.met", 1), "the verdict's met does not follow from its predicates"),
    "clean but not met": (REFUSED, _set("verdict.clean", True), "the verdict's met does not follow from its predicates"),
    "met but not clean": (APPLIED, _set("verdict.clean", False), "the verdict's met does not follow from its predicates"),
    "a refused step recorded applied": (
        REFUSED, _set("outcome", "applied"), "outcome 'applied' does not follow from the verdict"
    ),
    "an applied step recorded refused": (
        APPLIED, _set("outcome", "refused"), "outcome 'refused' does not follow from the verdict"
    ),
    # deviations
    "a deviation resolved by the agent": (
        DEVIATION, _set("resolved_by", "agent"), "resolved_by 'agent': a deviation is resolved by 'human'"
    ),
    "an unsigned deviation": (DEVIATION, _drop("verdict.authorization"), "unsigned: the entry carries no authorization"),
    "a deviation with no verdict": (DEVIATION, _set("verdict", None), "unsigned: the entry carries no authorization"),
    "an authorization not an object": (
        DEVIATION, _set("verdict.authorization", "sig"), "unsigned: the entry carries no authorization"
    ),
    "an authorization with an extra key": (
        DEVIATION, _set("verdict.authorization.descriptor_id", "d"), "a deviation must carry exactly its signed authorization"
    ),
    "an authorization without its rationale": (
        DEVIATION, _drop("verdict.authorization.rationale"), "a deviation must carry exactly its signed authorization"
    ),
    "a deviation signed in another namespace": (
        DEVIATION, _set("verdict.authorization.namespace", authz.NS_MIGRATE),
        f"authorization namespace {authz.NS_MIGRATE!r} is not deviation's",
    ),
    "a deviation's verdict with more than its authorization": (
        DEVIATION, _set("verdict.met", True), "a deviation's verdict holds only its authorization"
    ),
    "a deviation with an idempotency_key": (DEVIATION, _set("idempotency_key", "k"), "a deviation carries no idempotency_key"),
    "a deviation with another payload_digest": (
        DEVIATION, _set("payload_digest", "0" * 64), "payload_digest is not the digest of this deviation"
    ),
    # policy changes
    "a policy change of no operation": (UPGRADE, _drop("verdict.operation"), "policy change of unknown operation None"),
    "a policy change with no verdict": (UPGRADE, _set("verdict", None), "policy change of unknown operation None"),
    "a policy change of another operation": (
        UPGRADE, _set("verdict.operation", "override"), "policy change of unknown operation 'override'"
    ),
    "an upgrade resolved by a human": (
        UPGRADE, _set("resolved_by", "human"), "resolved_by 'human': a upgrade is resolved by 'agent'"
    ),
    "an upgrade carrying an authorization": (
        UPGRADE, _set("verdict.authorization", {}), "an upgrade carries exactly operation, policy, checksum, graph_version"
    ),
    "an upgrade without its checksum": (
        UPGRADE, _drop("verdict.checksum"), "an upgrade carries exactly operation, policy, checksum, graph_version"
    ),
    "an upgrade with an idempotency_key": (
        UPGRADE, _set("idempotency_key", "k"), "a policy change carries a rationale and no idempotency_key"
    ),
    "an upgrade without a rationale": (
        UPGRADE, _set("rationale", None), "a policy change carries a rationale and no idempotency_key"
    ),
    "a migrate resolved by the agent": (
        MIGRATE, _set("resolved_by", "agent"), "resolved_by 'agent': a migrate is resolved by 'human'"
    ),
    "an unsigned migrate": (MIGRATE, _drop("verdict.authorization"), "unsigned: the entry carries no authorization"),
    "a migrate signed as an override": (
        MIGRATE, _set("verdict.authorization.namespace", authz.NS_OVERRIDE),
        f"authorization namespace {authz.NS_OVERRIDE!r} is not migrate's",
    ),
    "a migrate with an extra verdict key": (
        MIGRATE, _set("verdict.met", True), "a migrate carries exactly its policy and authorization"
    ),
    "a migrate without its checksum": (
        MIGRATE, _drop("verdict.checksum"), "a migrate carries exactly its policy and authorization"
    ),
    "a migrate with an idempotency_key": (
        MIGRATE, _set("idempotency_key", "k"), "a policy change carries a rationale and no idempotency_key"
    ),
    "an apply_upgrade without its descriptor file": (
        APPLY, _drop("verdict.authorization.descriptor_file"),
        "a apply_upgrade must carry exactly its signed authorization",
    ),
    "an apply_upgrade signed in the override namespace": (
        APPLY, _set("verdict.authorization.namespace", authz.NS_OVERRIDE),
        f"authorization namespace {authz.NS_OVERRIDE!r} is not apply_upgrade's",
    ),
    "an apply_upgrade resolved by the agent": (
        APPLY, _set("resolved_by", "agent"), "resolved_by 'agent': a apply_upgrade is resolved by 'human'"
    ),
    "an apply_upgrade without a rationale": (
        APPLY, _set("rationale", None), "a policy change carries a rationale and no idempotency_key"
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_forged_field_is_refused_with_its_reason(made: Made, case: str) -> None:
    where, change, why = CASES[case]
    entry = made.entry(*where)
    change(entry)
    with pytest.raises(ValueError) as caught:
        derive.check(entry, made.before(*where), made.head)
    assert str(caught.value) == why


def test_time_zero_is_a_time(made: Made) -> None:
    entry = made.entry(*APPLIED)
    entry["ts_ms"] = 0
    derive.check(entry, made.before(*APPLIED), made.head)


def test_a_deviation_digest_is_of_its_own_edge_and_policy(made: Made) -> None:
    entry, state = made.entry(*DEVIATION), made.before(*DEVIATION)
    assert entry["payload_digest"] == payload_digest("review", "draft", {}, [], "human", state.checksum)
    for forged in (
        payload_digest("review", "released", {}, [], "human", state.checksum),
        payload_digest("review", "draft", {}, [], "agent", state.checksum),
        payload_digest("review", "draft", {}, [], "human", "0" * 64),
    ):
        with pytest.raises(ValueError, match=r"^payload_digest is not the digest of this deviation$"):
            derive.check({**entry, "payload_digest": forged}, state, made.head)


def test_a_met_file_predicate_must_hold_in_the_reviewed_commit(made: Made) -> None:
    """Recorded as met, checked again: a missing file, or a directory where the file should be."""
    for where, path in ((APPLIED, "NOTES.md"), (RELEASED, "PASSED")):
        entry, state = made.entry(*where), made.before(*where)
        derive.check(entry, state)  # no commit under review: the record is taken
        derive.check(entry, state, made.head)
        with pytest.raises(ValueError) as caught:
            derive.check(entry, state, made.bare)
        assert str(caught.value) == (
            f"predicate {'notes' if path == 'NOTES.md' else 'tests'!r} is recorded as met "
            f"but {path} is not in the reviewed commit {str(made.bare.id)[:12]}"
        )
    # a refused step's predicate was not met: nothing to re-check
    derive.check(made.entry(*REFUSED), made.before(*REFUSED), made.bare)


def test_a_judged_predicate_is_taken_from_the_record(made: Made) -> None:
    """Only deterministic predicates are re-checked; a judged one's file is the judge's business."""
    judged = copy.deepcopy(POLICY)
    judged["edge_predicates"]["draft->review"][0]["type"] = "judged"
    state = made.before(*APPLIED)
    from strato.guard import policy as policy_mod

    state.policy = policy_mod.parse(judged)
    entry = made.entry(*APPLIED)
    entry["verdict"]["predicates"][0]["type"] = "judged"
    derive.check(entry, state, made.bare)


def test_a_predicate_without_an_id_is_named_by_its_statement(made: Made) -> None:
    unnamed = copy.deepcopy(POLICY)
    del unnamed["edge_predicates"]["draft->review"][0]["id"]
    from strato.guard import policy as policy_mod

    state = made.before(*APPLIED)
    state.policy = policy_mod.parse(unnamed)
    entry = made.entry(*APPLIED)
    for place in (entry["verdict"]["predicates"][0], entry["verdict"]["meta"]["guard_evidence"][0]):
        place["id"] = ""
    derive.check(entry, state, made.head)
    with pytest.raises(ValueError) as caught:
        derive.check(entry, state, made.bare)
    assert str(caught.value).startswith("predicate 'server_file_exists(\"NOTES.md\")' is recorded as met")
    entry["verdict"]["meta"]["guard_evidence"][0]["evidence"] = ""
    with pytest.raises(ValueError) as caught:
        derive.check(entry, state, made.head)
    assert str(caught.value) == "predicate 'server_file_exists(\"NOTES.md\")' is met without evidence"


def test_the_honest_ledgers_verify_signatures_and_all(made: Made) -> None:
    """The same lines through verify: every signed kind (deviation, migrate, apply_upgrade)
    is checked against the policy before it and passes."""
    report = verify_repository(made.repo)
    assert report.ok, report.breaks
    assert report.entries == sum(len(lines) for lines in made.ledgers.values())
