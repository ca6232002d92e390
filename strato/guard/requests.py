"""What every guard operation shares: a request's fields, the move it asks for, the
policy entry a policy change appends, and a person's signature over a payload.

A request is shaped like Stratum's (same field names; unknown keys refused); a refusal
raises :class:`GuardError`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from strato.guard import authz, config, predicates
from strato.guard import policy as policy_mod
from strato.guard.errors import GuardError
from strato.guard.ledger import State
from tropo.git import repo as gitrepo
from tropo.git.types import Repository

POLICY_FIELDS = ("new_graph",)
POLICY_DEFAULTS: dict[str, Any] = {"new_edge_predicates": {}, "new_terminal": [], "new_stakes": {}}


def fields(
    req: Mapping[str, Any], required: tuple[str, ...], optional: Mapping[str, Any]
) -> dict[str, Any]:
    """The request's fields, defaults filled; unknown or missing keys are ``invalid_request``."""
    if not isinstance(req, Mapping):
        raise GuardError("invalid_request", "the request must be one JSON object")
    if "override_token" in req:
        raise GuardError("invalid_request", "override_token was replaced by signed authorizations")
    if unknown := sorted(set(req) - set(required) - set(optional)):
        raise GuardError("invalid_request", f"unknown keys: {', '.join(unknown)}")
    if missing := [k for k in required if k not in req]:
        raise GuardError("invalid_request", f"missing keys: {', '.join(missing)}")
    got = {**optional, **req}
    policy_mod.check_resource_id(got.get("resource_id"))
    return got


def now_ms() -> int:
    return int(time.time() * 1000)


def response(entry: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "ledger_ref": entry["entry_digest"],
        "entry_digest": entry["entry_digest"],
        "prev_digest": entry["prev_digest"],
        **extra,
    }


def check_move(state: State, src: object, dst: object) -> tuple[str, str]:
    src, dst = policy_mod.check_state(src), policy_mod.check_state(dst)
    if src != state.current_state:
        raise GuardError(
            "stale_from_state",
            f"the resource is at {state.current_state!r}, not {src!r} (the state moved)",
        )
    if not state.policy.has_edge(src, dst):
        raise GuardError("illegal_edge", f"{src}->{dst} is not an edge of the policy")
    return src, dst


def new_policy(f: Mapping[str, Any], state: State, cfg: config.GuardConfig) -> policy_mod.Policy:
    """The requested policy; the initial state carries over while it is still a state."""
    graph, terminal = f["new_graph"], f["new_terminal"]
    keeps_initial = (
        isinstance(graph, dict)
        and isinstance(terminal, list)
        and (state.policy.initial in graph or state.policy.initial in terminal)
    )
    new = policy_mod.parse(
        {
            "graph": graph,
            "edge_predicates": f["new_edge_predicates"],
            "initial": state.policy.initial if keeps_initial else state.current_state,
            "terminal": terminal,
            "stakes": f["new_stakes"],
        }
    )
    predicates.check_policy(new, cfg)
    if state.current_state not in new.nodes:
        raise GuardError(
            "invalid_policy", f"the current state {state.current_state!r} must stay a node"
        )
    return new


def policy_entry(
    state: State,
    new: policy_mod.Policy,
    operation: str,
    resolved_by: str,
    rationale: str,
    authorization: dict[str, Any] | None = None,
) -> dict[str, Any]:
    verdict: dict[str, Any] = {
        "operation": operation,
        "policy": new.to_json(),
        "checksum": new.checksum,
        "graph_version": state.graph_version + 1,
    }
    if authorization is not None:
        verdict["authorization"] = authorization
    return {
        "from_state": state.current_state,
        "to_state": state.current_state,
        "outcome": "graph_version",
        "kind": "graph_version",
        "resolved_by": resolved_by,
        "idempotency_key": None,
        "payload_digest": new.checksum,
        "rationale": rationale,
        "verdict": verdict,
    }


def rationale(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GuardError("invalid_request", "rationale must be a non-empty string")
    return value


def signed(
    repo: Repository, armor: object, namespace: str, payload: str
) -> tuple[authz.Signer, dict[str, Any]]:
    signer = authz.check_signature(
        armor,
        namespace,
        payload.encode(),
        authz.trusted_signers(gitrepo.head_commit(repo)),
        now_ms() // 1000,
        payload,
    )
    return signer, {"namespace": namespace, "signature": armor, **signer.to_json()}
