"""The shipped model catalog (`models.toml` beside this module): which providers the
built-in agents call, their model names, effort levels and supported settings. One file,
read as shipped, so its digest names exactly what a client was told."""

from __future__ import annotations

import hashlib
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

CATALOG = Path(__file__).with_name("models.toml")


def catalog_view() -> dict[str, Any]:
    """Stratum's `models --json`: the catalog, its SHA-256, its absolute path and the
    version of the package that shipped it."""
    data = CATALOG.read_bytes()
    return {
        "catalog": tomllib.loads(data.decode("utf-8")),
        "sha256": hashlib.sha256(data).hexdigest(),
        "path": str(CATALOG.resolve()),
        "packageVersion": version("vivary-git"),
    }
