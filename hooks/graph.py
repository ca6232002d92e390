"""The graph check every hook runs: strict, or the ratchet that `.vivary/hooks.toml` asks for.

``mode = "strict"`` (the default) refuses any finding; ``mode = "ratchet"`` refuses only
findings the base revision did not have (:mod:`tropo.check.ratchet`). The mode is read from
the *base* revision (HEAD for a commit or a merge, the remote's tip for a push), never
from what is being checked, so a commit cannot loosen its own check.

As a pre-push check it checks the graph at every pushed branch tip, so commits that never
met pre-commit (``--no-verify``, rebase, cherry-pick, a merge with hooks off) are caught
before they leave. Each tip costs one cached check state per tree (tropo/check/incremental.py).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tropo.check.roots import CONFIG_NAME, THIN_CONFIG
from tropo.git import gitcli

if TYPE_CHECKING:
    from tropo.check.findings import Finding
    from tropo.git.remote import Push
    from tropo.git.snapshot import Source

CONFIG = ".vivary/hooks.toml"
MODES = ("strict", "ratchet")
ZERO = "0" * 40


class HookConfigError(Exception):
    """`.vivary/hooks.toml` at the base revision cannot be read."""


@dataclass(frozen=True)
class Verdict:
    mode: str
    findings: list[Finding]


def mode_at(root: Path, rev: str | None) -> str:
    """The hooks' mode that commit ``rev`` records (strict without a commit or a file)."""
    if rev is None:
        return "strict"
    text = gitcli.run(root, "show", f"{rev}:{CONFIG}", check=False)
    return mode_of(text, f"{CONFIG} at {rev[:12]}") if text else "strict"


def mode_of(text: str, where: str) -> str:
    """The mode a hooks file's text sets (strict when it sets none)."""
    try:
        mode = tomllib.loads(text).get("mode", "strict")
    except tomllib.TOMLDecodeError as exc:
        raise HookConfigError(f"{where}: {exc}") from exc
    if mode not in MODES:
        raise HookConfigError(f"{where}: mode must be one of {', '.join(MODES)}, not {mode!r}")
    return str(mode)


def judge(root: Path, source: Source, base: str | None) -> Verdict:
    """The findings that refuse ``source`` (graded strictly) given the ``base`` commit."""
    from tropo.check import incremental, ratchet
    from tropo.check.findings import failing

    findings = failing(incremental.check(root, source).summary.graded(strict=True))
    mode = mode_at(root, base)
    if mode == "ratchet" and findings:
        assert base is not None
        findings = ratchet.new_since(findings, ratchet.findings_at(root, base))
    return Verdict(mode, findings)


def commit(root: Path, rev: str) -> str | None:
    """The commit ``rev`` names here, or None (``HEAD`` before the first commit)."""
    out = gitcli.run(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    return out.strip() or None


def named(root: Path, rev: str) -> str:
    """The commit a revision the person typed names (``--base``, ``--head``), through the
    one resolver: a short name a pushed tag shares with a branch is refused, never guessed.
    Raises :class:`tropo.git.gitcli.RevisionError` (one line, with the fix)."""
    from tropo.git import repo as gitrepo

    try:
        return str(gitrepo.resolve_commit(gitrepo.require(root), rev).id)
    except gitrepo.AmbiguousRevision:
        raise
    except gitrepo.RevisionError as exc:
        raise gitrepo.RevisionError(f"{rev}: not a commit here (fetch it first)") from exc


def has_workspace(root: Path, rev: str) -> bool:
    """Whether commit ``rev`` has a workspace schema where the hooks look (the top)."""
    out = gitcli.run(root, "ls-tree", "--name-only", rev, "--", CONFIG_NAME,
                     THIN_CONFIG, check=False)
    return bool(out.strip())


def push_base(root: Path, remote: str, tip: str, remote_sha: str) -> str | None:
    """What a pushed tip is judged against: the remote's tip when this clone has it, else
    the newest commit the remote already has (from the remote-tracking refs) that the tip
    builds on (the tip itself when it has them all); None when the remote shares nothing
    with it (a first push)."""
    if remote_sha != ZERO and commit(root, remote_sha):
        return remote_sha
    out = gitcli.run(root, "rev-list", "--boundary", tip, "--not", f"--remotes={remote}",
                     check=False)
    if not out.strip():
        return tip  # the remote already has every commit of it (a new name for old work)
    boundary = [line[1:] for line in out.splitlines() if line.startswith("-")]
    return boundary[0] if boundary else None


def check(push: Push) -> list[str]:
    """pre-push: one problem per finding at each pushed branch tip, file and line first."""
    from tropo.check.roots import ConfigError
    from tropo.git.snapshot import Source, SourceError

    problems: list[str] = []
    for update in push.updates:
        if update.local_sha == ZERO or not update.remote_ref.startswith("refs/heads/"):
            continue  # a delete, a tag, notes: no graph to check
        tip = commit(push.root, update.local_sha)
        if tip is None or not has_workspace(push.root, tip):
            continue  # not a commit, or a branch that holds no workspace (gh-pages, ...)
        branch = update.remote_ref.removeprefix("refs/heads/")
        base = push_base(push.root, push.remote, tip, update.remote_sha)
        try:
            verdict = judge(push.root, Source.at(tip), base)
        except (ConfigError, SourceError, HookConfigError) as exc:
            problems.append(f"{branch} at {tip[:12]}: {exc}")
            continue
        problems.extend(f"{f.render()} ({branch} at {tip[:12]})" for f in verdict.findings)
    return problems
