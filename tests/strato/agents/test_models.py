"""`strato models --json`: the shipped catalog, the SHA-256 of the very file it was read
from, that file's absolute path and the package's version (the seed's four facts)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from importlib.metadata import version
from pathlib import Path

from tests.support.console import run


def test_models_prints_the_shipped_catalog_with_its_digest_path_and_version() -> None:
    proc = run("strato", "models", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"catalog", "sha256", "path", "packageVersion"}
    path = Path(doc["path"])
    assert path.is_absolute() and path.name == "models.toml"
    data = path.read_bytes()
    assert doc["sha256"] == hashlib.sha256(data).hexdigest()
    assert doc["catalog"] == tomllib.loads(data.decode()) and doc["packageVersion"] == version("vivary-git")
    providers = doc["catalog"]["providers"]
    assert {"claude", "codex"} <= set(providers)
    assert "thinking" in providers["claude"]["settings"] and "thinking" not in providers["codex"]["settings"]
    text = run("strato", "models")
    assert text.returncode == 0 and doc["sha256"][:12] in text.stdout and "claude: models" in text.stdout
