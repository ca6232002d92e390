"""How storage and memory get chosen: from the options, or by asking a person.

The rules are create-vivary 0.4.3's: flags decide when given; ``--auto`` and a missing
terminal never ask; a person at a terminal answers up to four numbered questions (on
stderr, so ``--json`` stdout stays one document). Choosing embedded or cloud search
only writes its config: nothing is installed (see docs/lifecycle.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from create_vivary.thin import Storage, auto_pick


@dataclass(frozen=True)
class Answers:
    """The storage options as given (None: not given)."""

    storage: str | None = None
    provider: str | None = None
    memory: str | None = None
    size: str | None = None
    privacy: str | None = None
    auto: bool = False
    no_wizard: bool = False
    dry_run: bool = False
    as_json: bool = False

    def any_storage_flag(self) -> bool:
        return any(v is not None for v in (self.storage, self.provider, self.size, self.privacy))


def needs_person(a: Answers) -> bool:
    """Whether these options leave questions only a person can answer."""
    if a.no_wizard or a.auto:
        return False
    # An agent's explicit dry run with --json is planning, not a conversation.
    return not (a.dry_run and a.as_json and any(
        v is not None for v in (a.storage, a.privacy, a.size)))


def decide(a: Answers, *, command: str, tty: bool | None = None,
           ask: Callable[[str, list[str]], str] | None = None) -> Storage:
    """The storage, provider and memory to write."""
    memory = a.memory or "none"
    if a.no_wizard and not a.auto:
        if a.storage == "auto":
            return Storage(*auto_pick(a.storage, a.provider, a.privacy), memory)
        return Storage(a.storage or "file", a.provider or "lancedb", memory)
    tty = sys.stdin.isatty() if tty is None else tty
    if command == "init" and not tty and not a.auto and not a.any_storage_flag():
        return Storage("file", "lancedb", memory)
    if not tty or not needs_person(a):
        return Storage(*auto_pick(a.storage, a.provider, a.privacy), memory)
    return interview(memory, ask or terminal_ask())


def interview(memory: str, ask: Callable[[str, list[str]], str]) -> Storage:
    """The questions, in order; an empty or unknown answer takes the first choice."""
    size = ask("How big will this workspace grow?",
               ["a handful of files or notes", "hundreds of files", "a large codebase or years of notes"])
    storage, provider = "file", "lancedb"
    if size in ("2", "3"):
        where = ask("Where should searchable context live?",
                    ["in the project's files (no install)", "an embedded local index (LanceDB)",
                     "a cloud search service"])
        if where == "2":
            storage = "embedded"
        elif where == "3":
            cloud = ask("Which cloud service?", ["Qdrant", "Astra DB", "decide later"])
            storage, provider = {"2": ("cloud", "astra"), "3": ("file", "lancedb")}.get(
                cloud, ("cloud", "qdrant"))
    if memory == "none":
        memory = {"2": "local", "3": "cognee"}.get(
            ask("Semantic memory?", ["none", "a local policy (no network, no install)",
                                     "a Cognee policy (install and indexing stay gated)"]), "none")
    return Storage(storage, provider, memory)


def terminal_ask(out: TextIO | None = None, into: TextIO | None = None) -> Callable[[str, list[str]], str]:
    """Ask on stderr, read a line from stdin; end of input is the default."""

    def ask(question: str, choices: list[str]) -> str:
        err = out or sys.stderr
        err.write(f"\n{question}\n")
        for n, choice in enumerate(choices, 1):
            err.write(f"  {n}) {choice}{' (default)' if n == 1 else ''}\n")
        err.write("choice [1]: ")
        err.flush()
        return (into or sys.stdin).readline().strip()

    return ask
