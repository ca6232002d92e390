"""Property: an attacker who rewrites any field of any new ledger line (digests
recomputed, an ordinary notes commit on top of the honest one, the branch re-pinned)
never passes review unless the result is the honest ledger: its register line, an
unsigned agent transition and an override signed by a base key."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.guard import engine, pin, signedops, store
from strato.guard.review import review
from tests.support.guard import POLICY, RID, Key, Workspace, forge, ledger, make_key, outside_code, ssh_sign
from tests.support.repos import git

FIELDS = ("kind", "outcome", "resolved_by", "from_state", "to_state", "verdict", "rationale")
WORDS = ["draft", "review", "released", "transition", "deviation", "graph_version", "register",
         "applied", "refused", "registered", "agent", "human", "system", ""]
VALUES = st.one_of(
    st.none(),
    st.sampled_from(WORDS),
    st.text(max_size=8),
    st.integers(-2, 2),
    st.dictionaries(st.sampled_from(["met", "authorization", "policy", "operation"]),
                    st.one_of(st.none(), st.booleans(), st.sampled_from(WORDS)), max_size=3),
)
MUTATION = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 2), st.sampled_from(FIELDS), VALUES),
    st.tuples(st.just("copy"), st.integers(0, 2), st.sampled_from(FIELDS), st.integers(0, 2)),
    st.tuples(st.just("drop"), st.integers(0, 2)),
    st.tuples(st.just("dup"), st.integers(0, 2)),
    st.tuples(st.just("swap"), st.integers(0, 2), st.integers(0, 2)),
)


def mutate(entries: list[dict[str, Any]], m: tuple[Any, ...]) -> list[dict[str, Any]]:
    out = copy.deepcopy(entries)
    if m[0] == "set":
        out[m[1]][m[2]] = m[3]
    elif m[0] == "copy":
        out[m[1]][m[2]] = copy.deepcopy(entries[m[3]][m[2]])
    elif m[0] == "drop":
        del out[m[1]]
    elif m[0] == "dup":
        out.insert(m[1], copy.deepcopy(out[m[1]]))
    else:
        out[m[1]], out[m[2]] = out[m[2]], out[m[1]]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_mutated_ledgers_never_pass_review(ws: Workspace, key: Key, mutations: list[Any]) -> None:
    if git(ws.root, "branch", "--list", "feature").strip() == "":
        ws.trust(key.signers_line("alice@example.com"))
        ws.pin("main: no ledgers")
        git(ws.root, "checkout", "-q", "-b", "feature")
        ws.commit({"NOTES.md": "n\n"}, "work")
        engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
        engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
        ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": "r"}
        payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
        signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
        (ws.tmp / "honest.json").write_text(json.dumps(ledger(ws)))
        (ws.tmp / "honest.tip").write_text(git(ws.root, "rev-parse", store.REF).strip())
    # every example attacks the honest notes commit, not the previous example's forgery
    git(ws.root, "update-ref", store.REF, (ws.tmp / "honest.tip").read_text())
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    honest = json.loads((ws.tmp / "honest.json").read_text())
    forged = honest
    for m in mutations:
        used = m[1:3] if m[0] == "swap" else (m[1], m[3]) if m[0] == "copy" else m[1:2]
        if max(used) < len(forged):
            forged = mutate(forged, m)
    if not forged:
        return
    forge(ws, forged)
    pin.write(ws.repo)
    git(ws.root, "commit", "-q", "--allow-empty", "-am", "re-pin")
    report = review(ws.repo, "main")
    # written on top of the honest notes commit, anything but its own bytes again drops,
    # rewrites or invents a line
    legal = forged == honest
    assert report.ok == legal, (mutations, [str(b) for b in report.verify.breaks])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(by_base_key=st.booleans(), rationale=st.text(min_size=1, max_size=40).filter(str.strip))
def test_a_signed_append_passes_only_with_a_base_key(
    ws: Workspace, key: Key, by_base_key: bool, rationale: str
) -> None:
    """Any rationale (Markdown, HTML, control characters); the branch trusts both keys."""
    if git(ws.root, "branch", "--list", "feature").strip() == "":
        ws.trust(key.signers_line("alice@example.com"))
        ws.pin("main: no ledgers")
        git(ws.root, "checkout", "-q", "-b", "feature")
        mallory = make_key(ws.tmp, "ed25519", "mallory")
        ws.trust(key.signers_line("alice@example.com"), mallory.signers_line("mallory@evil"))
        ws.commit({"NOTES.md": "n\n"}, "work")
        engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
        engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
        (ws.tmp / "honest.tip").write_text(git(ws.root, "rev-parse", store.REF).strip())
    git(ws.root, "update-ref", store.REF, (ws.tmp / "honest.tip").read_text())
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    signer = key if by_base_key else Key(ws.tmp / "mallory_ed25519", "")
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": rationale}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(signer, ns, payload.encode(), ws.tmp)})
    pin.write(ws.repo)
    git(ws.root, "commit", "-q", "--allow-empty", "-am", "re-pin")
    report = review(ws.repo, "main")
    assert report.ok == by_base_key, [str(b) for b in report.verify.breaks]
    body = report.markdown()
    assert "\r" not in body and "<" not in outside_code(body)
    cells = [outside_code(line) for line in body.split("\n") if line.startswith(("|", "- "))]
    assert not any("`" in line for line in cells)
    assert all(line.count("|") == 9 for line in cells if line.startswith("|"))
