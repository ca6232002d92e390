"""The private sidecar under ``.git/vivary/heartbeat/``: state, proposals, decisions.

Every file is written whole-or-nothing, proposals first and the run state last, so a
heartbeat killed at any point leaves either the previous state (the next run redoes the
same commits and finds its proposals already stored: nothing is proposed twice) or the
new one. Nothing here is tracked by git, and nothing here is ever pushed.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

from strato.proposals.proposal import Proposal
from tropo.fs.atomic import write_atomic
from tropo.fs.private import private_folder
from tropo.git import gitcli

_ID = re.compile(r"^[a-z-]+-[0-9a-f]{12}$")


class UnknownProposal(Exception):
    """No proposal has that id (exit 2)."""


def today(now: float) -> str:
    """The day a proposal is offered (UTC): what its staging and the report are named by."""
    return datetime.datetime.fromtimestamp(now, datetime.UTC).date().isoformat()


def sidecar(root: Path) -> Path:
    """``.git/vivary/heartbeat``, the heartbeat's private folder (the runner's lock, the
    proposals, the state), never through a planted link."""
    return private_folder(gitcli.git_dir(root), "heartbeat")


def _write_json(path: Path, value: Any) -> None:
    write_atomic(path, (json.dumps(value, indent=1, sort_keys=True) + "\n").encode())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_state(side: Path) -> dict[str, Any]:
    """What the last completed run saw (its HEAD, broken refs, indexed fixes)."""
    state = _read_json(side / "state.json")
    return state if isinstance(state, dict) else {}


def save_state(side: Path, state: dict[str, Any]) -> None:
    _write_json(side / "state.json", state)


def _path(side: Path, pid: str) -> Path:
    if not _ID.match(pid):
        raise UnknownProposal(f"no heartbeat proposal {pid!r} (see `strato heartbeat status`)")
    return side / "proposals" / f"{pid}.json"


def get(side: Path, pid: str) -> dict[str, Any]:
    """A stored proposal with its ``status`` (open, applied, rejected) and revisions."""
    record = _read_json(_path(side, pid))
    if not isinstance(record, dict):
        raise UnknownProposal(f"no heartbeat proposal {pid!r} (see `strato heartbeat status`)")
    return record


def all_records(side: Path) -> list[dict[str, Any]]:
    folder = side / "proposals"
    records = [_read_json(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return [r for r in records if isinstance(r, dict)]


def outcome(side: Path, proposal: Proposal) -> str:
    """What staging a proposal would do: ``new`` (never seen), ``revised`` (new
    evidence), ``known`` (this revision is already staged) or ``rejected`` (a person
    said no to its subject). Reads only."""
    old = _read_json(_path(side, proposal.id))
    if not isinstance(old, dict):
        return "new"
    if old.get("status") == "rejected":
        return "rejected"
    return "known" if old.get("revision") == proposal.revision else "revised"


def offer(side: Path, proposal: Proposal, day: str) -> str:
    """Stage a proposal unless it is ``known`` or ``rejected`` (see :func:`outcome`)."""
    result = outcome(side, proposal)
    if result in ("known", "rejected"):
        return result
    path = _path(side, proposal.id)
    old = _read_json(path)
    record = proposal.as_dict()
    revisions = list(old.get("revisions", [])) if isinstance(old, dict) else []
    record.update(status="open", revisions=[*revisions, proposal.revision], staged=day)
    _write_json(path, record)
    return result


def summary(side: Path) -> dict[str, Any]:
    """What ``status`` answers: the last heartbeat's HEAD and each proposal's state."""
    rows = [{k: r.get(k) for k in ("id", "revision", "kind", "status", "title")} for r in all_records(side)]
    return {"last_head": load_state(side).get("head"), "proposals": rows}


def title(record: dict[str, Any]) -> str:
    """What a person reads: the model's rewrite when there is one, else the draft's."""
    rewrite = record.get("rewrite")
    return str(rewrite.get("title") if isinstance(rewrite, dict) and rewrite.get("title")
               else record.get("title"))


def files(record: dict[str, Any]) -> dict[str, str]:
    """What ``apply`` writes: the model's rewrite of the files when there is one."""
    rewrite = record.get("rewrite")
    chosen = rewrite.get("files") if isinstance(rewrite, dict) and rewrite.get("files") else None
    return {str(k): str(v) for k, v in dict(chosen or record.get("files") or {}).items()}


def decide(side: Path, pid: str, status: str, **extra: Any) -> dict[str, Any]:
    record = get(side, pid)
    record.update(status=status, **extra)
    _write_json(_path(side, pid), record)
    return record
