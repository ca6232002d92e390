"""`strato lanes`: every verification lane of the workspace, as stored in
`refs/vivary/lanes` (its clean streak, its verification rate, its last reset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from strato.runs.cli.terminal import handled, json_option, root_option
from strato.runs.engine.state import Refused
from strato.runs.lanes.model import FLOOR, RULE, TRUST_AFTER, fold, rate
from strato.runs.lanes.store import REF, LanesCorrupt, LaneStore
from strato.runs.lanes.sync import LanesSyncError, sync
from strato.runs.store import RunNotFound, RunStore
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


def check_lanes(root: Path) -> list[str]:
    """Why the lanes cannot be taken at their word (empty: they can): the tip must be
    what its own history of evidence folds to, and every clean verification it counts
    must be a `verified` decision in the history of the run it names."""
    repo = require(root)
    store, runs = LaneStore(repo), RunStore(repo)
    try:
        _tip, lanes = store.read()
    except LanesCorrupt as exc:
        return [str(exc)]
    replayed: dict[str, dict[str, Any]] = {}
    findings: list[str] = []
    decided: dict[str, set[tuple[str, str, int]] | None] = {}
    try:
        log = store.log()
    except LanesCorrupt as exc:
        return [str(exc)]
    for item in log:
        fold(replayed, item)
        if item.get("kind") == "clean" and (known := _decided(runs, decided, item)) is not True:
            where = f"run {item.get('runId')!r} step {item.get('stepId')!r} attempt {item.get('attempt')}"
            why = "has no verified decision" + (" (the run is not in this clone)" if known is None else "")
            findings.append(f"{item.get('lane')}: clean evidence for {where} {why}")
    if replayed != lanes:
        findings.append(f"{REF}: the tip's lanes are not what its history of evidence folds to")
    return findings


def check_view(root: Path) -> dict[str, Any]:
    """The document `strato lanes --check --json` prints (also the MCP tool's)."""
    findings = check_lanes(root)
    return {"ok": not findings, "findings": findings}


def _decided(
    runs: RunStore, seen: dict[str, set[tuple[str, str, int]] | None], item: dict[str, Any]
) -> bool | None:
    """Whether the run the clean evidence names recorded a `verified` decision for it
    (None: that run is not in this clone, as after fetching another clone's lanes)."""
    run_id = str(item.get("runId"))
    if run_id not in seen:
        try:
            history = list(runs.history(run_id))
        except RunNotFound:
            seen[run_id] = None
            return None
        seen[run_id] = {
            (str(ev["detail"]["lane"]), str(ev.get("stepId")), int(ev["detail"]["attempt"]))
            for _commit, transition in history
            for ev in transition.get("events", [])
            if ev.get("type") == "verified" and "lane" in ev.get("detail", {})
        }
    found = seen[run_id]
    if found is None:
        return None
    return (str(item.get("lane")), str(item.get("stepId")), item.get("attempt")) in found


@click.command("lanes")
@click.option("--check", "check", is_flag=True,
              help="Replay the lanes' history against the runs it names; exit 1 on any finding.")
@click.option("--sync", "remote", metavar="REMOTE",
              help="Fetch REMOTE's lanes, merge them with these if the clones diverged, push the result.")
@root_option
@json_option
@handled
def lanes_command(check: bool, remote: str | None, root: Path, as_json: bool) -> None:
    """Verification lanes (flow/step/agent): clean streak, verification rate, last reset.

    A lane checks every output until it has a clean streak of TRUST_AFTER (5); each
    further streak of 5 halves the rate, down to 1/8. A failure, an override at a gate,
    or a change of the step's spec or the agent's configuration resets it.

    The lanes ref is as writable as any ref: `--check` replays its history and
    confirms each clean verification against the run that recorded it.

    `--sync REMOTE` brings this clone's lanes and REMOTE's into one (the pre-push hook
    does it on every push): two clones that diverged are merged, every piece of
    evidence either holds folded once, in the order it was taken.

    \b
    Example:
      strato lanes
      strato lanes --json
      strato lanes --check
      strato lanes --sync origin
    """
    if remote is not None:
        if check:
            raise click.UsageError("--sync and --check do not go together")
        try:
            line = sync(root, remote)
        except LanesSyncError as exc:
            raise Refused("lanes_sync", str(exc)) from None
        click.echo(json.dumps({"ok": True, "sync": line}, sort_keys=True) if as_json else line)
        return
    if check:
        report = check_view(root)
        findings = report["findings"]
        if as_json:
            click.echo(json.dumps(report, sort_keys=True))
        else:
            for line in findings:
                click.echo(line)
            click.echo(f"{REF}: {'ok' if not findings else f'{len(findings)} finding(s)'}")
        if findings:
            raise SystemExit(1)
        return
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
