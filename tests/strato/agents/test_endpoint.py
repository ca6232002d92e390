"""A model endpoint as an agent: the real call program (our own process, httpx inside)
against an OpenAI-compatible stub server on 127.0.0.1, answering whole or streamed,
failing every way a server can; each failure one line, and nothing printed half-way."""

from __future__ import annotations

import ipaddress
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.agents import endpoint, trust
from strato.agents.calls import call, interpret
from strato.agents.config import AgentConfigError, AgentSpec, load_config
from strato.agents.process import Finished, run_process
from tests.support.approvals import approve_agents
from tests.support.chatstub import USAGE, Stub, chat_server, unused_url


@pytest.fixture
def stub() -> Iterator[Stub]:
    with chat_server() as server:
        yield server


def _agent(root: Path, url: str, model: str, extra: str = "", name: str = "local") -> AgentSpec:
    """The agent an approved `.vivary/agents.toml` defines (config as a user writes it)."""
    (root / ".vivary").mkdir(exist_ok=True)
    timeout = "" if "timeout_s" in extra else "timeout_s = 20\n"
    (root / ".vivary" / "agents.toml").write_text(
        f'[agents.{name}]\nendpoint = "{url}"\nmodel = "{model}"\n{timeout}{extra}')
    approve_agents(root)
    return load_config(root).get(name)


def _raw(agent: AgentSpec, prompt: str, cwd: Path) -> Finished:
    done = run_process(agent.argv_for(prompt), cwd, agent.timeout_s)
    assert isinstance(done, Finished)
    return done


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_whole_or_streamed_is_the_output_with_its_tokens(
    tmp_path: Path, stub: Stub, stream: bool,
) -> None:
    agent = _agent(tmp_path, stub.url, "qwen2.5-coder:7b",
                   f"temperature = 0.2\nmax_tokens = 512\nstream = {json.dumps(stream)}\n")
    stub.replies.append('Sure. {"label": "pos", "confidence": 0.9}')
    res = call(agent, "Classify: great", tmp_path)
    assert res.failure is None
    assert res.output == {"label": "pos", "confidence": 0.9}
    assert res.usage == {"tokens": USAGE["total_tokens"]}
    sent = stub.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["messages"] == [{"role": "user", "content": "Classify: great"}]
    assert (sent["body"]["model"], sent["body"]["temperature"], sent["body"]["max_tokens"]) == (
        "qwen2.5-coder:7b", 0.2, 512)
    assert sent["body"]["stream"] is stream
    assert ("stream_options" in sent["body"]) is stream


def test_an_answer_outside_ascii_arrives_whole(tmp_path: Path, stub: Stub) -> None:
    stub.replies.append('{"text": "naïve café, 東京 🚀"}')
    assert call(_agent(tmp_path, stub.url, "m"), "x", tmp_path).output == {"text": "naïve café, 東京 🚀"}


def test_a_server_that_reports_no_usage_costs_nothing_recorded(tmp_path: Path, stub: Stub) -> None:
    stub.replies.append('{"ok": true}')
    res = call(_agent(tmp_path, stub.url, "nousage"), "x", tmp_path)
    assert (res.output, res.usage) == ({"ok": True}, {})


@pytest.mark.parametrize(
    ("model", "extra", "reason"),
    [
        ("http500", "", "answered HTTP 500: model failed to load"),
        ("slow", "timeout_s = 1\n", "did not answer within 1s"),
        ("trickle", "timeout_s = 1\n", "did not answer within 1s"),
        ("cut", "", "cut the connection mid-answer"),
        ("cutstream", "stream = true\n", "the stream ended before the answer did"),
        ("notjson", "", "the answer is not JSON (text/html): '<html><body>502 Bad Gateway"),
        ("huge", "", "answer cut: the server sent over 8 MiB"),
        ("hugestream", "stream = true\n", "answer cut: over 131072 characters"),
        ("length", "", "answer cut by the server at max_tokens (finish_reason: length)"),
    ],
)
def test_a_failing_server_gives_one_line_and_no_half_answer(
    tmp_path: Path, stub: Stub, model: str, extra: str, reason: str,
) -> None:
    agent = _agent(tmp_path, stub.url, model, extra)
    stub.replies.append('{"half": "an answer that must not be taken"}')
    done = _raw(agent, "x", tmp_path)
    assert (done.returncode, done.stdout) == (1, "")  # nothing printed: nothing to take
    [line] = done.stderr_tail.splitlines()
    assert line.startswith(f"endpoint local ({model}) ") and reason in line, line
    res = interpret(agent, done)  # what a call, a dispatch or a judge makes of it
    assert res.output is None and res.failure is not None
    assert res.failure.startswith("agent local exited 1: endpoint local") and reason in res.failure


def test_an_endpoint_that_is_down_is_one_line(tmp_path: Path) -> None:
    res = call(_agent(tmp_path, unused_url(), "m"), "x", tmp_path)
    assert res.failure is not None and "endpoint local (m) is down: cannot connect to" in res.failure


def test_the_api_key_comes_from_the_environment_and_is_never_shown(
    tmp_path: Path, stub: Stub, monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "plain-words-" + "k" * 12  # no shape the redactor knows: the call hides it itself
    agent = _agent(tmp_path, stub.url, "http500", 'api_key_env = "LOCAL_MODEL_KEY"\n')
    assert secret not in json.dumps(agent.argv)
    missing = call(agent, "x", tmp_path)
    assert missing.failure == "agent local exited 1: endpoint local (http500) needs its API key in " \
        "$LOCAL_MODEL_KEY, which is not set"
    monkeypatch.setenv("LOCAL_MODEL_KEY", secret)
    res = call(agent, "x", tmp_path)
    assert stub.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert res.failure is not None and secret not in res.failure
    assert "LOCAL_MODEL_KEY" in agent.argv[-2]  # the variable's name is configured, not its value
    echoed = call(_agent(tmp_path, stub.url, "echokey", 'api_key_env = "LOCAL_MODEL_KEY"\n'), "x", tmp_path)
    assert echoed.failure is not None and "answered HTTP 401: bad key ***" in echoed.failure
    assert secret not in echoed.failure


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('endpoint = "http://models.example.com/v1"\nmodel = "m"\n', "not on this machine"),
        ('endpoint = "http://10.0.0.5:11434/v1"\nmodel = "m"\n', "set allow_remote = true"),
        ('endpoint = "http://127.0.0.1.nip.io/v1"\nmodel = "m"\n', "not on this machine"),
        ('endpoint = "http://u:p@127.0.0.1/v1"\nmodel = "m"\n', "plain base URL"),
        ('endpoint = "file:///etc/passwd"\nmodel = "m"\n', "http:// or https://"),
        ('endpoint = "http://127.0.0.1/v1#"\nmodel = "m"\n', "plain base URL"),
        ('endpoint = "http://127.0.0.1/v1"\n', "needs model"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\nargv = ["a", "{prompt}"]\n', "not both"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\ntemperature = 9\n', "temperature"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\nmax_tokens = 0\n', "max_tokens"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\ntimeout_s = 0\n', "timeout_s"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\napi_key_env = "$(x)"\n', "api_key_env"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\nallow_remote = "yes"\n', "allow_remote"),
        ('endpoint = "http://127.0.0.1/v1"\nmodel = "m"\napi_key = "sk-1"\n', "unknown keys"),
    ],
)
def test_a_bad_endpoint_table_is_refused_at_load(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / ".vivary").mkdir()
    (tmp_path / ".vivary" / "agents.toml").write_text(f"[agents.local]\n{table}")
    with pytest.raises(AgentConfigError, match=message) as refused:
        load_config(tmp_path)
    assert "\n" not in str(refused.value)


def test_a_remote_endpoint_loads_only_when_allowed(tmp_path: Path) -> None:
    agent = _agent(tmp_path, "https://models.example.com/v1", "m", "allow_remote = true\n")
    assert agent.endpoint is not None and not agent.endpoint.loopback
    for local in ("http://localhost:11434/v1", "http://127.0.0.2:8080/v1", "http://[::1]:8080/v1"):
        found = _agent(tmp_path, local, "m").endpoint
        assert found is not None and found.loopback


def test_an_unapproved_workspace_endpoint_runs_nothing(tmp_path: Path, stub: Stub) -> None:
    _agent(tmp_path, stub.url, "m")
    (tmp_path / ".vivary" / "agents.toml").write_text(
        f'[agents.local]\nendpoint = "{stub.url}"\nmodel = "other"\n')  # changed since approved
    with pytest.raises(trust.Untrusted, match=f"a model at {stub.url}"):
        load_config(tmp_path).get("local")


def test_the_users_own_config_may_define_an_endpoint_agent(tmp_path: Path, stub: Stub) -> None:
    own = trust.config_dir() / "agents.toml"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(textwrap.dedent(f"""
        [agents.mine]
        endpoint = "{stub.url}"
        model = "llama3.1:8b"
        min_interval_s = 0.5
    """))
    try:
        agent = load_config(tmp_path).get("mine")
        stub.replies.append('{"n": 3}')
        assert agent.min_interval_s == 0.5
        assert call(agent, "x", tmp_path, tmp_path / "pacing").output == {"n": 3}
        assert (tmp_path / "pacing" / "mine.lock").is_file()  # paced like any agent
    finally:
        own.unlink()


# what an adversary who writes the whole agents.toml may put in each part of a URL to
# make one parser see loopback and another connect elsewhere
_SCHEMES = ["http://", "https://", "HTTP://", "http:/", "http:\\\\", "http:///", ""]
_HOSTS = ["127.0.0.1", "localhost", "evil.example", "[::1]", "[::ffff:127.0.0.1]", "0x7f.1", "127.1",
          "\uff4cocalhost", "127.0.0.1.evil.example"]
_JUNK = ["@", ":", "\\", "%2e", "%40", ".", " ", "\t", "\n", "[", "]", "\u3002", "#", "?",
         "evil.example@", "127.0.0.1@", "localhost#"]
_TAIL = ["", ":80", ":11434", ":99999", ":x", "/v1", "/", "\\evil.example", "/@evil.example", "#x", "?a=1"]
def _often(value: str, others: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just(value), st.sampled_from(others))


_URLS = st.tuples(_often("http://", _SCHEMES), _often("", _JUNK), st.sampled_from(_HOSTS),
                  _often("", _JUNK), st.lists(st.sampled_from(_TAIL), max_size=2)).map(
    lambda t: "".join(t[:4]) + "".join(t[4]))


@settings(max_examples=300, deadline=None)
@given(_URLS)
def test_an_endpoint_taken_as_loopback_is_where_httpx_connects(url: str) -> None:
    """Whatever the URL, one taken as loopback (so accepted without `allow_remote`, and
    reached with no proxy) is one whose host, as the client reads it, is this machine:
    no parser difference sends a prompt elsewhere."""
    try:
        ep = endpoint.parse("x", {"endpoint": url, "model": "m", "allow_remote": True})
    except endpoint.EndpointError:
        return
    host = httpx.URL(f"{ep.url}/chat/completions").host
    assert ep.loopback == (host == "localhost" or _is_loopback_ip(host)), (url, host)
    try:
        endpoint.parse("x", {"endpoint": url, "model": "m"})
        accepted = True
    except endpoint.EndpointError:
        accepted = False
    assert accepted == ep.loopback


def _is_loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
