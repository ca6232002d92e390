"""Demo mode: the workbench over a recorded sample run instead of a repository.

The fixture (``demo/sample-run.json``, written by ``python -m bench.workbench_demo`` from
a real run of `make demo`'s flow) holds what each view answered after every transition
of the run. The replay steps through those frames on a clock, so the page moves as it
does for a live run; every answer says ``demo: true`` and nothing can be decided.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from tropo.check.graph import Edge, Graph, Node
from tropo.review import view as graph_view
from workbench.source import Refusal, page

FRAME_S = 2.0  # seconds per recorded transition
HOLD_FRAMES = 5  # the last frame stays this many frames before the replay starts again
READ_ONLY = "demo data: nothing is recorded (run `vivary serve` in a workspace to decide)"


def fixture() -> dict[str, Any]:
    """The recorded run and views, with the sample evals (``demo/sample-evals.json``,
    written by ``python -m bench.workbench_demo_evals`` from real eval runs) beside them."""
    folder = resources.files("workbench").joinpath("demo")
    data: dict[str, Any] = json.loads(folder.joinpath("sample-run.json").read_text(encoding="utf-8"))
    data["evals"] = json.loads(folder.joinpath("sample-evals.json").read_text(encoding="utf-8"))
    return data


class DemoSource:
    """The recorded views, replayed frame by frame."""

    demo = True

    def __init__(self, data: dict[str, Any], clock: Callable[[], float] = time.monotonic) -> None:
        self.data = data
        self.frames: list[dict[str, Any]] = data["frames"]
        self.clock = clock
        self.start = clock()

    @classmethod
    def recorded(cls) -> DemoSource:
        return cls(fixture())

    def frame(self) -> dict[str, Any]:
        cycle = len(self.frames) + HOLD_FRAMES
        return self.frames[min(int((self.clock() - self.start) / FRAME_S) % cycle, len(self.frames) - 1)]

    def _labelled(self, doc: dict[str, Any]) -> dict[str, Any]:
        return {**doc, "demo": True}

    def tips(self) -> dict[str, str]:
        return {run_id: str(detail["head"]) for run_id, detail in self.frame()["details"].items()}

    def runs(self, offset: int, limit: int) -> dict[str, Any]:
        rows = self.frame()["runs"]
        start, end = page(offset, limit, len(rows))
        return self._labelled({"total": len(rows), "offset": start, "limit": limit, "runs": rows[start:end]})

    def run(self, run_id: str, offset: int, limit: int) -> dict[str, Any]:
        detail = self.frame()["details"].get(run_id)
        if detail is None:
            raise Refusal(404, "run_not_found", f"no run {run_id!r} in the demo data")
        events = detail["events"]["items"]
        start, end = page(offset, limit, len(events))
        paged = {"total": len(events), "offset": start, "limit": limit, "items": events[start:end]}
        return self._labelled({**detail, "events": paged})

    def decide_gate(self, run_id: str, step: str, body: Any) -> dict[str, Any]:
        raise Refusal(403, "demo_read_only", READ_ONLY)

    def decide_proposal(self, pid: str, decision: str) -> dict[str, Any]:
        raise Refusal(403, "demo_read_only", READ_ONLY)

    def board(self) -> dict[str, Any]:
        return self._labelled(self.data["board"])

    def guard(self) -> dict[str, Any]:
        return self._labelled(self.data["guard"])

    def review(self, base: str, head: str) -> dict[str, Any]:
        return self._labelled(self.data["review"])

    def heartbeat(self) -> dict[str, Any]:
        return self._labelled(self.data["heartbeat"])

    def lanes(self) -> dict[str, Any]:
        return self._labelled(self.data["lanes"])

    def evals(self) -> dict[str, Any]:
        return self._labelled(self.data["evals"]["list"])

    def _recorded(self, kind: str, key: str, what: str) -> dict[str, Any]:
        doc = self.data["evals"][kind].get(key)
        if doc is None:
            raise Refusal(404, "eval_not_found" if kind != "runs" else "run_not_found",
                          f"no {what} {key!r} in the demo data")
        return self._labelled(doc)

    def eval(self, eval_id: str) -> dict[str, Any]:
        return self._recorded("evals", eval_id, "eval")

    def compare_evals(self, a: str, b: str) -> dict[str, Any]:
        return self._recorded("compare", f"{a}/{b}", "comparison")

    def eval_run(self, eval_id: str, run_id: str, offset: int, limit: int) -> dict[str, Any]:
        return self._recorded("runs", f"{eval_id}/{run_id}", "run")

    def graph_page(self) -> str:
        """The recorded graph drawn by this version's `tropo view`."""
        recorded = self.data["graph"]
        nodes = {n["id"]: Node(n["id"], n["type"], n["path"], n["title"], n["fields"])
                 for n in recorded["nodes"]}
        graph = Graph(nodes, [Edge(*e) for e in recorded["edges"]])
        return graph_view.render(graph_view.page_data("graph", graph))

    def static_views(self) -> dict[str, Any]:
        """Every answer the page asks for, at the end of the run: a static export."""
        last = self.frames[-1]
        views: dict[str, Any] = {
            "/api/session": {"ok": True, "demo": True, "instance": "static"},
            "/api/runs": self._labelled({"total": len(last["runs"]), "offset": 0,
                                         "limit": len(last["runs"]), "runs": last["runs"]}),
            "/api/board": self.board(), "/api/guard": self.guard(),
            "/api/guard/review": self.review("", ""), "/api/heartbeat": self.heartbeat(),
            "/api/lanes": self.lanes(), "/api/graph": {"html": self.graph_page()},
            "/api/evals": self.evals(),
        }
        recorded = self.data["evals"]
        views.update({f"/api/evals/{k}": self._labelled(v) for k, v in recorded["evals"].items()})
        views.update({f"/api/evals/{a}/compare/{b}": self._labelled(v)
                      for a, b, v in ((*k.split("/"), v) for k, v in recorded["compare"].items())})
        views.update({f"/api/evals/{e}/runs/{r}": self._labelled(v)
                      for e, r, v in ((*k.split("/"), v) for k, v in recorded["runs"].items())})
        for run_id, detail in last["details"].items():
            events = detail["events"]["items"]
            paged = {"total": len(events), "offset": 0, "limit": len(events), "items": events}
            views[f"/api/runs/{run_id}"] = self._labelled({**detail, "events": paged})
        return views
