"""``exo control --governed`` answers exactly as vivary-exo 0.3.1 does: the same
``--json`` bytes, text and exit codes for generated valid, mutated and malformed
requests of every operation (the oracle runs side by side; skipped loudly without it).

The oracle's CLI is driven in one process per operation batch (its own argument
parser, reader and printer); ours through its click command. A handful of real
subprocess runs pin the file/stdin/usage edges of both binaries.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from exo.cli import main
from tests.support.control_requests import OPERATIONS, collisions, documents

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-core): -m "not slow" leaves it out

EXO = str(Path(sys.executable).parent / "exo")
PER_OPERATION = 60
MODES = (["--json", "--strict"], [])
def _outcome(answer: dict[str, Any]) -> str:
    """One word for an answer: its first reason code, else what it did."""
    result = answer.get("result", {"reason_codes": ["refusal"]})
    if result["reason_codes"]:
        return str(result["reason_codes"][0])
    if "added" in result:
        return "added" if result["added"] else "replayed"
    return str(result.get("decision", "answered"))


#: What the evidence generator must reach, per operation (reason codes, or the
#: answer when nothing is refused).
EVIDENCE = {
    "handoff": {"bound", "unknown_capsule_shape", "unknown_receipt_shape",
                "receipt_capsule_mismatch", "receipt_created_after_handoff",
                "receipt_predates_claim", "receipt_actor_mismatch", "workspace_revision_mismatch",
                "not_claim_holder", "lease_expired"},
    "record_execution": {"added", "replayed", "unknown_capsule_shape", "unknown_receipt_shape",
                         "execution_edge_identity_conflict"},
}

# Runs under the oracle's interpreter: every document through its `exo control`.
_DRIVER = r"""
import base64, contextlib, io, json, sys, tempfile, exo
out = []
for line in sys.stdin:
    data = base64.b64decode(line)
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        handle.write(data); handle.flush()
        row = []
        for mode in json.loads(sys.argv[1]):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                try:
                    rc = exo._main(["control", "--governed", *mode, handle.name])
                except SystemExit as exc:
                    rc = exc.code
            row.append([rc, buffer.getvalue()])
        out.append(row)
print(json.dumps(out))
"""


def _theirs(oracle: Path, docs: list[bytes]) -> list[list[list[object]]]:
    python = oracle.parent / "python"
    proc = subprocess.run(
        [str(python), "-I", "-c", _DRIVER, json.dumps(MODES)], check=True, capture_output=True,
        input="\n".join(base64.b64encode(d).decode() for d in docs) + "\n", text=True)
    result: list[list[list[object]]] = json.loads(proc.stdout)
    return result


def _ours(tmp_path: Path, docs: list[bytes]) -> list[list[list[object]]]:
    runner = CliRunner()
    rows = []
    for n, data in enumerate(docs):
        path = tmp_path / f"request-{n}.json"
        path.write_bytes(data)
        row: list[list[object]] = []
        for mode in MODES:
            got = runner.invoke(main, ["control", "--governed", *mode, str(path)])
            row.append([got.exit_code, got.stdout])
        rows.append(row)
    return rows


@pytest.mark.parametrize("operation", OPERATIONS)
def test_same_documents_and_exit_codes(operation: str, tmp_path: Path,
                                       upstream: Callable[[str], Path]) -> None:
    docs = documents(operation, seed=18, count=PER_OPERATION)
    theirs = _theirs(upstream("exo"), docs)
    ours = _ours(tmp_path, docs)
    kinds = set()
    for data, mine, oracle in zip(docs, ours, theirs, strict=True):
        answer = json.loads(str(oracle[0][1]))
        result = answer.get("result", {})
        kinds.add(answer["schema"] + str(result.get("decision")) + str(bool(result.get("added"))))
        assert mine == oracle, data[:300]
    # The generator reaches both refusals and dispatched answers for every operation.
    assert len(kinds) >= 2, kinds


@pytest.mark.parametrize("operation", ["handoff", "record_execution"])
def test_evidence_paths_all_reached(operation: str, tmp_path: Path,
                                    upstream: Callable[[str], Path]) -> None:
    """Real capsules and receipts, bent one way at a time: every evidence refusal the
    suite makes is reached, and so are bound handoffs and recorded edges, with the
    suite's answer each time."""
    docs = documents(operation, seed=7, count=240)[::3] + documents(operation, seed=8, count=240)[::3]
    theirs = _theirs(upstream("exo"), docs)
    assert _ours(tmp_path, docs) == theirs
    seen = {_outcome(json.loads(str(row[0][1]))) for row in theirs}
    wanted = EVIDENCE[operation]
    assert wanted <= seen, wanted - seen


#: What reusing an identity must reach (see ``control_requests._collide``).
COLLISIONS = {"claim": {"unknown_claim_shape"}, "dependencies": {"unknown_task"},
              "task_view": {"unknown_execution_log_shape", "execution_edge_identity_conflict"},
              "record_execution": {"added", "unknown_execution_log_shape",
                                   "execution_edge_identity_conflict"}}


@pytest.mark.parametrize("operation", OPERATIONS)
def test_reused_identities_answer_as_the_suite(operation: str, tmp_path: Path,
                                               upstream: Callable[[str], Path]) -> None:
    """A claim or task repeated, an edge id recorded with another body, an edge of
    another receipt under the same receipt id: the suite's refusal (or append), each."""
    docs = collisions(operation, seed=9, count=PER_OPERATION)
    theirs = _theirs(upstream("exo"), docs)
    assert _ours(tmp_path, docs) == theirs
    seen = {_outcome(json.loads(str(row[0][1]))) for row in theirs}
    wanted = COLLISIONS.get(operation, set())
    assert wanted <= seen, wanted - seen


def _run(exe: str, args: list[str], stdin: bytes = b"") -> tuple[int, bytes]:
    proc = subprocess.run([exe, *args], input=stdin, capture_output=True, check=False)
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("args", [
    ["control", "--governed", "--json", "-"],
    ["control", "--governed", "--strict", "-"],
    ["control", "--governed", "--json", "/nonexistent/request.json"],
    ["control", "--governed", "--json", "--strict", "/"],
])
def test_stdin_and_unreadable_paths_as_the_suite(args: list[str],
                                                 upstream: Callable[[str], Path]) -> None:
    request = documents("expire_leases", seed=1, count=1)[0]
    assert _run(EXO, args, request) == _run(str(upstream("exo")), args, request)


def test_governed_flag_is_required(upstream: Callable[[str], Path]) -> None:
    ours = _run(EXO, ["control", "-"])
    assert ours[0] == _run(str(upstream("exo")), ["control", "-"])[0] == 2
