"""`strato_lanes` through the SDK's stdio client against a real `strato mcp` process: it
answers what `strato lanes --json` (and `--check --json`) prints, refuses what the CLI
refuses with the same line, and moves no ref."""

from __future__ import annotations

from pathlib import Path

from strato.runs.lanes import model as lanes
from strato.runs.lanes.store import REF
from tests.support.lanes import LANE, judged_workspace, run_once
from tests.support.mcp import Session, run_server
from tests.support.repos import git


def test_strato_lanes_answers_what_strato_lanes_json_prints(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    runs = ws.runs()
    for n in range(lanes.TRUST_AFTER + 1):
        run_once(runs, f"r{n}", "hello")
    run_once(runs, "bad", "forbidden")  # a reset, so `lastReset` says something
    code, printed = ws.strato_json("lanes")
    assert code == 0
    check_code, checked = ws.strato_json("lanes", "--check")
    assert check_code == 0 and checked == {"ok": True, "findings": []}
    refs = git(ws.root, "for-each-ref")

    async def scenario(s: Session) -> None:
        tools = {t.name: t for t in (await s.raw.list_tools()).tools}
        assert tools["strato_lanes"].input_schema["additionalProperties"] is False
        assert "Read-only" in (tools["strato_lanes"].description or "")
        doc = await s.ok("strato_lanes")
        assert doc == printed
        [row] = doc["lanes"]
        assert row["lane"] == LANE and row["clean"] == 0 and row["failures"] == 1
        assert row["lastReset"].startswith("failure: ensure[0] failed")
        assert await s.ok("strato_lanes", {"check": True}) == checked
        message, _ = await s.error("strato_lanes", {"check": "yes"})
        assert "invalid arguments for strato_lanes" in message
        message, _ = await s.error("strato_lanes", {"push": True})
        assert "invalid arguments for strato_lanes" in message

    run_server(ws.root, scenario)
    assert git(ws.root, "for-each-ref") == refs  # read-only: nothing moved


def test_strato_lanes_on_a_corrupt_ref_is_the_clis_one_line_error(tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path)
    (ws.root / "lanes.json").write_text("not json")
    git(ws.root, "add", "lanes.json")
    git(ws.root, "commit", "-qm", "bogus")
    git(ws.root, "update-ref", REF, "HEAD")
    cli = ws.strato("lanes")
    assert cli.returncode == 1

    async def scenario(s: Session) -> None:
        message, _ = await s.error("strato_lanes")
        assert "not JSON" in message and message in cli.stderr
        report = await s.ok("strato_lanes", {"check": True})
        assert report["ok"] is False and "not JSON" in report["findings"][0]

    run_server(ws.root, scenario)
