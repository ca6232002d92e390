"""pre-push: run the registered checks, push claim branches, guard ledgers and
verification lanes along, then run the checks that need those on the remote (a
branch's pinned guard notes).

git hands the hook the remote and, on stdin, one line per ref being pushed. A failing
check refuses the push. Claim branches (``claim/*``) the remote still has travel with
any push to the same remote, fast-forward only and leased on the tip read there, so
other clones see the work on live claims. One the remote does not have is never
re-created: it was released there (perhaps from another clone), or never published,
which is ``exo claim --remote``'s job.
``refs/vivary/lanes`` goes along merged with the remote's, since two clones' lanes may
have diverged (a plain push would be refused).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from hooks import registry
from strato.runs.lanes import store as lanestore
from strato.runs.lanes import sync as lanesync
from tropo import untrusted
from tropo.git import gitcli
from tropo.git.remote import Push, RefUpdate

CLAIMS = "refs/heads/claim/"
# Refs that travel with any push: the guard ledgers and the records of forced claim
# releases (claim branches go along by their own rule, `_push_claims`).
ALONG = (("refs/notes/vivary/", "guard ledgers"),
         ("refs/exo/released/", "forced-release records"))


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


def push_along(push: Push) -> list[str]:
    """Push the updates of live claim branches, guard ledgers and verification lanes to
    the same remote; warning lines."""
    warnings = _sync_lanes(push) + _push_claims(push)
    for prefix, what in ALONG:
        if not gitcli.run(push.root, "for-each-ref", "--format=%(refname)", prefix).strip():
            continue
        if push.updates and all(u.local_ref.startswith(prefix) for u in push.updates):
            continue  # the user is pushing these already
        if (merged := registry.PUSH_ALONG_MERGED.get(prefix)) is not None:
            warnings += registry.resolve(merged)(push)
            continue
        try:
            gitcli.run(push.root, "push", "--no-verify", "-q", push.remote, f"{prefix}*:{prefix}*")
        except gitcli.GitError as exc:
            warnings.append(f"{what} not pushed: {exc}")
    return warnings


def _refs(listing: str) -> dict[str, str]:
    """Ref name -> oid from ``<oid> <ref>`` lines (for-each-ref, ls-remote)."""
    return {ref: oid for oid, ref in (line.split() for line in listing.splitlines() if line)}


def _push_claims(push: Push) -> list[str]:
    """Push each local claim branch that is ahead of the same branch on the remote,
    leased on the remote's tip (a branch deleted meanwhile is not re-created), skipping
    the ones the remote does not have (released or never published) and warning about
    the ones that diverged from it; warning lines."""
    mine = _refs(gitcli.run(push.root, "for-each-ref", "--format=%(objectname) %(refname)",
                            CLAIMS))
    if not mine or (push.updates and all(u.local_ref.startswith(CLAIMS) for u in push.updates)):
        return []  # none, or the user is pushing these already
    try:
        listing = gitcli.run(push.root, "ls-remote", "--refs", "--", push.remote, f"{CLAIMS}*")
    except gitcli.GitError as exc:
        return [f"claim branches not pushed: {exc}"]
    theirs = {ref: oid for ref, oid in _refs(listing).items() if ref.startswith(CLAIMS)}
    leases, specs, warnings = [], [], []
    for ref, oid in sorted(mine.items()):
        there = theirs.get(ref)
        if there is None or there == oid:
            continue
        if gitcli.call(push.root, "merge-base", "--is-ancestor", there, oid).returncode:
            warnings.append(f"claim branches not pushed: {ref.removeprefix('refs/heads/')} "
                            f"has diverged from {push.remote}'s; fetch it and look")
            continue
        leases.append(f"--force-with-lease={ref}:{there}")
        specs.append(f"{ref}:{ref}")
    if specs:
        try:
            gitcli.run(push.root, "push", "--no-verify", "-q", *leases, "--", push.remote, *specs)
        except gitcli.GitError as exc:
            warnings.append(f"claim branches not pushed: {exc}")
    return warnings


def refused(problems: list[str]) -> int:
    for p in problems:  # a problem may quote a ledger or a ref someone else pushed
        print(untrusted.visible(p), file=sys.stderr)
    print(f"vivary: push refused: {len(problems)} problem(s)", file=sys.stderr)
    return 1


def _sync_lanes(push: Push) -> list[str]:
    """The verification lanes go along too, merged with the remote's when the two clones
    diverged (`strato.runs.lanes.sync`); a warning line when they cannot."""
    if not gitcli.run(push.root, "for-each-ref", "--format=%(refname)", lanestore.REF).strip():
        return []
    if push.updates and all(u.local_ref == lanestore.REF for u in push.updates):
        return []  # the user is pushing them already
    try:
        lanesync.sync(push.root, push.remote)
    except lanesync.LanesSyncError as exc:
        return [f"verification lanes not pushed: {exc}"]
    return []


def main(root: Path, args: list[str], stdin: str) -> int:
    remote, url = [*args, "", ""][:2]
    push = Push(root, remote, url, parse_updates(stdin))
    problems = run_checks(push, registry.PRE_PUSH)
    if problems:
        return refused(problems)
    for warning in push_along(push):
        print(f"vivary: {warning}", file=sys.stderr)
    problems = run_checks(push, registry.PRE_PUSH_AFTER_ALONG)
    return refused(problems) if problems else 0
