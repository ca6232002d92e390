"""OpenSSH ``allowed_signers`` files: who may sign, for which namespaces, and when.

Supported options are ``namespaces=`` (patterns and ``!`` negations matched as OpenSSH
does), ``valid-after=`` and ``valid-before=``;
``cert-authority`` and anything else make the file unusable, with a message naming the
line, because a trust root we only half understand must not be half applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from strato.guard.sshsig import KEY_TYPES, PublicKey, SignatureError

_TIME = re.compile(r"^(\d{8})(\d{4})?(\d{2})?(Z)?$")


class SignersError(ValueError):
    """The allowed signers file cannot be used as a trust root."""


@dataclass(frozen=True)
class AllowedSigner:
    principals: tuple[str, ...]
    key: PublicKey
    namespaces: tuple[str, ...] | None
    valid_after: int | None  # epoch seconds
    valid_before: int | None

    def allows(self, namespace: str, at: int) -> bool:
        if self.namespaces is not None and not match_list(namespace, self.namespaces):
            return False
        if self.valid_after is not None and at < self.valid_after:
            return False
        return self.valid_before is None or at < self.valid_before


def _glob(pattern: str, text: str) -> bool:
    """OpenSSH's ``match_pattern``: only ``*`` and ``?`` are special (no ``[...]``)."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, re.DOTALL) is not None


def match_list(text: str, patterns: tuple[str, ...]) -> bool:
    """OpenSSH's ``match_pattern_list``, for a line's namespaces and its principals alike:
    a matching ``!pattern`` refuses whatever else matches; otherwise one plain pattern
    must match."""
    positive = False
    for pat in patterns:
        if pat.startswith("!"):
            if _glob(pat[1:], text):
                return False
        elif _glob(pat, text):
            positive = True
    return positive


def _time(value: str, lineno: int) -> int:
    m = _TIME.match(value)
    if not m:
        raise SignersError(f"allowed_signers line {lineno}: bad time {value!r} (YYYYMMDD[HHMM[SS]][Z])")
    text = m.group(1) + (m.group(2) or "0000") + (m.group(3) or "00")
    try:
        moment = datetime.strptime(text, "%Y%m%d%H%M%S")
    except ValueError as exc:
        raise SignersError(f"allowed_signers line {lineno}: bad time {value!r}") from exc
    # OpenSSH reads times without Z as local time; we read all as UTC so that the
    # decision does not depend on the verifying machine's timezone.
    return int(moment.replace(tzinfo=UTC).timestamp())


def _split_options(text: str, lineno: int) -> tuple[list[str], str]:
    """Split the leading option list (quoted values may hold commas and spaces)."""
    options, current, quoted, i = [], "", False, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            options.append(current)
            current = ""
            i += 1
            continue
        elif ch.isspace() and not quoted:
            break
        current += ch
        i += 1
    if quoted:
        raise SignersError(f"allowed_signers line {lineno}: unterminated quote")
    options.append(current)
    return options, text[i:].strip()


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def parse_line(line: str, lineno: int) -> AllowedSigner | None:
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    principals, _, rest = text.partition(" ")
    rest = rest.strip()
    namespaces: tuple[str, ...] | None = None
    after = before = None
    if rest.split(" ", 1)[0] not in KEY_TYPES:
        options, rest = _split_options(rest, lineno)
        for option in options:
            name, eq, value = option.partition("=")
            name = name.lower()
            if name == "cert-authority":
                raise SignersError(
                    f"allowed_signers line {lineno}: cert-authority is not supported; "
                    "list each signer's own key"
                )
            if name == "namespaces" and eq:
                namespaces = tuple(n.strip() for n in _unquote(value).split(",") if n.strip())
            elif name == "valid-after" and eq:
                after = _time(_unquote(value), lineno)
            elif name == "valid-before" and eq:
                before = _time(_unquote(value), lineno)
            else:
                raise SignersError(f"allowed_signers line {lineno}: unsupported option {option!r}")
    fields = rest.split()
    if len(fields) < 2:
        raise SignersError(
            f"allowed_signers line {lineno}: expected '<principals> [options] <keytype> <base64>'"
        )
    if fields[0] not in KEY_TYPES:
        raise SignersError(f"allowed_signers line {lineno}: unsupported key type {fields[0]!r}")
    try:
        key = PublicKey.from_openssh(fields[0], fields[1])
    except SignatureError as exc:
        raise SignersError(f"allowed_signers line {lineno}: {exc}") from exc
    names = tuple(p for p in _unquote(principals).split(",") if p)
    if not names:
        raise SignersError(f"allowed_signers line {lineno}: no principal")
    return AllowedSigner(names, key, namespaces, after, before)


def parse(text: str) -> list[AllowedSigner]:
    # lines end at "\n" only, as OpenSSH reads them (str.splitlines also splits at U+2028, U+0085, ...)
    return [s for n, line in enumerate(text.split("\n"), 1) if (s := parse_line(line, n))]


def find(
    signers: list[AllowedSigner], key: PublicKey, namespace: str, at: int, principal: str | None = None
) -> AllowedSigner | None:
    """The first line that lists ``key`` and allows ``namespace`` at time ``at`` (and,
    given a ``principal``, names it, as ``ssh-keygen -Y verify -I`` requires)."""
    for signer in signers:
        if (
            signer.key.blob == key.blob
            and signer.allows(namespace, at)
            and (principal is None or match_list(principal, signer.principals))
        ):
            return signer
    return None
