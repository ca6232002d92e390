"""`strato flow ...` through its console script, in process: output shapes, exit codes, stderr."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support import console

FIXTURES = Path(__file__).parent / "fixtures"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return console.run("strato", "flow", *args, cwd=cwd)


def test_validate_valid() -> None:
    proc = run("validate", str(FIXTURES / "readme_gate.stratum.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"valid": True}
    human = run("validate", str(FIXTURES / "readme_gate.stratum.yaml"))
    assert human.returncode == 0 and human.stdout.strip().endswith(": valid")


def test_validate_invalid(tmp_path: Path) -> None:
    spec = tmp_path / "bad.stratum.yaml"
    text = (FIXTURES / "readme_gate.stratum.yaml").read_text().replace("    max_rounds: 3\n", "")
    spec.write_text(text)
    before = spec.read_bytes()
    proc = run("validate", str(spec), "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {
        "valid": False,
        "errors": [
            {
                "code": "GATE_REVISE_REQUIRES_MAX_ROUNDS",
                "path": "flows.reviewed_work.steps[1].gate.on_revise",
                "message": "a gate that can revise needs the flow's max_rounds",
            }
        ],
    }
    human = run("validate", str(spec))
    assert human.returncode == 1
    assert (
        "GATE_REVISE_REQUIRES_MAX_ROUNDS at flows.reviewed_work.steps[1].gate.on_revise"
        in human.stdout
    )
    assert spec.read_bytes() == before  # bad input changes nothing


def test_validate_unreadable(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nflows: [\n")
    for path in (broken, tmp_path / "missing.yaml"):
        proc = run("validate", str(path))
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
        assert "Traceback" not in proc.stderr
    assert run("validate").returncode == 2  # usage


def test_migrate_check() -> None:
    proc = run("migrate", "--check", str(FIXTURES / "legacy_v02.yaml"), "--json")
    assert proc.returncode == 1  # unsupported constructs are findings
    report = json.loads(proc.stdout)
    assert report["report_only"] is True and report["version"] == "0.2"
    assert {"id", "python", "v1", "note", "status", "paths"} == set(report["findings"][0])
    refused = run("migrate", str(FIXTURES / "legacy_v02.yaml"))
    assert refused.returncode == 2 and "--check" in refused.stderr


def test_compile_speckit(tmp_path: Path) -> None:
    proc = run("compile-speckit", str(FIXTURES / "speckit_tasks"), "--flow", "build")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "build.stratum.yaml"
    out.write_text(proc.stdout)
    assert run("validate", str(out)).returncode == 0
    as_json = json.loads(run("compile-speckit", str(FIXTURES / "speckit_tasks"), "--json").stdout)
    assert as_json["status"] == "ok" and as_json["flow_name"] == "tasks"
    assert [s["id"] for s in as_json["steps"]][:2] == ["t01_setup", "t02_auth"]
    missing = run("compile-speckit", str(tmp_path / "nope"), "--json")
    assert missing.returncode == 2
    assert json.loads(missing.stdout)["error_type"] == "directory_not_found"
    empty = run("compile-speckit", str(tmp_path))
    assert empty.returncode == 1 and "no_tasks" in empty.stderr


def test_help_has_examples() -> None:
    for cmd in ("validate", "migrate", "compile-speckit"):
        proc = run(cmd, "--help")
        assert proc.returncode == 0 and "Example:" in proc.stdout
