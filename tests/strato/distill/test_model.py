"""The optional `[agents.distill]` model step, with a real subprocess as the agent: an
honest one, and hostile ones (huge output, wrong JSON, no JSON, a timeout)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strato.distill import model, service
from strato.heartbeat import apply, engine
from strato.proposals import settings, store
from tests.support.approvals import approve_agents
from tests.support.heartbeat import T0, commit_at
from tests.support.repos import git
from tests.support.transcripts import FLOW, OTHER, claude_session, sources

AGENT = Path(__file__).parent / "agent_scripts" / "distill_agent.py"


def use_agent(root: Path, mode: str, timeout_s: int = 60) -> Path:
    log = root.parent / "agent.log"
    argv = json.dumps([sys.executable, str(AGENT), mode, str(log), "{prompt}"])
    (root / ".vivary").mkdir(exist_ok=True)
    (root / ".vivary" / "agents.toml").write_text(f"[agents.distill]\nargv = {argv}\ntimeout_s = {timeout_s}\n")
    approve_agents(root)
    return log


def calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def beat(root: Path, tmp_path: Path | None = None) -> dict[str, Any]:
    return engine.run(root, settings.load(root), now=T0, sources=sources(tmp_path) if tmp_path else None)


def revert(ws: Path) -> None:
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")


def memory(root: Path) -> dict[str, Any]:
    [record] = [r for r in store.all_records(store.sidecar(root)) if r["check"] == "memory"]
    return record


def test_without_an_agent_the_draft_stands(ws: Path) -> None:
    revert(ws)
    result = beat(ws)
    assert result["distill"]["agent"] is None and result["distill"]["rewritten"] == []
    assert "rewrite" not in memory(ws)


def test_a_lesson_is_rewritten_redacted_on_one_line_and_still_a_proposal(ws: Path) -> None:
    revert(ws)
    log = use_agent(ws, "lesson")
    result = beat(ws)
    record = memory(ws)
    assert result["distill"]["rewritten"] == [record["id"]] and result["distill"]["tokens"] > 0
    title = store.title(record)
    assert title.startswith("Caching the index broke reads; key [REDACTED]") and "\n" not in title
    assert "sk-abc" not in json.dumps(record)
    assert record["title"].startswith("Reverted: cache the index") and record["status"] == "open"
    assert record["revisions"] == [record["revision"]]
    with pytest.raises(apply.Refused):  # a memory line is still private: nothing to commit
        apply.apply(ws, record["id"])
    assert beat(ws)["new"] == [] and calls(log) == 1  # one revision, one rewrite
    report = Path(result["report"]).read_text()
    assert "Caching the index broke reads" in report


def test_a_skill_body_is_rewritten_inside_the_drafts_frontmatter_and_evidence(ws: Path, tmp_path: Path) -> None:
    for n, flow in enumerate((FLOW + OTHER + FLOW, FLOW)):
        claude_session(tmp_path / "claude", f"s{n}", ws, flow, day="2026-09-20")
    use_agent(ws, "skill")
    beat(ws, tmp_path)
    [record] = [r for r in store.all_records(store.sidecar(ws)) if r["kind"] == "skill"]
    files = store.files(record)
    assert sorted(files) == sorted(record["files"])
    for path, text in files.items():
        draft = record["files"][path]
        assert text.startswith(draft[: draft.index("\n---\n", 4) + 5])
        assert text.endswith(draft[draft.rindex("\n## Evidence\n"):])
        assert "# Commit safely" in text and "ghp_" not in text and "[REDACTED]" in text
    done = apply.apply(ws, record["id"])
    for path, text in files.items():
        assert git(ws, "show", f"{done['branch']}:{path}") == text
    assert git(ws, "diff", "--name-only", f"{done['branch']}~1", done["branch"]).split() == sorted(files)


@pytest.mark.parametrize(("mode", "why"), [("huge", "printed no JSON object"),
                                           ("wrong", 'no "text" string'),
                                           ("nojson", "printed no JSON object"),
                                           ("sleep", "timed out after 1s")])
def test_a_hostile_agent_changes_nothing_but_its_own_failure(ws: Path, mode: str, why: str) -> None:
    revert(ws)
    use_agent(ws, mode, timeout_s=1 if mode == "sleep" else 60)  # only the sleeper is meant to time out
    result = beat(ws)
    record = memory(ws)
    assert why in result["distill"]["failed"][record["id"]]
    assert "rewrite" not in record and store.title(record).startswith("Reverted: cache the index")
    assert store.load_state(store.sidecar(ws))["head"] == result["head"]  # the run completed


def test_the_token_budget_stops_the_calls(ws: Path) -> None:
    revert(ws)
    log = use_agent(ws, "lesson")
    git(ws, "config", "vivary.heartbeat.distillTokens", "10")
    result = beat(ws)
    assert result["distill"]["over_budget"] == [memory(ws)["id"]] and calls(log) == 0


def test_a_malformed_agents_file_is_named_and_the_run_goes_on(ws: Path) -> None:
    revert(ws)
    (ws / ".vivary").mkdir()
    (ws / ".vivary" / "agents.toml").write_text('[agents.distill]\nargv = ["no-prompt-element"]\n')
    result = beat(ws)
    assert "{prompt}" in result["distill"]["error"] and memory(ws)["status"] == "open"


def test_extract_sends_new_candidates_through_the_agent_once(ws: Path, tmp_path: Path) -> None:
    for n, flow in enumerate((FLOW + OTHER + FLOW, FLOW)):
        claude_session(tmp_path / "claude", f"s{n}", ws, flow)
    log = use_agent(ws, "skill")
    [candidate] = service.extract(ws, sources(tmp_path), 3, None)
    assert candidate["rewritten"] is True and calls(log) == 1
    record = store.get(store.sidecar(ws), str(candidate["id"]))
    assert all("# Commit safely" in text for text in store.files(record).values())
    [again] = service.extract(ws, sources(tmp_path), 3, None)
    assert again["outcome"] == "known" and again["rewritten"] is False and calls(log) == 1


def test_a_rewrite_holds_no_escape_sequence_and_no_key() -> None:
    """The model read the transcript: its answer is author-chosen text too."""
    answer = {"text": "Run it\x1b]52;c;cm0gLXJm\x07 with ghp_" + "Zq3x" * 9 + "\n# Heading"}
    title = model.rewrite({"kind": "memory", "title": "t"}, answer)
    assert title == {"title": "Run itU+001B]52;c;cm0gLXJmU+0007 with [REDACTED] # Heading"}
    draft = "---\nname: x\n---\n\n# x\n\nbody\n\n## Evidence\n\n- s1\n"
    body = model.rewrite({"kind": "skill", "files": {"SKILL.md": draft}}, answer)
    assert isinstance(body, dict) and "\x1b" not in body["files"]["SKILL.md"]
    assert "U+001B]52" in body["files"]["SKILL.md"] and "ghp_" not in body["files"]["SKILL.md"]


def test_an_agents_file_changed_since_its_approval_runs_nothing_and_says_so(ws: Path) -> None:
    revert(ws)
    log = use_agent(ws, "lesson")
    toml = ws / ".vivary" / "agents.toml"
    toml.write_text(toml.read_text() + "min_interval_s = 0\n")  # edited after the user approved it
    result = beat(ws)
    assert calls(log) == 0 and "rewrite" not in memory(ws)
    assert result["distill"]["skipped"].startswith(".vivary/agents.toml is changed since you approved it")
    report = Path(result["report"]).read_text()
    assert f"Model step skipped: {result['distill']['skipped']}" in report.splitlines()
