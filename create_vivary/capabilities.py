"""``create-vivary capabilities``: which optional capabilities this install provides.

The declarations (ids, labels, authority, what the suite would install) are
create-vivary 0.4.3's, in ``templates/thin/capabilities.json``, so a tool reading the
report cannot tell the two apart by shape. Whether a capability is installed is asked of
*this* install: each install hint is satisfied by a module we ship (``tropo`` for
vivary-tropo and vivary-core, ``strato.decide`` for vivary-strato, ``exo.control`` for
vivary-exo) or by the third-party module the suite would use. Nothing is imported to
probe, only located.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from typing import Any

from create_vivary.scaffold import template_root

# Install hint -> the module that satisfies it here. vivary-ozone's `ozone verify
# --governed` and vivary-mcp's four read-only tools are not ours: their own modules.
PROVIDERS = {
    "vivary-tropo[embedded]": "lancedb",
    "vivary-memory-cognee": "vivary_cognee",
    "cocoindex-code[full]": "cocoindex_code",
    "vivary-mcp": "vivary_mcp",
    "mcp": "mcp",
    "vivary-core": "tropo.canonical",
    "vivary-tropo": "tropo.cli.retrieval",
    "vivary-strato": "strato.decide.cli",
    "vivary-exo": "exo.control.envelope",
    "vivary-ozone": "ozone",
}
DEFAULTS = ["storage:file", "memory:none"]


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def declarations() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        (template_root() / "thin" / "capabilities.json").read_text(encoding="utf-8"))
    return data


def _annotate(cap: dict[str, Any]) -> None:
    missing = [hint for hint in cap["requires_install"] if not _present(PROVIDERS[hint])]
    cap |= {
        "installed": not missing,
        "install_status": "not-installed" if missing else "installed",
        "reason_codes": ["capability_dependency_missing"] if missing else [],
        "missing_install": missing,
    }
    if cap["id"] == "interop:mcp":
        package = _present("vivary_mcp")
        sdk = _sdk_version() if _present("mcp") else None
        cap |= {"package_present": package, "entry_point_present": package,
                "sdk_version": sdk, "sdk_compatible": package and sdk == "2.0.0"}


def _sdk_version() -> str | None:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None


def report(preset: str) -> dict[str, Any]:
    """The suite's capability report for ``preset`` (a preset-bound capability, such as
    the coding-only active context, is listed only for its presets)."""
    caps = []
    for decl in declarations():
        if preset not in decl.pop("presets", [preset]):
            continue
        _annotate(decl)
        caps.append(decl)
    return {"ok": True, "preset": preset, "default_capabilities": list(DEFAULTS),
            "available_capabilities": caps}


def lines(rep: dict[str, Any]) -> list[str]:
    out = [f"create-vivary capabilities for {rep['preset']}:"]
    for cap in rep["available_capabilities"]:
        marks = ", ".join(m for m in ("default" if cap["default"] else "", cap["install_status"]) if m)
        out.append(f"- {cap['id']}: {cap['label']} ({marks})")
    return out


def capability(rep: dict[str, Any], cap_id: str) -> dict[str, Any] | None:
    return next((c for c in rep["available_capabilities"] if c["id"] == cap_id), None)
