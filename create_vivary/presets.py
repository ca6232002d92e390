"""The presets: ``templates/presets/<name>.toml`` names each one's starter module,
change and verification, and gives the words the preset templates fill in."""

from __future__ import annotations

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
