"""Project a workspace graph, and compile a Task Capsule over it, with the suite's
vivary-core (run in the oracle's Python): graph-bearing requests the suite answers and we
refuse, held to the deliberate differences docs/review.md lists. Reads ``{"observation",
"task"?, "budget"?, "content"?}`` on stdin (or a list of them); prints ``{"graph", "capsule"?,
"content"?}`` (or a list, ``{"error"}``
for a spec the suite refuses to compile)."""

from __future__ import annotations

import json
import sys
from typing import Any

from vivary_core.capsule_compile import compile_task_capsule
from vivary_core.workspace_model import project_workspace_graph


def _compiled(spec: dict[str, Any]) -> dict[str, Any]:
    out = {"graph": project_workspace_graph(spec["observation"])}
    if "task" in spec:
        out["capsule"] = compile_task_capsule(task=spec["task"], graph=out["graph"], budget=spec["budget"],
                                              content=spec.get("content"))
    if "content" in spec:
        out["content"] = spec["content"]
    return out


def main() -> None:
    spec = json.load(sys.stdin)
    if isinstance(spec, dict):
        print(json.dumps(_compiled(spec)))
        return
    results = []
    for one in spec:
        try:
            results.append(_compiled(one))
        except ValueError as error:
            results.append({"error": str(error)})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
