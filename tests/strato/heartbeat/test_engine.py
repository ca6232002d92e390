"""A heartbeat run over scripted histories: each check fires on its case, not on a clean one."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from strato.guard import store as guard_store
from strato.heartbeat import engine
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support import console
from tests.support.flows import make_workspace, reply
from tests.support.heartbeat import DAY, T0, commit_at
from tests.support.repos import git
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo


def beat(root: Path, now: float, **kw: Any) -> dict[str, Any]:
    return engine.run(root, Settings(), now=now, **kw)


def checks(root: Path) -> list[str]:
    return sorted(r["check"] for r in store.all_records(store.sidecar(root)) if r["status"] == "open")


def test_clean_workspace_proposes_nothing(ws: Path) -> None:
    result = beat(ws, T0 + DAY)
    assert result["new"] == [] and checks(ws) == []
    assert result["commits"] == 1
    assert Path(result["report"]).parent == ws / "heartbeat-reports"
    assert git(ws, "status", "--porcelain") == ""


def test_stale_active_item_by_git_history(ws: Path) -> None:
    commit_at(ws, T0, "start", {"changes/two.md": "---\nstatus: active\n---\n# Two\n",
                                "changes/index.md": "---\nstatus: done\nrelated_changes: [one, two]\n---\n"})
    assert "stale" not in checks(ws) and beat(ws, T0 + 29 * DAY)["new"] == []
    result = beat(ws, T0 + 31 * DAY)
    assert checks(ws) == ["stale"]
    assert "changes/two.md" in store.get(store.sidecar(ws), result["new"][0])["subject"]


def test_orphan_node(ws: Path) -> None:
    commit_at(ws, T0, "orphan", {"changes/lost.md": "---\nstatus: done\n---\n# Lost\n"})
    beat(ws, T0)
    assert checks(ws) == ["orphan"]


def test_broken_ref_only_when_introduced_since_last_run(ws: Path) -> None:
    commit_at(ws, T0, "break", {"changes/one.md": "---\nstatus: done\nrelated_changes: [ghost]\n---\n"})
    first = beat(ws, T0)
    assert checks(ws) == ["broken-ref"] and len(first["new"]) == 1
    assert beat(ws, T0)["new"] == []  # already known: not proposed twice


def test_claim_branches_merged_or_idle(ws: Path) -> None:
    git(ws, "branch", "claim/merged")
    git(ws, "checkout", "-q", "-b", "claim/idle")
    commit_at(ws, T0 + DAY, "work on idle")
    git(ws, "checkout", "-q", "-")
    beat(ws, T0 + 2 * DAY)
    assert checks(ws) == ["claim-merged"]
    beat(ws, T0 + 20 * DAY)
    assert checks(ws) == ["claim-idle", "claim-merged"]


def test_state_md_behind_its_cadence(ws: Path) -> None:
    commit_at(ws, T0 + 3 * DAY, "work", {"a.txt": "a"})
    beat(ws, T0 + 3 * DAY)
    assert checks(ws) == []
    commit_at(ws, T0 + 8 * DAY, "more work", {"a.txt": "b"})
    beat(ws, T0 + 8 * DAY)
    assert checks(ws) == ["state-age"]


def test_strato_md_over_budget(ws: Path) -> None:
    commit_at(ws, T0, "grow", {"STRATO.md": "# STRATO\n\n" + "word " * 2000})
    beat(ws, T0)
    assert checks(ws) == ["strato-budget"]


def test_near_duplicate_paragraphs(ws: Path) -> None:
    para = ("The release checklist runs the whole test suite, builds the wheel, signs the tag "
            "with the maintainer key and uploads the artefacts only after the smoke test passed.")
    commit_at(ws, T0, "dup", {"docs/a.md": f"# A\n\n{para}\n", "docs/b.md": f"# B\n\n{para.replace('whole', 'full')}\n",
                              "docs/c.md": "# C\n\n" + "Completely different words about gardening and bees. " * 4})
    skill = f"# S\n\n{para}\n"  # the same skill in both skill folders is a mirror, not a twin
    commit_at(ws, T0, "skill", {".claude/skills/s/SKILL.md": skill, ".agents/skills/s/SKILL.md": skill})
    beat(ws, T0)
    records = [r for r in store.all_records(store.sidecar(ws)) if r["check"] == "duplicate"]
    assert sorted(r["subject"] for r in records) == [
        ".agents/skills/s/SKILL.md|docs/a.md", ".agents/skills/s/SKILL.md|docs/b.md",
        ".claude/skills/s/SKILL.md|docs/a.md", ".claude/skills/s/SKILL.md|docs/b.md", "docs/a.md|docs/b.md"]


def test_reads_only_commits_since_the_last_run(ws: Path) -> None:
    beat(ws, T0)
    commit_at(ws, T0 + 60, "one", {"x.txt": "1"})
    commit_at(ws, T0 + 120, "two", {"x.txt": "2"})
    assert beat(ws, T0 + 200)["commits"] == 2
    assert beat(ws, T0 + 200)["commits"] == 0
    assert beat(ws, T0 + 200, since="HEAD~2")["commits"] == 2


def test_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    result = beat(tmp_path, T0)
    assert result["commits"] == 0 and result["head"] is None and result["new"] == []


def test_budget_skips_checks_and_keeps_state(ws: Path) -> None:
    result = beat(ws, T0, budget_ms=1)
    assert result["skipped"]
    assert store.load_state(store.sidecar(ws)) == {}


def test_a_run_waiting_at_a_gate_too_long(tmp_path: Path) -> None:
    flow_ws = make_workspace(tmp_path)
    flow_ws.agents([{"match": "deliverable", "replies": [reply({"result": "draft", "quality_score": 0.9})]}])
    runs = flow_ws.runs()
    run_id = runs.plan(flow_ws.spec("readme_gate.stratum.yaml"), {"text": "a poem"}).snap.run_id
    assert runs.drive(run_id).state["scope"]["steps"]["review"]["status"] == "waiting_gate"
    root = flow_ws.root
    beat(root, time.time() + 23 * 3600)
    assert "gate-wait" not in checks(root)
    beat(root, time.time() + 25 * 3600)
    [record] = [r for r in store.all_records(store.sidecar(root)) if r["check"] == "gate-wait"]
    assert record["subject"] == run_id and "at review" in record["title"]
    runs.gate(run_id, "review", "approve", note="ok")
    store.save_state(store.sidecar(root), {})
    result = beat(root, time.time() + 50 * 3600)
    assert not [pid for pid in result["new"] if pid.startswith("gate-wait")]


def test_report_never_follows_a_symlink_out_of_the_repository(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "heartbeat-reports").symlink_to(outside)
    (ws / ".gitignore").write_text("heartbeat-reports\n")  # matches a symlink too
    result = beat(ws, T0)
    assert list(outside.iterdir()) == []
    assert Path(result["report"]).is_relative_to(store.sidecar(ws))


def guard(root: Path, verb: str, request: dict[str, object]) -> None:
    proc = console.run("strato", "guard", verb, cwd=root, input=json.dumps(request))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_guard_resource_stuck_in_a_state(ws: Path) -> None:
    graph = {"draft": ["review"], "review": ["done"]}
    guard(ws, "register", {"resource_id": "feat:1", "graph": graph, "initial": "draft", "terminal": ["done"]})
    guard(ws, "register", {"resource_id": "feat:2", "graph": graph, "initial": "draft", "terminal": ["done"]})
    for source, target in (("draft", "review"), ("review", "done")):
        guard(ws, "transition", {"resource_id": "feat:2", "from_state": source, "to_state": target})
    beat(ws, time.time() + 6 * DAY)
    assert "guard-stuck" not in checks(ws)
    beat(ws, time.time() + 8 * DAY)
    [record] = [r for r in store.all_records(store.sidecar(ws)) if r["check"] == "guard-stuck"]
    assert record["subject"] == "feat:1"  # feat:2 is done: a terminal state is never stuck


def test_a_guard_ledger_still_kept_as_one_note_is_read_too(ws: Path) -> None:
    """The older layout (the whole ledger as the anchor's note) reads as line blobs do."""
    graph = {"draft": ["review"], "review": ["done"]}
    guard(ws, "register", {"resource_id": "feat:old", "graph": graph, "initial": "draft", "terminal": ["done"]})
    repo = gitrepo.require(ws)
    [kept] = guard_store.ledgers(repo, gitrefs.read_ref(repo, guard_store.REF))
    (ws.parent / "ledger.txt").write_bytes(kept.data)
    anchor = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=ws, check=True, capture_output=True,
                            input=guard_store.anchor_content("feat:old")).stdout.decode().strip()
    git(ws, "update-ref", "-d", guard_store.REF)
    git(ws, "notes", "--ref=vivary/guard", "add", "-F", str(ws.parent / "ledger.txt"), anchor)
    [legacy] = guard_store.ledgers(repo, gitrefs.read_ref(repo, guard_store.REF))
    assert legacy.legacy and legacy.data == kept.data
    beat(ws, time.time() + 8 * DAY)
    [record] = [r for r in store.all_records(store.sidecar(ws)) if r["check"] == "guard-stuck"]
    assert record["subject"] == "feat:old"
