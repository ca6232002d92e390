"""An adversary writes the transcript: whatever surrounds a key, the key never survives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tropo.redact import redact

ALNUM = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=24, max_size=48)
AROUND = st.text(st.characters(codec="utf-8", exclude_characters="abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+/="), max_size=30)


@settings(max_examples=300)
@given(prefix=st.sampled_from(["sk-", "sk-ant-", "ghp_", "github_pat_", "xoxb-"]), body=ALNUM,
       before=AROUND, after=AROUND)
def test_tokens_never_survive(prefix: str, body: str, before: str, after: str) -> None:
    token = prefix + body
    assert token not in redact(f"{before}{token}{after}")
    assert body not in redact(f"{before}{token}{after}")


@settings(max_examples=200)
@given(key=st.sampled_from(["password", "API_KEY", "db_secret", "token", "apikey"]),
       value=st.text("abcdefghijklmnopqrstuvwxyz0123456789!@$%^&*", min_size=6, max_size=30),
       sep=st.sampled_from(["=", ": ", " = ", ":"]))
def test_assigned_secrets_never_survive(key: str, value: str, sep: str) -> None:
    assert value not in redact(f"export {key}{sep}{value} && make")


def test_ordinary_commands_are_left_alone() -> None:
    for text in ("pytest -q tests/test_x.py", "git commit -m 'fix: thing'", "make lint", "ls -la src"):
        assert redact(text) == text
