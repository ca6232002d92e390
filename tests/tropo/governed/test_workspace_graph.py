"""Our workspace-graph projection and path order side by side with vivary-core's (the
suite's, in its own interpreter): generated observations, well formed and malformed, project
to the same nodes, edges, conflicts, unknowns, refusals, omissions and workspace
fingerprint, are canonical alike and commit the same repair topology, ASCII and accented
paths alike; generated strings sort the same (more of that in test_collation.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.sealed import ACCENTED, seeded_observation
from tests.support.tropo_parity import side_by_side
from tropo.governed.workspace_graph import is_canonical, project

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-core): -m "not slow" leaves it out

DRIVER = Path(__file__).with_name("projection_driver.py")
JSON = dict[str, Any]


def _strings(r: random.Random) -> list[str]:
    alphabet = "\t\n\r aAbBzZ09_-.,;:!?'\"()[]{}@*/\\&#%`^+<=>|~$\x7f"
    strings = ["".join(r.choice(alphabet) for _ in range(r.randint(0, 6))) for _ in range(300)]
    return [*strings, "\x01a", "a\u2603", "\u2603", "\x01"]


def _run(python: Path | str, spec: JSON) -> JSON:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(spec), capture_output=True, text=True,
                          check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: JSON = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def spec() -> JSON:
    r = random.Random(18)
    observations = [seeded_observation(r, i) for i in range(80)]
    accented = random.Random(1808)
    observations += [seeded_observation(accented, i, ACCENTED) for i in range(40)]
    return {"observations": observations, "strings": _strings(r)}


def test_projections_match_the_suite(spec: JSON, upstream: Callable[[str], Path]) -> None:
    ours, theirs = side_by_side(lambda: _run(sys.executable, spec),
                                lambda: _run(upstream("ozone").parent / "python", spec))
    for index, (mine, suite) in enumerate(zip(ours["graphs"], theirs["graphs"], strict=True)):
        assert mine == suite, spec["observations"][index]
    graphs = theirs["graphs"]
    assert sum("error" in g for g in graphs) >= 5
    assert sum(bool(g.get("conflicts")) for g in graphs) >= 5
    assert all(g["canonical"] for g in graphs if "error" not in g)


def test_path_order_matches_the_suite(spec: JSON, upstream: Callable[[str], Path]) -> None:
    ours, theirs = side_by_side(lambda: _run(sys.executable, spec),
                                lambda: _run(upstream("ozone").parent / "python", spec))
    assert ours["order"] == theirs["order"]


def test_a_repository_past_the_neighbour_cap_projects_as_the_suite_does(upstream: Callable[[str], Path]) -> None:
    """Past 300 checkouts of one repository only the first 300 by id get neighbour edges,
    and the graph says so; a repair never re-projects one (test_verify_governed.py)."""
    remotes = {"status": "known", "value": [{"name": "origin", "fetch_url": "https://x/a.git"}]}
    checkouts = [{"path": f"/workspace/c{i:03d}", "facts": {
        "is_git_repository": {"status": "known", "value": True},
        "head_revision": {"status": "known", "value": "abc" if i % 7 else "def"}, "remotes": remotes}}
        for i in range(302)]
    spec = {"observations": [{"observed_at": "2026-07-26T12:00:00Z", "allowlist": ["/workspace"],
                              "checkouts": checkouts, "refusals": []}], "strings": []}
    ours, theirs = side_by_side(lambda: _run(sys.executable, spec),
                                lambda: _run(upstream("ozone").parent / "python", spec))
    [mine], [suite] = ours["graphs"], theirs["graphs"]
    assert mine == suite
    assert [o["kind"] for o in suite["omissions"]] == ["neighbor_of_pairs_capped"]
    assert sum(e["kind"] == "neighbor_of" for e in suite["edges"]) == 300 * 299 // 2
    assert suite["canonical"] and len(suite["conflicts"][0]["sides"]) == 302


def test_accented_paths_project_canonically() -> None:
    graph = project({"observed_at": "2026-07-26T12:00:00Z", "allowlist": ["/w"], "refusals": [],
                     "checkouts": [{"path": f"/w/{name}", "facts": {}} for name in ACCENTED]})
    assert is_canonical(graph)
    node = next(n for n in graph["nodes"] if n.get("path") == "/w/caf\u00e9")
    node["path"] = "/w/cafe\u0301"  # the same word, decomposed: another path
    assert not is_canonical(graph)
