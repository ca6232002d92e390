"""Guard operations on a repository: register, transition, override, migrate, upgrade,
apply-upgrade, history.

Each takes a request shaped like Stratum's (same field names; unknown keys refused)
and returns its response object; failures raise :class:`GuardError`. Checks that
decide a write run inside :func:`store.commit`, against the ledger that write extends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from strato.agents import config as agents
from strato.agents import trust
from strato.guard import authz, config, consent, descriptors, entries, predicates, store
from strato.guard import policy as policy_mod
from strato.guard.canonical import payload_digest, sha256_hex
from strato.guard.errors import GuardError
from strato.guard.ledger import State
from strato.guard.verify import Break, verify_repository
from tropo.git import notes
from tropo.git import repo as gitrepo
from tropo.git.snapshot import read_file
from tropo.git.types import Repository
from tropo.untrusted import visible


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


def _now_ms() -> int:
    return int(time.time() * 1000)


def _response(entry: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "ledger_ref": entry["entry_digest"],
        "entry_digest": entry["entry_digest"],
        "prev_digest": entry["prev_digest"],
        **extra,
    }


def _check_move(state: State, src: object, dst: object) -> tuple[str, str]:
    src, dst = policy_mod.check_state(src), policy_mod.check_state(dst)
    if src != state.current_state:
        raise GuardError(
            "stale_from_state",
            f"the resource is at {state.current_state!r}, not {src!r} (the state moved)",
        )
    if not state.policy.has_edge(src, dst):
        raise GuardError("illegal_edge", f"{src}->{dst} is not an edge of the policy")
    return src, dst


def _new_policy(f: Mapping[str, Any], state: State, cfg: config.GuardConfig) -> policy_mod.Policy:
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


def _policy_entry(
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


def _rationale(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GuardError("invalid_request", "rationale must be a non-empty string")
    return value


# -- register ---------------------------------------------------------------------------


def requested_policy(req: Mapping[str, Any]) -> policy_mod.Policy:
    """The policy a register request names, checked for shape (refusals as ``register``)."""
    f = fields(
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

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
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

    return store.commit(repo, rid, step)


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
    f = fields(
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
            return _response(
                prior,
                status="replayed",
                verdict=prior["verdict"],
                current_state=state.current_state,
                payload_digest=prior["payload_digest"],
            )
        _check_move(state, f["from_state"], f["to_state"])
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

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
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
        return entry, lambda sealed: _response(
            sealed,
            status=outcome,
            verdict=verdict,
            current_state=f["to_state"] if outcome == "applied" else now.current_state,
            payload_digest=sealed["payload_digest"],
        )

    return store.commit(repo, rid, step, first)


# -- signed operations ------------------------------------------------------------------


def _signed(
    repo: Repository, armor: object, namespace: str, payload: str
) -> tuple[authz.Signer, dict[str, Any]]:
    signer = authz.check_signature(
        armor,
        namespace,
        payload.encode(),
        authz.trusted_signers(gitrepo.head_commit(repo)),
        _now_ms() // 1000,
        payload,
    )
    return signer, {"namespace": namespace, "signature": armor, **signer.to_json()}


def override(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Move along a legal edge without its predicates, on a person's one-shot signature."""
    f = fields(
        req,
        ("resource_id", "from_state", "to_state", "authorization", "rationale"),
        {"resolved_by": "human"},
    )
    if f["resolved_by"] != "human":
        raise GuardError("override_unavailable", "an override is resolved by a human")
    rid, raw = f["resource_id"], _rationale(f["rationale"])

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
        state = store.require(snap)
        src, dst = _check_move(state, f["from_state"], f["to_state"])
        payload = authz.override_payload(rid, src, dst, raw, state.head)
        signer, auth = _signed(repo, f["authorization"], authz.NS_OVERRIDE, payload)
        entry = {
            "from_state": src,
            "to_state": dst,
            "outcome": "deviation",
            "kind": "deviation",
            "resolved_by": "human",
            "idempotency_key": None,
            "payload_digest": payload_digest(src, dst, {}, [], "human", state.checksum),
            "rationale": entries.authorized_rationale(signer, raw),
            "verdict": {"authorization": {**auth, "rationale": raw}},
        }
        return entry, lambda sealed: _response(
            sealed, status="applied", current_state=dst, authorized_by=signer.principal
        )

    return store.commit(repo, rid, step)


_POLICY_FIELDS = ("new_graph",)
_POLICY_DEFAULTS: dict[str, Any] = {"new_edge_predicates": {}, "new_terminal": [], "new_stakes": {}}


def migrate(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the policy in any way, on a person's one-shot signature."""
    f = fields(
        req, ("resource_id", *_POLICY_FIELDS, "authorization", "rationale"), _POLICY_DEFAULTS
    )
    rid, raw = f["resource_id"], _rationale(f["rationale"])
    cfg = config.load(gitrepo.head_commit(repo))

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
        state = store.require(snap)
        new = _new_policy(f, state, cfg)
        payload = authz.migrate_payload(rid, new.checksum, raw, state.head)
        signer, auth = _signed(repo, f["authorization"], authz.NS_MIGRATE, payload)
        entry = _policy_entry(
            state,
            new,
            "migrate",
            "human",
            entries.authorized_rationale(signer, raw),
            {**auth, "rationale": raw},
        )
        return entry, lambda sealed: {
            "status": "migrated",
            "checksum": new.checksum,
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
            "rationale": raw,
            "authorized_by": signer.principal,
        }

    return store.commit(repo, rid, step)


def upgrade(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Extend the policy without a signature; anything but additive is refused."""
    f = fields(req, ("resource_id", *_POLICY_FIELDS, "rationale"), _POLICY_DEFAULTS)
    rid, raw = f["resource_id"], _rationale(f["rationale"])
    cfg = config.load(gitrepo.head_commit(repo))

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
        state = store.require(snap)
        new = _new_policy(f, state, cfg)
        answer = {"checksum": new.checksum, "rationale": raw}
        if new.checksum == state.checksum:
            return {**answer, "status": "unchanged", "graph_version": state.graph_version}
        if why := policy_mod.additive_violation(state.policy, new):
            raise GuardError("incompatible_policy_upgrade", f"not an additive upgrade: {why}")
        entry = _policy_entry(state, new, "upgrade", "agent", raw)
        return entry, lambda sealed: {
            **answer,
            "status": "migrated",
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
        }

    return store.commit(repo, rid, step)


def apply_upgrade(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Apply a signed upgrade descriptor committed at HEAD."""
    f = fields(req, ("resource_id", "descriptor_id"), {})
    rid, ident = f["resource_id"], f["descriptor_id"]
    head = gitrepo.head_commit(repo)
    data, armor = read_file(head, descriptors.PATH), read_file(head, descriptors.SIG_PATH)
    if data is None or armor is None:
        raise GuardError(
            "upgrade_descriptor_unavailable",
            f"HEAD has no {descriptors.PATH} with its signature {descriptors.SIG_PATH}",
        )
    try:
        signer, auth = _signed(
            repo, armor.decode("utf-8", "replace"), authz.NS_DESCRIPTORS, data.decode("utf-8")
        )
    except GuardError as exc:
        raise GuardError("upgrade_descriptor_unavailable", exc.message) from exc
    found = descriptors.parse(data).get(ident) if isinstance(ident, str) else None
    if found is None:
        raise GuardError(
            "upgrade_descriptor_unavailable", f"no descriptor {ident!r} in {descriptors.PATH}"
        )
    cfg = config.load(head)

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], store.Respond]:
        state = store.require(snap)
        new = entries.target_policy(found, state.policy)
        predicates.check_policy(new, cfg)
        answer = {"checksum": new.checksum, "descriptor_id": ident}
        if new.checksum == state.checksum:
            return {**answer, "status": "unchanged", "graph_version": state.graph_version}
        if state.checksum != found.from_checksum:
            raise GuardError(
                "upgrade_descriptor_mismatch",
                f"descriptor {ident} upgrades from {found.from_checksum[:12]}, "
                f"the policy is {state.checksum[:12]}",
            )
        if state.current_state not in new.nodes:
            raise GuardError(
                "invalid_policy", f"the current state {state.current_state!r} must stay a node"
            )
        rationale = entries.descriptor_rationale(found, sha256_hex(data))
        entry = _policy_entry(
            state,
            new,
            "apply_upgrade",
            "human",
            rationale,
            {**auth, "descriptor_id": ident, "descriptor_file": data.decode("utf-8")},
        )
        return entry, lambda sealed: {
            **answer,
            "status": "applied",
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
            "authorized_by": signer.principal,
        }

    return store.commit(repo, rid, step)


def history(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """The resource's current state, graph version and whole ledger."""
    f = fields(req, ("resource_id",), {})
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
    "override": override,
    "migrate": migrate,
    "upgrade": upgrade,
    "apply-upgrade": apply_upgrade,
    "history": history,
}


def authorization_request(repo: Repository, req: Mapping[str, Any]) -> tuple[str, str]:
    """The exact payload to sign for an override or migrate now, and its namespace."""
    if not isinstance(req, Mapping):
        raise GuardError("invalid_request", "the request must be one JSON object")
    body = {k: v for k, v in req.items() if k != "kind"}
    if req.get("kind") == "override":
        f = fields(body, ("resource_id", "from_state", "to_state", "rationale"), {})
        state = store.require(store.load(repo, f["resource_id"]))
        src, dst = _check_move(state, f["from_state"], f["to_state"])
        raw = _rationale(f["rationale"])
        return authz.override_payload(
            f["resource_id"], src, dst, raw, state.head
        ), authz.NS_OVERRIDE
    if req.get("kind") == "migrate":
        f = fields(body, ("resource_id", *_POLICY_FIELDS, "rationale"), _POLICY_DEFAULTS)
        state = store.require(store.load(repo, f["resource_id"]))
        new = _new_policy(f, state, config.load(gitrepo.head_commit(repo)))
        raw = _rationale(f["rationale"])
        return authz.migrate_payload(
            f["resource_id"], new.checksum, raw, state.head
        ), authz.NS_MIGRATE
    raise GuardError("invalid_request", 'kind must be "override" or "migrate"')
