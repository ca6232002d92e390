"""The JSON API of docs/workbench.md against a real `vivary serve` over real runs: lists
and pages, a run's steps and attempts, a gate decided as a person (and refused as
stale when replayed or outdated), the event stream following a run ref, and the other
views (board, guard, heartbeat, lanes, graph)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench import demo_guard
from strato.runs.service import Runs
from tests.support.console import run
from tests.support.repos import commit_all, git, write_files
from tests.support.requirements import missing
from tests.support.serving import (
    BIN,
    SPEC,
    Server,
    gate_token,
    gated_workspace,
    plan_waiting,
    report_draft,
    serving,
)
from tests.support.workspaces import scaffold

PATH = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return gated_workspace(tmp_path / "ws")


@pytest.fixture
def server(ws: Path) -> Iterator[Server]:
    with serving("--root", str(ws)) as s:
        yield s


def test_a_run_shows_steps_attempts_usage_and_its_waiting_gate(server: Server, ws: Path) -> None:
    run = server.get("/api/runs/r1").json()
    assert run["status"] == "running" and run["flow"] == "write"
    assert [g["stepId"] for g in run["gates"]] == ["review"]
    assert run["gates"][0]["gateToken"] == gate_token(ws, "r1")  # the token holder may decide
    draft = next(s for s in run["steps"] if s["id"] == "draft")
    assert [(a["attempt"], a["outcome"]) for a in draft["attempts"]] == [(1, "failed"), (2, "succeeded")]
    assert draft["attempts"][0]["reason"] == "ensure[0] failed: len(result.text) > 3"
    assert "dispatchToken" not in json.dumps(run["steps"]) and "acceptedDispatchToken" not in json.dumps(run)
    assert run["usage"]["flow"] == {"dispatches": 2, "tokens": 24, "usd": 0.02}
    assert run["events"]["items"][0]["type"] == "gate_waiting"  # newest first
    listed = server.get("/api/runs").json()
    assert listed["total"] == 1 and listed["runs"][0]["gates"] == [{"stepId": "review", "flow": "write", "round": 0}]


def test_approving_a_gate_records_a_person_at_the_workbench(server: Server, ws: Path) -> None:
    token = gate_token(ws, "r1")
    answer = server.post("/api/runs/r1/gates/review", {"decision": "approve", "gateToken": token,
                                                       "note": "reads well"})
    assert answer.status == 200, answer.body
    assert answer.json()["status"] == "completed"
    audit = Runs(ws).audit("r1")
    resolved = [e for e in audit["events"] if e["type"] == "gate_resolved"]
    assert resolved == [{**resolved[0], "detail": {"decision": "approve", "target": None, "resolvedBy": "human",
                                                    "note": "reads well"}}]
    assert audit["steps"]["review"]["attempts"][-1]["resolvedBy"] == "human"
    message = git(ws, "log", "-1", "--format=%B", "refs/vivary/runs/r1/head")
    assert '"via":"workbench"' in message and '"resolvedBy":"human"' in message
    # the same request again is a replay: refused as stale, nothing written
    head = Runs(ws).store.head("r1")
    again = server.post("/api/runs/r1/gates/review", {"decision": "approve", "gateToken": token})
    assert again.status == 409 and again.json()["code"] == "stale"
    assert Runs(ws).store.head("r1") == head


def test_a_decision_for_a_gate_that_moved_on_is_stale(server: Server, ws: Path) -> None:
    seen = gate_token(ws, "r1")
    revised = server.post("/api/runs/r1/gates/review", {"decision": "revise", "gateToken": seen, "note": "more"})
    assert revised.status == 200
    report_draft(ws, "r1", "bees dance to tell where flowers are")  # the gate waits again, new token
    assert gate_token(ws, "r1") != seen
    head = Runs(ws).store.head("r1")
    stale = server.post("/api/runs/r1/gates/review", {"decision": "approve", "gateToken": seen})
    assert stale.status == 409 and stale.json()["code"] == "stale"
    assert Runs(ws).store.head("r1") == head
    fresh = server.post("/api/runs/r1/gates/review", {"decision": "kill", "gateToken": gate_token(ws, "r1")})
    assert fresh.status == 200 and fresh.json()["status"] == "failed"


@pytest.mark.parametrize(("body", "status"), [
    ({"decision": "approve"}, 400),  # no gate token: a decision must name the gate as seen
    ({"decision": "ship-it", "gateToken": "x"}, 400),
    ({"decision": "approve", "gateToken": "x", "resolvedBy": "agent"}, 400),
    ({"decision": "approve", "gateToken": "x", "note": 3}, 400),
    ([], 400),
    ({"decision": "approve", "gateToken": "not-the-token"}, 409),
])
def test_malformed_decisions_are_refused(server: Server, ws: Path, body: object, status: int) -> None:
    head = Runs(ws).store.head("r1")
    assert server.post("/api/runs/r1/gates/review", body).status == status
    assert server.post("/api/runs/r1/gates/draft", {"decision": "approve", "gateToken": "x"}).status == 400
    assert server.post("/api/runs/r1/gates/nope", {"decision": "approve", "gateToken": "x"}).status == 404
    assert server.post("/api/runs/nope/gates/review", {"decision": "approve", "gateToken": "x"}).status == 404
    assert Runs(ws).store.head("r1") == head


def test_a_gate_reserved_for_a_person_is_decided_at_the_workbench(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    write_files(ws, {"flow.yaml": SPEC, ".vivary/agents.toml": '[gates]\nperson = ["write"]\n'})
    commit_all(ws)
    plan_waiting(ws, "p1")
    with pytest.raises(Exception, match="must be decided by a person"):
        Runs(ws).gate("p1", "review", "approve", resolved_by="agent", via="cli")
    with serving("--root", str(ws)) as server:
        answer = server.post("/api/runs/p1/gates/review", {"decision": "approve", "gateToken": gate_token(ws, "p1")})
        assert answer.status == 200 and answer.json()["status"] == "completed"


def test_runs_are_paginated_most_recently_moved_first(tmp_path: Path) -> None:
    ws = gated_workspace(tmp_path / "ws", "a-first")
    runs = Runs(ws)
    for n in range(7):
        runs.plan(SPEC, {"topic": f"t{n}"}, f"b-{n}")
    git(ws, "update-ref", "refs/vivary/runs/a-first/head", runs.store.head("a-first"))  # unchanged
    with serving("--root", str(ws)) as server:
        first = server.get("/api/runs?limit=3").json()
        assert first["total"] == 8 and len(first["runs"]) == 3
        seen = [r["runId"] for offset in (0, 3, 6) for r in server.get(f"/api/runs?offset={offset}&limit=3").json()["runs"]]
        assert sorted(seen) == sorted(["a-first", *(f"b-{n}" for n in range(7))])
        assert seen[-1] == "a-first" or seen.index("a-first") >= 0
        assert server.get("/api/runs?offset=99").json()["runs"] == []
        for bad in ("limit=0", "offset=-1", "limit=x", "offset=1e9"):
            assert server.get(f"/api/runs?{bad}").status == 400, bad


def test_a_long_run_pages_its_events(tmp_path: Path) -> None:
    ws = gated_workspace(tmp_path / "ws")
    total = len(Runs(ws).audit("r1")["events"])
    with serving("--root", str(ws)) as server:
        pages = [server.get(f"/api/runs/r1?offset={o}&limit=2").json()["events"] for o in range(0, total, 2)]
        assert all(p["total"] == total for p in pages)
        items = [e for p in pages for e in p["items"]]
        assert items == Runs(ws).audit("r1")["events"][::-1]


def _events(server: Server) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/api/events", headers={"Authorization": f"Bearer {server.token}"})
    res = conn.getresponse()
    assert res.status == 200 and res.getheader("content-type", "").startswith("text/event-stream")
    return res


def _next_event(res: http.client.HTTPResponse) -> tuple[str, dict[str, object]]:
    kind, data = "", ""
    while True:
        line = res.readline().decode()
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif line == "\n" and data:
            return kind, json.loads(data)


def test_the_event_stream_says_when_a_run_ref_moves(server: Server, ws: Path) -> None:
    res = _events(server)
    kind, hello = _next_event(res)
    assert kind == "hello" and hello["tips"] == {"r1": Runs(ws).store.head("r1")}
    Runs(ws).gate("r1", "review", "revise", note="again", resolved_by="human", via="terminal")
    kind, moved = _next_event(res)
    assert kind == "runs" and moved == {"moved": {"r1": Runs(ws).store.head("r1")}, "gone": []}
    Runs(ws).plan(SPEC, {"topic": "ants"}, "r2")
    kind, moved = _next_event(res)
    assert moved["moved"] == {"r2": Runs(ws).store.head("r2")}
    git(ws, "update-ref", "-d", "refs/vivary/runs/r2/head")
    kind, moved = _next_event(res)
    assert moved == {"moved": {}, "gone": ["r2"]}
    res.close()


def test_the_other_views_read_the_repository(server: Server, ws: Path) -> None:
    assert server.get("/api/board").json()["available"] is False  # no tropo.toml here: said, not faked
    guard = server.get("/api/guard").json()
    assert guard["verify"]["ok"] is True and guard["resources"] == []
    unpinned = server.get("/api/guard/review?base=HEAD&head=HEAD")  # as `strato guard review` refuses it
    assert unpinned.status == 400 and unpinned.json()["code"] == "review_unpinned"
    bad = server.get("/api/guard/review?base=no-such-branch")
    assert bad.status == 400 and bad.json()["code"] == "invalid_revision"
    assert server.get("/api/heartbeat").json() == {"last_head": None, "proposals": []}
    lanes = server.get("/api/lanes").json()
    assert lanes["available"] is True and lanes["lanes"] == []  # no judged ensure has run here
    assert server.get("/api/graph").status == 409
    assert server.post("/api/heartbeat/memory-0123456789ab", {"decision": "accept"}).status == 404
    assert server.post("/api/heartbeat/..", {"decision": "reject"}).status in (400, 404)


def _quiet(ws: Path) -> Callable[[list[str]], None]:
    def run(argv: list[str]) -> None:
        subprocess.run(argv, cwd=ws, check=False, capture_output=True, env={**os.environ, "PATH": PATH})

    return run


def test_the_guard_view_lists_ledgers_and_reviews_a_branch(ws: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed")
    demo_guard.tour(ws, _quiet(ws))  # register, a refused transition, a signed override, pinned
    with serving("--root", str(ws)) as server:
        guard = server.get("/api/guard").json()
        assert guard["verify"]["ok"] is True
        [release] = guard["resources"]
        assert release["id"] == "release:1.0" and release["state"] == "released"
        assert [e["kind"] for e in release["entries"]] == ["register", "transition", "deviation"]
        review = server.get("/api/guard/review?base=HEAD~2&head=HEAD").json()
        assert review["ok"] is True
        assert [(e["kind"], e["signer"]) for e in review["entries"]][-1] == ("deviation", "alice@example.com")


def test_heartbeat_proposals_are_accepted_and_rejected_with_the_token(ws: Path) -> None:
    for n, message in enumerate(("fix(parser): empty input crashed", "fix(parser): a lone quote crashed")):
        write_files(ws, {"src/parser.py": f"VERSION = {n}\n", **({"tests/test_parser.py": "x = 1\n"} if n else {})})
        commit_all(ws, message)
    assert run("strato", "heartbeat", "run", "--root", ws).returncode == 0
    with serving("--root", str(ws)) as server:
        proposals = server.get("/api/heartbeat").json()["proposals"]
        playbook = next(p for p in proposals if p["files"])
        assert playbook["status"] == "open"
        pid = playbook["id"]
        assert server.request("POST", f"/api/heartbeat/{pid}", headers={"Content-Type": "application/json"},
                              body='{"decision": "accept"}').status == 401
        accepted = server.post(f"/api/heartbeat/{pid}", {"decision": "accept"}).json()
        assert accepted["branch"] == f"heartbeat/{pid}"
        assert git(ws, "rev-parse", f"refs/heads/heartbeat/{pid}").strip() == accepted["commit"]
        assert server.post(f"/api/heartbeat/{pid}", {"decision": "accept"}).status == 409  # the branch exists
        assert server.post(f"/api/heartbeat/{pid}", {"decision": "maybe"}).status == 400
        assert server.post(f"/api/heartbeat/{pid}", {"decision": "reject"}).json()["status"] == "rejected"
        shown = {p["id"]: p["status"] for p in server.get("/api/heartbeat").json()["proposals"]}
        assert shown[pid] == "rejected"


def test_the_board_claims_and_graph_of_a_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scaffold(ws, "--preset", "coding", "--yes")
    assert run("exo", "claim", "local-ci-baseline", "--agent", "@connie", cwd=ws).returncode == 0
    with serving("--root", str(ws)) as server:
        board = server.get("/api/board").json()
        held = {i["id"]: i["assignee"] for i in board["items"]}
        assert held["local-ci-baseline"] == "connie"
        assert board["claims"] == [{"id": "local-ci-baseline", "refs": ["refs/heads/claim/local-ci-baseline"]}]
        page = server.get("/api/graph").json()["html"]
        assert '<meta name="generator" content="tropo view">' in page and '"local-ci-baseline"' in page
