"""Synthetic coding workspaces for the speed benchmark, deterministic for a given seed.

The shape is what ``create-vivary init --preset coding`` lays out (a thin-v0.3
``.vivary/workspace.toml``, ``AGENTS.md``, ``STATE.md``, ``.vivary/context.md``) with
records grown under ``.vivary/records/``: modules (each a folder with an index router,
plus a router over all modules), changes with ref-list edges to modules, verifications,
gates and earlier changes, decisions, verifications and gates; a little source code the
modules point at; a small fraction of broken refs and a few warnings and errors. Files
are committed in five commits through ``git fast-import`` so 100k nodes build quickly.

    python -m bench.generate --nodes 20000 OUT_DIR
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

RECORDS = ".vivary/records"
PROJECT = "bench"
EPOCH = 1767571200  # 2026-01-05T00:00:00Z: commit k is dated EPOCH + k weeks
WEEK = 7 * 24 * 3600

AREAS = ("auth", "billing", "search", "ingest", "render", "storage", "api", "sync",
         "cache", "queue", "audit", "notify", "export", "config", "deploy", "metrics")
VERBS = ("add", "fix", "split", "retry", "cache", "drop", "rename", "harden", "document",
         "measure", "migrate", "batch", "stream", "validate", "index", "trace")
NOUNS = ("timeouts", "tokens", "pages", "shards", "limits", "schemas", "events", "locks",
         "workers", "reports", "queries", "hooks", "keys", "snapshots", "quotas", "logs")
WORDS = ("the", "module", "keeps", "a", "bounded", "queue", "of", "work", "and", "reports",
         "every", "failure", "with", "its", "cause", "so", "agents", "can", "retry", "safely",
         "without", "reading", "whole", "tree", "when", "change", "lands", "we", "measure",
         "latency", "before", "after", "gate", "approves", "it")

# The thin-v0.3 config exactly as create-vivary 0.4.3 writes it for the coding preset.
WORKSPACE_TOML = """\
version = 1
exclude = [".git", ".agents", ".vivary/private", ".vivary/runtime"]

[workspace]
contract = "thin-v0.3"
preset = "coding"
state = "STATE.md"
private = [".vivary/private"]
runtime = [".vivary/runtime"]
adapters = []
capabilities = []

[base]
derive = ["id", "title"]
allow_untyped = true
optional = { tags = "string-list" }

[types.project]
folder = [".vivary", "projects"]
required = { status = "enum:idea|active|paused|shipped|archived" }
optional = { preset = "string", repo = "url", target_ship = "date" }

[types.module]
folder = "modules"
required = { project = "string", status = "enum:active|draft|blocked|archived", module_area = "string" }
optional = { related_modules = "ref-list", related_changes = "ref-list", verification = "ref-list", \
gates = "ref-list", source_files = "string-list", test_files = "string-list" }

[types.change]
folder = "changes"
required = { project = "string", status = "enum:planned|active|done|blocked|deferred", slice = "string" }
optional = { branch = "string", related_modules = "ref-list", related_changes = "ref-list", \
verification = "ref-list", gates = "ref-list" }

[types.decision]
folder = "decisions"
required = { project = "string", status = "enum:proposed|accepted|deferred|superseded", date = "date" }
optional = { supersedes = "ref", superseded_by = "ref", related_modules = "ref-list", \
related_changes = "ref-list", rationale = "string" }

[types.verification]
folder = "verification"
required = { project = "string", status = "enum:planned|passed|failed|blocked|deferred", target = "string" }
optional = { command = "string", evidence = "any", related_modules = "ref-list", \
related_changes = "ref-list" }

[types.gate]
folder = "gates"
required = { project = "string", status = "enum:open|approved|rejected|deferred", gate = "string" }
optional = { approver = "string", approved_at = "datetime", command_intent = "string", \
related_modules = "ref-list", related_changes = "ref-list" }
""".replace("\\\n", "")

GITIGNORE = ".vivary/private/\n.vivary/runtime/\n*.vivary-tmp\n"


@dataclass(frozen=True)
class Counts:
    """How many documents of each kind a workspace of ``nodes`` documents holds."""

    nodes: int
    modules: int
    decisions: int
    verifications: int
    gates: int
    changes: int

    @classmethod
    def of(cls, nodes: int) -> Counts:
        if nodes < 50:
            raise ValueError("a benchmark workspace needs at least 50 nodes")
        modules = max(3, nodes * 4 // 100)
        decisions, verifications, gates = nodes * 12 // 100, nodes * 14 // 100, nodes * 6 // 100
        fixed = 4  # AGENTS.md, STATE.md, .vivary/context.md, the modules router
        changes = nodes - fixed - modules - decisions - verifications - gates
        return cls(nodes, modules, decisions, verifications, gates, changes)

    def anomalies(self) -> dict[str, int]:
        """Deliberate findings, by code: a small fraction of broken refs, a few others."""
        n = self.nodes
        return {"W220": max(2, n // 400), "W202": max(1, n // 2000), "W210": max(1, n // 2000),
                "E103": max(1, n // 5000), "E101": max(1, n // 5000), "E001": max(1, n // 10000)}


def module_id(i: int) -> str:
    return f"{AREAS[i % len(AREAS)]}-{i:05d}"


HUB = module_id(0)  # the most referenced module: what ``blast`` is timed on


def _slug(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}-{rng.choice(AREAS)}-{rng.choice(NOUNS)}"


def _prose(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def _skewed(rng: random.Random, n: int) -> int:
    """An index in ``range(n)`` favouring small ones: a few hubs take most refs."""
    return min(n - 1, int(n * rng.random() ** 3))


@dataclass
class Doc:
    """One generated Markdown document; ``early`` is a prior version committed first."""

    path: str
    fields: list[tuple[str, object]]
    title: str
    body: str
    commit: int
    early: dict[str, object] = field(default_factory=dict)
    crlf: bool = False
    bom: bool = False

    def render(self, overrides: dict[str, object] | None = None) -> bytes:
        lines = ["---"]
        for key, value in self.fields:
            value = (overrides or {}).get(key, value)
            if isinstance(value, tuple):  # a block list
                lines.append(f"{key}:")
                lines += [f"  - {v}" for v in value]
            elif isinstance(value, list):
                lines.append(f"{key}: [{', '.join(map(str, value))}]")
            else:
                lines.append(f"{key}: {value}")
        lines += ["---", "", f"# {self.title}", "", self.body, ""]
        text = "\n".join(lines)
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return ("\ufeff" if self.bom else "").encode() + text.encode()


def _refs(values: list[str], rng: random.Random) -> object:
    """Half the ref-lists inline, half as block lists: both parse paths get exercised."""
    return values if rng.random() < 0.5 else tuple(values)


def _quoted(text: str, rng: random.Random) -> str:
    return f'"{text}"' if rng.random() < 0.3 else text


def documents(nodes: int, seed: int = 0) -> list[Doc]:
    """Every document of the workspace, in a deterministic order."""
    rng = random.Random(seed)
    c = Counts.of(nodes)
    third = max(1, c.changes // 3)
    change_ids = [f"c{i:06d}-{_slug(rng)}" for i in range(c.changes)]
    ver_ids = [f"v{i:06d}-{_slug(rng)}" for i in range(c.verifications)]
    gate_ids = [f"g{i:05d}-{_slug(rng)}" for i in range(c.gates)]
    dec_ids = [f"d{i:05d}-{_slug(rng)}" for i in range(c.decisions)]
    docs: list[Doc] = []

    def mods(k: int) -> list[str]:
        return sorted({module_id(_skewed(rng, c.modules)) for _ in range(k)})

    routes = "\n".join(f"- `{module_id(i)}` -> `modules/{module_id(i)}/index.md`"
                       for i in range(min(c.modules, 50)))
    docs.append(Doc(f"{RECORDS}/modules/index.md", [
        ("project", PROJECT), ("status", "active"),
        ("module_area", "progressive disclosure router"),
        ("related_modules", _refs([module_id(i) for i in range(min(c.modules, 12))], rng)),
    ], "Modules", "Open one module index, not the whole tree.\n\n" + routes, 0))
    for i in range(c.modules):
        mid, area = module_id(i), AREAS[i % len(AREAS)]
        fields: list[tuple[str, object]] = [
            ("project", PROJECT), ("status", rng.choice(("active", "active", "draft", "blocked"))),
            ("module_area", _quoted(f"{area} {rng.choice(NOUNS)}", rng)),
        ]
        if c.modules > 1:
            fields.append(("related_modules", _refs(
                [m for m in mods(rng.randint(1, 3)) if m != mid] or [module_id((i + 1) % c.modules)],
                rng)))
        fields.append(("source_files", [f"src/{area}/{mid}.py"]))
        fields.append(("test_files", [f"tests/{area}/test_{mid.replace('-', '_')}.py"]))
        docs.append(Doc(f"{RECORDS}/modules/{mid}/index.md", fields, f"Module {mid}",
                        "## Purpose\n\n" + _prose(rng, 3) + "\n\n## Read Next\n\n- `modules/index.md`", 0))
    for i, cid in enumerate(change_ids):
        fields = [("project", PROJECT),
                  ("status", rng.choice(("planned", "active", "done", "done", "blocked", "deferred"))),
                  ("slice", _quoted(cid.split("-", 1)[1].replace("-", " "), rng)),
                  ("branch", f"change/{cid}"),
                  ("related_modules", _refs(mods(rng.randint(1, 3)), rng))]
        if ver_ids and rng.random() < 0.6:
            fields.append(("verification", _refs(sorted({rng.choice(ver_ids)
                                                         for _ in range(rng.randint(1, 2))}), rng)))
        if gate_ids and rng.random() < 0.3:
            fields.append(("gates", [rng.choice(gate_ids)]))
        if i and rng.random() < 0.25:
            fields.append(("related_changes", [change_ids[rng.randrange(i)]]))
        doc = Doc(f"{RECORDS}/changes/{cid}.md", fields, f"Change {i}: {cid.split('-', 1)[1]}",
                  "## Why\n\n" + _prose(rng, rng.randint(2, 5)) + "\n\n## Done when\n\n- "
                  + _prose(rng, 1), 1 + min(2, i // third))
        if rng.random() < 0.03:
            doc.early = {"status": "planned"}
        docs.append(doc)
    for i, did in enumerate(dec_ids):
        fields = [("project", PROJECT),
                  ("status", rng.choice(("proposed", "accepted", "accepted", "superseded"))),
                  ("date", f"2026-0{1 + i % 6}-{1 + i % 28:02d}"),
                  ("related_modules", _refs(mods(rng.randint(1, 2)), rng))]
        if i and rng.random() < 0.1:
            fields.append(("supersedes", dec_ids[rng.randrange(i)]))
        if change_ids and rng.random() < 0.5:
            fields.append(("related_changes", [rng.choice(change_ids)]))
        fields.append(("rationale", _quoted(_prose(rng, 1).rstrip("."), rng)))
        docs.append(Doc(f"{RECORDS}/decisions/{did}.md", fields, f"Decision {i}: {did.split('-', 1)[1]}",
                        "## Context\n\n" + _prose(rng, 3) + "\n\n## Decision\n\n" + _prose(rng, 2),
                        1 + min(2, i * 3 // max(1, c.decisions))))
    for i, vid in enumerate(ver_ids):
        target = module_id(_skewed(rng, c.modules))
        fields = [("project", PROJECT),
                  ("status", rng.choice(("planned", "passed", "passed", "failed", "blocked"))),
                  ("target", target),
                  ("command", _quoted(f"pytest tests/{target.split('-')[0]} -q", rng))]
        if change_ids:
            fields.append(("related_changes", _refs([rng.choice(change_ids)], rng)))
        docs.append(Doc(f"{RECORDS}/verification/{vid}.md", fields, f"Verification {i}",
                        _prose(rng, 2), 1 + min(2, i * 3 // max(1, c.verifications))))
    for i, gid in enumerate(gate_ids):
        status = rng.choice(("open", "approved", "approved", "rejected"))
        fields = [("project", PROJECT), ("status", status), ("gate", f"review {gid.split('-', 1)[1]}")]
        if status == "approved":
            fields += [("approver", "maintainer"), ("approved_at", f"2026-02-{1 + i % 28:02d}T10:00:00Z")]
        if change_ids:
            fields.append(("related_changes", [rng.choice(change_ids)]))
        docs.append(Doc(f"{RECORDS}/gates/{gid}.md", fields, f"Gate {i}", _prose(rng, 2),
                        1 + min(2, i * 3 // max(1, c.gates))))
    _plant_anomalies(docs, c, rng)
    _plant_encodings(docs, rng)
    return docs


def _plant_anomalies(docs: list[Doc], c: Counts, rng: random.Random) -> None:
    """Spread the deliberate findings of :meth:`Counts.anomalies` over the documents."""
    def kind(folder: str) -> list[Doc]:
        return [d for d in docs if f"/{folder}/" in d.path]

    changes, decisions = kind("changes"), kind("decisions")
    verifications, gates = kind("verification"), kind("gates")
    want = c.anomalies()
    for j, d in enumerate(rng.sample(changes, want["W220"])):
        d.fields.append(("related_changes", [f"c9{j:05d}-retired-change"]))
        d.fields = _dedupe_last(d.fields)
    for d in rng.sample(changes, want["W202"]):
        d.fields.append(("owner", "someone"))
        d.fields = _dedupe_last(d.fields)
    for d in rng.sample(decisions, want["W210"]):
        d.fields.append(("title", d.title.replace(":", "")))
        d.title = d.title.replace(":", "")
    for d in rng.sample(changes, want["E103"]):
        d.fields = [(k, "wip" if k == "status" else v) for k, v in d.fields]
    for d in rng.sample(verifications, want["E101"]):
        d.fields = [(k, v) for k, v in d.fields if k != "target"]
    for d in rng.sample(gates, want["E001"]):
        d.fields.append(("status", "open"))  # a duplicate key: bad frontmatter


def _dedupe_last(fields: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """Keep one entry per key (the last), so planted fields never double a key."""
    seen: dict[str, object] = {}
    for k, v in fields:
        seen.pop(k, None)
        seen[k] = v
    return list(seen.items())


def _plant_encodings(docs: list[Doc], rng: random.Random) -> None:
    """A few files as a Windows editor saves them: CRLF line ends, a UTF-8 BOM."""
    for d in rng.sample(docs[1:], 2):
        d.crlf = True
    rng.choice(docs[1:]).bom = True


def scaffold_files() -> dict[str, bytes]:
    return {
        ".gitignore": GITIGNORE.encode(),
        ".vivary/workspace.toml": WORKSPACE_TOML.encode(),
        ".vivary/context.md": (b"---\nstatus: active\npreset: coding\n---\n# Workspace context\n\n"
                               b"Retrieve only the evidence a task needs.\n"),
        "AGENTS.md": b"# Agents\n\nRead `.vivary/context.md` first, then one module index.\n",
        "STATE.md": b"# State\n\nCurrent focus: the benchmark workspace.\n",
    }


def source_files(c: Counts) -> dict[str, bytes]:
    """The code the modules point at: one source and one test file per module."""
    out = {}
    for i in range(c.modules):
        mid, area = module_id(i), AREAS[i % len(AREAS)]
        name = mid.replace("-", "_")
        out[f"src/{area}/{mid}.py"] = f'"""{mid}."""\n\n\ndef run() -> int:\n    return {i}\n'.encode()
        out[f"tests/{area}/test_{name}.py"] = (
            f"from src.{area} import run\n\n\ndef test_{name}() -> None:\n    assert run() >= 0\n".encode())
    return out


def commits(nodes: int, seed: int = 0) -> list[tuple[str, dict[str, bytes]]]:
    """The five commits (message, files written by it) that build the workspace."""
    docs = documents(nodes, seed)
    c = Counts.of(nodes)
    plan: list[tuple[str, dict[str, bytes]]] = [
        ("Scaffold the coding workspace and its modules", {**scaffold_files(), **source_files(c)}),
        ("First slice of changes, decisions, verification, gates", {}),
        ("Second slice", {}),
        ("Third slice", {}),
        ("Status sweep", {}),
    ]
    for d in docs:
        if d.early:
            plan[d.commit][1][d.path] = d.render(d.early)
            plan[4][1][d.path] = d.render()
        else:
            plan[d.commit][1][d.path] = d.render()
    return plan


def fast_import_stream(plan: list[tuple[str, dict[str, bytes]]]) -> Iterator[bytes]:
    """A ``git fast-import`` stream of ``plan`` on ``refs/heads/main``, fixed identities."""
    for k, (message, files) in enumerate(plan):
        when = EPOCH + k * WEEK
        msg = message.encode()
        yield b"commit refs/heads/main\n"
        yield f"author Bench <bench@example.invalid> {when} +0000\n".encode()
        yield f"committer Bench <bench@example.invalid> {when} +0000\n".encode()
        yield b"data %d\n%s\n" % (len(msg), msg)
        for path in sorted(files):
            data = files[path]
            yield f"M 100644 inline {path}\n".encode()
            yield b"data %d\n%s\n" % (len(data), data)
        yield b"\n"


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, input=stdin, check=True, env=env,
                   stdout=subprocess.DEVNULL)


def build(out: Path, nodes: int, seed: int = 0) -> Path:
    """Create the workspace repository at ``out`` (which must not exist or be empty)."""
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    _git(out, "init", "-q", "-b", "main")
    _git(out, "fast-import", "--quiet", stdin=b"".join(fast_import_stream(commits(nodes, seed))))
    _git(out, "reset", "-q", "--hard", "main")
    # Files written in the same second as the index are "racily clean" and would be
    # re-hashed by every status; refresh once they are safely older.
    time.sleep(1.1)
    _git(out, "update-index", "-q", "--really-refresh")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generate",
        description="Build a synthetic coding workspace (a git repository) for the benchmark.",
        epilog="example: python -m bench.generate --nodes 20000 /tmp/ws-20k")
    parser.add_argument("out", type=Path, help="directory to create (must be absent or empty)")
    parser.add_argument("--nodes", type=int, default=1000, help="documents to generate (>= 50)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same repo)")
    args = parser.parse_args(argv)
    try:
        Counts.of(args.nodes)
        started = time.perf_counter()
        build(args.out, args.nodes, args.seed)
    except (ValueError, FileExistsError) as exc:
        print(f"bench.generate: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"bench.generate: git failed: {exc}", file=sys.stderr)
        return 1
    print(f"bench.generate: {args.nodes} nodes in {args.out} "
          f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
