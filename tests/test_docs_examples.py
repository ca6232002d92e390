"""Every ```sh block of every docs/ page runs as written, in order, in one fresh
`create-vivary init --commit` scaffold per page (a copy of one made per test process),
HOME a scratch folder, so `~/.ssh` and `~/.codex` are the test's. A block the page marks
`<!-- not run: reason -->` on the line before its fence is not executed: it is listed here
with its reason, and every command of ours it names must exist with the options it shows
(checked through `--help`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.console import run
from tests.support.workspaces import made_once

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PAGES = sorted((ROOT / "docs").glob("*.md"))
OURS = ("tropo", "strato", "exo", "vivary", "create-vivary")
BLOCK = re.compile(r"(?:^<!-- not run: (?P<reason>[^\n]*?) -->\n)?^```sh\n(?P<body>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    body: str
    not_run: str | None


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("body"))
        found.append(Block(page.name, line, match.group("body"), match.group("reason")))
    return found


def run_block(ws: Path, env: dict[str, str], block: Block) -> None:
    """The block as one bash script (so `cd`, variables and multi-line commands behave as
    pasted into a shell), stopping at the first command that fails."""
    script = f"set -eo pipefail\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n{block.body}"
    proc = subprocess.run(
        ["bash", "-c", script], cwd=ws, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    where = f"{block.page}:{block.line}"
    assert proc.returncode == 0, (
        f"{where} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )


def shell_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Docs Test",
        "GIT_AUTHOR_EMAIL": "docs@example.invalid",
        "GIT_COMMITTER_NAME": "Docs Test",
        "GIT_COMMITTER_EMAIL": "docs@example.invalid",
    }


RUN_PAGES = [page for page in PAGES if any(b.not_run is None for b in blocks(page))]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.name for p in RUN_PAGES])
def test_a_pages_blocks_run_in_one_fresh_scaffold(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, page: Path
) -> None:
    env = shell_env(tmp_path)

    def init(top: Path) -> None:  # once per process, copied per page (it writes nothing to HOME)
        top.mkdir()
        subprocess.run(["create-vivary", "init", "my-ws", "--preset", "coding", "--commit"],
                       cwd=top, env=env, check=True, capture_output=True)

    template = made_once("docs-scaffold", tmp_path_factory.getbasetemp(), init)
    shutil.copytree(template / "my-ws", tmp_path / "my-ws", symlinks=True)
    for block in blocks(page):
        if block.not_run is None:
            run_block(tmp_path / "my-ws", env, block)


def our_commands(body: str) -> list[list[str]]:
    """Each command of ours in a block, as words: continuation lines joined, a pipeline
    split, placeholders (`[...]`, `A|B`, `UPPER`) kept for the option check below."""
    joined = re.sub(r"\\?\n[ \t]+", " ", body)  # `\` continuations, indented synopsis lines
    found = []
    for line in joined.splitlines():
        for part in re.split(r"\s\|\s|&&|;", line.split(" #", 1)[0]):
            words = part.split()
            if words and words[0] in OURS:
                found.append(words)
    return found


NOT_RUN = [b for page in PAGES for b in blocks(page) if b.not_run is not None]


@pytest.mark.parametrize("block", NOT_RUN, ids=[f"{b.page}:{b.line} ({b.not_run})" for b in NOT_RUN])
def test_a_block_not_run_names_commands_and_options_that_exist(tmp_path: Path, block: Block) -> None:
    assert block.not_run and block.not_run.strip(), (
        f"{block.page}:{block.line}: a `not run` mark needs a reason"
    )
    for words in our_commands(block.body):
        head: list[str] = []  # the subcommand path: words before an option or placeholder
        for word in words[1:]:
            if not re.fullmatch(r"[a-z][a-z0-9-]*", word):
                break
            head.append(word)

        proc = run(words[0], *head, "--help", cwd=tmp_path)  # the help is the script's, in process
        shown = " ".join(words)
        assert proc.returncode == 0, f"{block.page}:{block.line}: {shown!r}: {proc.stderr.strip()}"
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", shown):
            assert option in proc.stdout, f"{block.page}:{block.line}: {shown!r}: no {option} in its --help"
