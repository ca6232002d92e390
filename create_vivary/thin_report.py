"""What ``adopt --minimal`` prints: create-vivary 0.4.3's adopt report, as a JSON
document (its keys, in its order, indented as it indents) or as its text lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from create_vivary import inventory, presets, thin
from create_vivary.doctor import DoctorReport
from create_vivary.thin_adopt import ThinPlan


def planned(p: ThinPlan, mode: str, doctor: DoctorReport | None) -> dict[str, Any]:
    body = p.as_json(mode)
    if doctor is not None:
        body["ok"] = doctor.ok
        body["doctor"] = doctor.as_json()
    return body


def recovery(root: Path, tx_hash: str, rhash: str, rows: list[dict[str, Any]],
             recovered: bool) -> dict[str, Any]:
    """A recovery's report: the plan fields empty, the preset the workspace declares."""
    return {
        "ok": True, "mode": "recovered" if recovered else "recovery-dry-run", "recovered": recovered,
        "contract": thin.CONTRACT, "root": str(root), "preset": (presets.declared(root) or ("<preset>",))[0],
        "preset_reason": "approved interrupted-transaction recovery", "creates": [], "patches": [],
        "optional_projections": [], "would_create": [], "kept": [], "conflicts": [],
        "privacy": None, "plan_hash": tx_hash, "recovery_plan_hash": rhash,
        "recovery_actions": rows, "followups": [],
        "candidate_modules": inventory.scan(root).candidate_modules, "excluded_pre_existing": [],
        "skipped_module_collisions": [],
    }


def text(body: dict[str, Any], doctor: DoctorReport | None) -> list[str]:
    applied = body["mode"] == "applied"
    lines = [f"create-vivary adopt: {'Adopted' if applied else 'Would adopt'} Vivary onto {body['root']}",
             f"preset: {body['preset']} ({body['preset_reason']})"]
    lines += [f"  {'created' if applied else 'would create'}: {rel}" for rel in body["would_create"]]
    lines += [f"  exists, kept: {rel}" for rel in body["kept"]]
    if doctor is not None:
        graph = doctor.graph or {"nodes": 0, "edges": 0, "broken": 0}
        lines += ["", f"doctor: {'ok' if doctor.ok else 'failed'} ({graph['nodes']} node(s), "
                  f"{graph['edges']} edge(s), {graph['broken']} broken)"]
        lines += [f"  error: {e}" for e in doctor.errors] + [f"  warning: {w}" for w in doctor.warnings]
    return lines
