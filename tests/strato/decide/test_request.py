"""`strato decide-request`: a capsule from `tropo find --governed` becomes a request that
`strato decide --governed` accepts; what it cannot read is a one-line error, exit 2."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

from strato.decide.decision import decide
from strato.decide.request import build_request
from tests.support import console
from tests.support.governed import T0, capsule
from tests.support.workspaces import scaffold

BIN = Path(sys.executable).parent


def test_a_built_request_is_decided_not_refused() -> None:
    doc = build_request(capsule(), actor_id="agent:me", now=T0 + timedelta(seconds=30))
    result = decide(doc)
    assert result.decision in ("act", "request_gate", "stop"), result.reason_codes
    assert doc["scope"]["paths"] == capsule()["task"]["scope"] and doc["actor"] == {"kind": "agent", "id": "agent:me"}


def test_a_request_built_too_late_is_stale_as_decide_says() -> None:
    doc = build_request(capsule(), actor_id="agent:me", now=T0 + timedelta(seconds=400))
    assert "stale_capsule" in decide(doc).reason_codes


def test_from_tropo_find_to_decide_in_a_real_workspace(tmp_path: Path) -> None:
    ws = scaffold(tmp_path / "ws")
    found = console.run("tropo", "find", "--governed", "what next", cwd=ws)
    assert found.returncode == 0, found.stderr
    (ws / "capsule.json").write_text(found.stdout)
    built = console.run("strato", "decide-request", "capsule.json", "--actor", "agent:me", cwd=ws)
    assert built.returncode == 0, built.stderr
    request = json.loads(built.stdout)
    assert request["schema"] == "vivary.strato-decision-request/v0" and request["scope"]["project"] == "ws"
    decided = console.run("strato", "decide", "--governed", "--json", "-", input=built.stdout, cwd=ws)
    assert decided.returncode == 0 and json.loads(decided.stdout)["reason_codes"] != ["invalid_request_document"]
    assert json.loads(decided.stdout)["decision"] in ("act", "request_gate", "stop")


def test_what_is_not_a_capsule_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"not": "a capsule"}')
    for args in (["x.json"], ["missing.json"]):
        proc = console.run("strato", "decide-request", *args, "--actor", "a", "--json", cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
        assert json.loads(proc.stdout)["ok"] is False
