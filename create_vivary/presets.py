"""The presets: ``templates/presets/<name>.toml`` names each one's starter module,
change and verification, and gives the words the preset templates fill in."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

import templates


@dataclass(frozen=True)
class Preset:
    name: str
    module: str
    module_area: str
    module_purpose: str
    change: str
    change_slice: str
    change_summary: str
    verification: str
    verification_target: str

    def values(self) -> dict[str, str]:
        """Template values; titles come from the ids."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}
        titles = {f"{k}_title": _title(own[k]) for k in ("module", "change", "verification")}
        return {"preset": self.name, **own, **titles}


def _title(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def load(folder: Path) -> dict[str, Preset]:
    """Every ``<name>.toml`` in ``folder``; a missing or unknown key is a packaging bug."""
    return {
        path.stem: Preset(name=path.stem, **tomllib.loads(path.read_text(encoding="utf-8")))
        for path in sorted(folder.glob("*.toml"))
    }


PRESETS = load(Path(templates.__file__).parent / "presets")


_PRESET_LINE = re.compile(r"^Preset: ([a-z-]+)\s*$", re.M)


def declared(root: Path) -> tuple[str, str] | None:
    """(preset, where it is declared) of an existing workspace: ``[workspace] preset`` of
    ``.vivary/workspace.toml`` (create-vivary 0.4), else a ``Preset:`` line in its README."""
    for rel, find in ((".vivary/workspace.toml", _thin_preset), ("README.md", _readme_preset)):
        path = root / rel
        if path.is_symlink() or not path.is_file():
            continue
        try:
            name = find(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeError, tomllib.TOMLDecodeError):
            name = None
        if name in PRESETS:
            return name, f"declared in {rel}"
    return None


def _thin_preset(text: str) -> object:
    workspace = tomllib.loads(text).get("workspace")
    return workspace.get("preset") if isinstance(workspace, dict) else None


def _readme_preset(text: str) -> str | None:
    m = _PRESET_LINE.search(text)
    return m.group(1) if m else None
