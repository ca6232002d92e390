"""The demo's judge (docs/evals.md): it answers a `judged` ensure by running the
workspace's unit tests in this process and saying whether they pass, with the first
failure as its reason, so a retry carries what broke. Its token count is an estimate
(characters / 4): no model. Usage: demo_test_judge.py PROMPT (run in the workspace)."""

from __future__ import annotations

import io
import json
import os
import sys
import unittest


def main(prompt: str) -> int:
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
