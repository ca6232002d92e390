"""`strato eval run|compare|show|list`: task sets through the real engine, results kept
under `refs/vivary/evals/<id>`, paired comparisons with a report (docs/evals.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from strato.evals import store
from strato.evals.compare import SetsDiffer, compare, summary
from strato.evals.report import label, markdown, svg, table
from strato.evals.runner import EvalPlan, FlowError, check_plan, run_eval, with_agent
from strato.evals.tasks import TaskSetError, load_set
from strato.evals.userconfig import EvalConfigError
from strato.runs.cli.terminal import handled, json_option, root_option
from strato.runs.service import Runs
from tropo import untrusted
from tropo.console import REFUSED, USAGE, emit, fail
from tropo.fs.atomic import write_atomic

F = TypeVar("F", bound=Callable[..., Any])
_ERRORS: dict[type[Exception], tuple[int, str]] = {
    TaskSetError: (USAGE, "invalid_task_set"), FlowError: (USAGE, "invalid_flow"),
    EvalConfigError: (USAGE, "config_error"), store.EvalNotFound: (REFUSED, "eval_not_found"),
    store.EvalMismatch: (REFUSED, "eval_mismatch"), SetsDiffer: (REFUSED, "different_task_sets"),
}


def _eval_errors(fn: F) -> F:
    """This command's own failures as one line (and the error document under --json);
    the run errors as every run command reports them."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except tuple(_ERRORS) as exc:
            exit_code, code = next(v for k, v in _ERRORS.items() if isinstance(exc, k))
            fail(str(exc), exit_code, code=code, prog="error")

    return handled(cast(F, wrapper))


@click.group("eval")
def eval_group() -> None:
    """Evals: run a task set through a flow, keep the results in git, compare two runs."""


@eval_group.command("run")
@click.argument("task_set", metavar="SET", type=click.Path(path_type=Path))
@click.option("--flow", "flow", required=True, type=click.Path(path_type=Path),
              help="The flow spec every task runs through.")
@click.option("--agent", required=True, help="The agent of every `do` step (from your trusted agents.toml).")
@click.option("--lanes", type=click.Choice(["on", "off"]), default="on", show_default=True,
              help="Adaptive verification (docs/lanes.md); off checks every output.")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True, help="Trials per task.")
@click.option("--seed", type=int, default=0, show_default=True, help="Filled into the flow's `trial` input.")
@click.option("--id", "eval_id", help="The eval's id (default: one derived from everything above, so "
              "running the same command again resumes it).")
@root_option
@json_option
@_eval_errors
def run_command(task_set: Path, flow: Path, agent: str, lanes: str, repeat: int, seed: int,
                eval_id: str | None, root: Path, as_json: bool) -> None:
    """Run every task of SET through the flow, one result per task and trial appended to
    refs/vivary/evals/<id>. A run cut short is taken up by running it again: finished
    tasks are not run again. Exit 0 when every task was run (whatever its score).

    \b
    Example:
      strato eval run evals/demo --flow evals/demo/flows/judged.stratum.yaml --agent weak
      strato eval run evals/demo --flow flow.stratum.yaml --agent weak --lanes off --repeat 3 --json
    """
    runs = Runs(root)
    tasks = load_set(task_set)
    try:
        text = flow.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FlowError(f"{flow}: cannot read the flow: {exc}") from None
    spec = with_agent(text, agent)[0]
    plan = EvalPlan(task_set, tasks, flow.name, spec, agent, lanes == "on", repeat, seed)
    check_plan(plan, runs.config)
    eval_id = eval_id or plan.default_id()
    if not store.EVAL_ID.match(eval_id):
        fail(f"invalid eval id {eval_id!r} (letters, digits, '.', '_', '-')", USAGE, prog="error")

    def progress(row: dict[str, Any]) -> None:
        if not as_json:
            click.echo(untrusted.line(f"{row['task']} #{row['trial']}: {row['outcome']} ({row['reason']})"),
                       err=True)  # the reason is what the agent or the scorer said

    rows = run_eval(runs.repo, plan, eval_id, runs.config, progress)
    config, _ = store.load(runs.repo, eval_id)
    doc = {"id": eval_id, "ref": store.ref(eval_id), **summary(config, rows)}
    emit(as_json, doc, _summary_lines(doc))


def _summary_lines(doc: dict[str, Any]) -> list[str]:
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(doc["outcomes"].items()))
    return [f"eval {doc['id']} ({doc['ref']}): {doc['results']}/{doc['expected']} results, "
            f"success rate {doc['successRate']:.1%} ({outcomes})",
            f"per task: {doc['tokensPerTask']:.0f} tokens, {doc['wallMsPerTask']:.0f} ms, "
            f"{doc['attemptsPerTask']:.2f} attempts, {doc['verifierCallsPerTask']:.2f} verifier calls"]


@eval_group.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a Markdown report here (and its plot, an SVG, beside it).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@root_option
@json_option
@_eval_errors
def compare_command(a: str, b: str, report: Path | None, seed: int, root: Path, as_json: bool) -> None:
    """Pair two eval runs task by task: success rates, the difference with a bootstrap
    confidence interval, token and time cost, flipped tasks. Runs of different task sets
    are refused, naming the difference.

    \b
    Example:
      strato eval compare e-1a2b3c4d5e6f e-6f5e4d3c2b1a
      strato eval compare bare judged --report eval-report.md --json
    """
    repo = Runs(root).repo
    doc = compare((a, *store.load(repo, a)), (b, *store.load(repo, b)), seed)
    if report is not None:
        plot = report.with_suffix(".svg")
        bars = [(label(side), side["successRate"], side["tokensPerTask"]) for side in (doc["a"], doc["b"])]
        write_atomic(plot, svg(bars).encode())
        write_atomic(report, markdown(doc, plot.name).encode())
        doc = {**doc, "report": str(report), "plot": str(plot)}
    emit(as_json, doc, table(doc), authored=True)  # task ids, flow and agent names from the refs


@eval_group.command("show")
@click.argument("eval_id", metavar="ID")
@root_option
@json_option
@_eval_errors
def show_command(eval_id: str, root: Path, as_json: bool) -> None:
    """One eval run: what it ran and its results.

    \b
    Example:
      strato eval show e-1a2b3c4d5e6f --json
    """
    config, rows = store.load(Runs(root).repo, eval_id)
    doc = {"id": eval_id, "ref": store.ref(eval_id), **summary(config, rows), "config": config, "rows": rows}
    lines = _summary_lines(doc) + [
        f"  {r['task']} #{r['trial']}: {r['outcome']} score {r['score']:g}, {r['attempts']} attempts, "
        f"{r['verifierCalls']} verifier calls, {r['tokens']} tokens, {r['wallMs']} ms: {r['reason']}"
        for r in rows]
    emit(as_json, doc, lines, authored=True)


@eval_group.command("list")
@root_option
@json_option
@_eval_errors
def list_command(root: Path, as_json: bool) -> None:
    """Every eval run of this repository (fetched ones too).

    \b
    Example:
      strato eval list --json
    """
    repo = Runs(root).repo
    docs = [{"id": i, **summary(*store.load(repo, i))} for i in store.eval_ids(repo)]
    lines = [f"{d['id']}  {d['flow']}  {d['agent']}  lanes {'on' if d['lanes'] else 'off'}  "
             f"{d['results']}/{d['expected']}  {d['successRate']:.1%}" for d in docs] or ["no eval runs"]
    emit(as_json, {"evals": docs}, lines, authored=True)
