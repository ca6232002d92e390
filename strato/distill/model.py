"""The optional model step: an agent may rewrite the text a person reads, within a budget.

The agent is ``[agents.distill]`` in ``.vivary/agents.toml``, read and checked by the
flow engine's own loader (:func:`strato.agents.config.load_config`: an argv with one
``{prompt}`` element, ``timeout_s``), so one file keeps one format; without it nothing
here runs and every proposal stays as the deterministic draft. A workspace file the user
has not approved (``vivary trust``) runs nothing either: a checked-out branch must not
choose a program the post-commit hook starts. The step is skipped and says why
(``skipped``), and the commit is never the worse for it. A rewrite is asked only
for a proposal just staged (new or revised), never twice for one revision, and stops
when ``distillTokens`` (tokens ~ characters / 4, or what the agent reports) are spent.

The answer is the last JSON object the agent prints, ``{"text": "..."}``. It is a
proposal's text, not a decision: it is redacted (hidden characters shown), bounded, and
stored beside the draft (``rewrite`` in the record), and the proposal's id and revision
stay those of the draft, so a model that answers differently each time cannot make a
proposal new again. A memory line stays one line; a skill keeps the draft's frontmatter
(name, description) and its evidence section, the model writes only the body between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.proposals import store
from tropo import untrusted
from tropo.redact import redact

AGENT = "distill"
REWRITTEN = ("memory", "skill")
MAX_LINE = 300
MAX_BODY = 20_000
EVIDENCE = "\n## Evidence\n"


@dataclass
class Outcome:
    """What the step did in one run (the run's ``distill`` key)."""

    agent: str | None = None
    tokens: int = 0
    rewritten: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    over_budget: list[str] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None  # why the agent was not asked at all (an unapproved file)

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "tokens": self.tokens, "rewritten": self.rewritten,
                "failed": self.failed, "over_budget": self.over_budget, "error": self.error,
                "skipped": self.skipped}


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def prompt(record: dict[str, Any]) -> str:
    """The task: what to rewrite, the draft, and the exact answer shape."""
    evidence = "\n".join(f"- {e}" for e in list(record.get("evidence") or [])[:10])
    if record.get("kind") == "skill":
        draft = next(iter(dict(record.get("files") or {}).values()), "")
        ask = ("Rewrite the body of this draft skill (the Markdown between its frontmatter and "
               "its Evidence section) so that an agent can follow it: a clear title, when to use "
               "it, the steps, how to check the result. Keep every command exact.")
    else:
        draft = str(record.get("title"))
        ask = ("Rewrite this lesson as one short line of durable memory: what happened and what "
               "to do next time. Do not invent facts beyond the evidence.")
    return (f"{ask}\n\nDraft:\n{draft}\n\nEvidence:\n{evidence}\n\n"
            'Respond with ONLY a minified JSON object: {"text": "<the rewrite>"}')


def _split(draft: str) -> tuple[str, str]:
    """The draft skill's frontmatter (with its closing fence) and its evidence section."""
    end = draft.find("\n---\n", 4)
    head = draft[: end + 5] if draft.startswith("---\n") and end != -1 else ""
    cut = draft.rfind(EVIDENCE)
    return head, draft[cut:] if cut != -1 else ""


def rewrite(record: dict[str, Any], answer: object) -> dict[str, Any] | str:
    """The stored rewrite for ``answer`` (the agent's last JSON object), or why it is refused."""
    text = answer.get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str) or not text.strip():
        return 'the answer has no "text" string'
    if record.get("kind") == "skill":
        if len(text) > MAX_BODY:
            return f"the skill body is over {MAX_BODY} characters"
        files = {}
        for path, draft in dict(record.get("files") or {}).items():
            head, evidence = _split(str(draft))
            files[str(path)] = f"{head}\n{untrusted.block(redact(text)).strip()}\n{evidence}"
        return {"files": files}
    if len(text) > MAX_LINE * 4:
        return f"the lesson is over {MAX_LINE * 4} characters"
    return {"title": untrusted.line(redact(text), MAX_LINE)}


def rewrite_new(root: Path, pids: list[str], budget: int) -> Outcome:
    """Ask the ``distill`` agent to rewrite the memory lines and skill candidates among
    ``pids`` (just staged), in turn, until ``budget`` tokens are spent."""
    from strato.agents import calls, trust
    from strato.agents import config as agents
    from strato.runs.engine import bounds

    done = Outcome()
    try:
        config = agents.load_config(root)
    except (agents.AgentConfigError, trust.TrustError) as exc:
        done.error = str(exc)
        return done
    spec = config.agents.get(AGENT)
    if AGENT in config.refused and budget > 0 and pids:
        done.skipped = config.refused[AGENT]
    if spec is None or budget <= 0:
        return done
    done.agent = spec.name
    side = store.sidecar(root)
    for pid in pids:
        record = store.get(side, pid)
        if record.get("kind") not in REWRITTEN:
            continue
        ask = prompt(record)
        if done.tokens + tokens(ask) > budget:
            done.over_budget.append(pid)
            continue
        result = calls.call(spec, ask, root, admit=bounds.agent_output)
        text = result.output.get("text") if isinstance(result.output, dict) else None
        done.tokens += max(tokens(ask) + tokens(text if isinstance(text, str) else ""),
                           int(result.usage.get("tokens", 0)))
        change = result.failure or rewrite(record, result.output)
        if isinstance(change, str):
            done.failed[pid] = change[:200]
            continue
        store.decide(side, pid, str(record["status"]), rewrite={**change, "agent": spec.name})
        done.rewritten.append(pid)
    return done
