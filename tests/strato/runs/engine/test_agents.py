"""Agent dispatch: argv templates, the last JSON object printed, timeouts with a
process-group kill, bounded output, pacing that holds across processes, bad config."""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from strato.agents.calls import call, unwrap
from strato.agents.config import AgentConfigError, AgentSpec, load_config
from strato.runs.service import SpecInvalid
from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.flows import FIXTURES, make_workspace, reply

MINIMAL = (FIXTURES / "readme_minimal.stratum.yaml").read_text()


def _agent(tmp_path: Path, body: str, timeout_s: float = 60, interval: float = 0) -> AgentSpec:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(body))
    return AgentSpec("test", (sys.executable, str(script), "{prompt}"), timeout_s, interval)


def test_claude_envelope_is_unwrapped_with_its_cost() -> None:
    env = {"type": "result", "result": 'Here: {"label": "pos"}', "total_cost_usd": 0.01,
           "usage": {"input_tokens": 10, "output_tokens": 5}}
    assert unwrap(env) == ({"label": "pos"}, {"usd": 0.01, "tokens": 15})


def test_prompt_is_one_argv_element_never_a_shell(tmp_path: Path) -> None:
    agent = _agent(tmp_path, """
        import json, sys
        print(json.dumps({"argv": sys.argv[1:]}))
    """)
    prompt = "hello; rm -rf / $(whoami) 'quoted'"
    assert call(agent, prompt, tmp_path).output == {"argv": [prompt]}


def test_a_hanging_agent_and_its_children_are_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    agent = _agent(tmp_path, f"""
        import os, subprocess, sys, time
        from pathlib import Path
        pidfile = Path({str(pidfile)!r})
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pidfile.write_text(str(child.pid))
        time.sleep(600)
    """, timeout_s=5)
    res = call(agent, "x", tmp_path)
    assert res.failure == "agent test timed out after 5s"
    assert pidfile.exists(), "the agent was killed before it started its child: nothing was tested"
    # the grandchild was in the same process group: it must be gone too. Wait for its
    # exit as an event (a pidfd turns readable when the process ends), not a sleep.
    pid = int(pidfile.read_text())
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone and reaped
    try:
        readable, _, _ = select.select([fd], [], [], 120)  # a bound only against a hang
        assert readable, f"grandchild {pid} outlived its agent's timeout"
    finally:
        os.close(fd)


def test_no_json_and_nonzero_exit_are_failures(tmp_path: Path) -> None:
    assert call(_agent(tmp_path, "print('just prose')"), "x", tmp_path).failure == "agent test printed no JSON object"
    res = call(_agent(tmp_path, "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"), "x", tmp_path)
    assert res.failure == "agent test exited 3: boom"


def test_megabytes_of_output_are_bounded_and_the_final_object_survives(tmp_path: Path) -> None:
    agent = _agent(tmp_path, """
        import json, sys
        line = "y" * 1023 + "\\n"
        for _ in range(40 * 1024):
            sys.stdout.write(line)
        print(json.dumps({"ok": True}))
    """)
    res = call(agent, "x", tmp_path)
    assert res.output == {"ok": True}


def test_pacing_holds_across_processes(tmp_path: Path) -> None:
    stamps = tmp_path / "stamps"
    caller = tmp_path / "caller.py"
    caller.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from strato.agents.pacing import pace
        for _ in range(2):
            start = pace(Path({str(tmp_path / 'pacing' / 'paced.lock')!r}), 0.5)
            with open({str(stamps)!r}, "a") as fh:
                fh.write(f"{{start}}\\n")
    """))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[4])}
    procs = [subprocess.Popen([sys.executable, str(caller)], env=env) for _ in range(3)]
    assert [p.wait() for p in procs] == [0, 0, 0]
    times = sorted(float(t) for t in stamps.read_text().split())
    assert len(times) == 6
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Pacing is a promise about time itself, so this one test measures it, on the starts
    # pace recorded under its lock (a clock read after pace returns could be late by however
    # long that process waited for a core, and shrink the next gap). One-sided: a slow
    # machine only widens these gaps.
    assert min(gaps) >= 0.499  # spaced by the interval (the lock keeps microseconds)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[agents.x]\nargv = "claude"\n', "argv must be a non-empty list"),
        ('[agents.x]\nargv = ["claude", "-p"]\n', "exactly one element"),
        ('[agents.x]\nargv = ["claude", "--p={prompt}"]\n', "exactly one element"),
        ('[agents.x]\nargv = ["a", "{prompt}"]\ntimeout_s = 0\n', "timeout_s"),
        ('[agents.x]\nargv = ["a", "{prompt}"]\nshell = true\n', "unknown keys"),
        ("[agents.x\n", "agents.toml"),
        ("[other]\n", "unknown tables"),
    ],
)
def test_bad_agent_config_is_a_configuration_error(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / ".vivary").mkdir()
    (tmp_path / ".vivary" / "agents.toml").write_text(toml)
    with pytest.raises(AgentConfigError, match=message):
        load_config(tmp_path)


def test_builtin_templates_exist_without_a_config(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.get("claude").argv == ("claude", "-p", "--output-format", "json", "--", "{prompt}")
    assert "{prompt}" in config.get("codex").argv and config.judge is None


def test_flooding_and_silent_agents_fail_the_attempt_in_a_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Classify", "replies": [{"flood": 3}, {"say": "no idea"}]}])
    runs = ws.runs()
    snap = runs.drive(runs.plan(MINIMAL, {"text": "x"}).snap.run_id)
    assert snap.state["status"] == "failed"
    failures = [a["failure"] for a in snap.state["scope"]["steps"]["classify_text"]["attempts"]]
    assert failures == ["agent reported failure: agent claude printed no JSON object"] * 2
    ws.agents([{"match": "Classify", "replies": [reply({"label": "a", "confidence": 1})]}])
    assert json.loads(json.dumps(ws.runs().drive(ws.runs().plan(MINIMAL, {"text": "x"}).snap.run_id).state))["status"] == "completed"


def test_builtin_templates_end_option_parsing_before_the_prompt(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    for name in ("claude", "codex"):
        argv = config.get(name).argv
        assert argv[-2:] == ("--", "{prompt}"), argv


def test_a_prompt_that_looks_like_an_option_stays_the_prompt(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent("""
        import argparse, json
        parser = argparse.ArgumentParser()
        parser.add_argument("--dangerously-skip-permissions", action="store_true")
        parser.add_argument("prompt")
        args = parser.parse_args()
        print(json.dumps({"prompt": args.prompt, "skipped": args.dangerously_skip_permissions}))
    """))
    agent = AgentSpec("cli", (sys.executable, str(script), "--", "{prompt}"))
    res = call(agent, "--dangerously-skip-permissions", tmp_path)
    assert res.output == {"prompt": "--dangerously-skip-permissions", "skipped": False}


def test_a_spec_may_name_any_agent_the_workspace_defines(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    spec = MINIMAL.replace("agent: claude", "agent: reviewer")
    with pytest.raises(SpecInvalid) as refused:
        ws.runs().plan(spec, {"text": "x"})
    assert refused.value.errors[0].path == "flows.classify.steps[0].agent"
    assert "reviewer" in refused.value.errors[0].message
    ws.agents([{"match": "Classify", "replies": [reply({"label": "a", "confidence": 0.9})]}])
    text = (ws.root / ".vivary" / "agents.toml").read_text()
    (ws.root / ".vivary" / "agents.toml").write_text(text.replace("[agents.codex]", "[agents.reviewer]"))
    approve_agents(ws.root)
    runs = ws.runs()
    snap = runs.drive(runs.plan(spec, {"text": "x"}).snap.run_id)
    assert snap.state["status"] == "completed" and snap.state["output"]["label"] == "a"


def test_validate_knows_the_agents_of_the_workspace_it_runs_in(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {".vivary/agents.toml": '[agents.reviewer]\nargv = ["r", "--", "{prompt}"]\n'})
    spec = tmp_path / "spec.yaml"
    spec.write_text(MINIMAL.replace("agent: claude", "agent: reviewer"))
    inside = console.run("strato", "flow", "validate", spec, cwd=ws.root)
    assert inside.returncode == 0, inside.stdout
    outside = console.run("strato", "flow", "validate", spec, "--json", cwd=tmp_path)
    assert outside.returncode == 1
    [error] = json.loads(outside.stdout)["errors"]
    assert error["code"] == "SCHEMA_INVALID" and error["path"] == "flows.classify.steps[0].agent"
