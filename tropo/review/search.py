"""Text ranking over graph nodes, scored the way vivary-tropo 0.5.x scores them.

Pure functions: a :class:`Record` per node carries the small sources (id, title,
frontmatter, path, edges); the body comes from a :class:`BodySource`, which answers
phrase and term questions without handing over every body (the on-disk index does).
A word-boundary count of ``term`` equals the number of ``\\w+`` runs equal to it, so
counting tokens once per blob gives exactly what a regex per query would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Protocol

STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i",
    "in", "is", "it", "of", "on", "or", "our", "the", "this", "to", "we", "what", "where",
    "which", "who", "why",
})
DEFAULT_SNIPPET = 160
_TERM_RE = re.compile(r"[a-z0-9]+")
_WORD_RE = re.compile(r"\w+")
_SPACE_RE = re.compile(r"\s+")

# (phrase weight, term weight, reason) per source, in upstream's order.
ID_TITLE = (120, 40, "title/id match")
FRONTMATTER = (80, 24, "frontmatter match")
PATH = (60, 16, "path match")
BODY = (40, 10, "body match")
EDGE_TEXT = (30, 8, "edge context match")
EDGE_FILTER_BONUS = 20


def query_terms(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` tokens minus stopwords; all of them if only stopwords."""
    raw = _TERM_RE.findall(text.lower())
    return [t for t in raw if t not in STOPWORDS] or raw


def word_counts(lowered: str) -> dict[str, int]:
    """How often each ``[a-z0-9]+`` word stands alone (between non-word characters)."""
    counts: dict[str, int] = {}
    for word in _WORD_RE.findall(lowered):
        if _TERM_RE.fullmatch(word):
            counts[word] = counts.get(word, 0) + 1
    return counts


def stringify(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(stringify(v) for v in value)
    if isinstance(value, dict):
        return " ".join(f"{k}: {stringify(v)}" for k, v in sorted(value.items()))
    return "" if value is None else str(value)


def frontmatter_text(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}: {stringify(v)}" for k, v in sorted(fields.items()))


@dataclass(frozen=True)
class Record:
    """One node as the ranking sees it; ``key`` names its body in the BodySource."""

    id: str
    type: str | None
    path: str
    title: str
    frontmatter: str
    edges: tuple[tuple[str, str], ...]  # outbound, non-broken (field, to)
    key: str = ""  # empty: no body

    def edge_dicts(self) -> list[dict[str, str]]:
        return [{"field": f, "to": t} for f, t in self.edges]


class BodySource(Protocol):
    def phrase_keys(self, phrase: str) -> set[str]:
        """Keys whose lowercased body contains ``phrase``."""

    def term_counts(self, terms: Sequence[str]) -> dict[str, dict[str, int]]:
        """key -> {term: standalone count} for the bodies containing any term."""

    def body(self, key: str) -> str:
        """The body text (frontmatter removed) for a snippet."""


@dataclass(frozen=True)
class Filters:
    types: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    edges: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, list[str]]:
        return {"type": list(self.types), "path": list(self.paths), "edge": list(self.edges)}

    def admit(self, r: Record) -> bool:
        if self.types and (r.type or "") not in self.types:
            return False
        if self.paths and not any(fnmatchcase(r.path, p.replace("\\", "/")) for p in self.paths):
            return False
        return all(_edge_matches(r.edges, spec) for spec in self.edges)


def _edge_matches(edges: Iterable[tuple[str, str]], spec: str) -> bool:
    name, _, target = spec.partition(":")
    name, target = name.strip(), target.strip()
    return any((not name or f == name) and (not target or t == target) for f, t in edges)


def score_text(phrase: str, terms: Sequence[str], source: str) -> tuple[bool, int]:
    """(phrase found, sum of standalone term counts) in ``source``, case-insensitively."""
    if not source:
        return False, 0
    low = source.lower()
    found = bool(phrase) and phrase in low
    total = 0
    counts: dict[str, int] | None = None
    for term in terms:
        if term in low:
            if counts is None:
                counts = word_counts(low)
            total += counts.get(term, 0)
    return found, total


@dataclass
class Hit:
    record: Record
    score: int
    reasons: list[str] = field(default_factory=list)


def rank(records: Iterable[Record], text: str, bodies: BodySource, *, filters: Filters,
         k: int) -> list[Hit]:
    """The top ``k`` records by score, ties broken by path then id; zero scores dropped."""
    phrase = text.lower().strip()
    terms = query_terms(text)
    admitted = [r for r in records if filters.admit(r)]
    phrase_keys = bodies.phrase_keys(phrase) if phrase else set()
    body_counts = bodies.term_counts(terms) if terms else {}
    needles = [n for n in (phrase, *terms) if n]
    hits: list[Hit] = []
    for r in admitted:
        edge_text = " ".join(f"{f} {t}" for f, t in r.edges)
        if not filters.edges and r.key not in phrase_keys and r.key not in body_counts:
            hay = "\0".join((r.id, r.title, r.frontmatter, r.path, edge_text)).lower()
            if not any(n in hay for n in needles):
                continue  # nothing can score: skip the per-source work
        hit = Hit(r, 0)
        for source, weights in ((f"{r.id} {r.title}", ID_TITLE), (r.frontmatter, FRONTMATTER),
                                (r.path, PATH)):
            _add(hit, *score_text(phrase, terms, source), weights)
        counts = body_counts.get(r.key, {})
        _add(hit, r.key in phrase_keys, sum(counts.get(t, 0) for t in terms), BODY)
        _add(hit, *score_text(phrase, terms, edge_text), EDGE_TEXT)
        if filters.edges:
            hit.score += EDGE_FILTER_BONUS * len(filters.edges)
            hit.reasons.append("edge filter match")
        if hit.score > 0:
            hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.record.path, h.record.id))
    return hits[: max(0, k)]


def _add(hit: Hit, found: bool, total: int, weights: tuple[int, int, str]) -> None:
    if found or total:
        hit.score += (weights[0] if found else 0) + total * weights[1]
        hit.reasons.append(weights[2])


def snippet(source: str, text: str, limit: int) -> str | None:
    """About ``limit`` characters of ``source`` around the first needle, ``...`` where cut."""
    if limit <= 0:
        return None
    flat = _SPACE_RE.sub(" ", source).strip()
    if not flat:
        return None
    if len(flat) <= limit:
        return flat
    low = flat.lower()
    starts = [i for n in [text.lower().strip(), *query_terms(text)] if n
              for i in [low.find(n)] if i >= 0]
    start = min(starts) if starts else 0
    left = max(0, start - limit // 2)
    right = min(len(flat), left + limit)
    if right - left < limit:
        left = max(0, right - limit)
    out = flat[left:right].strip()
    return ("..." if left > 0 else "") + out + ("..." if right < len(flat) else "")


def hit_dict(hit: Hit, text: str, bodies: BodySource, *, snippet_chars: int, explain: bool,
             with_edges: bool) -> dict[str, Any]:
    """One result as vivary-tropo prints it."""
    r = hit.record
    out: dict[str, Any] = {"id": r.id, "type": r.type, "path": r.path, "title": r.title,
                           "score": hit.score}
    body = bodies.body(r.key) if r.key and snippet_chars > 0 else ""
    snip = snippet(body or r.frontmatter or r.title, text, snippet_chars)
    if snip:
        out["snippet"] = snip
    if explain:
        out["reasons"] = list(hit.reasons)
    if explain or with_edges:
        out["edges"] = r.edge_dicts()
    return out
