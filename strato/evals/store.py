"""An eval run is the ref `refs/vivary/evals/<id>`: a chain of commits (the chain store,
:mod:`tropo.git.chain`) whose tree holds `eval.json` (what was run: the task set's
digests, the flow, the agent, lanes, repeats, seed) and `results.json` (one result per
task and trial, in the order they finished). One commit per result, so a killed run
keeps every result it finished and travels with `git push` like any ref."""

from __future__ import annotations

import re
from typing import Any

from tropo.git import chain
from tropo.git.objects import entry_oid
from tropo.git.refs import read_ref, ref_names
from tropo.git.types import Repository

PREFIX = "refs/vivary/evals/"
EVAL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
CONFIG, RESULTS = "eval.json", "results.json"


class EvalNotFound(Exception):
    """No eval run of that id here (refused: exit 1)."""


class EvalMismatch(Exception):
    """An eval of that id exists with another configuration (refused: exit 1)."""


def ref(eval_id: str) -> str:
    return PREFIX + eval_id


def eval_ids(repo: Repository) -> list[str]:
    return sorted(name[len(PREFIX):] for name in ref_names(repo, PREFIX))


def load(repo: Repository, eval_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The eval's configuration and its results so far."""
    tip = read_ref(repo, ref(eval_id)) if EVAL_ID.match(eval_id) else None
    if tip is None:
        raise EvalNotFound(f"no eval run {eval_id!r} (see `strato eval list`)")
    return chain.read(repo, tip, CONFIG), chain.read(repo, tip, RESULTS) or []


def start(repo: Repository, eval_id: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Begin the eval, or take up the one already begun with the same configuration:
    the results it already has."""

    def decide(tip: str | None) -> tuple[chain.Decision, list[dict[str, Any]]]:
        if tip is None:
            files = {CONFIG: chain.encode(config, indent=2), RESULTS: chain.encode([])}
            return chain.Append(files, f"eval: start {eval_id}"), []
        have = chain.read(repo, tip, CONFIG)
        if have != config:
            changed = sorted(k for k in set(have) | set(config) if have.get(k) != config.get(k))
            raise EvalMismatch(f"eval {eval_id!r} was started with another {', '.join(changed)}; "
                               "give a new --id")
        return None, chain.read(repo, tip, RESULTS) or []

    return chain.update(repo, ref(eval_id), decide, f"eval: start {eval_id}")[1]


def add(repo: Repository, eval_id: str, result: dict[str, Any]) -> None:
    """Append one result (a second result for the same task and trial is dropped)."""
    key = (result["task"], result["trial"])

    def decide(tip: str | None) -> tuple[chain.Decision, None]:
        if tip is None:
            raise EvalNotFound(f"eval {eval_id!r} vanished while it ran")
        rows = chain.read(repo, tip, RESULTS) or []
        if any((r["task"], r["trial"]) == key for r in rows):
            return None, None
        message = f"eval: {result['task']} #{result['trial']} {result['outcome']}"
        config = entry_oid(repo, tip, CONFIG)
        assert config is not None  # every commit of the chain has it
        return chain.Append({CONFIG: config, RESULTS: chain.encode([*rows, result])}, message), None

    chain.update(repo, ref(eval_id), decide, f"eval: result {key[0]}")
