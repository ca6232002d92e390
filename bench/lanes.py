"""Adaptive verification against always-verify, in one invocation: one run of a flow of
200 agent steps (50 calls of a 4-step subflow, so 4 lanes see 50 outputs each) whose
judge is a real script that rejects an output with a known probability (a hash of the
output, so both configurations face the same bad outputs). The baseline is the same
flow with `stakes: paranoid`, which is never skipped. Reports judge calls, injected
failures caught and missed, and checks that every bad output reviewed while its lane
had not yet earned trust (rate 1) was caught.

    python -m bench.lanes [--calls 50] [--fail-rate 0.03]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.agents import write_agents
from strato.runs.service import Runs

STEPS = ("draft", "check", "summary", "title")

AGENT = """
import hashlib, json, sys
prompt, seen = sys.argv[1], sys.argv[2]
key = hashlib.sha256(prompt.encode()).hexdigest()[:16]
with open(seen, "a+") as fh:  # a retry with the same prompt answers differently
    fh.seek(0)
    n = fh.read().split().count(key)
    fh.write(key + "\\n")
print(json.dumps({"text": f"out-{key}-{n}"}))
"""

JUDGE = """
import hashlib, json, sys
prompt = sys.argv[1]
with open(sys.argv[2], "a") as log:
    log.write("x\\n")
text = prompt.split('"text": "', 1)[1].split('"', 1)[0]
share = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8
print(json.dumps({"holds": share >= float(sys.argv[3]), "reason": "scripted"}))
"""


def bad(text: str, fail_rate: float) -> bool:
    """The judge's own rule: whether it rejects this output."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8 < fail_rate


def spec(calls: int, stakes: str) -> str:
    unit = "\n".join(
        f"""      - id: {sid}
        do: "{sid} for part ${{input.n}}"
        out: A
        attempts: 3
        {"after: [" + STEPS[i - 1] + "]" if i else ""}
        ensure:
          - judged: {{statement: "the {sid} is right", stakes: {stakes}}}"""
        for i, sid in enumerate(STEPS)
    )
    call = '      - id: p{k}\n        run: unit\n        with: {{n: "{k}"}}'
    parts = "\n".join(call.format(k=k) for k in range(calls))
    return f"""version: 1
contracts:
  A: {{text: string}}
flows:
  entry: main
  main:
    input: {{}}
    output: {{from: "${{p0.output}}", contract: A}}
    steps:
{parts}
  unit:
    input: {{n: string}}
    output: {{from: "${{title.output}}", contract: A}}
    steps:
{unit}
"""


def workspace(folder: Path, fail_rate: float) -> tuple[Path, Path]:
    root = folder / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (folder / "agent.py").write_text(AGENT)
    (folder / "judge.py").write_text(JUDGE)
    log = folder / "judge.log"
    agent = json.dumps([sys.executable, str(folder / "agent.py"), "{prompt}", str(folder / "seen.log")])
    judge = json.dumps([sys.executable, str(folder / "judge.py"), "{prompt}", str(log), str(fail_rate)])
    write_agents(root, f"[agents.claude]\nargv = {agent}\ntimeout_s = 60\n"
                       f"[judge]\nargv = {judge}\ntimeout_s = 60\n")
    return root, log


def measure(stakes: str, calls: int, fail_rate: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root, log = workspace(Path(tmp), fail_rate)
        runs = Runs(root)
        started = time.perf_counter()
        run_id = runs.plan(spec(calls, stakes), {}, "bench").snap.run_id
        state = runs.drive(run_id).state
        seconds = time.perf_counter() - started
        audit = runs.audit(run_id)
        calls_made = len(log.read_text().splitlines()) if log.exists() else 0
        return {"stakes": stakes, "status": state["status"], "seconds": seconds, "judgeCalls": calls_made,
                **tally(audit["events"], runs, run_id, fail_rate)}


def tally(events: list[dict[str, Any]], runs: Runs, run_id: str, fail_rate: float) -> dict[str, Any]:
    """Walk the run's history: each reported output, whether it was bad, whether it was
    judged, and the rate its lane stood at when the decision was made."""
    decision: dict[tuple[str, int], dict[str, Any]] = {}
    for ev in events:
        if ev["type"] in ("verified", "skipped") and "lane" in ev.get("detail", {}):
            decision[(ev["stepId"], ev["detail"]["attempt"])] = ev
    injected = caught = missed = missed_untrusted = untrusted_bad = 0
    results = reported(runs, run_id)
    for step_path, attempt, text, accepted in results:
        if not bad(text, fail_rate):
            continue
        injected += 1
        ev = decision[(step_path, attempt)]
        trusted = ev["detail"]["rate"] < 1.0
        untrusted_bad += not trusted
        if accepted:
            missed += 1
            missed_untrusted += not trusted
        else:
            caught += 1
    return {"outputs": len(results), "injected": injected, "caught": caught, "missed": missed,
            "injectedUntrusted": untrusted_bad, "missedUntrusted": missed_untrusted}


def reported(runs: Runs, run_id: str) -> list[tuple[str, int, str, bool]]:
    """(step path, attempt, output text, accepted) for every result an agent reported."""
    out = []
    for commit, transition in runs.store.history(run_id):
        if transition.get("op") != "done":
            continue
        path = transition["stepId"]
        for ev in transition["events"]:
            if ev["type"] == "result" and ev.get("stepId") == path:
                attempt = ev["detail"]["attempt"]
                text = _attempt_text(runs, run_id, commit, path, attempt)
                out.append((path, attempt, text, bool(ev["detail"]["success"])))
    return out


def _attempt_text(runs: Runs, run_id: str, commit: str, path: str, attempt: int) -> str:
    state = runs.store.at(run_id, commit).state
    head, step = path.split("/")
    attempts = state["scope"]["steps"][head]["sub"]["steps"][step]["attempts"]
    result = attempts[attempt - 1]["result"]
    return str(result["text"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="subflow calls (4 agent steps each)")
    parser.add_argument("--fail-rate", type=float, default=0.03, help="share of outputs the judge rejects")
    parser.add_argument("--repeat", type=int, default=1, help="adaptive runs (each draws its own nonces)")
    args = parser.parse_args()
    always = measure("paranoid", args.calls, args.fail_rate)  # every check runs: one run says it all
    rows = [(f"adaptive #{n + 1}", measure("cheap", args.calls, args.fail_rate)) for n in range(args.repeat)]
    print(f"{4 * args.calls} agent steps in 4 lanes, judge rejects {args.fail_rate:.0%} of outputs")
    print(f"{'mode':<14} {'status':<10} {'outputs':>7} {'judge calls':>11} {'injected':>8} {'caught':>6} "
          f"{'missed':>6} {'bad@rate1':>9} {'missed@rate1':>12} {'seconds':>8}")
    for name, row in [("always-verify", always), *rows]:
        counts = f"{row['outputs']:>7} {row['judgeCalls']:>11} {row['injected']:>8} {row['caught']:>6}"
        misses = f"{row['missed']:>6} {row['injectedUntrusted']:>9} {row['missedUntrusted']:>12}"
        print(f"{name:<14} {row['status']:<10} {counts} {misses} {row['seconds']:>8.1f}")
    calls = sum(row["judgeCalls"] for _, row in rows) / len(rows)
    print(f"judge calls adaptive (mean) / always-verify: {calls / always['judgeCalls']:.2f}x")
    ok = always["missed"] == 0 and always["status"] == "completed"
    ok = ok and all(row["missedUntrusted"] == 0 and row["status"] == "completed" for _, row in rows)
    print("every injected failure in a lane that had not earned trust was caught: " + ("yes" if ok else "NO"))
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
