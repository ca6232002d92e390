"""A signer's ``valid-after``/``valid-before`` window is applied at the moment of signing.

Through the public door (``strato guard sign`` then ``override`` as subprocesses, then
``verify``): an expired signer and a not-yet-valid one are refused, a signer inside its
window is accepted. The expired case is the one that catches a guard that forgets the
clock (checking at time 0 puts every ``valid-before`` in the future).
"""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime, timedelta

import pytest

from strato.guard import signers, store
from tests.support.guard import POLICY, Key, Workspace, out, run
from tests.support.guard import WINDOW_ASK as ASK
from tests.support.guard import WINDOW_RID as RID
from tests.support.repos import git


def _day(offset_days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=offset_days)).strftime("%Y%m%d")


def _at_review(ws: Workspace, key: Key, options: str) -> None:
    ws.trust(key.signers_line("alice@example.com", options))
    ws.commit({"NOTES.md": "n\n"}, "work under review")
    reg = run(ws, "register", stdin={"resource_id": RID, **copy.deepcopy(POLICY)})
    assert reg.returncode == 0, reg.stderr
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert run(ws, "transition", stdin=move).returncode == 0


def _override(ws: Workspace, key: Key) -> tuple[int, dict[str, object], str]:
    signed = run(ws, "sign", "--key", str(key.path), stdin={"kind": "override", **ASK})
    assert signed.returncode == 0, signed.stderr
    proc = run(ws, "override", "--json", stdin={**ASK, "authorization": signed.stdout})
    return proc.returncode, out(proc), proc.stderr


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("expired", f'valid-after="20000101",valid-before="{_day(-1)}"'),
        ("not yet valid", f'valid-after="{_day(2)}"'),
        ("expired long ago", 'valid-before="19991231Z"'),
    ],
)
def test_a_signer_outside_its_window_is_refused(
    ws: Workspace, key: Key, name: str, options: str
) -> None:
    _at_review(ws, key, options)
    tip = git(ws.root, "rev-parse", store.REF)
    code, answer, stderr = _override(ws, key)
    assert code == 1, (name, answer)
    assert answer["error_type"] == "override_unavailable", answer
    assert "is not an allowed signer" in str(answer["message"])
    assert stderr.count("\n") == 1
    assert git(ws.root, "rev-parse", store.REF) == tip  # nothing was written
    hist = out(run(ws, "history", stdin={"resource_id": RID}))
    assert hist["current_state"] == "review"


def test_a_signer_inside_its_window_is_accepted_and_verifies(ws: Workspace, key: Key) -> None:
    _at_review(ws, key, f'valid-after="{_day(-2)}",valid-before="{_day(2)}"')
    code, answer, _ = _override(ws, key)
    assert code == 0 and answer["authorized_by"] == "alice@example.com", answer
    verified = run(ws, "verify", "--json")
    assert verified.returncode == 0, verified.stdout
    assert out(verified)["ok"] is True


def test_the_window_bounds_are_half_open(key: Key) -> None:
    """Inside the window is allowed; a second either side of it is not, and neither is 0."""
    (s,) = signers.parse(
        key.signers_line("a", 'valid-after="20300101000000Z",valid-before="20300102Z"')
    )
    after = int(datetime(2030, 1, 1, tzinfo=UTC).timestamp())
    before = int(datetime(2030, 1, 2, tzinfo=UTC).timestamp())
    assert [s.allows("n", t) for t in (after - 1, after, before - 1, before + 1, 0)] == [
        False,
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("20300101", datetime(2030, 1, 1, tzinfo=UTC)),
        ("203001011230", datetime(2030, 1, 1, 12, 30, tzinfo=UTC)),
        ("20300101123045Z", datetime(2030, 1, 1, 12, 30, 45, tzinfo=UTC)),
    ],
)
def test_window_times_read_hours_minutes_seconds_as_utc(
    key: Key, text: str, moment: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every digit counts, and the verifying machine's timezone does not (mutmut found
    both unpinned: HHMM read from the wrong group, local time instead of UTC)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        (s,) = signers.parse(key.signers_line("a", f'valid-after="{text}"'))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert s.valid_after == int(moment.timestamp())


def test_an_impossible_date_names_the_line(key: Key) -> None:
    with pytest.raises(signers.SignersError, match=r"line 2: bad time '20301301'"):
        signers.parse("# people\n" + key.signers_line("a", 'valid-before="20301301"'))


def test_find_applies_the_window_of_the_line_it_matches(key: Key) -> None:
    lines = key.signers_line("expired", 'valid-before="20200101"') + key.signers_line(
        "current", 'valid-after="20200101"'
    )
    trusted = signers.parse(lines)
    in_2019 = int(datetime(2019, 6, 1, tzinfo=UTC).timestamp())
    in_2030 = int(datetime(2030, 6, 1, tzinfo=UTC).timestamp())
    found = signers.find(trusted, trusted[0].key, "n", in_2019)
    assert found is not None and found.principals == ("expired",)
    found = signers.find(trusted, trusted[0].key, "n", in_2030)
    assert found is not None and found.principals == ("current",)
    only_expired = signers.parse(key.signers_line("expired", 'valid-before="20200101"'))
    assert signers.find(only_expired, trusted[0].key, "n", in_2030) is None
