"""The per-run registry of the agent groups a foreground engine runs, against an adversary
who writes whatever bytes it likes under `.git/vivary/run-agents`: only a live group
leader whose start time matches its record is ever signalled; a run cancelled before
the record existed still has the group stopped as it registers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.agents import groups
from strato.runs.dispatch import agentgroups
from tests.support.flows import planned
from tropo.fs.private import PlantedLink
from tropo.git.repo import require

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading a group of its own, as run_process starts an agent."""
    proc = subprocess.Popen(SLEEP, start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _record(root: Path, run_id: str, name: str, body: bytes) -> Path:
    folder = root / ".git" / "vivary" / "run-agents" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(body)
    return path


def _true(pid: int) -> bytes:
    return json.dumps({"pid": pid, "start": groups.started(pid)}).encode()


def test_a_matching_record_has_its_group_stopped(repo_dir: Path, leader: subprocess.Popen[bytes]) -> None:
    _record(repo_dir, "r1", f"{leader.pid}.json", _true(leader.pid))
    counts = agentgroups.stop_all(require(repo_dir), "r1", grace_s=5)
    assert counts == {"claimed": 1, "reaped": 1, "gone": 0, "unresolved": 0}
    assert leader.wait() == -15  # SIGTERM ended it


def test_a_reused_pid_or_a_process_in_another_group_is_never_signalled(
    repo_dir: Path, leader: subprocess.Popen[bytes]
) -> None:
    follower = subprocess.Popen(SLEEP)  # in our group: it leads none
    try:
        start = groups.started(leader.pid)
        assert start is not None
        reused = json.dumps({"pid": leader.pid, "start": start - 1}).encode()  # an earlier program's pid
        stale = _record(repo_dir, "r1", f"{leader.pid}.json", reused)
        _record(repo_dir, "r1", f"{follower.pid}.json", _true(follower.pid))
        counts = agentgroups.stop_all(require(repo_dir), "r1")
        assert counts == {"claimed": 2, "reaped": 0, "gone": 2, "unresolved": 0}
        assert leader.poll() is None and follower.poll() is None
        assert not stale.exists()  # a record of a gone agent is dropped
    finally:
        follower.kill()
        follower.wait()


def test_a_planted_link_is_refused_and_a_linked_record_is_not_read(
    repo_dir: Path, tmp_path: Path, leader: subprocess.Popen[bytes]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"{leader.pid}.json").write_bytes(_true(leader.pid))
    folder = repo_dir / ".git" / "vivary" / "run-agents"
    folder.mkdir(parents=True)
    (folder / "r1").symlink_to(outside)
    with pytest.raises(PlantedLink):
        agentgroups.stop_all(require(repo_dir), "r1")
    (folder / "r2").mkdir()
    (folder / "r2" / f"{leader.pid}.json").symlink_to(outside / f"{leader.pid}.json")
    assert agentgroups.stop_all(require(repo_dir), "r2")["claimed"] == 0
    assert leader.poll() is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.one_of(st.just("LEADER"), st.from_regex(r"[0-9a-z.]{1,12}\.json", fullmatch=True)),
    body=st.one_of(
        st.binary(max_size=300),
        st.fixed_dictionaries({
            "pid": st.one_of(st.just("LEADER"), st.integers(-5, 1), st.integers(), st.text(max_size=5)),
            "start": st.one_of(st.integers(), st.floats(), st.none(), st.text(max_size=5)),
        }),
    ),
)
def test_no_record_an_adversary_writes_signals_a_process_it_does_not_name_exactly(
    repo_dir: Path, leader: subprocess.Popen[bytes], name: str, body: bytes | dict[str, object]
) -> None:
    start = groups.started(leader.pid)
    if name == "LEADER":
        name = f"{leader.pid}.json"
    if isinstance(body, dict):
        doc = {k: leader.pid if v == "LEADER" else v for k, v in body.items()}
        if doc == {"pid": leader.pid, "start": start}:
            return  # the one exact record: the test above stops it
        body = json.dumps(doc).encode()
    _record(repo_dir, "adv", name, body)
    counts = agentgroups.stop_all(require(repo_dir), "adv", grace_s=0.1)
    assert counts["reaped"] == counts["unresolved"] == 0
    assert leader.poll() is None and groups.started(leader.pid) == start


def test_a_run_cancelled_before_its_agent_registered_has_the_group_stopped_at_once(tmp_path: Path) -> None:
    _, runs = planned(tmp_path)
    runs.cancel("r1")
    agent = subprocess.Popen(SLEEP, start_new_session=True)
    try:
        with agentgroups.registered(runs, "r1", grace_s=5) as on_start:
            on_start(agent.pid)
            assert agent.wait() == -15
            folder = Path(runs.repo.path) / "vivary" / "run-agents" / "r1"
            assert [p.name for p in folder.glob("*.json")] == [f"{agent.pid}.json"]
        assert list(folder.glob("*.json")) == []  # removed when the block ended
    finally:
        agent.kill()
        agent.wait()
