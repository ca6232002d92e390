"""`migrate --check`: classify the constructs of a legacy v0.x spec against v1.

Report-only by design: it never emits or translates YAML. Each finding names the v0.x
construct, its v1 counterpart, whether v1 supports it (supported), cannot express it
(unsupported) or needs a person's rewrite (diagnostic), and where it occurs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from strato.flow.yamlload import SpecYAMLError, load_yaml

Status = Literal["supported", "unsupported", "diagnostic"]
VERSIONS = ("0.1", "0.2", "0.3")


@dataclass(frozen=True)
class Rule:
    id: str
    python: str
    v1: str
    note: str
    status: Status


RULES = [
    Rule(
        "function-infer",
        "functions (mode: infer) + function steps",
        "inline do task",
        "keep the step's agent",
        "supported",
    ),
    Rule(
        "function-compute",
        "functions (mode: compute) + function steps",
        "inline do task",
        "dispatch it; do not turn compute into set",
        "supported",
    ),
    Rule(
        "function-gate",
        "gate function + routing fields",
        "nested gate object",
        "on_approve/on_revise/on_kill move into gate:",
        "supported",
    ),
    Rule(
        "inline", "inline intent step", "do task", "the intent becomes the task text", "supported"
    ),
    Rule(
        "iterate",
        "max_iterations + exit_criterion",
        "iterate: {max, until}",
        "until is a v1 expression",
        "supported",
    ),
    Rule(
        "decompose",
        "decompose without cross-item dependencies",
        "task contract with tasks: T[] then fanout",
        "",
        "supported",
    ),
    Rule(
        "parallel-dispatch", "parallel_dispatch", "fanout", "rewrite as a fanout step", "supported"
    ),
    Rule("pipeline-when", "pipeline stage when", "fanout stage when", "", "supported"),
    Rule(
        "subflow",
        "flow step + inputs",
        "run + with",
        "with keys must equal the callee inputs",
        "supported",
    ),
    Rule("max-rounds", "flow max_rounds", "flow max_rounds", "", "supported"),
    Rule(
        "depends-on",
        "depends_on",
        "data references + after",
        "use ${step.output} references; after for the remaining ordering edges",
        "supported",
    ),
    Rule(
        "skip-if",
        "skip_if",
        "when (inverted)",
        "when runs the step only if it is true",
        "supported",
    ),
    Rule(
        "judge-unsupported",
        "evaluate predicate with verified/applied_gate or budgets",
        "none",
        "redesign: v1 has no verified or applied-gate judge and no evaluation budget",
        "unsupported",
    ),
    Rule(
        "score-accumulate",
        "score_expr / accumulate / accumulate_key",
        "none",
        "v1 iterate has no score or accumulator",
        "unsupported",
    ),
    Rule(
        "decompose-dependencies",
        "decompose with cross-item dependencies",
        "none",
        "fanout items are independent",
        "unsupported",
    ),
    Rule(
        "parallel-unsupported",
        "parallel_dispatch branch/manual merge, pre_merge_verify, templates, task_timeout, "
        "capture_diff, defer_advance",
        "none",
        "v1 fanout merges sequentially only",
        "unsupported",
    ),
    Rule(
        "pipeline-nested", "nested pipeline region", "none", "flatten the pipeline", "unsupported"
    ),
    Rule(
        "pipeline-exit", "pipeline exit_when", "none", "no early exit from a fanout", "unsupported"
    ),
    Rule(
        "gate-policy",
        "gate policy / gate timeout",
        "none",
        "resolve every waiting gate explicitly",
        "unsupported",
    ),
    Rule(
        "workflow-block",
        "top-level workflow block",
        "none",
        "select the runnable flow with flows.entry",
        "unsupported",
    ),
    Rule(
        "judge-fold",
        "deterministic or evaluate predicate with one premise",
        "ensure on that premise",
        "",
        "diagnostic",
    ),
    Rule(
        "missing-max-rounds",
        "gate on_revise without flow max_rounds",
        "flow max_rounds",
        "v1 requires max_rounds for any revise route",
        "diagnostic",
    ),
    Rule(
        "next",
        "next routing",
        "DAG edges and gate routes",
        "only reducible next routes translate",
        "diagnostic",
    ),
    Rule(
        "on-fail",
        "on_fail",
        "on_fail to a later step",
        "the target must come later in topological order",
        "diagnostic",
    ),
    Rule(
        "ensure-expressions",
        "legacy ensure expressions",
        "v1 expressions",
        "rewrite in the v1 expression language (no Python)",
        "diagnostic",
    ),
    Rule(
        "contracts",
        "output_schema / output_contract / v0 contracts",
        "named v1 contracts",
        "v1 contracts are field -> type strings",
        "diagnostic",
    ),
    Rule(
        "flow-output",
        "routing-dependent flow output",
        "output: {from, contract}",
        "name one step output and a contract",
        "diagnostic",
    ),
    Rule("unreadable", "document", "none", "", "diagnostic"),
]
_RULES = {r.id: r for r in RULES}
_PARALLEL_UNSUPPORTED = (
    "pre_merge_verify",
    "templates",
    "task_timeout",
    "capture_diff",
    "defer_advance",
)
_JUDGE_UNSUPPORTED = ("verified", "applied_gate", "budget", "budgets")


@dataclass
class MigrationReport:
    version: str | None
    hits: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, rule_id: str, path: str) -> None:
        paths = self.hits.setdefault(rule_id, [])
        if path not in paths:
            paths.append(path)

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [
            {
                "id": r.id,
                "python": r.python,
                "v1": r.v1,
                "note": self.notes.get(r.id, r.note),
                "status": r.status,
                "paths": self.hits[r.id],
            }
            for r in RULES
            if r.id in self.hits
        ]

    @property
    def has_unsupported(self) -> bool:
        return any(_RULES[i].status == "unsupported" or i == "unreadable" for i in self.hits)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "report_only": True, "findings": self.findings}


def check(text: str) -> MigrationReport:
    """Classify a v0.x spec (never raises for bad input: it reports `unreadable`)."""
    try:
        doc = load_yaml(text)
    except SpecYAMLError as exc:
        return _unreadable(None, str(exc))
    version = doc.get("version") if isinstance(doc, dict) else None
    shown = None if version is None else str(version)
    if not isinstance(doc, dict) or shown not in VERSIONS:
        return _unreadable(
            shown,
            f"version must be one of {', '.join(VERSIONS)}"
            + ("; v1 specs are checked with `strato flow validate`" if version == 1 else ""),
        )
    report = MigrationReport(shown)
    _classify(doc, report)
    return report


def _unreadable(version: str | None, note: str) -> MigrationReport:
    report = MigrationReport(version)
    report.add("unreadable", "")
    report.notes["unreadable"] = note
    return report


def _dict_or_empty(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _steps(flow: dict[str, Any], base: str) -> Iterator[tuple[str, dict[str, Any]]]:
    steps = flow.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(step, dict):
            yield f"{base}.steps[{i}]", step


def _classify(doc: dict[str, Any], report: MigrationReport) -> None:
    if "workflow" in doc:
        report.add("workflow-block", "workflow")
    if "contracts" in doc:
        report.add("contracts", "contracts")
    functions = _dict_or_empty(doc.get("functions"))
    for name, fn in functions.items():
        _function(_dict_or_empty(fn), f"functions.{name}", report)
    for name, flow in _dict_or_empty(doc.get("flows")).items():
        _flow(_dict_or_empty(flow), f"flows.{name}", functions, report)


def _function(fn: dict[str, Any], path: str, report: MigrationReport) -> None:
    mode = fn.get("mode", "infer")
    if mode in ("infer", "compute", "gate"):
        report.add(f"function-{mode}", path)
    for key in ("output_schema", "output_contract"):
        if key in fn:
            report.add("contracts", f"{path}.{key}")
    _common(fn, path, report)


def _common(node: dict[str, Any], path: str, report: MigrationReport) -> None:
    """Keys that mean the same on functions, steps and stages."""
    if "ensure" in node:
        report.add("ensure-expressions", f"{path}.ensure")
    for key in ("evaluate", "judge"):
        judge = node.get(key)
        if judge is None:
            continue
        unsupported = isinstance(judge, dict) and any(k in judge for k in _JUDGE_UNSUPPORTED)
        report.add("judge-unsupported" if unsupported else "judge-fold", f"{path}.{key}")
    for key in ("score_expr", "accumulate", "accumulate_key"):
        if key in node:
            report.add("score-accumulate", f"{path}.{key}")
    for key in ("policy", "timeout"):
        if key in node and ("on_revise" in node or node.get("mode") == "gate"):
            report.add("gate-policy", f"{path}.{key}")


def _flow(flow: dict[str, Any], path: str, functions: dict[str, Any], report: MigrationReport) -> None:
    if "max_rounds" in flow:
        report.add("max-rounds", f"{path}.max_rounds")
    output = flow.get("output")
    if output is not None and not (
        isinstance(output, dict) and set(output) == {"from", "contract"}
    ):
        report.add("flow-output", f"{path}.output")
    for spath, step in _steps(flow, path):
        _step(step, spath, functions, report)
        if step.get("on_revise") is not None and "max_rounds" not in flow:
            report.add("missing-max-rounds", f"{spath}.on_revise")


def _step(step: dict[str, Any], path: str, functions: dict[str, Any], report: MigrationReport) -> None:
    fn_name = step.get("function")
    if isinstance(fn_name, str):
        mode = _dict_or_empty(functions.get(fn_name)).get("mode", "infer")
        if mode in ("infer", "compute", "gate"):
            report.add(f"function-{mode}", path)
    elif "intent" in step:
        report.add("inline", path)
    if "max_iterations" in step or "exit_criterion" in step:
        report.add("iterate", path)
    if "flow" in step:
        report.add("subflow", path)
    simple = {
        "depends_on": "depends-on",
        "skip_if": "skip-if",
        "next": "next",
        "on_fail": "on-fail",
    }
    for key, rule in simple.items():
        if key in step:
            report.add(rule, f"{path}.{key}")
    _common(step, path, report)
    if "decompose" in step:
        _decompose(step["decompose"], f"{path}.decompose", report)
    if "parallel_dispatch" in step:
        _parallel(_dict_or_empty(step["parallel_dispatch"]), f"{path}.parallel_dispatch", report)
    if "pipeline" in step:
        _pipeline(step["pipeline"], f"{path}.pipeline", report)


def _decompose(node: Any, path: str, report: MigrationReport) -> None:
    text = str(node)
    dependent = "depends_on" in text or "dependencies" in text
    report.add("decompose-dependencies" if dependent else "decompose", path)


def _parallel(node: dict[str, Any], path: str, report: MigrationReport) -> None:
    report.add("parallel-dispatch", path)
    if node.get("merge") in ("branch", "manual"):
        report.add("parallel-unsupported", f"{path}.merge")
    for key in _PARALLEL_UNSUPPORTED:
        if key in node:
            report.add("parallel-unsupported", f"{path}.{key}")


def _pipeline(node: Any, path: str, report: MigrationReport) -> None:
    stages = node.get("stages", []) if isinstance(node, dict) else node
    if isinstance(node, dict) and "exit_when" in node:
        report.add("pipeline-exit", f"{path}.exit_when")
    for i, stage in enumerate(stages if isinstance(stages, list) else []):
        if not isinstance(stage, dict):
            continue
        spath = f"{path}[{i}]"
        if "when" in stage:
            report.add("pipeline-when", f"{spath}.when")
        if "exit_when" in stage:
            report.add("pipeline-exit", f"{spath}.exit_when")
        if "pipeline" in stage:
            report.add("pipeline-nested", f"{spath}.pipeline")


def render_text(report: MigrationReport, source: str) -> str:
    """The human report: header, the report-only line, then one entry per finding."""
    lines = [
        f"migrate --check {source}: v{report.version or '?'} spec, {len(report.hits)} finding(s)",
        "report-only: no YAML was emitted or translated",
    ]
    for f in report.findings:
        lines.append(f"- [{f['status'].upper()}] {f['python']} -> {f['v1']}")
        if f["note"]:
            lines.append(f"    {f['note']}")
        if any(f["paths"]):
            lines.append(f"    at: {', '.join(f['paths'])}")
    return "\n".join(lines)
