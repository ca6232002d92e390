"""Demo tour: one governed decision over the demo workspace. A capsule compiled from
the graph, `strato decide --governed` says act; after a receipt for the passing graph
check, it says stop."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tropo.check.workspace import open_workspace
from tropo.governed.capsule_graph import GRAPH_CHECK, compile_capsule, records_from_graph
from tropo.governed.receipt import build_receipt, js_timestamp


def _request(capsule: dict[str, Any], at: str, **extra: Any) -> dict[str, Any]:
    return {
        "schema": "vivary.strato-decision-request/v0",
        "policy_version": "vivary.strato-policy/v0",
        "actor": {"kind": "agent", "id": "agent:demo"},
        "authority_class": "contributor",
        "workspace": {"fingerprint": capsule["workspace"]["fingerprint"]},
        "scope": {"project": "demo", "paths": capsule["task"]["scope"]},
        "requested_at": at,
        "decision_at": at,
        "capsule": capsule,
        **extra,
    }


def tour(ws: Path, run: Callable[[list[str]], None]) -> None:
    workspace = open_workspace(ws)
    now = datetime.now(UTC)
    capsule = compile_capsule(
        records_from_graph(workspace.graph()),
        question="What should the hooks change do next?",
        root=str(workspace.root),
        observed_at=now,
        max_claims=64,
    )
    out = ws.parent / "decide"
    out.mkdir(exist_ok=True)
    at = js_timestamp(now)
    (out / "capsule.json").write_text(json.dumps(capsule, indent=1))
    (out / "request.json").write_text(json.dumps(_request(capsule, at)))
    run(["strato", "decide", "--governed", str(out / "request.json")])
    outcome = "passed" if not workspace.check().findings else "failed"
    receipt = build_receipt(
        capsule,
        runtime={"harness": "demo", "actor": "agent:demo"},
        checks=[{**GRAPH_CHECK, "outcome": outcome}],
        created_at=now,
    )
    run(
        [
            "strato",
            "receipt",
            str(out / "capsule.json"),
            "--check",
            f"tropo-check={outcome}",
            "--actor",
            "agent:demo",
            "--harness",
            "demo",
            "--created-at",
            at,
        ]
    )
    (out / "after.json").write_text(json.dumps(_request(capsule, at, receipt=receipt)))
    run(["strato", "decide", "--governed", "--json", str(out / "after.json")])
