"""The demo's judge (docs/evals.md): it answers a `judged` ensure by running the
workspace's unit tests in this process and saying whether they pass, with the first
failure as its reason, so a retry carries what broke. An output under review that is an
answer (`module` and `code`, flows/answer.stratum.yaml) is tried on a copy of the
workspace with the code added. Its token count is an estimate
(characters / 4): no model. Usage: demo_test_judge.py PROMPT (run in the workspace)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import tempfile
import unittest


def _try_answer(prompt: str) -> None:
    """Move to a copy of the workspace with the answer's code added, if it is one."""
    found = re.search(r"^Output under review: (.*)$", prompt, re.M)
    answer = json.loads(found.group(1)) if found else None
    if not isinstance(answer, dict) or not {"module", "code"} <= set(answer):
        return
    copy = os.path.join(tempfile.mkdtemp(), "ws")
    shutil.copytree(os.getcwd(), copy, ignore=shutil.ignore_patterns(".git"))
    with open(os.path.join(copy, "textkit", f"{os.path.basename(str(answer['module']))}.py"), "a") as fh:
        fh.write("\n\n" + str(answer["code"]))
    os.chdir(copy)


def main(prompt: str) -> int:
    _try_answer(prompt)
    sys.path.insert(0, os.getcwd())
    suite = unittest.defaultTestLoader.discover("tests")
    result = unittest.TestResult()
    with io.StringIO() as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            suite.run(result)
        finally:
            sys.stdout = stdout
    problems = result.errors + result.failures
    if problems:
        test, trace = problems[0]
        reason = f"tests fail: {test.id()}: {trace.strip().splitlines()[-1]}"[:300]
    else:
        reason = f"{result.testsRun} tests pass"
    verdict = {"holds": not problems and result.testsRun > 0, "reason": reason}
    usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(reason) // 4 + 8}
    print(json.dumps({"type": "result", "result": json.dumps(verdict), "usage": usage}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
