"""``create-vivary doctor --trend``: the first run, the change since, and a state file
that is corrupt, malformed or in the way, which never costs the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli, run_json

STATE = ".vivary/runtime/doctor-state.json"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert run_cli("create-vivary", "init", str(root), "--minimal").returncode == 0
    return root


def test_only_trend_writes_and_the_second_run_compares(ws: Path) -> None:
    assert run_cli("create-vivary", "doctor", str(ws)).returncode == 0
    assert not (ws / STATE).exists()
    first = run_cli("create-vivary", "doctor", str(ws), "--trend")
    assert first.returncode == 0
    assert first.stdout.splitlines()[-1] == "trend: first recorded run (no prior Doctor runtime snapshot)"
    (ws / "modules/one").mkdir(parents=True)
    (ws / "modules/one/index.md").write_text(
        "---\nproject: ws\nstatus: active\nmodule_area: core\n---\n# One\n")
    second = run_cli("create-vivary", "doctor", str(ws), "--trend").stdout.splitlines()
    at = second.index(next(line for line in second if line.startswith("trend vs ")))
    assert second[at + 1:] == ["  graph_nodes: +1", "  module_index_count: +1", "  total_files: +1"]
    code, third = run_json("create-vivary", "doctor", str(ws), "--trend")
    assert code == 0 and set(third["trend"]["deltas"].values()) == {0}


@pytest.mark.parametrize(("state", "warning"), [
    ("{not json", "unreadable"),
    ('{"schema_version": 9, "metrics": {}}', "malformed"),
    ('{"schema_version": 1, "metrics": {"date": "x", "graph_nodes": "3"}}', "malformed"),
])
def test_a_bad_state_file_is_a_first_run_with_a_warning(ws: Path, state: str, warning: str) -> None:
    (ws / STATE).parent.mkdir(parents=True)
    (ws / STATE).write_text(state)
    code, out = run_json("create-vivary", "doctor", str(ws), "--trend")
    assert code == 0 and out["trend"]["prior"] is None and warning in out["trend_warning"]
    assert json.loads((ws / STATE).read_text())["schema_version"] == 1  # replaced by this run


def test_a_state_path_that_is_a_symlink_is_an_error_not_a_write_elsewhere(
    ws: Path, tmp_path: Path
) -> None:
    (ws / ".vivary/runtime").mkdir()
    outside = tmp_path / "outside.json"
    (ws / STATE).symlink_to(outside)
    code, out = run_json("create-vivary", "doctor", str(ws), "--trend")
    assert code == 1 and out["trend"] is None
    assert any(e.startswith("doctor --trend:") for e in out["errors"])
    assert not outside.exists()


def test_a_repair_dry_run_skips_the_trend(ws: Path) -> None:
    code, out = run_json("create-vivary", "doctor", str(ws), "--repair", "--trend")
    assert code == 0 and out["trend"] is None and not (ws / STATE).exists()
    assert "doctor --trend skipped during repair dry-run; add --yes to write trend state" in out["warnings"]
