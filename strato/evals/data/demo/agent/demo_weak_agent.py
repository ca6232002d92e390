"""A deliberately weak, deterministic agent for the eval demo (docs/evals.md): it knows
each task's answer (solutions.json) but errs at a set rate the way small models do (a
plausible wrong answer, the right code in the wrong file, a syntax error, prose instead
of the JSON asked for), and errs less when its prompt carries the previous failure. Asked
to "Answer with" the module and the code (flows/answer.stratum.yaml, the shape a model
endpoint answers in), it answers them instead of editing, with the same mistakes.
Whether it errs is a hash of its prompt, so a run is reproducible and a new trial or a
retry draws again. Its token counts are its own estimate (characters / 4): no model.

Usage: demo_weak_agent.py [--rate R] [--feedback-rate F] PROMPT
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

MODULES = ("strings", "numbers", "lists")


def _draw(prompt: str, salt: str) -> float:
    return int(hashlib.sha256((salt + prompt).encode()).hexdigest()[:8], 16) / 2**32


def _block(name: str, code: str) -> str:
    return f"\n\n# --- {name} ---\n{code}# --- end {name} ---\n"


def _clear(root: Path, name: str) -> None:
    """Take out this task's earlier attempt, wherever it went."""
    pattern = re.compile(rf"\n\n# --- {re.escape(name)} ---\n.*?# --- end {re.escape(name)} ---\n", re.S)
    for module in MODULES:
        path = root / "textkit" / f"{module}.py"
        path.write_text(pattern.sub("", path.read_text()))


def main(argv: list[str]) -> int:
    rate, feedback_rate = 0.4, 0.1
    while argv and argv[0].startswith("--"):
        flag, value, argv = argv[0], float(argv[1]), argv[2:]
        rate, feedback_rate = (value, feedback_rate) if flag == "--rate" else (rate, value)
    prompt = argv[0]
    found = re.search(r"Task (\S+) \(trial ([^)]*)\)", prompt)
    solutions = json.loads((Path(__file__).parent / "solutions.json").read_text())
    if found is None or found.group(1) not in solutions:
        print("I could not tell which task this is.")
        return 0
    task = solutions[found.group(1)]
    root = Path.cwd()
    answering = "Answer with" in prompt
    if not answering:
        _clear(root, task["name"])
    retry = "Your previous attempt failed" in prompt
    err = _draw(prompt, "err") < (feedback_rate if retry else rate)
    kind = int(_draw(prompt, "kind") * 4) if err else -1
    module, code = task["module"], task["good"]
    if kind == 0:
        code = task["bad"]
    elif kind == 1:
        module = next(m for m in MODULES if m != module)
    elif kind == 2:
        code = code.replace(":", "", 1)
    if kind == 3:
        print("I have added the function as asked. It should work now.")
        return 0
    path = root / "textkit" / f"{module}.py"
    if not answering:
        path.write_text(path.read_text() + _block(task["name"], code))
    usage = {"input_tokens": (len(prompt) + len(path.read_text())) // 4, "output_tokens": len(code) // 4 + 12}
    summary = f"added {task['name']} to {path.name}"
    answer = {"module": module, "code": code} if answering else {"summary": summary}
    print(json.dumps({"type": "result", "result": json.dumps(answer), "usage": usage}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
