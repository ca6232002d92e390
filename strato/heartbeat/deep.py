"""``run --deep``: the weekly pass, one question per open proposal, nothing without an answer.

The questions are asked through ``ask`` (the CLI reads a terminal; tests may pass
anything that answers), so this module decides and the edge does the I/O. An answer
that is not one of the choices asks again; the end of input stops the pass and leaves
every proposal not yet answered open.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from strato.heartbeat import apply as decisions
from strato.proposals import store
from strato.proposals.proposal import KINDS
from tropo import untrusted
from tropo.git import gitcli

Ask = Callable[[str], str | None]  # the question -> the answer line, None at end of input
Say = Callable[[str], None]
CHOICES = {"a": "apply", "r": "reject", "s": "skip"}


def question(record: dict[str, Any]) -> tuple[str, str]:
    """The text shown for one proposal and the answers it accepts (``apply`` only for a
    proposal that writes files or a memory line: the others are acted on by hand)."""
    keys = "ars" if record.get("files") or record.get("kind") == "memory" else "rs"
    shown = untrusted.line
    lines = [f"[{shown(record.get('kind'))}] {shown(record['id'])}: {shown(store.title(record))}"]
    lines += [f"  evidence: {shown(e)}" for e in list(record.get("evidence") or [])[:5]]
    lines += [f"  would write: {shown(p)}" for p in sorted(store.files(record))]
    choices = " / ".join(f"[{k}] {CHOICES[k]}" for k in keys)
    return "\n".join([*lines, f"{choices}? "]), keys


def _order(record: dict[str, Any]) -> tuple[int, str]:
    kind = str(record.get("kind"))
    return (KINDS.index(kind) if kind in KINDS else len(KINDS), str(record["id"]))


def review(root: Path, ask: Ask, say: Say) -> list[dict[str, Any]]:
    """Ask about every open proposal in turn; returns one decision per answered one."""
    side = store.sidecar(root)
    done: list[dict[str, Any]] = []
    for record in sorted((r for r in store.all_records(side) if r.get("status") == "open"), key=_order):
        text, keys = question(record)
        while True:
            answer = ask(text)
            if answer is None:
                return done
            key = answer.strip().lower()[:1]
            if key in keys:
                break
            say(f"answer one of {', '.join(keys)}")
        pid = str(record["id"])
        if key == "s":
            done.append({"id": pid, "answer": "skip", "status": "open"})
        elif key == "r":
            done.append({"answer": "reject", **decisions.reject(root, pid)})
        else:
            try:
                done.append({"answer": "apply", **decisions.apply(root, pid)})
            except (decisions.Refused, gitcli.GitError) as exc:
                say(f"not applied: {exc}")
                done.append({"id": pid, "answer": "apply", "status": "open", "error": str(exc)})
    return done
