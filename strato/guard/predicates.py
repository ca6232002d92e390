"""Evidence predicates: the server reads the evidence itself, never the caller's claim.

A deterministic statement is one call with literal arguments (strings or lists of
strings), parsed with :mod:`ast` and never evaluated. ``judged``/``verified`` statements
go to the judge the trusted agents loader gives (the user's own config, or a workspace
file the user approved) and fail closed without one.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.agents.calls import call
from strato.agents.config import AgentSpec
from strato.agents.process import run_process
from strato.guard.config import CONFIG_PATH, GuardConfig
from strato.guard.errors import GuardError
from strato.guard.policy import Policy, Predicate
from tropo.git import repo as gitrepo
from tropo.git.types import Repository

Arg = str | list[str]
_HEXSHA = re.compile(r"^[0-9a-fA-F]{4,40}$")
MAX_STATEMENT = 4096


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Arg, ...]


def _literal(node: ast.expr) -> Arg:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.List) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
    raise GuardError(
        "evidence_parse_error", "predicate arguments must be string literals or lists of them"
    )


_ARITY: dict[str, type] = {
    "server_file_exists": str,
    "git_commit_exists": str,
    "command_exit_zero": list,
    "verdict_receipt_clean": str,
}


def parse_call(statement: str) -> Call:
    """``name("arg")`` -> Call; anything else is ``evidence_parse_error``."""
    if len(statement) > MAX_STATEMENT:
        raise GuardError("evidence_parse_error", "predicate statement is too long")
    try:
        tree = ast.parse(statement.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise GuardError("evidence_parse_error", f"cannot parse predicate {statement!r}") from exc
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.keywords:
        raise GuardError(
            "evidence_parse_error", f"predicate {statement!r} must be one call without keywords"
        )
    name = call.func.id
    if name not in _ARITY:
        raise GuardError("evidence_parse_error", f"unknown evidence function {name!r}")
    args = tuple(_literal(a) for a in call.args)
    if len(args) != 1 or not isinstance(args[0], _ARITY[name]):
        raise GuardError(
            "evidence_parse_error", f"{name} takes one {_ARITY[name].__name__} argument"
        )
    if name == "command_exit_zero" and not args[0]:
        raise GuardError("evidence_parse_error", "command_exit_zero needs a non-empty argv")
    return Call(name, args)


def check_policy(policy: Policy, config: GuardConfig) -> None:
    """Refuse at register time what could never be evaluated."""
    for key in policy.edge_predicates:
        src, dst = key.split("->")
        for pred in policy.predicates(src, dst):
            if not pred.trusted:
                continue
            call = parse_call(pred.statement)
            if call.name == "command_exit_zero" and not config.allow_commands:
                raise GuardError(
                    "command_execution_disabled",
                    f"edge {key} runs a command; set allow_commands = true in {CONFIG_PATH}",
                )


@dataclass(frozen=True)
class Evidence:
    """What predicates may look at: the work tree, the object store, other ledgers, and
    the judge (None: judged predicates fail closed)."""

    repo: Repository
    root: Path
    config: GuardConfig
    receipt_clean: Callable[[str], bool]
    judge: AgentSpec | None = None


def _file_exists(ev: Evidence, rel: str) -> tuple[bool, str]:
    root = ev.root.resolve()
    target = (root / rel.replace("\0", "")).resolve()  # NUL: never met, never a crash
    inside = target == root or root in target.parents
    met = inside and "\0" not in rel and target.is_file()
    return met, f"{rel} {'exists' if met else 'missing'}"


def _commit_exists(ev: Evidence, sha: str) -> tuple[bool, str]:
    met = False
    if _HEXSHA.match(sha):
        try:
            gitrepo.resolve_commit(ev.repo, sha)  # a tag peels to its commit, as before
            met = True
        except gitrepo.RevisionError:
            met = False
    return met, f"commit {sha[:12]} {'present' if met else 'absent'}"


def run_group(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Run ``argv`` in its own process group (:func:`strato.agents.process.run_process`):
    its exit code and the last MiB of its stdout, or None and why it gave none."""
    done = run_process(argv, cwd, timeout)
    if isinstance(done, str):
        return None, f"cannot run {argv[0]}: {done}"
    if done.returncode is None:
        return None, f"timed out after {timeout:g}s"
    return done.returncode, done.stdout


def _command(ev: Evidence, argv: list[str]) -> tuple[bool, str]:
    if not ev.config.allow_commands:
        return False, "command execution is disabled in .vivary/guard/config.toml"
    code, detail = run_group(argv, ev.root, ev.config.command_timeout_s)
    if code is None:
        return False, f"{argv[0]}: {detail}"
    return code == 0, f"{argv[0]} exited {code}"


def _receipt(ev: Evidence, digest: str) -> tuple[bool, str]:
    met = ev.receipt_clean(digest)
    return met, f"receipt {digest[:12]} {'clean' if met else 'not found clean'}"


_BUILTINS: dict[str, Callable[[Evidence, Any], tuple[bool, str]]] = {
    "server_file_exists": _file_exists,
    "git_commit_exists": _commit_exists,
    "command_exit_zero": _command,
    "verdict_receipt_clean": _receipt,
}


def _judge(ev: Evidence, pred: Predicate, context: dict[str, Any]) -> tuple[bool, str]:
    if ev.judge is None:
        return False, "LLM-tier predicates present but no verifier available"
    prompt = (
        'You are the guard\'s judge. Answer with one JSON line {"met": true|false, '
        '"evidence": "..."}.\nStatement: ' + pred.statement + "\nContext: " + json.dumps(context)
    )
    # the one way an agent is called (a CLI or a model endpoint, its envelope unwrapped);
    # a judge grants trust, so a non-zero exit is no verdict even after printing one
    res = call(ev.judge, prompt, ev.root, exit_zero=True)
    answer = res.output
    if not isinstance(answer, dict) or not isinstance(answer.get("met"), bool):
        return False, f"judge gave no verdict ({res.failure or 'no boolean met'})"
    return answer["met"], str(answer.get("evidence", ""))[:500]


def evaluate(ev: Evidence, preds: list[Predicate], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Every predicate's outcome: ``{id, type, statement, met, evidence}``."""
    results = []
    for pred in preds:
        if pred.trusted:
            try:
                call = parse_call(pred.statement)
                met, evidence = _BUILTINS[call.name](ev, call.args[0])
            except GuardError as exc:
                met, evidence = False, exc.message
        else:
            met, evidence = _judge(ev, pred, context)
        results.append(
            {
                "id": pred.id,
                "type": pred.type,
                "statement": pred.statement,
                "met": met,
                "evidence": evidence,
            }
        )
    return results


def verdict(results: list[dict[str, Any]], stakes: str, wall_clock_s: int) -> dict[str, Any]:
    """A JudgeResult-shaped verdict over predicate outcomes (AND; empty is met)."""
    met = all(r["met"] for r in results)
    judged = any(r["type"] != "deterministic" for r in results)
    return {
        "clean": met,
        "summary": "all predicates met"
        if met
        else "predicates not met: "
        + ", ".join(r["id"] or r["statement"] for r in results if not r["met"]),
        "findings": [],
        "meta": {
            "agent_type": "guard",
            "source": "judge" if judged else "evidence",
            "guard_evidence": [
                {k: r[k] for k in ("id", "statement", "met", "evidence")} for r in results
            ],
        },
        "consensus": [],
        "claude_only": [],
        "codex_only": [],
        "lenses_run": [],
        "auto_fixes": [],
        "asks": [],
        "judge_version": "1.0",
        "met": met,
        "stakes": stakes,
        "predicates": [
            {
                "id": r["id"],
                "type": r["type"],
                "statement": r["statement"],
                "verdict": "met" if r["met"] else "not_met",
                "confidence": 10 if r["met"] else 0,
                "applied_gate": 0,
                "evidence": [],
                "tier_history": [],
                "t3": None,
            }
            for r in results
        ],
        "tier_disagreements": [],
        "budget_consumed": {"dollars": 0, "turns": 0, "wall_clock_s": wall_clock_s},
        "judge_kernel_meta": {
            "decomposer_mode": "user",
            "degraded_judged": False,
            "smartmemory_priors_consulted": 0,
        },
    }
