"""`make demo`, flows part: a small reviewed flow run by a stand-in agent, stopping at
a human gate, revised once, approved, then audited from the run's git history."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

SPEC = """\
version: 1
contracts:
  Draft: {title: string, body: string}
flows:
  entry: write
  write:
    input: {topic: string}
    output: {from: "${draft.output}", contract: Draft}
    max_rounds: 2
    steps:
      - id: draft
        do: "Write a short note about ${input.topic}"
        out: Draft
        ensure:
          - expr: "len(result.body) > 10"
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""

# The stand-in agent: its first answer is too short (the ensure rejects it and the
# engine retries with the failure); later answers get longer each round.
AGENT = """\
import json, sys
from pathlib import Path
count = Path(".git/vivary/demo-agent-count")
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
body = "Too short" if n == 1 else "Git refs make a fine database. " * (n - 1)
print("thinking...")
print(json.dumps({"title": f"Draft {n}", "body": body.strip()}))
"""


def tour(ws: Path, run: Callable[[list[str]], object]) -> None:
    """Write the flow and the agent, run it to the gate, revise, approve, audit."""
    print("\n== flows: a run is a chain of commits on refs/vivary/runs/<id>/head", flush=True)
    (ws / "flows").mkdir(exist_ok=True)
    (ws / "flows" / "note.yaml").write_text(SPEC)
    (ws / ".vivary").mkdir(exist_ok=True)
    (ws / ".vivary" / "demo_agent.py").write_text(AGENT)
    argv = [sys.executable, ".vivary/demo_agent.py", "{prompt}"]
    (ws / ".vivary" / "agents.toml").write_text(
        f"[agents.claude]\nargv = {json.dumps(argv)}\ntimeout_s = 60\n"
    )
    # an agents file runs only once you approved its exact bytes: see, then approve
    run(["vivary", "trust", "--show", ".vivary/agents.toml"])
    run(["vivary", "trust", ".vivary/agents.toml"])
    run(["strato", "run", "flows/note.yaml", "--input", "topic=git as a database", "--id", "demo-note"])
    run(["strato", "flow", "gates"])
    run(["strato", "flow", "gate", "revise", "demo-note", "review", "--note", "say more"])
    run(["strato", "run", "--resume", "demo-note"])
    run(["strato", "flow", "gate", "approve", "demo-note", "review", "--note", "good"])
    run(["strato", "flow", "show", "demo-note"])
    run(["strato", "flow", "audit", "demo-note"])
    run(["git", "log", "--oneline", "refs/vivary/runs/demo-note/head"])
