"""pre-push: run the registered checks, then push claim branches along.

git hands the hook the remote and, on stdin, one line per ref being pushed. A failing
check refuses the push. Claim branches (``claim/*``) travel with any push to the same
remote so other clones see who holds what; git itself skips those already there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hooks import registry
from tropo import gitcli

CLAIMS = "refs/heads/claim/"


@dataclass(frozen=True)
class RefUpdate:
    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str


@dataclass(frozen=True)
class Push:
    root: Path
    remote: str
    url: str
    updates: tuple[RefUpdate, ...]


def parse_updates(text: str) -> tuple[RefUpdate, ...]:
    """The ``<local ref> <local sha> <remote ref> <remote sha>`` lines git sends."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.append(RefUpdate(*parts))
    return tuple(out)


def run_checks(push: Push, checks: Mapping[str, str]) -> list[str]:
    """Every problem the checks report, each prefixed with the check's name."""
    problems: list[str] = []
    for name, target in sorted(checks.items()):
        check: Callable[[Push], list[str]] = registry.resolve(target)
        problems.extend(f"{name}: {p}" for p in check(push))
    return problems


def push_claims(push: Push) -> str | None:
    """Push local claim branches to the same remote; a warning line, or None."""
    if not gitcli.run(push.root, "for-each-ref", "--format=%(refname)", CLAIMS).strip():
        return None
    if push.updates and all(u.local_ref.startswith(CLAIMS) for u in push.updates):
        return None  # the user is pushing claims already
    try:
        gitcli.run(push.root, "push", "--no-verify", "-q", push.remote, f"{CLAIMS}*:{CLAIMS}*")
    except gitcli.GitError as exc:
        return f"claim branches not pushed: {exc}"
    return None


def main(root: Path, args: list[str], stdin: str) -> int:
    remote, url = [*args, "", ""][:2]
    push = Push(root, remote, url, parse_updates(stdin))
    problems = run_checks(push, registry.PRE_PUSH)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"vivary: push refused: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    warning = push_claims(push)
    if warning:
        print(f"vivary: {warning}", file=sys.stderr)
    return 0
