"""`strato mcp install --host claude|codex` writes the execution-model block (write a spec,
stratum_plan, stratum_step_done, stratum_audit, one example) between its markers into the
workspace's CLAUDE.md or AGENTS.md, once however often it runs; `--uninstall` takes it out
and every other byte of the file is as it was. The file is the work tree's (a branch's
author controls it): a link is not followed, and markers that are not one pair are refused
with nothing written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.flow.validate import load_spec
from strato.mcp import guidance
from tests.support import console

BIN = Path(sys.executable).parent


def install(root: Path, *args: str) -> tuple[int, Any]:
    env = {"PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    proc = console.run("strato", "mcp", "install", *args, "--root", root, "--json", env=env)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize(("host", "name"), [("claude", "CLAUDE.md"), ("codex", "AGENTS.md")])
def test_the_block_is_written_once_and_removed_leaving_the_rest(repo_dir: Path, host: str, name: str) -> None:
    notes = repo_dir / name
    before = "# Project rules\n\nUse tabs.\n"
    notes.write_text(before)
    code, doc = install(repo_dir, "--host", host)
    assert code == 0 and doc["instructions"] == {"path": str(notes), "changed": True}
    text = notes.read_text()
    assert text.startswith(before) and text.count(guidance.START) == text.count(guidance.END) == 1
    for tool in ("stratum_plan", "stratum_step_done", "stratum_audit", ".stratum.yaml"):
        assert tool in text
    notes.write_text(text + "\n## Added later by a person\n")  # content after the block too
    around = notes.read_text()
    code, again = install(repo_dir, "--host", host)
    assert code == 0 and again["instructions"]["changed"] is False and notes.read_text() == around
    code, gone = install(repo_dir, "--host", host, "--uninstall")
    assert code == 0 and gone["instructions"]["changed"] is True and gone["changed"] is True
    assert notes.read_text() == before + "\n## Added later by a person\n"
    assert "stratum" not in notes.read_text()
    code, twice = install(repo_dir, "--host", host, "--uninstall")
    assert code == 0 and twice["changed"] is False and twice["instructions"]["changed"] is False


def test_a_file_the_install_created_goes_with_the_uninstall(repo_dir: Path) -> None:
    code, doc = install(repo_dir, "--host", "claude", "--dry-run")
    assert code == 0 and doc["instructions"]["changed"] and not (repo_dir / "CLAUDE.md").exists()
    install(repo_dir, "--host", "claude")
    assert (repo_dir / "CLAUDE.md").read_text() == guidance.BLOCK
    assert json.loads((repo_dir / ".mcp.json").read_text())["mcpServers"]["strato"]
    install(repo_dir, "--host", "claude", "--uninstall")
    assert not (repo_dir / "CLAUDE.md").exists()
    assert json.loads((repo_dir / ".mcp.json").read_text())["mcpServers"] == {}


def test_the_example_in_the_block_is_a_valid_spec() -> None:
    example = guidance.BLOCK.split("```yaml\n")[1].split("```")[0]
    assert yaml.safe_load(example)["flows"]["entry"] == "fix"
    spec, errors = load_spec(example)
    assert errors == [] and spec is not None


@pytest.mark.parametrize("planted", [
    f"{guidance.START}\nmine\n",  # a start without an end
    f"{guidance.END}\n{guidance.START}\n",  # the wrong way round
    guidance.BLOCK + guidance.BLOCK,  # two blocks
])
def test_markers_that_are_not_one_pair_are_refused_and_nothing_is_written(repo_dir: Path, planted: str) -> None:
    (repo_dir / "AGENTS.md").write_text(planted)
    code, doc = install(repo_dir, "--host", "codex", "--scope", "project")
    assert code == 2 and doc["error"]["code"] == "malformed_config"
    assert (repo_dir / "AGENTS.md").read_text() == planted and not (repo_dir / ".codex").exists()


def test_a_linked_instructions_file_is_not_followed(repo_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.md"
    secret.write_text("not yours\n")
    (repo_dir / "CLAUDE.md").symlink_to(secret)
    code, doc = install(repo_dir, "--host", "claude")
    assert code == 2 and "symbolic link" in doc["error"]["message"]
    assert secret.read_text() == "not yours\n" and not (repo_dir / ".mcp.json").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_any_file_comes_back_byte_for_byte(text: str) -> None:
    """Pure: whatever the file held (short of our markers), in then out leaves it as it
    was; a last line without a newline keeps the one it was given."""
    if guidance.START in text or guidance.END in text:
        return
    written = guidance.with_block(text)
    assert guidance.with_block(written) == written and written.count(guidance.BLOCK) == 1
    expected = text if not text or text.endswith("\n") else text + "\n"
    assert guidance.without_block(written) == expected
