"""`strato help [COMMAND]`: the seed's word for usage prints what `--help` prints for the
command it names, and refuses a command strato does not have."""

from __future__ import annotations

import json

import pytest

from tests.support.console import run


@pytest.mark.parametrize("words", [[], ["flow"], ["flow", "cancel"], ["query", "flows"], ["models"]])
def test_help_names_the_same_text_as_dash_dash_help(words: list[str]) -> None:
    asked, helped = run("strato", "help", *words), run("strato", *words, "--help")
    assert asked.returncode == helped.returncode == 0
    assert asked.stdout.strip() == helped.stdout.strip() and "Usage: strato" in asked.stdout


def test_help_lists_subcommands_under_json_and_refuses_an_unknown_command() -> None:
    proc = run("strato", "help", "query", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["command"] == "strato query"
    assert doc["commands"] == ["flow", "flows", "gates"] and "Usage: strato query" in doc["usage"]
    for words in (["nope"], ["flow", "nope"], ["models", "extra"]):
        bad = run("strato", "help", *words)
        assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1
        assert "no command 'strato " in bad.stderr
