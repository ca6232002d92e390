"""Demo tour: a flow spec is checked before anything runs. A valid plan passes; the
same plan with a revise route but no `max_rounds` is refused with Stratum's code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

SPEC = """\
version: 1
contracts:
  Draft:
    text: string
    quality: number
flows:
  entry: write
  write:
    input:
      brief: string
    output:
      from: "${draft.output}"
      contract: Draft
    max_rounds: 2
    steps:
      - id: draft
        do: "Write a draft for ${input.brief}"
        out: Draft
        ensure:
          - expr: "result.quality >= 0.8 && len(result.text) > 0"
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


def tour(ws: Path, run: Callable[[list[str]], None]) -> None:
    flows = ws / "flows"
    flows.mkdir(exist_ok=True)
    (flows / "write.stratum.yaml").write_text(SPEC)
    run(["strato", "flow", "validate", "flows/write.stratum.yaml"])
    (flows / "unbounded.stratum.yaml").write_text(SPEC.replace("    max_rounds: 2\n", ""))
    run(["strato", "flow", "validate", "flows/unbounded.stratum.yaml", "--json"])
