"""The pre-push hook verifies guard ledgers and carries them to the remote."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

from hooks import install as installer
from strato.guard import engine, store
from tests.conftest import git
from tests.strato.guard.conftest import POLICY, Workspace, ledger_text, put_ledger


def _remote(ws: Workspace) -> Path:
    bare = ws.tmp / "remote.git"
    git(ws.tmp, "init", "-q", "--bare", str(bare))
    git(ws.root, "remote", "add", "origin", str(bare))
    installer.install(ws.root, ("pre-push",))
    return bare


def test_ledgers_travel_with_a_push(ws: Workspace) -> None:
    bare = _remote(ws)
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    git(ws.root, "push", "-q", "origin", "main")
    assert git(bare, "rev-parse", store.REF).strip() == git(ws.root, "rev-parse", store.REF).strip()


def test_a_tampered_ledger_refuses_the_push(ws: Workspace) -> None:
    bare = _remote(ws)
    engine.register(ws.repo, {"resource_id": "svc:api", **copy.deepcopy(POLICY)})
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    text = ledger_text(ws, anchor)
    put_ledger(ws, anchor, text.replace('"initial":"draft"', '"initial":"released"'))
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=ws.root, capture_output=True, text=True,
                          check=False)
    assert proc.returncode != 0
    assert "guard:" in proc.stderr and "push refused" in proc.stderr
    assert git(bare, "for-each-ref").strip() == ""  # nothing left this clone
