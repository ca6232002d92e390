"""The seven bounded worker contracts of strato's role grammar, as exo hands them out.

The strings are a public format (vivary-exo prints the same), so they are data here.
"""

from __future__ import annotations

ROLES: tuple[tuple[str, str], ...] = (
    ("Orchestrator", "intent, scope, gates, synthesis"),
    ("Scout", "paths, confidence, gaps"),
    ("Researcher", "fact / inference / recommendation, with credits"),
    ("Builder", "one slice + changed paths + checks"),
    ("Verifier", "pass / fail / skipped / risk — no silent edits"),
    ("Reviewer", "findings first"),
    ("Archivist", "notes, handoffs; PRIV kept separate"),
)


def as_json() -> dict[str, object]:
    return {"roles": [{"role": role, "contract": contract} for role, contract in ROLES]}


def as_text() -> list[str]:
    header = "exo: role contracts (workers get bounded contracts; never product owners)"
    return [header, *(f"  {role:13} {contract}" for role, contract in ROLES)]
