"""Guard operations on a repository: register, transition, history, and the table of
every operation (the signed and policy ones are :mod:`strato.guard.signedops`).

Each takes a request shaped like Stratum's (see :mod:`strato.guard.requests`) and
returns its response object; failures raise :class:`GuardError`. Checks that decide a
write run inside :func:`strato.guard.append.commit`, against the ledger that write extends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from strato.agents import config as agents
from strato.agents import trust
from strato.guard import append, authz, config, consent, predicates, signedops, store
from strato.guard import policy as policy_mod
from strato.guard import requests as rq
from strato.guard.canonical import payload_digest
from strato.guard.errors import GuardError
from strato.guard.ledger import State
from strato.guard.verify import Break, verify_repository
from tropo.git import notes
from tropo.git import repo as gitrepo
from tropo.git.types import Repository
from tropo.untrusted import visible

# -- register ---------------------------------------------------------------------------


def requested_policy(req: Mapping[str, Any]) -> policy_mod.Policy:
    """The policy a register request names, checked for shape (refusals as ``register``)."""
    f = rq.fields(
        req,
        ("resource_id", "graph", "initial"),
        {"edge_predicates": {}, "terminal": [], "stakes": {}, "workspace_root": None},
    )
    root = f["workspace_root"]
    if root is not None and (
        not isinstance(root, str) or not Path(root).is_absolute() or not Path(root).is_dir()
    ):
        raise GuardError(
            "invalid_workspace_root", "workspace_root must be an existing absolute directory"
        )
    return policy_mod.parse(f)


def register(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Register a resource's policy; the same policy again is a no-op, another is refused."""
    pol = requested_policy(req)
    predicates.check_policy(pol, config.load(gitrepo.head_commit(repo)))
    rid = req["resource_id"]
    answer = {"guard_id": store.guard_id(rid), "checksum": pol.checksum}

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        if snap.state is not None:
            if snap.state.checksum == pol.checksum:
                return {**answer, "status": "exists"}
            raise GuardError(
                "guard_already_registered",
                f"{rid!r} is registered with another policy; use upgrade or a signed migrate",
            )
        entry = {
            "from_state": None,
            "to_state": pol.initial,
            "outcome": "registered",
            "kind": "register",
            "resolved_by": "agent",
            "idempotency_key": None,
            "payload_digest": pol.checksum,
            "rationale": None,
            "verdict": {
                "resource_id": rid,
                "policy": pol.to_json(),
                "checksum": pol.checksum,
                "graph_version": 1,
            },
        }
        return entry, lambda sealed: {
            **answer,
            "status": "registered",
            "ledger_ref": sealed["entry_digest"],
        }

    return append.commit(repo, rid, step)


# -- transition -------------------------------------------------------------------------


def _receipts(repo: Repository) -> Callable[[str], bool]:
    """``verdict_receipt_clean``: any sound ledger holds that digest as applied or review_clean."""

    def clean(digest: str) -> bool:
        entry = store.find_entry(repo, digest)
        return entry is not None and entry["outcome"] in ("applied", "review_clean")

    return clean


def _verified(repo: Repository, rid: str) -> tuple[str | None, list[Break]]:
    """Verify ``rid``'s ledger and the notes history as ``verify`` would, before anything
    runs: a forced fetch may have replaced what this clone held. Returned are the notes
    tip and the breaks to refuse (a rewritten history first), for the caller to refuse
    once its load has named what it can more exactly. A lying running-state record is no
    refusal: writers never use one, and this append writes a true one."""
    report = verify_repository(repo, anchor=notes.anchor_id(store.anchor_content(rid)))
    kinds = ("history", "ledger")  # a rewritten history first: it says how the bytes came
    found = [b for b in report.breaks if b.kind in kinds]
    return report.tip, sorted(found, key=lambda b: kinds.index(b.kind))


def _refusal(found: Break) -> str:
    return f"{visible(found)}; nothing was run (see `strato guard verify`)"


def _judge(root: Path, preds: list[policy_mod.Predicate]) -> agents.AgentSpec | None:
    """The judge, when the edge has judged predicates: from the trusted agents loader
    (the user's own config, or a workspace file the user approved), never HEAD's file."""
    if all(p.trusted for p in preds):
        return None
    try:
        return agents.load_config(root).trusted_judge()
    except trust.Untrusted as exc:
        raise GuardError("judge_untrusted", str(exc)) from None
    except (agents.AgentConfigError, trust.TrustError) as exc:
        raise GuardError("invalid_config", str(exc)) from None


def transition(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Attempt from_state -> to_state; the edge's predicates decide, the ledger records it.

    Before any predicate runs: the ledger and the notes history must verify
    (``ledger_rewritten``, ``ledger_corrupt``), the edge's commands must be of a policy
    the user approved (``policy_untrusted``) and the judge must come from trusted
    configuration (``judge_untrusted``)."""
    f = rq.fields(
        req,
        ("resource_id", "from_state", "to_state"),
        {"artifacts": {}, "modified_files": [], "idempotency_key": None, "resolved_by": "agent"},
    )
    rid, artifacts, files, key = (
        f["resource_id"],
        f["artifacts"],
        f["modified_files"],
        f["idempotency_key"],
    )
    if not isinstance(artifacts, dict) or not all(isinstance(v, str) for v in artifacts.values()):
        raise GuardError("invalid_request", "artifacts must map names to strings")
    if not isinstance(files, list) or not all(isinstance(v, str) for v in files):
        raise GuardError("invalid_request", "modified_files must be a list of strings")
    if key is not None and not isinstance(key, str):
        raise GuardError("invalid_request", "idempotency_key must be a string or null")
    if f["resolved_by"] != "agent":
        # whoever sends the request cannot prove it is a person: a human outcome is a
        # signed override (or migrate), never a field the caller chose
        raise GuardError(
            "invalid_request",
            'a transition is resolved by "agent"; a human decision is a signed override',
        )

    def digests(state: State) -> tuple[str, str]:
        args = (f["from_state"], f["to_state"], artifacts, files, f["resolved_by"])
        return payload_digest(*args, state.checksum), payload_digest(*args)

    def precheck(snap: store.LedgerSnapshot) -> dict[str, Any] | None:
        state = store.require(snap)
        mine = digests(state)
        prior = state.by_key.get(key) if key is not None else None
        if prior is not None:
            if prior["payload_digest"] not in mine:
                raise GuardError(
                    "idempotency_conflict", f"idempotency key {key!r} was used for another payload"
                )
            return rq.response(
                prior,
                status="replayed",
                verdict=prior["verdict"],
                current_state=state.current_state,
                payload_digest=prior["payload_digest"],
            )
        rq.check_move(state, f["from_state"], f["to_state"])
        return None

    tip, broken = _verified(repo, rid)
    first = store.load(repo, rid, tip)
    if broken:
        code = "ledger_rewritten" if broken[0].kind == "history" else "ledger_corrupt"
        raise GuardError(code, _refusal(broken[0]))
    if (replay := precheck(first)) is not None:
        return replay
    state = store.require(first)
    cfg = config.load(gitrepo.head_commit(repo))
    root = gitrepo.workdir(repo)
    preds = state.policy.predicates(f["from_state"], f["to_state"])
    if cfg.allow_commands:
        consent.require(root, rid, state.policy, policy_mod.edge_key(f["from_state"], f["to_state"]))
    ev = predicates.Evidence(repo, root, cfg, _receipts(repo), _judge(root, preds))
    started = time.monotonic()
    results = predicates.evaluate(
        ev,
        preds,
        {
            "resource_id": rid,
            "from_state": f["from_state"],
            "to_state": f["to_state"],
            "artifacts": artifacts,
            "modified_files": files,
        },
    )
    verdict = predicates.verdict(
        results,
        state.policy.stake(f["from_state"], f["to_state"]),
        round(time.monotonic() - started),
    )
    outcome = "applied" if verdict["met"] else "refused"
    evaluated_under = state.checksum

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        if (replay := precheck(snap)) is not None:
            return replay
        now = store.require(snap)
        if now.checksum != evaluated_under:
            raise GuardError(
                "guard_tampered", "the policy changed while predicates were evaluated; retry"
            )
        entry = {
            "from_state": f["from_state"],
            "to_state": f["to_state"],
            "outcome": outcome,
            "kind": "transition",
            "resolved_by": f["resolved_by"],
            "idempotency_key": key,
            "payload_digest": digests(now)[0],
            "rationale": None,
            "verdict": verdict,
        }
        return entry, lambda sealed: rq.response(
            sealed,
            status=outcome,
            verdict=verdict,
            current_state=f["to_state"] if outcome == "applied" else now.current_state,
            payload_digest=sealed["payload_digest"],
        )

    return append.commit(repo, rid, step, first)


def history(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """The resource's current state, graph version and whole ledger."""
    f = rq.fields(req, ("resource_id",), {})
    state = store.require(store.load(repo, f["resource_id"]))
    return {
        "status": "ok",
        "resource_id": state.resource_id,
        "current_state": state.current_state,
        "graph_version": state.graph_version,
        "ledger": state.entries,
    }


OPERATIONS = {
    "register": register,
    "transition": transition,
    "override": signedops.override,
    "migrate": signedops.migrate,
    "upgrade": signedops.upgrade,
    "apply-upgrade": signedops.apply_upgrade,
    "history": history,
}


def authorization_request(repo: Repository, req: Mapping[str, Any]) -> tuple[str, str]:
    """The exact payload to sign for an override or migrate now, and its namespace."""
    if not isinstance(req, Mapping):
        raise GuardError("invalid_request", "the request must be one JSON object")
    body = {k: v for k, v in req.items() if k != "kind"}
    if req.get("kind") == "override":
        f = rq.fields(body, ("resource_id", "from_state", "to_state", "rationale"), {})
        state = store.require(store.load(repo, f["resource_id"]))
        src, dst = rq.check_move(state, f["from_state"], f["to_state"])
        raw = rq.rationale(f["rationale"])
        return authz.override_payload(
            f["resource_id"], src, dst, raw, state.head
        ), authz.NS_OVERRIDE
    if req.get("kind") == "migrate":
        f = rq.fields(body, ("resource_id", *rq.POLICY_FIELDS, "rationale"), rq.POLICY_DEFAULTS)
        state = store.require(store.load(repo, f["resource_id"]))
        new = rq.new_policy(f, state, config.load(gitrepo.head_commit(repo)))
        raw = rq.rationale(f["rationale"])
        return authz.migrate_payload(
            f["resource_id"], new.checksum, raw, state.head
        ), authz.NS_MIGRATE
    raise GuardError("invalid_request", 'kind must be "override" or "migrate"')
