"""`strato agent run|poll|cancel` of a model endpoint agent (the stub server on
127.0.0.1): the answer's text, its tokens and the model in the telemetry; a failing
server's one line; a slow answer cancelled in the background like any agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from strato.agentruns.store import RunDir
from strato.agents import groups
from tests.support.approvals import approve_agents
from tests.support.chatstub import USAGE, Stub, chat_server
from tests.support.runs import strato, wait_for


@pytest.fixture
def stub() -> Iterator[Stub]:
    with chat_server() as server:
        yield server


def _configure(root: Path, stub: Stub) -> None:
    (root / ".vivary").mkdir(exist_ok=True)
    (root / ".vivary" / "agents.toml").write_text("".join(
        f'[agents.{name}]\nendpoint = "{stub.url}"\nmodel = "{name}"\ntimeout_s = 60\nstream = true\n\n'
        for name in ("local", "http500", "slow")))
    approve_agents(root)


def test_a_foreground_run_gives_the_models_text_tokens_and_model(repo_dir: Path, stub: Stub) -> None:
    _configure(repo_dir, stub)
    stub.replies.append("The tests cover streaming.")
    code, doc, _ = strato(repo_dir, "agent", "run", "local", "--prompt", "Summarise", "--model", "asked-for")
    assert code == 0, doc
    assert doc["status"] == "complete" and doc["text"] == "The tests cover streaming."
    assert doc["usage"] == {"tokens": USAGE["total_tokens"]}
    assert doc["telemetry"]["model"] == "local"  # the configured model answered, not the one asked for
    assert stub.requests[-1]["body"]["model"] == "local"


def test_a_failing_endpoint_run_is_an_error_with_its_line(repo_dir: Path, stub: Stub) -> None:
    _configure(repo_dir, stub)
    code, doc, _ = strato(repo_dir, "agent", "run", "http500", "--prompt", "x")
    assert code == 1 and doc["status"] == "error" and doc["reason"] == "exited 1"
    assert doc["textTail"] == ""  # no half answer
    assert doc["stderrTail"] == "endpoint http500 (http500) answered HTTP 500: model failed to load\n"


def test_a_slow_answer_is_cancelled_like_any_agent(repo_dir: Path, stub: Stub) -> None:
    _configure(repo_dir, stub)
    code, started, _ = strato(repo_dir, "agent", "run", "slow", "--prompt", "x", "--background")
    assert code == 0 and started["status"] == "bg_started"
    run_id = started["runId"]
    wait_for(lambda: len(stub.requests) == 1, "the request reached the server")
    pgid = RunDir(repo_dir / ".git" / "vivary" / "agent-runs" / run_id).proc()
    assert pgid is not None and groups.members(pgid["pgid"]) != []  # the call, waiting on the server
    code, doc, _ = strato(repo_dir, "agent", "cancel", run_id, "--grace", "0.5")
    assert code == 0 and doc == {"status": "cancelled", "runId": run_id}
    assert groups.members(pgid["pgid"]) == []
    code, polled, _ = strato(repo_dir, "agent", "poll", run_id)
    assert code == 1 and polled["status"] == "error" and polled["reason"] == "cancelled by cli"

