"""`strato guard descriptors`: the read-only listing the seed keeps on the CLI. It shows
what HEAD installs and whether it verifies against the trust root, and writes nothing;
an author who controls the file and its signature (but not the trust root) never gets
`verified`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from strato.guard import authz, descriptors
from tests.support.console import run
from tests.support.guard import Key, Workspace, make_key, ssh_sign

POLICY = {"graph": {"draft": []}, "edge_predicates": {}, "terminal": [], "stakes": {}}
ITEM = {"id": "shortcut", "rationale": "no review step", "from_checksum": "a" * 64, "to_policy": POLICY}


def _listing(ws: Workspace) -> tuple[int, dict[str, Any]]:
    proc = run("strato", "guard", "descriptors", "--root", ws.root, "--json")
    return proc.returncode, json.loads(proc.stdout)


def _state(ws: Workspace) -> str:
    return subprocess.run(["git", "for-each-ref"], cwd=ws.root, capture_output=True, text=True,
                          check=True).stdout + subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws.root, capture_output=True, text=True, check=True).stdout


def _install(ws: Workspace, key: Key, items: list[dict[str, Any]]) -> str:
    data = json.dumps({"version": 1, "descriptors": items}, indent=2)
    ws.commit({descriptors.PATH: data, descriptors.SIG_PATH: ssh_sign(key, authz.NS_DESCRIPTORS, data.encode(), ws.tmp)})
    return data


def test_descriptors_lists_what_head_installs_and_whether_it_verifies(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("ops"))
    code, none = _listing(ws)
    assert code == 0 and none["installed"] is False and none["descriptors"] == [] and none["verified"] is False
    assert [s["principals"] for s in none["signers"]] == [["ops"]]
    data = _install(ws, key, [ITEM])
    before = _state(ws)
    code, doc = _listing(ws)
    assert code == 0 and doc["verified"] is True and doc["signer"]["principal"] == "ops"
    assert doc["descriptors"] == [ITEM] and doc["reason"] is None
    text = run("strato", "guard", "descriptors", "--root", ws.root)
    assert text.returncode == 0 and "shortcut" in text.stdout and "verified" in text.stdout
    assert _state(ws) == before  # read-only: no ref, no file moved
    # the author edits the signed file: listed, not verified, exit 1
    ws.commit({descriptors.PATH: data.replace("no review step", "edited")})
    code, edited = _listing(ws)
    assert code == 1 and edited["verified"] is False and edited["descriptors"][0]["rationale"] == "edited"


def test_a_signature_by_a_key_the_trust_root_does_not_list_never_verifies(ws: Workspace, key: Key,
                                                                          tmp_path: Path) -> None:
    ws.trust(key.signers_line("ops"))
    (tmp_path / "stranger").mkdir()
    stranger = make_key(tmp_path / "stranger")
    _install(ws, stranger, [ITEM])
    code, doc = _listing(ws)
    assert code == 1 and doc["verified"] is False and doc["signer"] is None
    assert "not an allowed signer" in doc["reason"]
    ws.commit({descriptors.PATH: "{not json"})
    code, broken = _listing(ws)
    assert code == 1 and broken["installed"] is True and broken["descriptors"] == []
