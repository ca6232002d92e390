"""How a task's question and filters select claims: its ranking terms (stopwords
out), the words a content match may name, whole-word matching and the filter records.
Part of the capsule contract: the compiler ranks with these and the verifier
recomputes them, so the two cannot disagree about what a question asked.
"""

from __future__ import annotations

import re
from typing import Any

from tropo.governed.bounds import nonblank

FILTER_FIELDS = ("fact", "label", "path", "repository", "branch")

# Words too generic to rank anything; part of the capsule contract because a
# question-match signal is only valid for a term this list lets through.
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "has",
        "have",
        "does",
        "with",
        "this",
        "that",
        "its",
        "any",
        "not",
        "which",
        "what",
        "who",
        "how",
        "why",
        "should",
        "would",
        "could",
        "can",
        "will",
        "into",
        "from",
        "about",
        "local",
        "current",
        "currently",
        "reflects",
        "truth",
        "shared",
        "checkout",
        "checkouts",
        "repository",
        "repositories",
        "repo",
        "repos",
        "branch",
        "branches",
        "remote",
        "remotes",
        "worktree",
        "worktrees",
        "commit",
        "commits",
        "dev",
        "git",
    ]
)
_TERM = re.compile(r"[a-z0-9][a-z0-9-]*")
_CONTENT_TERM = re.compile(r"[^\W_]+")


def question_terms(question: str) -> list[str]:
    """The ranking terms of a question: lowercase words of 3+ characters, no
    stopwords, first occurrence order."""
    terms: list[str] = []
    for token in _TERM.findall(question.lower()):
        if len(token) >= 3 and token not in STOPWORDS and token not in terms:
            terms.append(token)
    return terms


def content_terms(question: str) -> set[str]:
    """The words a content match's term must be one of: every lowercase word, any length."""
    return set(_CONTENT_TERM.findall(question.lower()))


def word_match(term: str, value: str) -> bool:
    """`term` occurs in `value` as a whole word (ASCII letters and digits bound it)."""
    pattern = r"(^|[^a-z0-9])" + re.escape(term) + r"([^a-z0-9]|$)"
    return bool(value) and re.search(pattern, value.lower()) is not None


def parse_filters(filters: Any) -> list[dict[str, str]] | None:
    """Task filters as `{field, operator, value}`, or None when any is malformed."""
    if filters is None:
        return []
    if not isinstance(filters, list):
        return None
    parsed = []
    for item in filters:
        if not isinstance(item, dict) or item.get("field") not in FILTER_FIELDS:
            return None
        if ("equals" in item) == ("includes" in item):
            return None
        operator = "equals" if "equals" in item else "includes"
        if not nonblank(item[operator]):
            return None
        parsed.append({"field": item["field"], "operator": operator, "value": item[operator]})
    return parsed
