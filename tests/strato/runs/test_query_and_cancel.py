"""The seed's CLI words for runs: `strato query flows|flow ID|gates` answer exactly as
`strato flow list|show|gates`, and `strato flow cancel` exits as Stratum's does (2 for an
unknown run, 0 with `already_cancelled` for a second cancel) and stops the agents a
foreground `strato run` elsewhere is running for the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from strato.agents import groups
from tests.support import runs as runs_support
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


@pytest.mark.usefixtures("short_grace")  # the claim is the stop, not the grace
def test_cancel_stops_the_agents_a_foreground_run_elsewhere_is_running(repo_dir: Path) -> None:
    """`strato run` in another process runs an agent that ignores SIGTERM and forks three
    children that do too; `strato flow cancel` finds its group in the run's registry and
    stops every one of them (SIGKILL after the grace), and the foreground run ends."""
    root = runs_support.make_workspace(repo_dir)
    (root / "hostile.yaml").write_text(runs_support.one_step_spec("hostile"))
    strato = Path(sys.executable).parent / "strato"
    argv = [strato, "run", root / "hostile.yaml", "--input", "tag=h1", "--id", "h1", "--root", root, "--json"]
    fg = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        runs_support.wait_for(lambda: len(runs_support.pids(root, "h1")) == 4, "the agent and its children")
        code, doc, err = runs_support.strato(root, "flow", "cancel", "h1")
        assert code == 0 and doc["status"] == "cancelled", err
        assert not any(groups.alive(pid) for pid in runs_support.pids(root, "h1"))
        out, err = fg.communicate(timeout=120)  # a bound on a broken run, not a speed claim
        assert json.loads(out)["status"] == "cancelled", err
    finally:
        runs_support.kill_hostiles(root)
        if fg.poll() is None:
            fg.kill()
            fg.wait()
