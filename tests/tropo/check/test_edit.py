from __future__ import annotations

import pytest

from tropo.check import edit, frontmatter


def test_set_key_changes_only_that_line() -> None:
    text = "---\nproject: p\nassignee: old\nstatus: active   # keep\n---\n# Body\n"
    assert edit.set_key(text, "assignee", "agent-7") == (
        "---\nproject: p\nassignee: agent-7\nstatus: active   # keep\n---\n# Body\n")


def test_set_key_appends_and_quotes_when_needed() -> None:
    text = "---\r\nproject: p\r\n---\r\nbody"
    new = edit.set_key(text, "assignee", "true")
    assert new == '---\r\nproject: p\r\nassignee: "true"\r\n---\r\nbody'
    assert frontmatter.parse(new).fields["assignee"] == "true"


def test_set_key_on_a_file_without_frontmatter() -> None:
    assert edit.set_key("# T\n", "assignee", "a") == "---\nassignee: a\n---\n# T\n"


def test_set_key_replaces_a_block_value() -> None:
    text = "---\nassignee:\n  - a\n  - b\nx: 1\n---\n"
    assert edit.set_key(text, "assignee", "c") == "---\nassignee: c\nx: 1\n---\n"


def test_edits_refuse_broken_frontmatter() -> None:
    with pytest.raises(edit.EditError):
        edit.set_key("---\na: [\n---\n", "b", "c")
    with pytest.raises(edit.EditError):
        edit.remove_keys("---\na: 1\na: 2\n---\n", ["a"])
