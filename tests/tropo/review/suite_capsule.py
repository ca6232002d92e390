"""Compile a workspace graph and a Task Capsule with the suite's vivary-core (run in the
oracle's Python): a graph-bearing request the suite verifies, to hold our refusal of it to
the deliberate difference docs/review.md lists. Reads ``{"observation", "task", "budget"}``
on stdin; prints ``{"graph", "capsule"}``."""

from __future__ import annotations

import json
import sys

from vivary_core.capsule_compile import compile_task_capsule
from vivary_core.workspace_model import project_workspace_graph


def main() -> None:
    spec = json.load(sys.stdin)
    graph = project_workspace_graph(spec["observation"])
    capsule = compile_task_capsule(task=spec["task"], graph=graph, budget=spec["budget"])
    print(json.dumps({"graph": graph, "capsule": capsule}))


if __name__ == "__main__":
    main()
