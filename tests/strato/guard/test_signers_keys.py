"""allowed_signers keys: read strictly, as ssh-keygen reads them."""

from __future__ import annotations

import pytest

from strato.guard import signers
from tests.strato.guard.conftest import Key


def test_a_key_that_is_not_strict_base64_or_of_another_type_is_refused(key: Key) -> None:
    kind, b64 = key.public.split()
    with pytest.raises(signers.SignersError, match="line 1: public key is not valid base64"):
        signers.parse(f"alice {kind} {b64[:12]}!{b64[12:]}")
    with pytest.raises(signers.SignersError, match="line 1: key says ssh-ed25519, line says ssh-rsa"):
        signers.parse(f"alice ssh-rsa {b64}")
