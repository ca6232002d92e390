"""Per-call agent settings: the config that says how each reaches an agent's command line
is checked whole, a request gets only the words it lists (its value inside them), and a
change to them is no change to a verification lane."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.agents.config import AgentConfigError, AgentSpec, load_config
from strato.agents.settings import Setting, SettingsError
from strato.runs.service import Runs
from tests.support.approvals import approve_agents

PY = json.dumps(sys.executable)


def _config(root: Path, settings: str) -> None:
    (root / ".vivary").mkdir(exist_ok=True)
    text = f'[agents.me]\nargv = [{PY}, "-c", "pass", "--", "{{prompt}}"]\n{settings}'
    (root / ".vivary" / "agents.toml").write_text(text)
    approve_agents(root)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ('[agents.me.settings]\nspeed = { argv = ["--fast"] }\n', "unknown setting"),
        ('[agents.me.settings]\neffort = ["--effort", "{value}"]\n', "must be a table"),
        ('[agents.me.settings]\neffort = { argv = [] }\n', "non-empty list"),
        ('[agents.me.settings]\neffort = { argv = ["{prompt}"] }\n', "not {prompt}"),
        ('[agents.me.settings]\neffort = { argv = ["-e", "{value}"], values = "high" }\n', "values must be a list"),
        ('[agents.me.settings]\neffort = { argv = ["-e"], extra = 1 }\n', "must be a table with argv"),
    ],
)
def test_a_malformed_settings_table_is_a_config_error(repo_dir: Path, settings: str, says: str) -> None:
    _config(repo_dir, settings)
    with pytest.raises(AgentConfigError, match=says.replace("{", r"\{").replace("}", r"\}")):
        load_config(repo_dir)


def test_words_go_before_the_prompt_and_only_listed_values_pass(repo_dir: Path) -> None:
    _config(repo_dir, '[agents.me.settings]\neffort = { argv = ["-e={value}"], values = ["low"] }\n'
                      'disallowedTools = { argv = ["--no", "{value}"] }\n')
    me = load_config(repo_dir).get("me")
    assert me.argv_for("-p", given={"effort": "low", "disallowedTools": ["a", "b"]})[3:] == [
        "-e=low", "--no", "a,b", "--", "-p"
    ]
    assert me.argv_for("x", given={"effort": None}) == me.argv_for("x")
    for asked, says in [
        ({"effort": "high"}, "takes effort low, not 'high'"),
        ({"thinking": True}, "does not take thinking"),
        ({"disallowedTools": "a"}, "a list of tool names"),
        ({"disallowedTools": [""]}, "a list of tool names"),
    ]:
        with pytest.raises(SettingsError, match=says):
            me.argv_for("x", given=asked)


def test_settings_are_not_part_of_what_a_lane_measures(repo_dir: Path) -> None:
    _config(repo_dir, "")
    before = Runs(repo_dir).config_digests
    _config(repo_dir, '[agents.me.settings]\neffort = { argv = ["-e", "{value}"] }\n')
    assert Runs(repo_dir).config_digests == before
    _config(repo_dir, "timeout_s = 5\n")
    assert Runs(repo_dir).config_digests["me"] != before["me"]


def test_settings_on_an_agent_whose_prompt_comes_first_are_a_config_error(repo_dir: Path) -> None:
    (repo_dir / ".vivary").mkdir()
    (repo_dir / ".vivary" / "agents.toml").write_text(
        '[agents.me]\nargv = ["--", "{prompt}"]\n[agents.me.settings]\neffort = { argv = ["{value}"] }\n'
    )
    with pytest.raises(AgentConfigError, match="the program before"):
        load_config(repo_dir)


TEMPLATE = ["agent-cli", "-p", "--", "{prompt}"]
WORDS = {"effort": ["--effort", "{value}"], "allowedTools": ["--allow={value}"], "thinking": ["-t", "{value}"]}


@settings(max_examples=300, deadline=None)
@given(
    prompt=st.text(),
    effort=st.one_of(st.none(), st.text()),
    tools=st.one_of(st.none(), st.lists(st.text(min_size=1), max_size=4)),
    thinking=st.one_of(st.none(), st.booleans()),
)
def test_a_client_that_chooses_every_value_chooses_no_word_and_no_program(
    prompt: str, effort: str | None, tools: list[str] | None, thinking: bool | None
) -> None:
    """The adversary holds every byte of the request; the config holds the words."""
    me = AgentSpec("me", tuple(TEMPLATE), takes={k: Setting(tuple(v)) for k, v in WORDS.items()})
    asked = {"effort": effort, "allowedTools": tools, "thinking": thinking}
    try:
        argv = me.argv_for(prompt, given=asked)
    except SettingsError:
        assert effort == "" or (tools is not None and any(not t for t in tools))
        return
    want = [*(["--effort", effort] if effort is not None else []),
            *([f"--allow={','.join(tools)}"] if tools is not None else []),
            *(["-t", "true" if thinking else "false"] if thinking is not None else [])]
    assert argv == ["agent-cli", "-p", *want, "--", prompt]
