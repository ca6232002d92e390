"""A flow run through the real engine whose step agent and judge are model endpoints
(the stub server on 127.0.0.1): the retry carries the previous failure to the model,
the judge's verdict comes from the endpoint, and the tokens the server reported are
what the run records."""

from __future__ import annotations

from pathlib import Path

from strato.runs.background import runner as background
from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.chatstub import USAGE, Stub, chat_server
from tests.support.flows import FIXTURES, Workspace, make_workspace
from tests.support.runs import ended, strato, wait_for
from tests.support.specs import JUDGED

MINIMAL = (FIXTURES / "readme_minimal.stratum.yaml").read_text()


def _endpoint_workspace(tmp_path: Path, stub: Stub, *, stream: bool = False, model: str = "qwen2.5:7b") -> Workspace:
    ws = make_workspace(tmp_path)
    flag = "true" if stream else "false"
    (ws.root / ".vivary").mkdir(exist_ok=True)
    (ws.root / ".vivary" / "agents.toml").write_text(
        f'[agents.claude]\nendpoint = "{stub.url}"\nmodel = "{model}"\nstream = {flag}\n\n'
        f'[judge]\nendpoint = "{stub.url}"\nmodel = "judge-model"\n')
    approve_agents(ws.root)
    return ws


def test_a_flow_step_retries_on_an_endpoint_with_the_previous_failure(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub, stream=True)
        stub.replies += ['{"label": "pos", "confidence": 0.4}', 'Now: {"label": "pos", "confidence": 0.95}']
        runs = ws.runs()
        run_id = runs.plan(MINIMAL, {"text": "what a day"}).snap.run_id
        state = runs.drive(run_id).state
    assert state["status"] == "completed", state.get("failure")
    assert state["output"] == {"label": "pos", "confidence": 0.95}
    prompts = [r["body"]["messages"][0]["content"] for r in stub.requests]
    assert len(prompts) == 2 and "Classify the sentiment of what a day" in prompts[0]
    assert "Your previous attempt failed" in prompts[1] and "result.confidence > 0.7" in prompts[1]
    attempts = state["scope"]["steps"]["classify_text"]["attempts"]
    assert [a.get("failure") is None for a in attempts] == [False, True]
    assert state["flowSpent"]["tokens"] == 2 * USAGE["total_tokens"]
    debits = [e["detail"] for e in runs.audit(run_id)["events"] if e["type"] == "usage_debit"]
    assert [d["model"] for d in debits] == ["qwen2.5:7b", "qwen2.5:7b"]  # the endpoint's model, not "claude"


def test_a_judged_ensure_is_decided_by_an_endpoint_judge(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub)
        stub.replies += ['{"text": "hello, kindly"}', '{"holds": true, "reason": "it is polite"}']
        runs = ws.runs()
        run_id = runs.plan(JUDGED, {}).snap.run_id
        state = runs.drive(run_id).state
        judged = [e["detail"] for e in runs.audit(run_id)["events"] if e["type"] == "judged"]
    assert state["status"] == "completed", state.get("failure")
    asked = stub.requests[-1]["body"]
    assert asked["model"] == "judge-model" and "the text is polite" in asked["messages"][0]["content"]
    assert judged == [{"statement": "the text is polite", "holds": True, "reason": "it is polite",
                       "stakes": "cheap", "model": "judge-model", "usage": {"tokens": USAGE["total_tokens"], "usd": 0}}]


def test_an_endpoint_that_is_down_fails_the_step_with_its_reason(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub)
    runs = ws.runs()  # the server is gone now
    state = runs.drive(runs.plan(MINIMAL, {"text": "x"}).snap.run_id).state
    assert state["status"] == "failed"
    reasons = [a["failure"] for a in state["scope"]["steps"]["classify_text"]["attempts"]]
    assert len(reasons) == 2
    assert all("endpoint claude (qwen2.5:7b) is down: cannot connect to" in r for r in reasons), reasons


def test_a_background_run_calls_the_endpoint_from_its_dispatch_process(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub, stream=True)
        stub.replies.append('{"label": "neg", "confidence": 0.8}')
        run_id = background.start(Runs(ws.root), MINIMAL, {"text": "rain"})
        doc = ended(ws.root, run_id)
    assert doc["status"] == "completed" and doc["output"] == {"label": "neg", "confidence": 0.8}
    assert len(stub.requests) == 1


def test_cancel_stops_a_background_run_waiting_on_a_slow_endpoint(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub, model="slow")
        run_id = background.start(Runs(ws.root), MINIMAL, {"text": "x"})
        wait_for(lambda: len(stub.requests) == 1, "the call reached the server")
        assert len(_calls_to(stub)) == 1  # the call program, waiting on the answer
        code, view, err = strato(ws.root, "flow", "cancel", run_id, "--reason", "too slow")
        assert code == 0, err
        assert view["status"] == "cancelled"
        assert _calls_to(stub) == []
        doc = ended(ws.root, run_id)
        assert doc["failure"] == {"attempt": 0, "reason": "cancelled: too slow"}
        assert not stub.stop.is_set()  # cancelled while the server still held the answer


def _calls_to(stub: Stub) -> list[int]:
    """The live call programs whose argv names this stub's URL (read from /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"strato.agents.endpointcall" in argv and any(stub.url.encode() in a for a in argv):
            found.append(int(proc.name))
    return found


FANOUT = """
version: 1
contracts:
  Word: {word: string}
flows:
  entry: main
  main:
    input: {words: "string[]"}
    output: {from: "${shout.output[1]}", contract: Word}
    steps:
      - id: shout
        fanout:
          over: "${input.words}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Shout ${item}"
              out: Word
"""


def test_fanout_telemetry_names_the_endpoints_model(tmp_path: Path) -> None:
    with chat_server() as stub:
        ws = _endpoint_workspace(tmp_path, stub, model="llama3.1:8b")
        stub.replies += ['{"word": "A!"}', '{"word": "B!"}']
        runs = ws.runs()
        run_id = runs.plan(FANOUT, {"words": ["a", "b"]}).snap.run_id
        state = runs.drive(run_id).state
        debits = [e["detail"] for e in runs.audit(run_id)["events"] if e["type"] == "usage_debit"]
    assert state["status"] == "completed", state.get("failure")
    assert [d["model"] for d in debits] == ["llama3.1:8b", "llama3.1:8b"]  # not the agent's name, "claude"
