"""Side by side with vivary-tropo 0.5.4: same verdict, same (path, line, code) per finding,
same graph, except for the findings we add on purpose (docs/findings.md)."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tests.support.sides import served
from tests.support.vaults import VAULT, tropo_json

pytestmark = pytest.mark.slow  # the slow tier (parity corpus against vivary-tropo): -m "not slow" leaves it out

OURS_ONLY = {"E002", "E003", "E130", "W230", "I221"}

CODING_TOML = """\
version = 1
packs = ["coordination"]
exclude = ["AGENTS.md", "STATE.md", "README.md", "SOUL.md", "STRATO.md", "USER.md", "MEMORY.md",
           "bug-risk-playbook.md", "docs", "memory", ".agents"]

[base]
derive = ["id", "title"]
optional = { tags = "string-list", created = "date", updated = "date" }

[types.module]
folder = "modules"
required = { project = "string", status = "enum:active|draft|blocked|archived", module_area = "string" }
optional = { related_modules = "ref-list", related_changes = "ref-list", verification = "ref-list", gates = "ref-list" }

[types.change]
folder = "changes"
required = { project = "string", status = "enum:planned|active|done|blocked|deferred" }
optional = { related_modules = "ref-list", verification = "ref-list", gates = "ref-list", supersedes = "ref" }

[types.decision]
folder = "decisions"
required = { project = "string", status = "enum:proposed|accepted|superseded|deferred", date = "date" }
optional = { related_modules = "ref-list", related_changes = "ref-list", supersedes = "ref", superseded_by = "ref" }

[types.verification]
folder = "verification"
required = { project = "string", status = "enum:planned|passed|failed|blocked|deferred", target = "string" }
optional = { related_modules = "ref-list", related_changes = "ref-list", command = "string" }

[types.gate]
folder = "gates"
required = { project = "string", status = "enum:open|approved|rejected|deferred", gate = "string" }
optional = { approver = "string", approved_at = "datetime", related_changes = "ref-list" }
"""

CODING = {
    "tropo.toml": CODING_TOML,
    "AGENTS.md": "# Agents\nread modules/index.md first\n",
    "STATE.md": "---\nnot: [valid\n---\n",
    "modules/index.md": "---\nproject: demo\nstatus: active\nmodule_area: progressive disclosure router\n"
                        "related_modules: [agent-workspace, tropo-core]\n---\n# Modules\n\n"
                        "- `agent-workspace` -> `modules/agent-workspace/index.md`\n",
    "modules/agent-workspace/index.md": "---\nproject: demo\nstatus: active\nmodule_area: workspace\n"
                                        "related_changes: [first-slice]\nverification: [smoke]\ngates: [release]\n---\n"
                                        "# Agent workspace\n\n## Purpose\nx\n",
    "modules/tropo-core/index.md": "---\nproject: demo\nstatus: draft\nmodule_area: graph\n---\n# Tropo core\n",
    "changes/first-slice.md": "---\nproject: demo\nstatus: active\nrelated_modules: [agent-workspace]\n"
                              "verification: [smoke]\nassignee: agent-1\n---\n# First slice\n",
    "changes/broken-slice.md": "---\nproject: demo\nstatus: started\nrelated_modules: [nowhere, Bad_Ref]\n"
                               "owner: me\n---\n# Broken\n",
    "decisions/0001-graph.md": "---\nproject: demo\nstatus: accepted\ndate: 2026-01-02\n"
                               "related_changes: [first-slice]\nid: 0001-graph\n---\n# Graph first\n",
    "verification/smoke.md": "---\nproject: demo\nstatus: passed\ntarget: first-slice\ncommand: make test\n---\n",
    "gates/release.md": "---\nproject: demo\nstatus: open\ngate: release\napproved_at: yesterday\n---\n",
    "gates/empty.md": "---\nproject: ''\nstatus: open\n---\n",
    "notes/loose.md": "---\nanything: goes\n---\n# untyped\n",
    "notes/bad.md": "---\n- a list\n---\n",
}

BAD_VAULT = {
    **VAULT,
    "meetings/broken.md": "---\ndate: 2026-01-01\nattendees: [jeff, ghost]\nwho: x\n---\n",
    "people/x.md": "---\nrelationship: [a, b]\n---\n",
    "people/dup.md": "---\nrelationship: a\nrelationship: b\n---\n",
    "projects/p/README.md": "---\nstatus: active\ntitle: P\n---\n# P\n",
}


def _run_upstream(exe: Path, root: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = served(exe, [*args, "--json", "--root", str(root)], Path.cwd())
    return proc.returncode, json.loads(proc.stdout)


def _key(payload: dict) -> tuple[bool, list[tuple[str, int, str]]]:  # type: ignore[type-arg]
    rows = sorted((f["path"], f["line"], f["code"]) for f in payload["findings"]
                  if f["code"] not in OURS_ONLY)
    return payload["errors"] == 0, rows


@pytest.mark.parametrize("files", [VAULT, BAD_VAULT, CODING], ids=["vault", "bad-vault", "coding"])
@pytest.mark.parametrize("flags", [[], ["--lenient"]], ids=["strict", "lenient"])
def test_check_agrees_with_upstream(
    upstream: Callable[[str], Path], repo_dir: Path, files: dict[str, str], flags: list[str]
) -> None:
    write_files(repo_dir, files)
    commit_all(repo_dir)
    up_code, up = _run_upstream(upstream("tropo"), repo_dir, "check", *flags)
    code, ours = tropo_json("check", *flags, cwd=repo_dir)
    assert (code, _key(ours)) == (up_code, _key(up))
    assert ours["checked"] == up["checked"]


@pytest.mark.parametrize("files", [VAULT, BAD_VAULT, CODING], ids=["vault", "bad-vault", "coding"])
def test_graph_agrees_with_upstream(upstream: Callable[[str], Path], repo_dir: Path,
                                    files: dict[str, str]) -> None:
    write_files(repo_dir, files)
    commit_all(repo_dir)
    _, up = _run_upstream(upstream("tropo"), repo_dir, "graph")
    _, ours = tropo_json("graph", cwd=repo_dir)
    assert ours == up
    node = "agent-workspace" if "modules/index.md" in files else "jeff"
    _, up_blast = _run_upstream(upstream("tropo"), repo_dir, "blast", node)
    _, our_blast = tropo_json("blast", node, cwd=repo_dir)
    assert our_blast == up_blast


ACCENTED = {  # refs written with vivary-tropo's ids of accented names
    "tropo.toml": 'version = 1\n[types.note]\nfolder = "notes"\noptional = { about = "ref-list" }\n',
    "notes/Café Ünïcode.md": "---\nabout: [ber]\n---\n# Café\n",
    "notes/naïve café.md": "---\nabout: [caf-n-code]\n---\n# Naïve\n",
    "notes/Ångström_x.md": "---\nabout: [na-ve-caf, caf-n-code, ghost]\n---\n# Å\n",
    "notes/Über/README.md": "---\nabout: [ngstr-m_x]\n---\n# Über\n",  # an index: the folder's id
}


def test_refs_written_for_upstream_resolve_to_the_same_documents(
    upstream: Callable[[str], Path], repo_dir: Path
) -> None:
    """Our ids of accented names differ from vivary-tropo's; its ids still resolve, to the
    same documents (edges compared by path), and only as advice (I221)."""
    write_files(repo_dir, ACCENTED)
    commit_all(repo_dir)
    up_code, up = _run_upstream(upstream("tropo"), repo_dir, "check")
    code, ours = tropo_json("check", cwd=repo_dir)
    assert (code, _key(ours)) == (up_code, _key(up))
    assert sorted(f["line"] for f in ours["findings"] if f["code"] == "I221") == [2] * 5

    def edges(graph: dict) -> set[tuple[str, str, str, bool]]:  # type: ignore[type-arg]
        path = {n["id"]: n["path"] for n in graph["nodes"]}
        return {(path[e["from"]], e["field"], path.get(e["to"], e["to"]), e["broken"])
                for e in graph["edges"]}

    _, up_graph = _run_upstream(upstream("tropo"), repo_dir, "graph")
    _, our_graph = tropo_json("graph", cwd=repo_dir)
    assert edges(our_graph) == edges(up_graph)
    assert {n["id"] for n in our_graph["nodes"]} >= {"café-ünïcode", "über"}


def test_upstream_thin_scaffold_checks_the_same(upstream: Callable[[str], Path], tmp_path: Path) -> None:
    ws = tmp_path / "thin"
    subprocess.run([str(upstream("create-vivary")), "init", str(ws), "--preset", "coding", "--yes"],
                   check=True, capture_output=True)
    write_files(ws, {".vivary/records/note/x.md": "# x\n"})
    git(ws, "init", "-q")
    commit_all(ws)
    for args in (["check"], ["graph"], ["types"]):
        up_code, up = _run_upstream(upstream("tropo"), ws, *args)
        code, ours = tropo_json(*args, cwd=ws)
        assert code == up_code
        if args == ["check"]:
            assert _key(ours) == _key(up)
        elif args == ["graph"]:
            assert ours == up
        else:
            assert ours["types"] == up["types"]


# Pieces of frontmatter lines, valid and not, in vivary-tropo's subset or only in YAML.
_INDENTS = ["", "", "", " ", "  ", "  ", "    ", "\t", " \t"]
_BODIES = [
    "key: value", "key:", "other: 1", "key: [a, b]", "key: [a, b", "key: {a: 1}", "key: |",
    "key: >-", "key: |2", "- item", "- other", "-", "- name: x", "- http://x.org/a", "- https: x",
    "- [x, y]", "- - nested", "no colon here", "key: v # comment", "# only a comment",
    "'quoted': v", '"q:k": v', "key: 'it''s: fine'", "a: b: c", "key: &anchor x", "ref: *anchor",
    "? complex", ": value", "key: \"open", "key:   ", "url: http://x.org", "k: v\\", "---x",
    "key: !!str x", "tags: [a, 'b, c']", "x: -", "dup: 1", "dup: 2", "key:#not-a-comment",
    "ключ: значение", "key: - a", "- 'quoted: item'",
]


def _malformed_corpus(count: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    corpus = {}
    for i in range(count):
        lines = [rng.choice(_INDENTS) + rng.choice(_BODIES) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.3:
            lines.insert(rng.randint(0, len(lines)), "")
        corpus[f"notes/c{i:04}.md"] = "---\n" + "\n".join(lines) + "\n---\n# c\n"
    return corpus


def test_every_e001_line_agrees_with_upstream_on_a_malformed_corpus(
    upstream: Callable[[str], Path], repo_dir: Path
) -> None:
    """Whatever vivary-tropo's subset refuses is E001 here at the same line; what only YAML
    refuses (docs/findings.md) is E001 here alone, never the other way round."""
    corpus = _malformed_corpus(800, seed=13)
    write_files(repo_dir, {"tropo.toml": "version = 1\n[base]\nallow_untyped = true\n", **corpus})
    _, up = _run_upstream(upstream("tropo"), repo_dir, "check", "--lenient")
    _, ours = tropo_json("check", "--lenient", cwd=repo_dir)

    def e001(payload: dict) -> dict[str, int]:  # type: ignore[type-arg]
        return {f["path"]: f["line"] for f in payload["findings"] if f["code"] == "E001"}

    theirs, mine = e001(up), e001(ours)
    assert len(theirs) > 300  # the corpus exercises the subset's refusals
    assert {p: mine.get(p) for p in theirs} == theirs
    yaml_only = {p for p in mine if p not in theirs}
    messages = {f["message"] for f in ours["findings"] if f["path"] in yaml_only and f["code"] == "E001"}
    assert all("subset" not in m for m in messages), messages


def test_check_paths_lists_findings_in_the_order_the_paths_were_given(
    upstream: Callable[[str], Path], repo_dir: Path
) -> None:
    write_files(repo_dir, BAD_VAULT)
    commit_all(repo_dir)
    paths = [str(repo_dir / p) for p in ("people/x.md", "meetings", "people", "projects/p/README.md")]

    def order(payload: dict) -> list[str]:  # type: ignore[type-arg]
        seen: list[str] = []
        for f in payload["findings"]:
            if f["code"] != "W220" and f["path"] not in seen:  # refs: docs/findings.md
                seen.append(f["path"])
        return seen

    _, up = _run_upstream(upstream("tropo"), repo_dir, "check", *paths)
    _, ours = tropo_json("check", *paths, cwd=repo_dir)
    assert order(ours) == order(up)
    assert order(up)[:2] == ["people/x.md", "meetings/broken.md"]
    assert ours["checked"] == up["checked"]
