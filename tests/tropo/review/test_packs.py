"""The review packs and impact, side by side with the suite's review layer (vivary-ozone
0.3.2 behind its `vivary` front door): on generated workspaces with planted findings,
the same JSON documents and exit statuses, and the same text but for the summary line's
program name (docs/review.md lists that difference). The oracle runs on an export of the
tree we read with --rev or --staged, so those sources are held to the same answers."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.repos import commit_all, git
from tests.support.review_workspaces import workspace
from tests.support.tropo_parity import side_by_side
from tropo.check.graph import Edge, Graph, Node
from tropo.review import budget, packs

DRIVER = Path(__file__).parents[2] / "vivary" / "frontdoor_driver.py"
PER_PACK = 52
RULES = {
    "structure": {"change-unverified", "change-ungated", "module-unverified", "orphan",
                  "broken-edge"},
    "context-budget": {"module-index-missing", "legacy-module-file", "always-on-large",
                       "module-index-large", "bulk-load-cue", "duplicate-routing-block"},
    "editorial": {"draft-unreviewed", "draft-unedited", "draft-structure-missing",
                  "review-unlinked", "edit-unlinked"},
}


def _drive(python: Path | str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(cases),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: list[dict[str, Any]] = json.loads(proc.stdout)
    return result


def _oracle(upstream: Callable[[str], Path]) -> Path:
    return upstream("ozone").parent / "python"  # the suite's front door runs ozone in process


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _as_suite(stdout: str) -> str:
    """Our text with the suite's program name (the one deliberate text difference)."""
    return stdout.replace("\ntropo: reviewed ", "\nozone: reviewed ")


def _compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]],
             cases: list[dict[str, Any]]) -> None:
    for case, mine, oracle in zip(cases, ours, theirs, strict=True):
        assert mine["code"] == oracle["code"], case
        text = mine["stdout"] if "--json" in case["argv"] else _as_suite(mine["stdout"])
        assert text == oracle["stdout"], case


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """PER_PACK workspaces per pack (and some aimed at all of them); every other one a
    git repository with a commit, the rest plain folders."""
    base = tmp_path_factory.mktemp("review")
    out: dict[str, list[Path]] = {}
    for plant in (*RULES, "all"):
        out[plant] = []
        for seed in range(PER_PACK if plant != "all" else PER_PACK // 4):
            root = _write(base / f"{plant}-{seed}", workspace(seed, plant))
            if seed % 2:
                git(root, "init", "-q")
                commit_all(root)
            out[plant].append(root)
    return out


@pytest.mark.slow  # the slow tier: a parity corpus against the suite's review layer
@pytest.mark.parametrize("plant", [*RULES, "all"])
def test_packs_as_the_suite(plant: str, generated: dict[str, list[Path]],
                            upstream: Callable[[str], Path]) -> None:
    cases = []
    for root in generated[plant]:
        for pack in dict.fromkeys((plant, "all")):
            cases += [{"cwd": str(root), "argv": ["review", "--pack", pack, "--json"]},
                      {"cwd": str(root), "argv": ["review", "--pack", pack, "--json", "--strict"]},
                      {"cwd": str(root), "argv": ["review", "--pack", pack]}]
    ours, theirs = side_by_side(lambda: _drive(sys.executable, cases),
                                lambda: _drive(_oracle(upstream), cases))
    _compare(ours, theirs, cases)
    # The planted findings are reached: every rule of the pack fires somewhere, and the
    # strict gate both passes and fails.
    fired = {f["rule"] for case, mine in zip(cases, ours, strict=True)
             if "--json" in case["argv"] for f in json.loads(mine["stdout"])["findings"]}
    expected = set().union(*RULES.values()) if plant == "all" else RULES[plant]
    assert expected <= fired
    gated = {r["code"] for case, r in zip(cases, ours, strict=True) if "--strict" in case["argv"]}
    assert gated == ({1} if plant == "all" else {0, 1})


@pytest.mark.slow  # the slow tier: a parity corpus against the suite's review layer
def test_staged_and_rev_as_the_suite_on_that_tree(tmp_path: Path,
                                                  upstream: Callable[[str], Path]) -> None:
    cases, oracle_cases = [], []
    for seed in range(12):
        root = _write(tmp_path / f"ws-{seed}", workspace(seed, "all"))
        git(root, "init", "-q")
        commit_all(root)
        _write(root, workspace(seed + 100, "all"))  # staged: a second workspace on top
        git(root, "add", "-A")
        _write(root, workspace(seed + 200, "all"))  # worktree: a third
        for flag, export in (("--rev", tmp_path / f"head-{seed}" / root.name),
                             ("--staged", tmp_path / f"index-{seed}" / root.name)):
            export.mkdir(parents=True)  # the same folder name: a root index takes it as its id
            if flag == "--rev":
                subprocess.run(f"git archive HEAD | tar -x -C {export}", shell=True,
                               cwd=root, check=True)
            else:
                git(root, "checkout-index", "-a", f"--prefix={export}/")
            extra = ["HEAD"] if flag == "--rev" else []
            for mode in (["--json"], []):
                cases.append({"cwd": str(root),
                              "argv": ["review", "--pack", "all", flag, *extra, *mode]})
                oracle_cases.append({"cwd": str(export), "argv": ["review", "--pack", "all", *mode]})
        cases.append({"cwd": str(root), "argv": ["review", "--pack", "all", "--json"]})
        oracle_cases.append({"cwd": str(root), "argv": ["review", "--pack", "all", "--json"]})
    ours, theirs = side_by_side(lambda: _drive(sys.executable, cases),
                                lambda: _drive(_oracle(upstream), oracle_cases))
    _compare(ours, theirs, oracle_cases)
    documents = [r["stdout"] for c, r in zip(cases, ours, strict=True) if "--json" in c["argv"]]
    assert len(set(documents)) > len(documents) // 2  # the three trees really differ


@pytest.mark.slow  # the slow tier: a parity corpus against the suite's review layer
def test_impact_as_the_suite(generated: dict[str, list[Path]],
                             upstream: Callable[[str], Path]) -> None:
    rng = random.Random(18)
    cases = []
    for root in generated["structure"] + generated["editorial"]:
        g = json.loads(run_cli("tropo", "graph", "--json", cwd=root).stdout)
        ids = [n["id"] for n in g["nodes"]]
        targets = [*rng.sample(ids, min(3, len(ids))), "no-such-node"]
        for target in targets:
            cases += [{"cwd": str(root), "argv": ["impact", target, "--json"]},
                      {"cwd": str(root), "argv": ["impact", target]}]
    cases.append({"cwd": str(generated["structure"][0]), "argv": ["impact"]})
    ours, theirs = side_by_side(lambda: _drive(sys.executable, cases),
                                lambda: _drive(_oracle(upstream), cases))
    for case, mine, oracle in zip(cases, ours, theirs, strict=True):
        assert mine["code"] == oracle["code"], case
        if "--json" in case["argv"] and mine["code"] == 0:
            assert mine["stdout"] == oracle["stdout"], case
        elif mine["code"] == 0:  # text: our program name, and "untyped" for a node with no type
            expected = oracle["stdout"].replace("ozone: ", "tropo: ").replace("(None, via", "(untyped, via")
            assert mine["stdout"] == expected, case
    reached = [json.loads(r["stdout"])["impacted"] for c, r in zip(cases, ours, strict=True)
               if "--json" in c["argv"] and r["code"] == 0]
    assert 0 in reached and max(reached) >= 3
    assert {r["code"] for r in ours} == {0, 1}


def test_no_workspace_is_refused_as_the_suite(tmp_path: Path,
                                              upstream: Callable[[str], Path]) -> None:
    cases = [{"cwd": str(tmp_path), "argv": argv} for argv in
             (["review"], ["review", "--json"], ["impact", "x"], ["review", "--pack", "nope"],
              ["review", "--governed"])]
    ours, theirs = side_by_side(lambda: _drive(sys.executable, cases),
                                lambda: _drive(_oracle(upstream), cases))
    assert [r["code"] for r in ours] == [r["code"] for r in theirs] == [1, 1, 1, 2, 2]
    assert list(tmp_path.iterdir()) == []


# --- the packs themselves ----------------------------------------------------------------


def _graph(nodes: dict[str, str], edges: list[tuple[str, str, str]]) -> Graph:
    made = {nid: Node(nid, path.split("/")[0] if "/" in path else None, path, nid, {})
            for nid, path in nodes.items()}
    return Graph(made, sorted(Edge(s, f, d, d not in made) for s, f, d in edges))


def test_structure_findings_and_their_order() -> None:
    g = _graph({"c": "changes/c.md", "m": "modules/m/index.md", "v": "verification/v.md",
                "lone": "notes/lone.md", "top": "top.md"},
               [("c", "verification", "v"), ("m", "related", "gone"), ("v", "x", "m")])
    found = [(f["rule"], f["id"]) for f in packs.structure(g)]
    assert found == [("change-ungated", "c"), ("orphan", "lone"), ("module-unverified", "m"),
                     ("orphan", "top"), ("broken-edge", "m")]
    orphan = next(f for f in packs.structure(g) if f["id"] == "top")
    assert orphan["message"] == "node 'top' is disconnected (no edges in or out)"


def test_editorial_links_count_in_either_direction_and_never_when_broken() -> None:
    g = _graph({"d": "drafts/d.md", "r": "reviews/r.md", "e": "edits/e.md", "o": "outlines/o.md"},
               [("r", "draft", "d"), ("d", "edits", "e"), ("o", "targets", "d"),
                ("e", "review", "gone")])
    assert packs.editorial(g) == []
    lone = _graph({"d": "drafts/d.md", "e": "edits/e.md"}, [("e", "draft", "missing")])
    assert [f["rule"] for f in packs.editorial(lone)] == [
        "draft-unreviewed", "draft-unedited", "draft-structure-missing", "edit-unlinked"]


def _files(files: dict[str, bytes]) -> budget.Files:
    return budget.Files({rel: True for rel in files}, files.get)


def test_surface_sizes_read_as_the_suite_reads_text() -> None:
    crlf = b"\xef\xbb\xbf" + b"line\r\n" * 80 + b"\r\n"  # 81 lines once newlines are universal
    found = budget.context_budget(_files({"STATE.md": crlf, "AGENTS.md": b"a\rb\n" * 80}))
    assert [(f["rule"], f["path"]) for f in found] == [("always-on-large", "STATE.md")]
    assert found[0]["message"].startswith("STATE.md is 81 line(s), 401 char(s);")
    assert found[0]["estimated_tokens"] == 101


def test_module_folders_cues_and_repeated_blocks() -> None:
    block = b"routing " * 20
    files = {"modules/a/notes.txt": b"", "modules/b.md": b"", "modules/b/index.md": block,
             "README.md": b"Read the whole repo.\nNever read everything.\n\n" + block.upper()}
    assert [(f["rule"], f["path"]) for f in budget.context_budget(_files(files))] == [
        ("module-index-missing", "modules/a/index.md"), ("legacy-module-file", "modules/b.md"),
        ("bulk-load-cue", "README.md"), ("duplicate-routing-block", "README.md")]
    links = budget.Files({"AGENTS.md": False}, {"AGENTS.md": b"Load everything.\n"}.get)
    assert budget.context_budget(links) == []  # a symlink is listed, never read


def test_review_and_impact_through_the_front_door_are_the_owning_commands(
        generated: dict[str, list[Path]]) -> None:
    root = generated["all"][1]
    target = json.loads(run_cli("tropo", "graph", "--json", cwd=root).stdout)["edges"][0]["to"]
    for front, own in ((["vivary", "review", "--pack", "all", "--json"],
                        ["tropo", "review", "--pack", "all", "--json"]),
                       (["vivary", "review", "--strict"], ["tropo", "review", "--strict"]),
                       (["vivary", "impact", target], ["tropo", "impact", target])):
        mine, theirs = run_cli(*front, cwd=root), run_cli(*own, cwd=root)
        assert (mine.returncode, mine.stdout) == (theirs.returncode, theirs.stdout)
