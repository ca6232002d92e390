"""`stratum_distill` and the heartbeat's read-only tools through the MCP SDK's stdio
client against a real `strato mcp`, over transcript fixtures in the documented shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.distill import transcripts
from strato.mcp.dispatch import call
from strato.mcp.registry import Context, ToolError
from strato.proposals import store
from tests.support import console
from tests.support.mcp import Session, run_server
from tests.support.transcripts import claude_session, codex_session

FLOW = [("Bash", "git status"), ("Bash", "pytest -q tests"), ("Bash", "git commit -m 'wip'")]
STEPS = ["bash:git status", "bash:pytest", "bash:git commit"]
SKILL = "git-status-then-pytest-then-git-commit"


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Claude Code's and Codex's folders, private to the test (the server inherits them)."""
    claude, codex = tmp_path / "claude-home", tmp_path / "codex-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return claude, codex


def project(claude: Path, root: Path) -> Path:
    return transcripts.claude_project_dir(claude, root)


def proposals(root: Path) -> list[dict[str, object]]:
    return store.all_records(store.sidecar(root))


def test_three_modes_stage_only_with_write(workspace: Path, homes: tuple[Path, Path]) -> None:
    claude, codex = homes
    claude_session(project(claude, workspace), "s1", workspace, [*FLOW, ("Read", None), *FLOW])
    claude_session(project(claude, workspace), "s2", workspace, FLOW)
    codex_session(codex / "sessions", "c1", workspace, ["ls"])
    seen: dict[str, object] = {}

    async def scenario(s: Session) -> None:
        where = {"workspace_root": str(workspace)}
        stats = await s.ok("stratum_distill", {**where, "mode": "stats"})
        assert stats["mode"] == "stats" and stats["applied"] is False
        assert (stats["files"], stats["calls"], stats["candidates"]) == (3, 11, 1)

        top = await s.ok("stratum_distill", {**where, "mode": "top", "n": 1})
        assert top["applied"] is False
        assert top["workflows"] == [{"steps": STEPS, "count": 3, "sessions": 2}]

        dry = await s.ok("stratum_distill", {**where, "min_count": 3})
        assert dry["mode"] == "extract" and dry["written"] is False and dry["applied"] is False
        [candidate] = dry["candidates"]
        assert candidate["outcome"] == "new"
        assert candidate["files"] == [f".agents/skills/{SKILL}/SKILL.md", f".claude/skills/{SKILL}/SKILL.md"]
        assert (await s.ok("strato_heartbeat_status"))["proposals"] == []  # stats, top, dry run: nothing

        staged = await s.ok("stratum_distill", {**where, "write": True})
        assert staged["written"] is True and staged["candidates"][0]["outcome"] == "new"
        assert {k: v for k, v in staged["candidates"][0].items() if k not in ("outcome", "rewritten")} == \
            {k: v for k, v in candidate.items() if k != "outcome"}
        again = await s.ok("stratum_distill", {**where, "write": True})
        assert again["candidates"][0]["outcome"] == "known"  # same inputs, same revision

        [row] = (await s.ok("strato_heartbeat_status"))["proposals"]
        assert row == {"id": candidate["id"], "revision": candidate["revision"], "kind": "skill",
                       "status": "open", "title": candidate["title"]}
        shown = await s.ok("strato_heartbeat_show", {"id": candidate["id"]})
        assert len(shown["evidence"]) == 3
        assert shown["files"][f".claude/skills/{SKILL}/SKILL.md"].startswith(f"---\nname: {SKILL}\n")
        seen.update(candidate)

    run_server(workspace, scenario)
    [record] = proposals(workspace)
    assert record["id"] == seen["id"] and record["status"] == "open"  # staged, never applied
    cli = console.run("strato", "distill", "extract", "--root", workspace, "--json")
    assert cli.returncode == 0, cli.stderr
    [same] = json.loads(cli.stdout)["candidates"]  # one miner behind both surfaces
    assert (same["id"], same["revision"], same["outcome"]) == (seen["id"], seen["revision"], "known")


def test_twice_proposes_nothing_and_project_dir_reads_only_that_folder(
        workspace: Path, homes: tuple[Path, Path]) -> None:
    claude, codex = homes
    claude_session(project(claude, workspace), "s1", workspace, FLOW)
    claude_session(project(claude, workspace), "s2", workspace, FLOW)
    codex_session(codex / "sessions", "c1", workspace, ["git status", "pytest -q", "git commit -m x"])

    async def scenario(s: Session) -> None:
        where = {"workspace_root": "."}
        only = {**where, "project_dir": str(project(claude, workspace))}
        assert (await s.ok("stratum_distill", {**only, "write": True}))["candidates"] == []
        assert (await s.ok("stratum_distill", {**only, "mode": "stats"}))["files"] == 2
        [both] = (await s.ok("stratum_distill", {**where, "write": True}))["candidates"]  # Codex's third
        assert both["outcome"] == "new"

    run_server(workspace, scenario)
    assert len(proposals(workspace)) == 1


def test_bad_requests_are_refused_in_one_line_and_change_nothing(
        workspace: Path, homes: tuple[Path, Path], tmp_path: Path) -> None:
    claude, _ = homes
    elsewhere = tmp_path / "elsewhere"
    for folder in (project(claude, workspace), elsewhere):
        for n in range(2):
            claude_session(folder, f"s{n}", workspace, [*FLOW, ("Read", None), *FLOW])
    (claude / "projects" / "link").symlink_to(elsewhere)

    async def scenario(s: Session) -> None:
        where = {"workspace_root": str(workspace), "write": True}
        cases = {
            "unknown key": ({**where, "all": True}, "all: Extra inputs are not permitted"),
            "wrong type": ({**where, "min_count": "3"}, "min_count: Input should be a valid integer"),
            "bool as int": ({**where, "window_days": True}, "window_days: Input should be a valid integer"),
            "below two": ({**where, "min_count": 1}, "min_count: Input should be greater than or equal to 2"),
            "bad mode": ({**where, "mode": "apply"}, "mode: Input should be 'extract', 'top' or 'stats'"),
            "write in stats": ({**where, "mode": "stats"}, "write: only mode extract stages (not stats)"),
            "n in extract": ({**where, "n": 3}, "n: only mode top takes it (not extract)"),
            "no root": ({"write": True}, "workspace_root: Field required"),
            "root outside": ({**where, "workspace_root": str(tmp_path)}, "invalid_workspace_root: "),
            "root escapes": ({**where, "workspace_root": "../elsewhere"}, "invalid_workspace_root: "),
            "project outside": ({**where, "project_dir": str(elsewhere)}, "invalid_project_dir: "),
            "symlink out": ({**where, "project_dir": str(claude / "projects" / "link")}, "invalid_project_dir: "),
            "dot-dot out": ({**where, "project_dir": str(claude / "projects" / ".." / "..")},
                            "invalid_project_dir: "),
            "missing": ({**where, "project_dir": str(claude / "projects" / "nope")},
                        "invalid_project_dir: no such transcript folder"),
        }
        for name, (arguments, expected) in cases.items():
            text, _ = await s.error("stratum_distill", arguments)
            assert expected in text, (name, text)
        for pid in ("skill-0123456789ab", "../../../config", 7):
            text, _ = await s.error("strato_heartbeat_show", {"id": pid})
            assert "no heartbeat proposal" in text or "id: Input should be a valid string" in text, text
        text, _ = await s.error("strato_heartbeat_status", {"root": "/"})
        assert "Extra inputs are not permitted" in text

    run_server(workspace, scenario)
    assert proposals(workspace) == []


def test_deciding_is_not_a_tool(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        tools = {t.name: t for t in (await s.raw.list_tools()).tools}
        assert {"stratum_distill", "strato_heartbeat_status", "strato_heartbeat_show"} <= set(tools)
        assert not [name for name in tools if "heartbeat" in name and name.endswith(("apply", "reject"))]
        schema = tools["stratum_distill"].input_schema
        assert schema["required"] == ["workspace_root"] and schema["additionalProperties"] is False
        assert schema["properties"]["write"]["default"] is False

    run_server(workspace, scenario)


def test_a_secret_in_a_transcript_never_reaches_an_answer(workspace: Path, homes: tuple[Path, Path]) -> None:
    claude, _ = homes
    secret = "ghp_" + "a1B2c3D4e5" * 4
    leaky = [*FLOW[:2], ("Bash", f"git commit -m 'wip' && curl -H 'Authorization: token {secret}' x")]
    for n, calls in enumerate(([*leaky, ("Read", None), *leaky], leaky)):
        claude_session(project(claude, workspace), f"s{n}", workspace, calls)

    async def scenario(s: Session) -> None:
        [candidate] = (await s.ok("stratum_distill", {"workspace_root": ".", "write": True}))["candidates"]
        shown = await s.ok("strato_heartbeat_show", {"id": candidate["id"]})
        text = json.dumps(shown)
        assert "curl" in text and secret not in text and secret[:12] not in text

    run_server(workspace, scenario)
    assert secret not in json.dumps(proposals(workspace))


SEGMENTS = st.sampled_from(["..", ".", "a", "link", "projects", "ws", "elsewhere", "~", "/"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENTS, min_size=1, max_size=6), st.booleans())
def test_project_dir_never_reads_outside_the_projects_folder(
        workspace: Path, homes: tuple[Path, Path], tmp_path: Path, parts: list[str], absolute: bool) -> None:
    """An adversary chooses the whole path; whatever is read is under the projects
    folder, which holds no transcript here, while every folder outside it holds one."""
    claude, _ = homes
    projects = claude / "projects"
    (projects / "a").mkdir(parents=True, exist_ok=True)
    if not (projects / "link").is_symlink():
        (projects / "link").symlink_to(tmp_path)
        for folder in (tmp_path, tmp_path / "elsewhere", claude):
            claude_session(folder, "s", workspace, FLOW)
    path = str(projects.joinpath(*parts)) if absolute else "/".join(parts)
    ctx = Context(workspace)
    try:
        doc = call(ctx, "stratum_distill", {"workspace_root": ".", "mode": "stats", "project_dir": path})
    except ToolError as exc:
        assert str(exc).startswith("invalid_project_dir: ") and "\n" not in str(exc)
    else:
        assert doc["files"] == 0 and doc["calls"] == 0, path
