"""What the workbench reads and writes, whatever it is backed by: the repository
(``workbench.repo``) or a recorded sample run (``workbench.demo``). The app serves
either one the same way; a refusal carries its HTTP status."""

from __future__ import annotations

from typing import Any, Protocol

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_NOTE = 4000


class Refusal(Exception):
    """A request the workbench will not do: ``status`` is the HTTP answer, ``code`` is
    stable for scripts."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def page(offset: int, limit: int, total: int) -> tuple[int, int]:
    """The slice [start, end) of ``total`` items a page asks for, limits clamped."""
    if offset < 0 or limit < 1:
        raise Refusal(400, "bad_page", "offset must be >= 0 and limit >= 1")
    start = min(offset, total)
    return start, min(total, start + min(limit, MAX_LIMIT))


def gate_request(body: Any) -> tuple[str, str, str | None]:
    """(decision, gate token, note) from a gate POST body, or why it is malformed. The
    gate token is the one the page was shown: a replayed or outdated decision names a
    token the gate no longer holds and is refused as stale."""
    if not isinstance(body, dict):
        raise Refusal(400, "bad_request", "send a JSON object {decision, gateToken, note?}")
    unknown = sorted(set(body) - {"decision", "gateToken", "note"})
    if unknown:
        raise Refusal(400, "bad_request", f"unknown field(s): {', '.join(unknown)}")
    decision, token, note = body.get("decision"), body.get("gateToken"), body.get("note")
    if decision not in ("approve", "revise", "kill"):
        raise Refusal(400, "bad_request", 'decision must be "approve", "revise" or "kill"')
    if not isinstance(token, str) or not token:
        raise Refusal(400, "bad_request", "gateToken is required: the token of the gate as you saw it")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
        raise Refusal(400, "bad_request", f"note must be text of at most {MAX_NOTE} characters")
    return decision, token, note or None


class Source(Protocol):
    """The views and decisions the API exposes (docs/workbench.md)."""

    demo: bool

    def tips(self) -> dict[str, str]:
        """Run id -> head commit (or replay position): what the event stream watches."""

    def runs(self, offset: int, limit: int) -> dict[str, Any]: ...

    def run(self, run_id: str, offset: int, limit: int) -> dict[str, Any]: ...

    def decide_gate(self, run_id: str, step: str, body: Any) -> dict[str, Any]: ...

    def board(self) -> dict[str, Any]: ...

    def guard(self) -> dict[str, Any]: ...

    def review(self, base: str, head: str) -> dict[str, Any]: ...

    def heartbeat(self) -> dict[str, Any]: ...

    def decide_proposal(self, pid: str, decision: str) -> dict[str, Any]: ...

    def lanes(self) -> dict[str, Any]: ...

    def graph_page(self) -> str: ...

    def evals(self) -> dict[str, Any]: ...

    def eval(self, eval_id: str) -> dict[str, Any]: ...

    def compare_evals(self, a: str, b: str) -> dict[str, Any]: ...

    def eval_run(self, eval_id: str, run_id: str, offset: int, limit: int) -> dict[str, Any]:
        """A result's flow run (in the eval's scratch repository)."""
