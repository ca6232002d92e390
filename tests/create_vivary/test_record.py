"""``create-vivary record``: one typed record, bound to a Task Capsule of the workspace as
it is, written only by the hash of the plan a person saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli, run_json
from tests.support.trees import tree

RECORD = "---\nproject: ws\nstatus: done\nslice: first\n---\n# First slice\n\nDid it.\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert run_cli("create-vivary", "init", str(root), "--minimal").returncode == 0
    (tmp_path / "slice.md").write_text(RECORD)
    _capsule(root)
    return root


def _capsule(root: Path) -> Path:
    proc = run_cli("tropo", "find", "--governed", "what was done", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    path = root.parent / "capsule.json"
    path.write_text(proc.stdout)
    return path


def _record(root: Path, *args: str, rel: str = "changes/first-slice.md") -> tuple[int, dict[str, object]]:
    return run_json("create-vivary", "record", str(root), rel, "--from", str(root.parent / "slice.md"),
                    "--capsule", str(root.parent / "capsule.json"), *args)


def test_the_plan_then_the_approved_write(ws: Path) -> None:
    code, plan = _record(ws)
    assert code == 0 and plan["applied"] is False and plan["action"] == "create"
    assert plan["path"] == ".vivary/records/changes/first-slice.md"
    assert not (ws / ".vivary/records").exists()
    code, done = _record(ws, "--yes", "--plan", str(plan["plan_hash"]))
    assert code == 0 and done["applied"] is True
    assert (ws / str(plan["path"])).read_text() == RECORD
    check = run_cli("tropo", "check", "--root", str(ws))
    assert check.returncode == 0 and "4 document(s)" in check.stdout


def test_the_capsule_goes_stale_with_the_workspace(ws: Path) -> None:
    code, plan = _record(ws)
    assert code == 0
    (ws / "STATE.md").write_text("# State\n\nFocus: elsewhere\n")
    (ws / "modules" / "one").mkdir(parents=True)
    (ws / "modules/one/index.md").write_text(
        "---\nproject: ws\nstatus: active\nmodule_area: core\n---\n# One\n")
    before = tree(ws.parent)
    code, out = _record(ws, "--yes", "--plan", str(plan["plan_hash"]))
    assert code == 1 and "stale" in str(out["error"])
    assert tree(ws.parent) == before


@pytest.mark.parametrize(("rel", "text", "why"), [
    ("notes/x.md", RECORD, "record path must be"),
    ("changes/../x.md", RECORD, "record path must be"),
    ("changes/Upper.md", RECORD, "record path must be"),
    ("changes/x.md", "---\nproject: ws\n---\n# Missing fields\n", "not a valid typed record"),
    ("decisions/x.md", RECORD, "not a valid typed record"),
    ("changes/x.md", "   \n", "nonempty"),
])
def test_a_bad_record_is_refused_in_one_line(ws: Path, rel: str, text: str, why: str) -> None:
    (ws.parent / "slice.md").write_text(text)
    before = tree(ws.parent)
    proc = run_cli("create-vivary", "record", str(ws), rel, "--from", str(ws.parent / "slice.md"),
                   "--capsule", str(ws.parent / "capsule.json"))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and why in proc.stderr, proc.stderr
    assert tree(ws.parent) == before


def test_a_tampered_or_foreign_capsule_is_refused(ws: Path, tmp_path: Path) -> None:
    capsule = json.loads((tmp_path / "capsule.json").read_text())
    capsule["task"]["question"] = "something else"
    (tmp_path / "capsule.json").write_text(json.dumps(capsule))
    code, out = _record(ws)
    assert code == 1 and "integrity" in str(out["error"])
    (tmp_path / "capsule.json").write_text('{"schema": "vivary.task-capsule/v0", "schema": "x"}')
    code, out = _record(ws)
    assert code == 1 and "duplicate key" in str(out["error"])
    other = tmp_path / "other"
    assert run_cli("create-vivary", "init", str(other), "--minimal").returncode == 0
    (tmp_path / "capsule.json").write_text(
        run_cli("tropo", "find", "--governed", "what was done", "--root", str(other)).stdout)
    code, out = _record(ws)
    assert code == 1 and "another workspace" in str(out["error"])


def test_apply_needs_the_exact_plan_hash(ws: Path) -> None:
    before = tree(ws.parent)
    code, out = _record(ws, "--yes")
    assert code == 1 and "requires --plan" in str(out["error"])
    code, out = _record(ws, "--yes", "--plan", "sha256:" + "0" * 64)
    assert code == 1 and "plan hash mismatch" in str(out["error"])
    assert tree(ws.parent) == before


def test_only_a_thin_workspace_takes_records(tmp_path: Path) -> None:
    full = tmp_path / "full"
    assert run_cli("create-vivary", "init", str(full), "--yes").returncode == 0
    (tmp_path / "slice.md").write_text(RECORD)
    (tmp_path / "capsule.json").write_text("{}")
    proc = run_cli("create-vivary", "record", str(full), "changes/x.md", "--from",
                   str(tmp_path / "slice.md"), "--capsule", str(tmp_path / "capsule.json"))
    assert proc.returncode == 1 and "thin Vivary workspace" in proc.stderr
