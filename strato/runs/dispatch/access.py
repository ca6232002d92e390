"""What a fanout needs of the workspace's runs (`strato.runs.service.Runs` is one; a
worker's view of a shared run is another): the service drives fanouts, so the fanout
modules name only the part they use."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from strato.agents.config import AgentsConfig
from strato.runs.engine.machine import Engine
from strato.runs.store import Outcome, RunSnapshot
from tropo.git.types import Repository


class RunAccess(Protocol):
    """What a fanout needs of the workspace's runs (`strato.runs.service.Runs` is
    one): the service drives fanouts, so this module names only the part it uses."""

    repo: Repository
    root: Path

    @property
    def config(self) -> AgentsConfig: ...

    @property
    def pacing_dir(self) -> Path: ...

    def load(self, run_id: str) -> RunSnapshot: ...

    def engine(self, snap: RunSnapshot, judge: bool = True) -> Engine: ...

    def command_refusal(self, snap: RunSnapshot, command: str) -> str | None: ...

    def preflight(self, snap: RunSnapshot) -> None: ...

    def apply(
        self, run_id: str, op: str, action: Callable[[Engine], bool | None], **detail: Any
    ) -> Outcome: ...
