"""The envelope's instants and its evidence lookups, at the inputs the decide suite's
valid baseline never reaches (found by mutation testing, docs/testing.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from strato.decide.envelope import parse_instant, validate
from tests.support import governed as b


def test_instants_in_utc_are_read_with_z_or_an_offset() -> None:
    at = datetime(2026, 7, 26, 12, 0, 30, tzinfo=UTC)
    assert parse_instant("2026-07-26T12:00:30Z") == at
    assert parse_instant("2026-07-26T12:00:30+00:00") == at
    assert parse_instant("2026-07-26T14:00:30+02:00") == at


@pytest.mark.parametrize("text", ["2026-07-26T12:00:30z", "2026-07-26T12:00:30", "2026-07-26Z",
                                  " ", "", "soon", 1785067230])
def test_an_instant_without_a_zone_or_with_a_lowercase_z_is_refused(text: Any) -> None:
    """Vivary's strato reads only an uppercase `Z` as UTC; a naive time has no instant."""
    assert parse_instant(text) is None
    assert "invalid_requested_at" in validate(b.request(requested_at=text))


@pytest.mark.parametrize("capsule", [..., None, ["capsule"], "capsule", {"workspace": "x"},
                                     {"workspace": ["observed_at"]}])
def test_a_request_without_a_capsule_object_is_refused_not_crashed(capsule: Any) -> None:
    codes = validate(b.request(capsule=capsule))
    assert codes[-2:] == ["invalid_capsule", "invalid_capsule_observed_at"]


@pytest.mark.parametrize("workspace", [..., None, "x", ["fingerprint"]])
def test_a_request_whose_workspace_is_not_an_object_is_refused_not_crashed(
        workspace: Any) -> None:
    """The capsule is still checked against a request that names no workspace."""
    assert validate(b.request(workspace=workspace)) == ["invalid_workspace"]
