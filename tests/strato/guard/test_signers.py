"""allowed_signers parsing: the options we honour, and refusal of those we do not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strato.guard import signers
from tests.support.guard import Key, make_key

JAN_2030 = 1893456000


def test_plain_and_comments(key: Key) -> None:
    text = "# people\n\n" + key.signers_line("alice@example.com,bob@example.com")
    (only,) = signers.parse(text)
    assert only.principals == ("alice@example.com", "bob@example.com")
    assert only.allows("anything", 0)


def test_namespaces_and_validity(key: Key) -> None:
    options = 'namespaces="stratum-guard-override,x-*",valid-after="20200101",'
    line = key.signers_line("alice", options + 'valid-before="20300101Z"')
    (s,) = signers.parse(line)
    assert s.allows("stratum-guard-override", JAN_2030 - 1)
    assert s.allows("x-anything", JAN_2030 - 1)
    assert not s.allows("stratum-guard-migrate", JAN_2030 - 1)
    assert not s.allows("stratum-guard-override", JAN_2030)
    assert not s.allows("stratum-guard-override", 1)


@pytest.mark.parametrize(
    ("principals", "named", "found"),
    [
        ("alice@example.com,bob@example.com", "bob@example.com", True),
        ("alice@example.com", "mallory@example.com", False),
        ("*@example.com", "carol@example.com", True),
        ("!mallory@example.com,*@example.com", "mallory@example.com", False),
        ("a?ice", "alice", True),
    ],
)
def test_a_principal_is_found_only_where_the_line_names_it(
    key: Key, principals: str, named: str, found: bool
) -> None:
    """As ``ssh-keygen -Y verify -I``: the line's principals are a pattern list."""
    trusted = signers.parse(key.signers_line(principals))
    assert (signers.find(trusted, trusted[0].key, "n", 0, named) is not None) is found
    assert signers.find(trusted, trusted[0].key, "n", 0) is trusted[0]


@pytest.mark.parametrize(
    ("text", "patterns", "answer"),
    [
        ("a", (), False),
        ("b", ("a",), False),
        ("a", ("a",), True),
        ("a", ("!a",), False),  # a negation alone never matches
        ("b", ("!a",), False),
        ("b", ("!a", "*"), True),
        ("ab", ("*", "!a*"), False),  # a matching negation refuses, wherever it stands
        ("ab", ("!a*", "*"), False),
        ("a\nb", ("a*",), True),  # * and ? match a newline too
        ("a\nb", ("a?b",), True),
        ("a\n", ("a",), False),
    ],
)
def test_a_pattern_list_answers_as_openssh_match_pattern_list(
    text: str, patterns: tuple[str, ...], answer: bool
) -> None:
    assert signers.match_list(text, patterns) is answer


@pytest.mark.parametrize(
    ("principals", "named", "found"),
    [
        ("alice*", "alice\nevil", True),
        ("a?ice", "a\nice", True),
        ("alice", "alice\n", False),
        ("bob*", "alice\nbob", False),
    ],
)
def test_a_principal_with_a_newline_is_matched_as_ssh_keygen_matches_it(
    tmp_path: Path, key: Key, principals: str, named: str, found: bool
) -> None:
    """The recorded principal is the ledger writer's: `*` and `?` match its newline
    in ``ssh-keygen -Y verify -I`` too, and an exact name is matched whole."""
    text = key.signers_line(principals)
    (tmp_path / "allowed").write_text(text)
    (tmp_path / "m").write_text("hi\n")
    subprocess.run(["ssh-keygen", "-Y", "sign", "-f", str(key.path), "-n", "n", str(tmp_path / "m")],
                   check=True, capture_output=True)
    verdict = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(tmp_path / "allowed"), "-I", named, "-n", "n",
         "-s", str(tmp_path / "m.sig")],
        input=b"hi\n", capture_output=True,
    )
    assert (verdict.returncode == 0) is found, verdict.stderr
    trusted = signers.parse(text)
    assert (signers.find(trusted, trusted[0].key, "n", 0, named) is not None) is found


def test_find_takes_the_first_line_whose_namespaces_allow_the_namespace(key: Key) -> None:
    trusted = signers.parse(
        key.signers_line("git-only", 'namespaces="git"') + key.signers_line("guard", 'namespaces="!git,stratum-*"')
    )
    assert [s.principals for s in (signers.find(trusted, trusted[0].key, n, 0) for n in ("git", "stratum-x")) if s] == [
        ("git-only",), ("guard",)
    ]
    assert signers.find(trusted, trusted[0].key, "other", 0) is None

@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("cert-authority", "cert-authority is not supported"),
        ('principals="x"', "unsupported option"),
        ("no-touch-required", "unsupported option"),
        ('valid-after="yesterday"', "bad time"),
        ('namespaces="a', "unterminated quote"),
    ],
)
def test_unsupported_options_make_the_file_unusable(key: Key, options: str, message: str) -> None:
    with pytest.raises(signers.SignersError, match=message):
        signers.parse(key.signers_line("alice", options))


def test_bad_keys_are_refused(key: Key) -> None:
    kind, b64 = key.public.split()
    for line in (f"alice ssh-dss {b64}", f"alice {kind} {b64[:-8]}", f"alice {kind}", "alice"):
        with pytest.raises(signers.SignersError):
            signers.parse(line)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x1c", "\x0b", "\x0c"])
def test_a_line_ends_only_at_a_newline_as_openssh_reads_it(tmp_path: Path, key: Key, separator: str) -> None:
    """A second key hidden after a Unicode line separator in a comment is not a signer:
    ``ssh-keygen -Y verify`` reads the file by ``\\n`` and refuses mallory too."""
    other = make_key(tmp_path, name="mallory")
    text = key.signers_line("alice").rstrip("\n") + " note" + separator + other.signers_line("mallory")
    assert [s.principals for s in signers.parse(text)] == [("alice",)]
    (tmp_path / "allowed").write_text(text)
    (tmp_path / "m").write_text("hi\n")
    subprocess.run(["ssh-keygen", "-Y", "sign", "-f", str(other.path), "-n", "n", str(tmp_path / "m")],
                   check=True, capture_output=True)
    verdict = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(tmp_path / "allowed"), "-I", "mallory", "-n", "n",
         "-s", str(tmp_path / "m.sig")],
        input=b"hi\n", capture_output=True,
    )
    assert verdict.returncode != 0
