"""Redaction of what looks like a key or token, before text someone else chose is shown
or committed: the one redactor.

Transcripts are private; a candidate may become a tracked file, and a title reaches a
terminal or a report. So every such string passes through :func:`redact` first (see
:mod:`tropo.untrusted`), and a false positive (a long hash) costs only a ``[REDACTED]``
in a draft a person reviews anyway.
"""

from __future__ import annotations

import re

MARK = "[REDACTED]"
_B = r"(?<![A-Za-z0-9])"  # an ASCII word start: `\b` also counts letters like "¹" or "é"
_E = r"(?![A-Za-z0-9])"
_PATTERNS = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL),
    re.compile(_B + r"(sk|rk|pk)-[A-Za-z0-9_-]{16,}"),
    re.compile(_B + r"((ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(_B + r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(_B + r"AKIA[0-9A-Z]{16}" + _E),
    re.compile(_B + r"AIza[0-9A-Za-z_-]{35}" + _E),
    re.compile(_B + r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),  # a JWT
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{10,}"),
    re.compile(r"(?i)(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),  # user:password@host
    re.compile(r"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9_]*(?:password|passwd|secret|token|api[_-]?key)"
               r"[A-Za-z0-9_]*)\s*[=:]\s*(?P<value>[^\s'\"]+)"),
    re.compile(_B + r"(?=[A-Za-z0-9+/_-]*[0-9])(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{40,}={0,2}"),
]


def redact(text: str) -> str:
    """``text`` with every known secret shape replaced by ``[REDACTED]``."""
    for pattern in _PATTERNS:
        if "value" in pattern.groupindex:
            text = pattern.sub(lambda m: m.group(0)[: m.start("value") - m.start(0)] + MARK, text)
        else:
            text = pattern.sub(MARK, text)
    return text
