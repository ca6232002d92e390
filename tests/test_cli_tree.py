"""Every leaf command of every console script, found by walking click's command tree (so a
new command is covered the day it is added): its help shows an example, and under `--json`
a bad argument is the JSON error document on stdout, one line on stderr, nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest

BIN = Path(sys.executable).parent
PACKAGES = ("strato", "tropo", "exo", "create_vivary", "hooks", "vivary")
MISSING = "no-such-folder"
# where the generic bad argument (a file that is not what was asked for) is a valid input
# whose answer is a finding, the bad argument is a missing file instead
BAD_ARGS = {"strato flow validate": ["missing.yaml"]}
# the error document of a command whose JSON shape predates the common one (the validator's
# report keeps vivary-stratum's shape: `valid` false, the errors with their codes)
ERROR_KEYS = {"strato flow validate": ("valid", False)}


def _leaves(command: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _leaves(sub, [*path, name])
    else:
        yield " ".join(path), command


def _forwards(command: click.Command) -> bool:
    """A front-door alias (`vivary check` is `tropo check`): it takes every word as is."""
    return [type(p.type) for p in command.params] == [click.types.UnprocessedParamType]


LEAVES = dict(
    leaf
    for ep in sorted(entry_points(group="console_scripts"), key=lambda e: e.name)
    if ep.value.partition(".")[0].partition(":")[0] in PACKAGES
    for leaf in _leaves(ep.load(), [ep.name])
)


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) and not p.hidden for o in p.opts}


def test_the_walk_finds_every_console_script_and_the_known_leaves() -> None:
    assert {name.split()[0] for name in LEAVES} == {"strato", "tropo", "exo", "create-vivary", "vivary"}
    assert len([n for n, c in LEAVES.items() if not _forwards(c)]) >= 87
    assert {"tropo fix", "strato distill stats", "strato heartbeat show", "strato mcp install"} <= set(LEAVES)


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_every_leaf_shows_an_example_in_its_help(name: str) -> None:
    proc = subprocess.run([BIN / name.split()[0], *name.split()[1:], "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "Example" in proc.stdout, f"{name} --help has no example"


def _bad_argv(name: str, command: click.Command) -> list[str]:
    """The leaf with a bad value for each required parameter and a --root that does not
    exist; a leaf that needs neither gets a word it does not take."""
    argv = name.split()
    if name in BAD_ARGS:
        return [*argv, *BAD_ARGS[name], "--json"]
    bad = False
    for p in command.params:
        if p.required:
            value = p.type.choices[0] if isinstance(p.type, click.Choice) else "bad.txt"
            argv += [*([p.opts[0]] if isinstance(p, click.Option) else []), str(value)]
            bad = True
    if "--root" in _options(command):
        argv += ["--root", MISSING]
    elif not bad:
        argv.append("bad.txt")
    return [*argv, "--json"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("tree")
    subprocess.run([BIN / "create-vivary", "init", "ws", "--commit"], cwd=where, check=True, capture_output=True)
    (where / "ws" / "bad.txt").write_text("not what any command asks for\n")
    return where / "ws"


def _status(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("name", sorted(n for n, c in LEAVES.items() if "--json" in _options(c)))
def test_a_bad_argument_under_json_is_the_json_error_document(name: str, workspace: Path) -> None:
    argv = _bad_argv(name, LEAVES[name])
    before = _status(workspace)
    proc = subprocess.run([BIN / argv[0], *argv[1:]], cwd=workspace, capture_output=True, text=True, input="")
    made = (workspace / MISSING).exists()
    shutil.rmtree(workspace / MISSING, ignore_errors=True)  # else the next leaf would find a repository there
    assert not made, f"{argv} created the missing --root"
    assert proc.returncode in (1, 2), (argv, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, (argv, proc.stderr)
    doc = json.loads(proc.stdout)  # one JSON document, nothing else
    key, value = ERROR_KEYS.get(name, ("ok", False))
    assert isinstance(doc, dict) and (doc.get(key) is value or doc.get("status") == "error"), (argv, doc)
    assert _status(workspace) == before, argv  # nothing written
