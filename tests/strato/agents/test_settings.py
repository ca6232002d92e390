"""Per-call agent settings: the config that says how each reaches an agent's command line
is checked whole, a request gets only the words it lists (its value inside them), and a
change to them is no change to a verification lane."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from strato.agents.config import AgentConfigError, load_config
from strato.agents.settings import SettingsError
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
    for given, says in [
        ({"effort": "high"}, "takes effort low, not 'high'"),
        ({"thinking": True}, "does not take thinking"),
        ({"disallowedTools": "a"}, "a list of tool names"),
        ({"disallowedTools": [""]}, "a list of tool names"),
    ]:
        with pytest.raises(SettingsError, match=says):
            me.argv_for("x", given=given)


def test_settings_are_not_part_of_what_a_lane_measures(repo_dir: Path) -> None:
    _config(repo_dir, "")
    before = Runs(repo_dir).config_digests
    _config(repo_dir, '[agents.me.settings]\neffort = { argv = ["-e", "{value}"] }\n')
    assert Runs(repo_dir).config_digests == before
    _config(repo_dir, "timeout_s = 5\n")
    assert Runs(repo_dir).config_digests["me"] != before["me"]
