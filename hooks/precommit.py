"""pre-commit: the strict check of the staged snapshot (what the commit would record)."""

from __future__ import annotations

import sys
from pathlib import Path

from tropo import incremental
from tropo.roots import ConfigError
from tropo.source import Source, SourceError


def main(root: Path) -> int:
    try:
        outcome = incremental.check(root, Source.index())
    except (ConfigError, SourceError) as exc:
        print(f"vivary: commit refused: {exc}", file=sys.stderr)
        return 1
    findings = outcome.summary.graded(strict=True)
    if not findings:
        return 0
    lines = [f.render() for f in findings]
    print("\n".join(lines), file=sys.stderr)
    from strato.heartbeat.refusals import record  # the heartbeat learns from refusals

    record(root, lines)
    print(
        f"vivary: commit refused: {len(findings)} finding(s) in the staged snapshot; "
        "fix and `git add` them (or bypass once with --no-verify)",
        file=sys.stderr,
    )
    return 1
