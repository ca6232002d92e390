"""docs/mcp.md's list of everything the Stratum seed names, held to what runs: each
`served` row against the real server's `tools/list` (through the SDK's stdio client) or
`strato`'s click command tree, each `not served` row against the same (its `strato`
spelling must not exist either), every `stratum_` tool the server lists has a row, and,
where the seed is beside the checkout, every name it mentions has one."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from strato.cli import main as strato
from tests.support.layout import ROOT
from tests.support.mcp import Session, run_server

DOC = ROOT / "docs" / "mcp.md"
SEED = ROOT.parent / "shared" / "seeds" / "stratum-readme.zh.txt"
HEADING = "## Everything the Stratum seed names"
# a stratum_ tool the issue names, not the seed (its shape is ours: "Usage reports")
NOT_THE_SEEDS = {"stratum_usage_report"}


def rows() -> dict[str, str]:
    text = DOC.read_text()
    section = text[text.index(HEADING) :].split("\n## ")[0]
    found = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")] if line.startswith("| `") else []
        if len(cells) == 2:
            found[cells[0].strip("`")] = cells[1]
    return found


def command(words: list[str]) -> click.Command | None:
    """The `strato` command at ``words`` (after `strato`), or None."""
    cmd: click.Command | None = strato
    for word in words:
        if not isinstance(cmd, click.Group):
            return None
        cmd = cmd.get_command(click.Context(cmd), word)
    return cmd


def options(cmd: click.Command | None) -> set[str]:
    """Every option of ``cmd`` and of every command under it."""
    if cmd is None:
        return set()
    found = {o for p in cmd.params for o in p.opts if o.startswith("-")}
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            found |= options(cmd.get_command(ctx, name))
    return found


def strato_spelling(name: str) -> list[str]:
    """`stratum a b` as `strato`'s words `[a, b]` (`stratum-mcp` is `strato mcp`)."""
    words = name.split()
    return (["mcp"] if words[0] == "stratum-mcp" else []) + words[1:]


def _served_as(status: str) -> str | None:
    found = re.fullmatch(r"served as `([^`]+)`", status)
    return found.group(1) if found else None


def check_row(name: str, status: str, tools: set[str]) -> None:
    served = status == "served" or _served_as(status) is not None
    assert served or status.startswith("not served: "), (name, status)
    if name.startswith("stratum_"):
        assert (_served_as(status) or name) in tools if served else name not in tools, (name, status)
        return
    assert name.startswith("stratum") or not served, (name, "only Stratum's own names can be served")
    if not name.startswith("stratum"):
        return
    verb, _, option = name.partition(" --")
    if served:
        target = _served_as(status)
        assert target is not None and target.startswith("strato "), (name, status)
        words, _, opt = target.removeprefix("strato ").partition(" --")
        assert command(words.split()) is not None, (name, target)
        assert not opt or f"--{opt}" in options(command(words.split())), (name, target)
        assert bool(opt) == bool(option), (name, "an option is served as an option")
    elif option:
        assert f"--{option}" not in options(command(strato_spelling(verb))), (name, "it exists: mark it served")
    else:
        assert command(strato_spelling(verb)) is None, (name, "it exists: mark it served")


def test_the_list_matches_the_servers_tools_and_stratos_commands(repo_dir: Path) -> None:
    listed = rows()
    assert len(listed) > 50
    tools: set[str] = set()

    async def scenario(s: Session) -> None:
        tools.update(t.name for t in (await s.raw.list_tools()).tools)

    run_server(repo_dir, scenario)
    for name, status in listed.items():
        check_row(name, status, tools)
    unlisted = {t for t in tools if t.startswith("stratum_")} - set(listed) - NOT_THE_SEEDS
    assert unlisted == set(), "a stratum_ tool served without its row"


def test_every_name_the_seed_mentions_has_a_row() -> None:
    if not SEED.exists():
        pytest.skip("the seed is not beside this checkout (CI has no /work/shared)")
    text = SEED.read_text()
    listed = " ".join(rows())
    tools = set(re.findall(r"\bstratum_[a-z_]+", text))
    verbs = {f"stratum {v}" for v in re.findall(r"\bstratum ([a-z][a-z-]+)", text)}
    opts = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text))
    assert {t for t in tools if t not in rows()} == set()
    assert {v for v in verbs if v not in listed} == set()
    assert {o for o in opts if o not in listed} == set()


@pytest.mark.parametrize(
    ("name", "status", "why"),
    [
        ("stratum_plan", "not served: gone", "it is served"),
        ("stratum_nope", "served", "not served"),
        ("stratum watch", "served as `strato flow nope`", "no such command"),
        ("stratum distill --write", "served as `strato distill extract --write`", "no such option"),
        ("stratum flow cancel", "not served: later", "it exists"),
        ("stratum distill --min-count", "not served: later", "it exists"),
        ("stratum watch", "maybe", "no status"),
    ],
)
def test_a_stale_row_is_caught(name: str, status: str, why: str) -> None:
    with pytest.raises(AssertionError):
        check_row(name, status, {"stratum_plan"})
