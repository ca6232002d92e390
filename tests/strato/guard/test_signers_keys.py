"""allowed_signers lines read strictly, as ssh-keygen reads them; every refusal names
its line and what is wrong, since a person has to fix the trust root from it."""

from __future__ import annotations

import pytest

from strato.guard import signers
from tests.support.guard import Key


def test_a_key_that_is_not_strict_base64_or_of_another_type_is_refused(key: Key) -> None:
    kind, b64 = key.public.split()
    with pytest.raises(signers.SignersError, match="line 1: public key is not valid base64"):
        signers.parse(f"alice {kind} {b64[:12]}!{b64[12:]}")
    with pytest.raises(signers.SignersError, match="line 1: key says ssh-ed25519, line says ssh-rsa"):
        signers.parse(f"alice ssh-rsa {b64}")


def test_a_comment_after_the_key_is_allowed(key: Key) -> None:
    (s,) = signers.parse(f"alice {key.public} alice@laptop\n")
    assert s.principals == ("alice",) and s.namespaces is None


def test_empty_quoted_namespaces_allow_none(key: Key) -> None:
    (s,) = signers.parse(key.signers_line("alice", 'namespaces=""'))
    assert s.namespaces == ()
    assert not s.allows("stratum-guard-override", 0)


def _refusal(text: str) -> str:
    with pytest.raises(signers.SignersError) as info:
        signers.parse(text)
    return str(info.value)


def test_each_refusal_names_its_line(key: Key) -> None:
    kind, b64 = key.public.split()
    first = key.signers_line("ok")
    assert _refusal(first + key.signers_line("a", "cert-authority")) == (
        "allowed_signers line 2: cert-authority is not supported; list each signer's own key"
    )
    assert _refusal(first + key.signers_line("a", 'namespaces="x')) == (
        "allowed_signers line 2: unterminated quote"
    )
    assert _refusal(first + key.signers_line("a", 'valid-after="2030"')) == (
        "allowed_signers line 2: bad time '2030' (YYYYMMDD[HHMM[SS]][Z])"
    )
    assert _refusal(first + "alice ssh-ed25519\n") == (
        "allowed_signers line 2: expected '<principals> [options] <keytype> <base64>'"
    )
    assert _refusal(first + f"alice ssh-dss {b64}\n") == (
        "allowed_signers line 2: unsupported option 'ssh-dss'"
    )
    assert _refusal(first + f'alice namespaces="x" ssh-dss {b64}\n') == (
        "allowed_signers line 2: unsupported key type 'ssh-dss'"
    )
    assert _refusal(first + f"alice {kind} {b64[:-8]}\n").startswith(
        "allowed_signers line 2: "
    )
    assert _refusal(first + f'"" {kind} {b64}\n') == "allowed_signers line 2: no principal"
