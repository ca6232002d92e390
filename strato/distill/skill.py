"""A skill candidate: a complete, reviewable ``SKILL.md`` and its evidence.

The draft is built only from the workflow's shape and redacted examples, so the same
transcripts always render the same bytes (and the same revision id); a new occurrence
changes the evidence and so the revision.
"""

from __future__ import annotations

import json
import re

from strato.distill.miner import Workflow
from strato.proposals.proposal import Proposal
from tropo import untrusted
from tropo.redact import redact

SKILL_DIRS = (".claude/skills", ".agents/skills")
MAX_EVIDENCE = 20


def name(workflow: Workflow) -> str:
    """The skill's folder and heading: a slug of the redacted steps (a step is a tool name
    a transcript chose, so it may hold a key)."""
    words = "-then-".join(redact(s).removeprefix("bash:") for s in workflow.steps)
    slug = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")
    return slug[:60].rstrip("-") or "workflow"


def _inline(text: str, limit: int = 120) -> str:
    """Transcript text for one inline code span: redacted, one line, hidden characters
    shown, no backticks (a transcript must not be able to add lines, markup or escape
    sequences to the draft)."""
    return untrusted.line(redact(text.replace("`", "'")), limit)


def _shape(workflow: Workflow) -> str:
    """The workflow's steps as one line (redacted, hidden characters shown)."""
    return untrusted.line(redact(" -> ".join(workflow.steps)))


def render(workflow: Workflow) -> str:
    skill = name(workflow)
    first = workflow.occurrences[0]
    steps = "\n".join(f"{i}. `{_inline(s)}`, e.g. `{_inline(c.text)}`"
                      for i, (s, c) in enumerate(zip(workflow.steps, first, strict=True), 1))
    shape = _shape(workflow)
    evidence = "\n".join(f"- {_inline(occ[0].session)}: {_inline(occ[0].handle)}"
                         for occ in workflow.occurrences[:MAX_EVIDENCE])
    description = json.dumps(f"Use when repeating the workflow {shape}; it was seen {workflow.count} "
                             f"times in {workflow.sessions} sessions.")
    return (f"---\nname: {skill}\ndescription: {description}\n---\n\n"
            f"# {skill}\n\nA workflow the transcripts show on its third strike (draft: review, "
            "rename and tighten before use).\n\n"
            f"## Steps\n\n{steps}\n\n## Check\n\nEach step's command exits 0 before the next one runs.\n\n"
            f"## Evidence\n\n{evidence}\n")


def proposal(workflow: Workflow, base: str | None) -> Proposal:
    skill = name(workflow)
    text = render(workflow)
    shape = _shape(workflow)
    return Proposal(
        "skill", "skill", shape,
        f"skill candidate {skill}: {shape} ({workflow.count}x in {workflow.sessions} sessions)",
        tuple(untrusted.line(redact(f"{occ[0].session} {occ[0].handle}")) for occ in workflow.occurrences),
        {f"{folder}/{skill}/SKILL.md": text for folder in SKILL_DIRS}, base)
