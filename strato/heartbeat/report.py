"""The day's report: the run summary first (at most three lines), then every open
proposal by kind. Written only where git ignores it (``heartbeat-reports/``), else in
the private sidecar: the heartbeat never writes a file a commit could pick up, nor
through a symlink a commit put there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.proposals import store
from strato.proposals.proposal import KINDS
from tropo import untrusted
from tropo.fs.atomic import write_atomic
from tropo.git import gitcli

FOLDER = "heartbeat-reports"


def summary(result: dict[str, Any]) -> list[str]:
    """At most three lines a person reads in a chat."""
    counts = result["counts"]
    lines = [f"Heartbeat {result['day']}: {result['commits']} new commit(s), "
             f"{len(result['new'])} new proposal(s), {counts['open']} open."]
    by_kind = ", ".join(f"{n} {k}" for k, n in counts["new_by_kind"].items() if n)
    if by_kind:
        lines.append(f"New: {by_kind}.")
    if result["skipped"]:
        lines.append(f"Budget reached; skipped: {', '.join(result['skipped'])}.")
    return lines[:3]


def render(result: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The report in Markdown; every text a proposal carries is escaped
    (:mod:`tropo.untrusted`): a transcript cannot add a heading, a link or a key."""
    out = [f"# Heartbeat {result['day']}", "", *summary(result), ""]
    if skipped := result.get("distill", {}).get("skipped"):
        out += [f"Model step skipped: {skipped}", ""]
    open_records = [r for r in records if r.get("status") == "open"]
    for kind in KINDS:
        mine = [r for r in open_records if r.get("kind") == kind]
        if not mine:
            continue
        out += [f"## {kind}", ""]
        for r in mine:
            out.append(f"- {untrusted.code_span(r['id'])} ({untrusted.markdown(r['revision'])}): "
                       f"{untrusted.markdown(store.title(r))}")
            out += [f"  - {untrusted.markdown(e)}" for e in r.get("evidence", [])[:5]]
        out.append("")
    out.append("Apply one with `strato heartbeat apply ID` (a branch `heartbeat/ID`), "
               "or `strato heartbeat reject ID`.")
    return "\n".join(out) + "\n"


def write(root: Path, side: Path, day: str, text: str) -> Path:
    rel = f"{FOLDER}/{day}-heartbeat.md"
    folder = root / FOLDER
    private = (not folder.is_symlink() and (folder.is_dir() or not folder.exists())
               and bool(gitcli.ignored(root, [rel], rules_only=True)) and not gitcli.tracked(root, [rel]))
    path = root / rel if private else side / "reports" / f"{day}-heartbeat.md"
    write_atomic(path, text.encode())
    return path

