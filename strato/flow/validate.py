"""`load_spec`: YAML text or a file in, a validated `Spec` or Stratum-coded errors out.

Stage 1 (structure) reports every issue; stages 2-12 report the first semantic error."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from strato.flow.errors import SpecError
from strato.flow.semantics import semantic_error
from strato.flow.spec import BUILTIN_AGENTS, Spec
from strato.flow.structure import structural_errors
from strato.flow.types import check_object
from strato.flow.yamlload import SpecReadError, SpecYAMLError, load_yaml, read_spec_file


def load_spec(
    source: str | os.PathLike[str], agents: Collection[str] = BUILTIN_AGENTS
) -> tuple[Spec | None, list[SpecError]]:
    """Validate a spec given as YAML text (a `str`) or a file path (a `Path`); `agents`
    are the agent names its steps may use (a workspace's come from `.vivary/agents.toml`)."""
    if isinstance(source, os.PathLike):
        try:
            text = read_spec_file(Path(source))
        except SpecReadError as exc:
            return None, [SpecError("SPEC_UNREADABLE", "", str(exc))]
    else:
        text = source
    try:
        data = load_yaml(text)
    except SpecYAMLError as exc:
        return None, [SpecError("YAML_INVALID", "", str(exc))]
    return validate_data(data, agents)


def validate_data(
    data: Any, agents: Collection[str] = BUILTIN_AGENTS
) -> tuple[Spec | None, list[SpecError]]:
    """Validate an already-parsed document (e.g. a spec object sent over MCP)."""
    spec, errors = structural_errors(data, agents)
    if spec is None:
        return None, errors
    error = semantic_error(spec)
    return (None, [error]) if error else (spec, [])


def check_entry_input(spec: Spec, value: Any) -> list[SpecError]:
    """Plan-time check of a run's input against the entry flow's strict input contract
    (`INPUT_CONTRACT_INVALID`, path `input.<field>`)."""
    entry = spec.flow_map[spec.entry]
    problems = check_object(value, entry.input, spec.contracts, path="input")
    return [SpecError("INPUT_CONTRACT_INVALID", *p.split(": ", 1)) for p in problems]
