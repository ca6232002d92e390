"""``create-vivary doctor --trend``: this run's numbers against the previous run's.

The snapshot and its file are create-vivary 0.4.3's (``doctor-state.json``, schema 1,
the same seven counts), so either tool's ``--trend`` picks up where the other left off.
``--trend`` is the only doctor option that writes; a missing, unreadable or malformed
state file is a first run plus a warning, never a failure.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from tropo.fs.rooted import write_within

METRICS = ("graph_nodes", "graph_edges", "graph_broken", "error_count", "warning_count",
           "module_index_count", "total_files")
SCHEMA_VERSION = 1


def state_path(root: Path) -> str:
    """Thin workspaces keep runtime files under ``.vivary/runtime/``; others in ``.vivary/``."""
    thin = (root / ".vivary" / "workspace.toml").is_file()
    return ".vivary/runtime/doctor-state.json" if thin else ".vivary/doctor-state.json"


def snapshot(root: Path, graph: dict[str, int] | None, errors: int, warnings: int,
             today: dt.date | None = None) -> dict[str, Any]:
    modules = root / "modules"
    g = graph or {"nodes": 0, "edges": 0, "broken": 0}
    return {
        "date": (today or dt.datetime.now(dt.UTC).date()).isoformat(),
        "graph_nodes": g["nodes"],
        "graph_edges": g["edges"],
        "graph_broken": g["broken"],
        "error_count": errors,
        "warning_count": warnings,
        "module_index_count": sum(1 for _ in modules.glob("*/index.md")) if modules.is_dir() else 0,
        "total_files": sum(1 for p in modules.rglob("*") if p.is_file()) if modules.is_dir() else 0,
    }


def _prior(root: Path) -> tuple[dict[str, Any] | None, str | None]:
    path = root / state_path(root)
    if not path.exists():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"doctor-state.json unreadable ({exc}); treating as first recorded run"
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION
            or not isinstance(metrics, dict)
            or not all(isinstance(metrics.get(k), int) for k in METRICS)
            or not isinstance(metrics.get("date"), str)):
        return None, "doctor-state.json malformed; treating as first recorded run"
    return metrics, None


def record(root: Path, current: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Compare with the stored snapshot, then store this one."""
    prior, warning = _prior(root)
    deltas = None if prior is None else {k: current[k] - prior[k] for k in METRICS}
    state = json.dumps({"schema_version": SCHEMA_VERSION, "metrics": current}, indent=2) + "\n"
    write_within(root, state_path(root), state.encode("utf-8"))
    return {"prior": prior, "current": current, "deltas": deltas}, warning


def lines(trend: dict[str, Any], warning: str | None) -> list[str]:
    out = [f"warning: {warning}"] if warning else []
    if trend["prior"] is None:
        return [*out, "trend: first recorded run (no prior Doctor runtime snapshot)"]
    changed = [(k, v) for k, v in trend["deltas"].items() if v]
    out.append(f"trend vs {trend['prior']['date']}:")
    out += [f"  {k}: {'+' if v > 0 else ''}{v}" for k, v in changed] or ["  no change"]
    return out

