"""A fanout item's result as data in its claim's `done` commit (`result.json`): the
record calls a local fanout makes for the item (its dispatch, each attempt, the item),
each by name with its JSON arguments, so landing an item does not touch the run head;
any worker later folds the waiting results into the head, several in one push.

Who controls which bytes: anyone who may push writes claim commits, so a result is
read as untrusted input. It is only ever fed to the three record functions of a fixed
allow-list, for the fanout and item its claim key names, with every value checked as a
run input is (usage as `usage_errors` checks an agent's report, events only `judged`);
it never names a program. Verification evidence is learned only from results this
clone wrote itself: a teammate's claim is not evidence this machine's lanes trust.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from strato.runs.dispatch.fanout import record_attempt, record_dispatch, record_item
from strato.runs.engine.ledger import usage_errors
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused
from strato.runs.workers.leases import fanout_key
from strato.runs.workers.shared import Operation

MAX_RESULT_BYTES = 8 * 1024 * 1024


CALLS: dict[str, Callable[..., bool | None]] = {
    "record_dispatch": record_dispatch, "record_attempt": record_attempt, "record_item": record_item,
}
OPS = {"record_dispatch": "fanout_dispatch", "record_attempt": "fanout_attempt", "record_item": "fanout_item"}
ARGS = {
    "record_dispatch": {"path", "index", "stage", "attempt"},
    "record_attempt": {"path", "index", "made", "verdict"},
    "record_item": {"path", "item"},
}
ITEM_STATUSES = ("succeeded", "failed", "skipped")


def encode(ops: list[Operation]) -> bytes:
    """The item's operations as a result; each must be a record call of the allow-list."""
    out = []
    for op in ops:
        action = op.action
        assert isinstance(action, partial) and not action.args
        name = next(n for n, fn in CALLS.items() if fn is action.func)
        out.append({"op": op.op, "call": name, "args": action.keywords, "detail": op.detail})
    return json.dumps({"version": 1, "ops": out}, sort_keys=True).encode()


def decode(raw: bytes, path: str, base: str, index: int, own: bool) -> list[Operation]:
    """The operations of the result for item ``index`` of the fanout start ``base`` at
    ``path``, each guarded to apply only while that item is still pending there; a
    ValueError saying why when the bytes are not such a result."""
    if len(raw) > MAX_RESULT_BYTES:
        raise ValueError(f"over {MAX_RESULT_BYTES} bytes")
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("ops"), list):
        raise ValueError("not a version 1 result")
    ops = []
    for entry in doc["ops"]:
        if not isinstance(entry, dict) or set(entry) != {"op", "call", "args", "detail"}:
            raise ValueError("an operation is not {op, call, args, detail}")
        name, args, detail = entry["call"], entry["args"], entry["detail"]
        if not isinstance(name, str) or name not in CALLS or entry["op"] != OPS[name]:
            raise ValueError(f"{str(name)[:40]!r} is not a record call")
        if not isinstance(args, dict) or set(args) != ARGS[name] or args["path"] != path:
            raise ValueError(f"{name}: arguments are not its own, for {path}")
        _check(name, args, index, own)
        _check_detail(detail, path, index)
        ops.append(Operation(entry["op"], partial(_once, CALLS[name], path, base, index, args), detail))
    if not ops or ops[-1].op != "fanout_item":
        raise ValueError("it does not end with its item")
    return ops


def _once(call: Callable[..., bool | None], path: str, base: str, index: int, args: dict[str, Any],
          eng: Engine) -> bool | None:
    """Apply one record call of a result only while its run and fanout start are running
    and its item is pending (False: nothing written): a result the head already records,
    or one of a fanout that moved on, is skipped, so each lands at most once."""
    try:
        eng.require_running()
        _, _, st = eng.look(path)
    except Refused:
        return False
    items = st.get("fanout", {}).get("items", [])
    if st["status"] != "running" or fanout_key(path, st) != base or not 0 <= index < len(items):
        return False
    if items[index]["status"] != "pending":
        return False
    return call(eng, **args)


def _int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _check(name: str, args: dict[str, Any], index: int, own: bool) -> None:
    if name == "record_dispatch":
        if args["index"] != index or not _int(args["stage"]) or not _int(args["attempt"], 1):
            raise ValueError("record_dispatch: index, stage or attempt")
    elif name == "record_attempt":
        if args["index"] != index:
            raise ValueError("record_attempt: not this item's")
        _check_call(args["made"])
        args["verdict"] = _verdict(args["verdict"], own)
    else:
        _check_item(args["item"], index)


def _verdict(verdict: Any, own: bool) -> dict[str, Any]:
    if not isinstance(verdict, dict) or set(verdict) != {"output", "failure", "events", "evidence"}:
        raise ValueError("record_attempt: verdict")
    if verdict["failure"] is not None and not isinstance(verdict["failure"], str):
        raise ValueError("record_attempt: failure")
    events = verdict["events"]
    if not isinstance(events, list) or not all(
        isinstance(e, list) and len(e) == 2 and e[0] == "judged" and isinstance(e[1], dict) for e in events
    ):
        raise ValueError("record_attempt: events other than `judged`")
    evidence = verdict["evidence"]
    if not isinstance(evidence, list) or not all(isinstance(e, dict) for e in evidence):
        raise ValueError("record_attempt: evidence")
    return {**verdict, "evidence": evidence if own else []}


def _check_call(made: Any) -> None:
    """One agent call as a runner records it (`_ItemRunner._call`)."""
    keys = {"dispatchId", "stage", "attempt", "usage", "telemetry", "inputs"}
    if not isinstance(made, dict) or not keys <= set(made) <= keys | {"sandbox"}:
        raise ValueError("a call: its fields")
    if not (isinstance(made["dispatchId"], str) and made["dispatchId"] and isinstance(made["inputs"], str)):
        raise ValueError("a call: dispatchId or inputs")
    if not _int(made["stage"]) or not _int(made["attempt"], 1) or not isinstance(made["telemetry"], dict):
        raise ValueError("a call: stage, attempt or telemetry")
    if usage_errors(made["usage"]) or not isinstance(made.get("sandbox", ""), str):
        raise ValueError("a call: usage or sandbox")


def _check_item(item: Any, index: int) -> None:
    if not isinstance(item, dict) or item.get("index") != index or item.get("status") not in ITEM_STATUSES:
        raise ValueError("record_item: not this item, or no status")
    if not isinstance(item.get("attempts"), list) or not isinstance(item.get("calls", []), list):
        raise ValueError("record_item: attempts or calls")
    for made in item.get("calls", []):
        _check_call(made)
    if item.get("failure") is not None and not isinstance(item["failure"], str):
        raise ValueError("record_item: failure")
    for key in ("commit", "tree", "base"):
        value = item.get(key)
        if value is not None and not (isinstance(value, str) and len(value) == 40
                                      and all(c in "0123456789abcdef" for c in value)):
            raise ValueError(f"record_item: {key} is not a commit id")


def _check_detail(detail: Any, path: str, index: int) -> None:
    if not isinstance(detail, dict) or not set(detail) <= {"stepId", "item", "worker"}:
        raise ValueError("detail: its fields")
    if detail.get("stepId") != path or detail.get("item") != index:
        raise ValueError("detail: not this item's")
    worker = detail.get("worker", {})
    if not isinstance(worker, dict) or not all(isinstance(k, str) for k in worker):
        raise ValueError("detail: worker")
