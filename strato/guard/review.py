"""Pull-request review of guard ledgers: what was added since the base, and who signed it.

Entries made at commits the base does not contain are checked against the base's
allowed signers, never the branch's, so a branch that adds its own key and signs with
it is refused. Older entries keep the trust root of the commit they were made at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2

from strato.guard import authz, verify
from strato.guard.signers import AllowedSigner
from tropo import repo as gitrepo
from tropo.revision import is_ancestor


@dataclass(frozen=True)
class Row:
    resource_id: str
    line: int
    kind: str
    outcome: str
    from_state: str | None
    to_state: str | None
    signer: str | None
    rationale: str | None
    git_head: str | None
    status: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ReviewReport:
    base: str
    head: str
    verify: verify.Report
    rows: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verify.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "base": self.base,
            "head": self.head,
            "entries": [r.to_json() for r in self.rows],
            "verify": self.verify.to_json(),
        }

    def markdown(self) -> str:
        verdict = "passed" if self.ok else "**failed**"
        count = f"{len(self.rows)} ledger entr{'y' if len(self.rows) == 1 else 'ies'}"
        lines = [
            f"### Guard review {verdict}: `{self.base[:12]}..{self.head[:12]}`",
            "",
            f"{count} added since the base; signers checked against the base's "
            f"`{authz.SIGNERS_PATH}`.",
            "",
        ]
        if self.rows:
            lines += [
                "| resource | line | kind | outcome | transition | signer | rationale | status |",
                "|---|---|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {_cell(r.resource_id)} | {r.line} | {r.kind} | {r.outcome} "
                f"| {_cell(r.from_state)} → {_cell(r.to_state)} | {_cell(r.signer)} "
                f"| {_cell(r.rationale)} | {_cell(r.status)} |"
                for r in self.rows
            ]
        if self.verify.breaks:
            lines += ["", "Breaks:", *(f"- {_cell(str(b))}" for b in self.verify.breaks)]
        return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]


def review(
    repo: pygit2.Repository, base: str, head: str = "HEAD", since: list[str] | None = None
) -> ReviewReport:
    """Verify every ledger, judging entries the base lacks by the base's trust root."""
    base_commit = gitrepo.resolve_commit(repo, base)
    head_commit = gitrepo.resolve_commit(repo, head)
    base_sha = str(base_commit.id)
    older = verify.trust_at_entry_head(repo)
    base_trust: list[list[AllowedSigner]] = []

    def is_new(entry: dict[str, Any]) -> bool:
        sha = entry.get("git_head")
        return not isinstance(sha, str) or not is_ancestor(repo, sha, base_sha)

    def trust(entry: dict[str, Any]) -> list[AllowedSigner]:
        if not is_new(entry):
            return older(entry)
        if not base_trust:
            base_trust.append(authz.trusted_signers(base_commit))
        return base_trust[0]

    rows: list[Row] = []

    def collect(
        rid: str, line: int, entry: dict[str, Any], signer: authz.Signer | None, problem: str | None
    ) -> None:
        if not is_new(entry):
            return
        rows.append(
            Row(
                rid,
                line,
                entry["kind"],
                entry["outcome"],
                entry["from_state"],
                entry["to_state"],
                signer.principal if signer else None,
                entry["rationale"],
                entry.get("git_head"),
                "ok" if problem is None else f"refused: {problem}",
            )
        )

    report = verify.verify_repository(repo, since=since, trust=trust, on_entry=collect)
    return ReviewReport(base_sha, str(head_commit.id), report, rows)
