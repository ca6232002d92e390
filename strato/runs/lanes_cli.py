"""`strato lanes`: every verification lane of the workspace, as stored in
`refs/vivary/lanes` (its clean streak, its verification rate, its last reset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from strato.runs.cli import handled, json_option, root_option
from strato.runs.lanes import FLOOR, RULE, TRUST_AFTER, rate
from strato.runs.lanestore import REF, LanesCorrupt, LaneStore
from strato.runs.state import Refused
from tropo.git.repo import require


def lanes_view(root: Path) -> dict[str, Any]:
    """The lanes document `strato lanes --json` prints (also the workbench's)."""
    store = LaneStore(require(root))
    try:
        tip, lanes = store.read()
    except LanesCorrupt as exc:
        raise Refused("lanes_corrupt", str(exc)) from None
    rows = []
    for key, rec in sorted(lanes.items()):
        reset = rec.get("lastReset") or {}
        rows.append({
            "lane": key,
            "flow": rec.get("flow"),
            "step": rec.get("step"),
            "agent": rec.get("agent"),
            "clean": rec.get("clean", 0),
            "rate": rate(int(rec.get("clean", 0))),
            "verified": rec.get("verified", 0),
            "skipped": rec.get("skipped", 0),
            "failures": rec.get("failures", 0),
            "resets": rec.get("resets", 0),
            "lastReset": reset.get("reason"),
            "lastResetAt": reset.get("at"),
            "updatedAt": rec.get("updatedAt"),
        })
    return {"ref": REF, "tip": tip, "rule": RULE, "lanes": rows}


@click.command("lanes")
@root_option
@json_option
@handled
def lanes_command(root: Path, as_json: bool) -> None:
    """Verification lanes (flow/step/agent): clean streak, verification rate, last reset.

    A lane checks every output until it has a clean streak of TRUST_AFTER (5); each
    further streak of 5 halves the rate, down to 1/8. A failure, an override at a gate,
    or a change of the step's spec or the agent's configuration resets it.

    \b
    Example:
      strato lanes
      strato lanes --json
    """
    view = lanes_view(root)
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    if not view["lanes"]:
        click.echo(f"no lanes yet (evidence is recorded in {REF} as runs verify outputs)")
        return
    click.echo(f"{'lane':<40} {'clean':>5} {'rate':>6} {'checked':>7} {'skipped':>7}  last reset")
    for row in view["lanes"]:
        click.echo(
            f"{row['lane']:<40} {row['clean']:>5} {row['rate']:>6.3g} {row['verified']:>7} "
            f"{row['skipped']:>7}  {row['lastReset'] or '-'}"
        )
    click.echo(f"rule: every output until {TRUST_AFTER} clean in a row, then halving per streak to {FLOOR:g}")
