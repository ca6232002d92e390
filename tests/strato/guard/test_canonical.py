"""Canonical JSON and digests against vectors written out by hand from the reference
formats (section 3.2), not computed by the code under test."""

from __future__ import annotations

import hashlib

from strato.guard import canonical as c
from strato.guard import store


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_guard_id_matches_reference_example() -> None:
    assert store.guard_id("acceptance:py-golden") == "ad177507e065c362cc135ccfee9ec2ae"


def test_canonical_sorts_compacts_and_escapes() -> None:
    assert c.canonical({"b": 1, "a": ["é", None, True]}) == '{"a":["\\u00e9",null,true],"b":1}'


def test_policy_checksum_vector() -> None:
    # graph lists keep their order, terminal is sorted, initial is not part of it
    text = (
        '{"edge_predicates":{"a->b":[{"id":"x","statement":"server_file_exists(\\"F\\")",'
        '"type":"deterministic"}]},"graph":{"a":["c","b"]},"stakes":{"a->b":"paranoid"},'
        '"terminal":["b","c"]}'
    )
    got = c.policy_checksum(
        {"a": ["c", "b"]},
        {"a->b": [{"type": "deterministic", "id": "x", "statement": 'server_file_exists("F")'}]},
        ["c", "b"],
        {"a->b": "paranoid"},
    )
    assert got == sha(text)


def test_payload_digest_v1_and_v2_vectors() -> None:
    v1 = (
        '{"artifacts":{"pr":"12"},"from_state":"a","modified_files":["a.py","b.py"],'
        '"resolved_by":"agent","to_state":"b"}'
    )
    assert c.payload_digest("a", "b", {"pr": "12"}, ["b.py", "a.py"], "agent") == sha(v1)
    # keys sort: policy_checksum comes before resolved_by
    v2 = (
        '{"artifacts":{"pr":"12"},"from_state":"a","modified_files":["a.py","b.py"],'
        '"policy_checksum":"' + "0" * 64 + '","resolved_by":"agent","to_state":"b"}'
    )
    assert c.payload_digest("a", "b", {"pr": "12"}, ["b.py", "a.py"], "agent", "0" * 64) == sha(v2)


def test_entry_digest_and_line_vector() -> None:
    entry = {
        "ts_ms": 1,
        "from_state": "a",
        "to_state": "b",
        "outcome": "applied",
        "kind": "transition",
        "resolved_by": "agent",
        "idempotency_key": None,
        "payload_digest": "p",
        "rationale": None,
        "verdict": None,
        "prev_digest": "prev",
    }
    body = (
        '{"from_state":"a","idempotency_key":null,"kind":"transition","outcome":"applied",'
        '"payload_digest":"p","prev_digest":"prev","rationale":null,"resolved_by":"agent",'
        '"to_state":"b","ts_ms":1,"verdict":null}'
    )
    digest = sha(body + "prev")
    sealed, line = c.seal(entry)
    assert sealed["entry_digest"] == digest
    assert line == '{"entry_digest":"' + digest + '",' + body[1:] + "\n"
    assert c.raw_entry_digest(line.rstrip("\n"), "prev") == digest


def test_raw_digest_keeps_float_spelling_stratum_ts_relies_on() -> None:
    # A TS engine hashes the bytes; "1.0" must survive even though JSON parsing makes it 1.0
    line = '{"entry_digest":"' + "e" * 64 + '","x":1.0}'
    assert c.raw_entry_digest(line, "") == sha('{"x":1.0}')
    assert c.raw_entry_digest('{"x":1}', "") is None
