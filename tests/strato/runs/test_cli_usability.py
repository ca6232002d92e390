"""Run ids by unique prefix, an empty list that says so, a rejected result that says
why, and checkpoint labels that are not ref names: as a person at the CLI sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.flows import FIXTURES, make_workspace
from tests.support.mcp import Session, run_server

GATE = str(FIXTURES / "readme_gate.stratum.yaml")


def test_a_unique_prefix_names_a_run_and_an_ambiguous_one_lists_candidates(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for run_id in ("alpha-1", "alpha-2", "beta-1"):
        assert ws.strato_json("flow", "plan", GATE, "--input", "text=x", "--id", run_id)[0] == 0
    code, shown = ws.strato_json("flow", "show", "bet")
    assert code == 0 and shown["runId"] == "beta-1"
    code, cancelled = ws.strato_json("flow", "cancel", "beta")
    assert code == 0 and cancelled["runId"] == "beta-1" and cancelled["status"] == "cancelled"
    proc = ws.strato("flow", "show", "alpha")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: run id prefix 'alpha' is ambiguous: alpha-1, alpha-2"
    code, doc = ws.strato_json("flow", "audit", "alpha")
    assert code == 2 and doc["error"]["code"] == "ambiguous_run_id" and doc["error"]["candidates"] == ["alpha-1", "alpha-2"]
    assert ws.strato("flow", "show", "gamma").returncode == 1


def test_list_says_when_there_are_no_runs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    proc = ws.strato("flow", "list")
    assert proc.returncode == 0 and "no runs" in proc.stdout
    assert ws.strato_json("flow", "list") == (0, {"runs": []})


def test_a_rejected_result_exits_1_and_says_why(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _, planned = ws.strato_json("flow", "plan", GATE, "--input", "text=x", "--id", "r")
    token = planned["ready"][0]["dispatchToken"]
    low = json.dumps({"output": {"result": "meh", "quality_score": 0.1}})
    proc = ws.strato("flow", "done", "r", "work", "--token", token, "--result", low)
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: result for work rejected: ") and "quality_score" in line
    assert line.endswith("(a new attempt is ready)")
    code, view = ws.strato_json("flow", "next", "r")
    token = view["ready"][0]["dispatchToken"]
    broken = json.dumps({"output": {"result": 5}})
    code, doc = ws.strato_json("flow", "done", "r", "work", "--token", token, "--result", broken)
    assert code == 1 and doc["rejected"]["stepId"] == "work" and doc["rejected"]["retry"] is True
    assert "result" in doc["rejected"]["reason"] and doc["status"] == "running"
    good = json.dumps({"output": {"result": "fine", "quality_score": 0.9}})
    token = doc["ready"][0]["dispatchToken"]
    assert ws.strato_json("flow", "done", "r", "work", "--token", token, "--result", good)[0] == 0


@pytest.mark.parametrize("label", ["a..b", "x.lock", "a.", "a/b", ".x", "a b"])
def test_a_label_that_is_not_a_ref_name_is_a_one_line_error(tmp_path: Path, label: str) -> None:
    ws = make_workspace(tmp_path)
    assert ws.strato_json("flow", "plan", GATE, "--input", "text=x", "--id", "r")[0] == 0
    proc = ws.strato("flow", "commit", "r", label)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: invalid checkpoint label")
    code, doc = ws.strato_json("flow", "commit", "r", label)
    assert code == 2 and doc["error"]["code"] == "invalid_label"
    assert ws.strato_json("flow", "revert", "r", label)[0] == 1
    assert ws.strato_json("flow", "show", "r")[1]["checkpoints"] == []


def test_a_bad_label_over_mcp_is_a_clean_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.strato_json("flow", "plan", GATE, "--input", "text=x", "--id", "r")

    async def scenario(s: Session) -> None:
        for label in ("a..b", "x.lock", "a."):
            message, doc = await s.error("stratum_commit", {"flow_id": "r", "label": label})
            assert message.startswith("invalid checkpoint label") and doc is not None
            assert doc["status"] == "error" and doc["error_type"] == "invalid_label"
        assert (await s.ok("stratum_commit", {"flow_id": "r", "label": "ok.1"}))["checkpoints"] == ["ok.1"]

    run_server(ws.root, scenario)
