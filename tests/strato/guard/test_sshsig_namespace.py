"""A signature made for one namespace is refused for another, saying both."""

from __future__ import annotations

from pathlib import Path

import pytest

from strato.guard import sshsig
from tests.support.guard import Key, ssh_sign


def test_the_namespace_refusal_names_both_namespaces(tmp_path: Path, key: Key) -> None:
    sig = sshsig.parse_armor(ssh_sign(key, "stratum-guard-migrate", b"m", tmp_path))
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.check(sig, "stratum-guard-override", b"m")
    assert str(info.value) == (
        "signature is for namespace 'stratum-guard-migrate', expected 'stratum-guard-override'"
    )
