"""The strato seed's words in the scaffold: the always-on STRATO.md names the FW / WS /
PRIV / VS / Gate grammar the workspace follows, and stays inside its token budget (the
heartbeat, run on a new workspace, proposes no `strato-budget` finding)."""

from __future__ import annotations

import re
from pathlib import Path

from strato.heartbeat import engine, hygiene
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support.workspaces import scaffold


def test_strato_md_names_the_grammar_within_its_budget(tmp_path: Path) -> None:
    ws = scaffold(tmp_path / "ws")
    text = (ws / "STRATO.md").read_text()
    for word in ("FW", "WS", "PRIV", "VS", "Gate"):
        assert re.search(rf"\*\*{word}\*\* \(", text), word  # each named and said what it is
    budget = Settings().strato_token_budget
    assert hygiene.tokens(text) <= budget and hygiene.strato_budget(text, budget) == []
    engine.run(ws, Settings())
    checks = {r["check"] for r in store.all_records(store.sidecar(ws))}
    assert "strato-budget" not in checks
    assert hygiene.strato_budget(text * 20, budget) != []  # the check would say so
