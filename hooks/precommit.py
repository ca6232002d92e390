"""pre-commit and pre-merge-commit: the check of the staged snapshot (what the commit, or
the clean merge, would record), strict or ratchet as HEAD's `.vivary/hooks.toml` says."""

from __future__ import annotations

import sys
from pathlib import Path

from hooks import graph
from tropo.check.roots import ConfigError
from tropo.git.source import Source, SourceError


def main(root: Path, what: str = "commit") -> int:
    try:
        verdict = graph.judge(root, Source.index(), graph.commit(root, "HEAD"))
    except (ConfigError, SourceError, graph.HookConfigError) as exc:
        print(f"vivary: {what} refused: {exc}", file=sys.stderr)
        return 1
    if not verdict.findings:
        return 0
    lines = [f.render() for f in verdict.findings]
    print("\n".join(lines), file=sys.stderr)
    from strato.heartbeat.refusals import record  # the heartbeat learns from refusals

    record(root, lines)
    new = " new" if verdict.mode == "ratchet" else ""
    print(
        f"vivary: {what} refused: {len(verdict.findings)}{new} finding(s) in the staged "
        "snapshot; fix and `git add` them (or bypass once with --no-verify)",
        file=sys.stderr,
    )
    return 1
