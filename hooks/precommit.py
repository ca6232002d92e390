"""pre-commit and pre-merge-commit: the check of the staged snapshot (what the commit, or
the clean merge, would record), strict or ratchet as HEAD's `.vivary/hooks.toml` says,
and the registered checks (the guard's: a staged notes pin must be current)."""

from __future__ import annotations

import sys
from pathlib import Path

from hooks import graph, registry
from tropo import untrusted
from tropo.check.roots import ConfigError
from tropo.git.snapshot import Source, SourceError


def registered(root: Path, what: str) -> bool:
    """Run the registered pre-commit checks; whether they all passed (each problem said)."""
    ok = True
    for name, target in sorted(registry.PRE_COMMIT.items()):
        for problem in registry.resolve(target)(root):
            said = untrusted.visible(problem)
            print(f"vivary: {what} refused: {name}: {said} (or bypass once with --no-verify)",
                  file=sys.stderr)
            ok = False
    return ok


def main(root: Path, what: str = "commit") -> int:
    ok = registered(root, what)
    try:
        verdict = graph.judge(root, Source.index(), graph.commit(root, "HEAD"))
    except (ConfigError, SourceError, graph.HookConfigError) as exc:
        print(f"vivary: {what} refused: {exc}", file=sys.stderr)
        return 1
    if not verdict.findings:
        return 0 if ok else 1
    lines = [untrusted.visible(f.render()) for f in verdict.findings]  # they quote the documents
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
