"""Project a workspace graph, and compile a Task Capsule over it, with the suite's
vivary-core (run in the oracle's Python): graph-bearing requests the suite answers and we
refuse, held to the deliberate differences docs/review.md lists. Reads ``{"observation",
"task"?, "budget"?}`` on stdin; prints ``{"graph", "capsule"?}``."""

from __future__ import annotations

import json
import sys

from vivary_core.capsule_compile import compile_task_capsule
from vivary_core.workspace_model import project_workspace_graph


def main() -> None:
    spec = json.load(sys.stdin)
    out = {"graph": project_workspace_graph(spec["observation"])}
    if "task" in spec:
        out["capsule"] = compile_task_capsule(task=spec["task"], graph=out["graph"], budget=spec["budget"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
