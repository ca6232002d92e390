"""Seeded generators of governed control request documents: valid ones, mutations of
valid ones, and malformed bytes, for every operation."""

from __future__ import annotations

import copy
import functools
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from exo.control import ledger
from tests.support import governed as builders

SCHEMA = "vivary.exo-control-request/v0"
OPERATIONS = ("claim", "release", "expire_leases", "dependencies", "handoff",
              "record_execution", "complete", "task_view")
INSTANTS = ["2026-01-01T00:00:00Z", "2026-01-01T06:00:00+00:00", "2026-01-02T00:00:00Z",
            "2025-12-31T23:59:59Z", "2026-01-01T00:00:00", "2026-01-01", "not a time",
            "2026-01-01T01:00:00+01:00", "2030-06-01T00:00:00Z"]
PATHS = ["src", "src/a.py", "docs/", "./src/../lib", "C:\\Work", "c:/work/x", "//Srv/Share/d",
         "\\\\?\\C:\\Work\\y", "/abs/p", "..", ".", " padded", "a\u0301", "tab\tx"]
ACTORS = [{"kind": "agent", "id": "bot"}, {"kind": "human", "id": "ann"},
          {"kind": "worker", "id": "w1"}, {"kind": "robot", "id": "r"},
          {"kind": "agent", "id": " bot"}, {"kind": "agent"}, "bot"]


def _lease(rng: random.Random) -> Any:
    return rng.choice([None, {"granted_at": rng.choice(INSTANTS[:4]),
                              "expires_at": rng.choice(INSTANTS[:4] + INSTANTS[8:])},
                       {"granted_at": "2026-01-01T00:00:00Z"}])


def _claim_input(rng: random.Random) -> dict[str, Any]:
    given: dict[str, Any] = {
        "scope": {"project": rng.choice(["p", "q"]),
                  "paths": rng.sample(PATHS[:11], rng.randint(1, 3))},
        "actor": rng.choice(ACTORS[:3]),
        "now": rng.choice(INSTANTS[:4]),
    }
    if rng.random() < 0.5:
        given["lease"] = _lease(rng)
    if rng.random() < 0.3:
        given["authority_class"] = rng.choice(["contributor", "owner", "boss"])
    return given


def ledger_of(rng: random.Random, size: int) -> list[dict[str, Any]]:
    """A ledger grown through granted claims, so its records are genuine."""
    claims: list[dict[str, Any]] = []
    for _ in range(size * 3):
        if len(claims) >= size:
            break
        given = _claim_input(rng)
        given["now"] = "2026-01-01T00:00:00Z"
        result = ledger.request_claim(claims, given)
        if result["decision"] == "granted":
            claims = result["claims"]
    return claims


def _edge(rng: random.Random, capsule: str) -> dict[str, Any]:
    from exo.control.tasks import edge_id

    name, position, fp = rng.choice(["lint", "test"]), rng.randint(0, 3), "sha256:" + "ab" * 32
    return {"edge_id": edge_id(fp, name, position), "kind": "check", "receipt_id": "receipt_1",
            "receipt_fingerprint": fp, "capsule_id": capsule, "capsule_fingerprint": "sha256:c",
            "position": position, "name": name, "command": "make " + name,
            "outcome": rng.choice(["passed", "failed", "skipped"]), "detail": None}


#: When a receipt was made, around the claims' creation (2026-01-01T00:00Z).
RECEIPT_TIMES = [datetime(2025, 12, 31, 12, tzinfo=UTC), datetime(2026, 1, 1, 3, tzinfo=UTC),
                 datetime(2026, 1, 1, 6, tzinfo=UTC), datetime(2026, 1, 1, 12, tzinfo=UTC),
                 datetime(2026, 1, 3, tzinfo=UTC)]


@functools.cache
def _capsules() -> tuple[dict[str, Any], ...]:
    base = builders.capsule()
    return (base, builders.with_unknown(base),
            builders.capsule(observed_at=builders.T0 + timedelta(days=1)))


def _evidence(rng: random.Random, actor: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A real capsule and a receipt of it, sometimes bent: another capsule's receipt,
    another actor's, or one field changed without resealing."""
    capsule, other = rng.sample(_capsules(), 2)
    outcomes = rng.choice([("passed",), ("failed",), ("passed", "skipped"), ()])
    receipt = builders.receipt(other if rng.random() < 0.1 else capsule, outcomes=outcomes,
                               created_at=rng.choice(RECEIPT_TIMES),
                               actor=actor if rng.random() < 0.8 else "someone-else")
    roll = rng.random()
    if roll < 0.15:
        receipt = _poke(receipt, rng)
    elif roll < 0.25:
        capsule = _poke(capsule, rng)
    return receipt, copy.deepcopy(capsule)


def _log_for(rng: random.Random, receipt: dict[str, Any], capsule: dict[str, Any]) -> list[Any]:
    """An execution log that may already hold this receipt's edges (a replay), a
    conflicting copy of one, or unrelated edges."""
    from exo.control.evidence import derive_edges

    edges, _ = derive_edges(receipt, capsule)
    roll = rng.random()
    if roll < 0.25 and edges:
        return edges[:1]
    if roll < 0.4 and edges:
        flipped = "failed" if edges[0]["outcome"] != "failed" else "passed"
        return [{**edges[0], "outcome": flipped}]
    return [_edge(rng, "capsule_1") for _ in range(rng.randint(0, 2))][:1]


def valid(op: str, rng: random.Random) -> dict[str, Any]:
    """A well-formed request for ``op`` (its answer may still be a refusal)."""
    claims = ledger_of(rng, rng.randint(op == "handoff", 4))
    if op == "claim":
        state, given = {"claims": claims}, _claim_input(rng)
    elif op == "release":
        target = rng.choice(claims)["claim_id"] if claims and rng.random() < 0.7 else "claim_x"
        holder = next((c["actor"] for c in claims if c["claim_id"] == target), ACTORS[0])
        state = {"claims": claims}
        given = {"claim_id": target, "actor": holder if rng.random() < 0.7 else
                 rng.choice(ACTORS)}
    elif op == "expire_leases":
        expiries = [c["lease"]["expires_at"] for c in claims if c["lease"]]
        # Half the time exactly at a lease's expiry: the boundary is "expired".
        now = rng.choice(expiries) if expiries and rng.random() < 0.5 else rng.choice(INSTANTS)
        state, given = {"claims": claims}, {"now": now}
    elif op == "dependencies":
        ids = ["a", "b", "c", "d"]
        tasks = [{"id": i, "status": rng.choice(["done", "open"]),
                  "depends_on": rng.sample([*ids, "zz"], rng.randint(0, 2))} for i in ids]
        state, given = {"tasks": tasks}, {"task_id": rng.choice([*ids, "zz", ""])}
    elif op in ("complete", "task_view"):
        capsule = rng.choice(["capsule_1", "capsule_2"])
        task = {"task_id": "t1", "status": rng.choice(["open", "done"]), "capsule_id": capsule}
        edges = [_edge(rng, rng.choice(["capsule_1", "capsule_2"])) for _ in range(rng.randint(0, 3))]
        unique = list({e["edge_id"]: e for e in edges}.values())
        state, given = {"task": task, "execution_log": unique}, {}
    elif op == "record_execution":
        receipt, capsule = _evidence(rng, "bot")
        state = {"execution_log": _log_for(rng, receipt, capsule)}
        given = {"receipt": receipt, "capsule": capsule}
    else:
        held = rng.choice(claims) if claims and rng.random() < 0.8 else None
        receipt, capsule = _evidence(rng, held["actor"]["id"] if held else "bot")
        revision = capsule.get("workspace", {}).get("fingerprint") if rng.random() < 0.85 else "r"
        state = {"claims": claims}
        given = {"claim_id": held["claim_id"] if held else "claim_x", "receipt": receipt,
                 "capsule": capsule, "from_actor": held["actor"] if held and rng.random() < 0.8
                 else rng.choice(ACTORS), "to_actor": rng.choice(ACTORS[:4]),
                 "workspace_revision": revision,
                 "created_at": rng.choice(INSTANTS if rng.random() < 0.2 else INSTANTS[:4])}
        if rng.random() < 0.3:
            given["to_authority_class"] = rng.choice(["contributor", "owner", "boss", None])
    return {"schema": SCHEMA, "operation": op, "state": state, "input": given}


def _collide(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``request`` with one identity reused: a claim, task or execution edge repeated
    (exactly, or under the same id with another body), or an edge already in the log
    from another receipt that shares the receipt's id or an edge id."""
    state, given = request["state"], request["input"]
    claims = state.get("claims")
    if claims:
        first = claims[0]
        twin = rng.choice([dict(first), {**first, "scope": {"project": "z", "paths": ["zz"]}}])
        state["claims"] = [*claims, twin]
    elif "tasks" in state:
        state["tasks"].append({**state["tasks"][0], "status": "done"})
    elif "execution_log" in state:
        log = state["execution_log"]
        receipt = given.get("receipt")
        if type(receipt) is dict and rng.random() < 0.5:
            from exo.control.evidence import derive_edges

            edges, _ = derive_edges(receipt, given["capsule"])
            other = [{**e, "capsule_id": "capsule_9"} for e in edges[:1]]
            foreign = [{**_edge(rng, "capsule_1"), "receipt_id": receipt.get("receipt_id")}]
            state["execution_log"] = [*log, *rng.choice([other, foreign, edges + edges[:1]])]
        elif log:
            state["execution_log"] = [*log, rng.choice([log[0], {**log[0], "command": "other"}])]
    return request


def _poke(value: Any, rng: random.Random) -> Any:
    """``value`` with one nested scalar or field changed, added or removed."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        copy = dict(value)
        roll = rng.random()
        if roll < 0.2:
            del copy[key]
        elif roll < 0.3:
            copy["extra"] = 1
        else:
            copy[key] = _poke(copy[key], rng)
        return copy
    if isinstance(value, list) and value:
        copy = list(value)
        index = rng.randrange(len(copy))
        copy[index] = _poke(copy[index], rng) if rng.random() < 0.8 else copy[0]
        return copy
    return rng.choice([None, True, 0, -1, 2**53, 1.5, "", " x", "2026-01-01T00:00:00Z",
                       [], {}, "\u00e9", "e\u0301", "\x07"])


def malformed(op: str, rng: random.Random) -> bytes:
    """Bytes the envelope must refuse before any operation sees them."""
    body = json.dumps(valid(op, rng))
    choices = [
        body.replace('"schema"', '"schema": "x", "schema"', 1),
        body[:-1] + ', "operation": "claim"}',
        body.replace(SCHEMA, "vivary.exo-control-request/v1"),
        body[:-1] + ', "extra": NaN}',
        body[:-1] + ', "n": 9007199254740993}',
        body[:-1] + ', "n": 1e400}',
        "[" * 70 + "]" * 70,
        '{"a":' * 65 + "1" + "}" * 65,
        "\ufeff" + body,
        json.dumps([0] * 10_001),
        json.dumps([[0] * 10_000] * 11),
        body[: len(body) // 2],
        '"just a string"',
        body.replace('"input"', '"Input"'),
    ]
    data = rng.choice(choices).encode("utf-8")
    roll = rng.random()
    if roll < 0.1:
        return data + b"\xff"
    if roll < 0.15:
        return b" " * (1024 * 1024) + data
    return data


def documents(op: str, seed: int, count: int) -> list[bytes]:
    """``count`` request documents for ``op``: a third valid, a third mutated, a third
    malformed."""
    rng = random.Random(f"{op}:{seed}")
    out = []
    for n in range(count):
        if n % 3 == 0:
            out.append(json.dumps(valid(op, rng)).encode())
        elif n % 3 == 1:
            out.append(json.dumps(_poke(valid(op, rng), rng)).encode())
        else:
            out.append(malformed(op, rng))
    return out


def collisions(op: str, seed: int, count: int) -> list[bytes]:
    """``count`` valid requests for ``op``, each with one identity reused."""
    rng = random.Random(f"collide:{op}:{seed}")
    return [json.dumps(_collide(valid(op, rng), rng)).encode() for _ in range(count)]
