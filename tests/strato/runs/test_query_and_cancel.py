"""The seed's CLI words for runs: `strato query flows|flow ID|gates` answer exactly as
`strato flow list|show|gates`, and `strato flow cancel` exits as Stratum's does (2 for an
unknown run, 0 with `already_cancelled` for a second cancel)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.flows import FIXTURES, make_workspace

GATE = str(FIXTURES / "readme_gate.stratum.yaml")


def test_query_is_the_flow_listing_under_the_seeds_words(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    assert ws.strato("query", "flows").stdout == ws.strato("flow", "list").stdout  # the empty list too
    _, planned = ws.strato_json("flow", "plan", GATE, "--input", "text=x", "--id", "q1")
    done = json.dumps({"output": {"result": "snow", "quality_score": 0.95}})
    ws.strato("flow", "done", "q1", "work", "--token", planned["ready"][0]["dispatchToken"],
              "--result", done, check=True)  # the run now waits at its gate
    for query, flow in ((["flows"], ["list"]), (["flow", "q1"], ["show", "q1"]), (["gates"], ["gates"])):
        for extra in ([], ["--json"]):
            asked, listed = ws.strato("query", *query, *extra), ws.strato("flow", *flow, *extra)
            assert asked.returncode == listed.returncode == 0, asked.stderr
            assert asked.stdout == listed.stdout and "q1" in asked.stdout
    missing = ws.strato("query", "flow", "nope")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no run")


def test_cancel_exits_2_for_an_unknown_run_and_0_when_already_cancelled(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    code, doc = ws.strato_json("flow", "cancel", "nope")
    assert code == 2 and doc["error"]["code"] == "run_not_found" and doc["exitCode"] == 2
    ws.strato("flow", "plan", GATE, "--input", "text=x", "--id", "c1", check=True)
    code, first = ws.strato_json("flow", "cancel", "c1", "--reason", "superseded")
    assert code == 0 and first["status"] == "cancelled" and "reason" not in first
    head = ws.runs().load("c1").head
    code, again = ws.strato_json("flow", "cancel", "c1")
    assert code == 0 and again["status"] == "cancelled" and again["reason"] == "already_cancelled"
    assert ws.runs().load("c1").head == head  # nothing written by the second cancel
    text = ws.strato("flow", "cancel", "c1")
    assert text.returncode == 0 and "already cancelled" in text.stdout
    ws.strato("flow", "plan", GATE, "--input", "text=x", "--id", "c2", check=True)
    ambiguous = ws.strato("flow", "cancel", "c")
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr
