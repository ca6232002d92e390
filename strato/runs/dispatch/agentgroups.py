"""The process groups of the agents a run's engine is running in the foreground (`strato
run`, or an MCP server driving a run's steps), registered per run so a cancel from
another process can stop them: ``.git/vivary/run-agents/<run-id>/<pid>.json`` holds the
agent's pid (the leader of its own group: :func:`strato.agents.process.run_process`
starts each in one), and its start time, so a pid the kernel has since reused for
another program is never signalled. A record lives while its agent runs: the process
that wrote it removes it when the agent has ended (and its group was killed).

Who controls these bytes: any program running as this user in the repository may
write a record, so one names no more than a process that program could signal itself.
Even so, only a live process whose start time matches the record and that leads its
own group (never ours, never init) is stopped; anything else is counted `gone`."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from strato.agents import groups
from strato.runs.store import RunSnapshot
from tropo.fs.atomic import write_atomic
from tropo.git.repo import private_dir
from tropo.git.types import Repository

FOLDER = "run-agents"
MAX_RECORD = 256  # bytes: a record is two small numbers


class RunsHere(Protocol):
    """The runs whose agents are registered (`strato.runs.service.Runs`, a fanout's view of it)."""

    repo: Repository

    def load(self, run_id: str) -> RunSnapshot: ...


def _folder(repo: Repository, run_id: str, create: bool = False) -> Path:
    return private_dir(repo, FOLDER, run_id, create=create)


@contextlib.contextmanager
def registered(
    runs: RunsHere, run_id: str, grace_s: float | None = None
) -> Iterator[Callable[[int], None]]:
    """An `on_start` for the run's agent calls: each group is recorded as it starts, and
    its record removed when the block ends. A cancel that settled the run before the
    record existed could not see it, so the run is asked once the record is written:
    cancelled already, the group is stopped here."""
    made: list[Path] = []

    def on_start(pid: int) -> None:
        start = groups.started(pid)
        if start is None:  # ended already: run_process kills what is left of its group
            return
        path = _folder(runs.repo, run_id, create=True) / f"{pid}.json"
        write_atomic(path, json.dumps({"pid": pid, "start": start}).encode(), fsync=False)
        made.append(path)
        if runs.load(run_id).state["status"] == "cancelled":
            groups.stop(pid, grace_s)

    try:
        yield on_start
    finally:
        for path in made:
            path.unlink(missing_ok=True)


def stop_all(repo: Repository, run_id: str, grace_s: float | None = None) -> dict[str, int]:
    """Stop every registered agent group of the run (SIGTERM, SIGKILL after `grace_s`,
    None: `groups.grace()`):
    how many records it found (`claimed`), groups it `reaped`, found `gone` (the agent
    ended, or its pid now names another process) and left `unresolved` (a member of the
    group still alive). A record of a gone agent is removed."""
    counts = {"claimed": 0, "reaped": 0, "gone": 0, "unresolved": 0}
    folder = _folder(repo, run_id)
    if not folder.is_dir():
        return counts
    for path in sorted(folder.glob("*.json")):
        record = _record(path)
        if record is None:
            continue
        pid, start = record
        counts["claimed"] += 1
        if groups.started(pid) != start or not groups.leads(pid) or pid == os.getpgrp():
            counts["gone"] += 1
            path.unlink(missing_ok=True)
            continue
        groups.stop(pid, grace_s)
        counts["unresolved" if groups.members(pid) else "reaped"] += 1
    return counts


def _record(path: Path) -> tuple[int, int] | None:
    """A record's pid and start time; None for anything else (a planted link, a file
    that is not one of ours)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_RECORD + 1)
    try:
        doc = json.loads(raw) if len(raw) <= MAX_RECORD else None
    except ValueError:
        return None
    if not isinstance(doc, dict) or path.stem != str(doc.get("pid")):
        return None
    pid, start = doc.get("pid"), doc.get("start")
    if type(pid) is not int or type(start) is not int or pid <= 1:
        return None
    return pid, start
