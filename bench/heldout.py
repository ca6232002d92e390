"""A second benchmark workspace, shaped unlike ``bench/generate.py``'s, to hold speed-ups
to what any workspace pays rather than to one generator's habits (issue 32's "held-out
shape").

Where ``bench.generate`` lays out one flat folder per type under a thin-v0.3 config with
short records, this one has a plain ``tropo.toml`` with a nested overlay, documents six to
nine folders deep, long bodies (code fences, tables, headings), many refs per document
(mostly block lists), comments and quoted values with colons in frontmatter, nested maps
and lists of numbers, Unicode titles and values, CRLF files, and a few broken documents
(bad YAML, a duplicate key, a tab, no closing fence, a list item that holds a mapping,
invalid UTF-8, no frontmatter at all). History is three commits (a rewrite of a third
of the documents, then a rename sweep), packed by ``git gc``.

    python -m bench.heldout --nodes 20000 OUT_DIR
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

TOML = """\
[base]
derive = ["id", "title"]
allow_untyped = false
required = { owner = "string" }
optional = { tags = "string-list", aliases = "list", meta = "any", notes = "string", \
reviewed = "date" }

[types.spec]
folder = "specs"
required = { status = "enum:draft|review|final|retired", version = "number" }
optional = { depends_on = "ref-list", implements = "ref-list", supersedes = "ref", \
links = "list", budget = "any", sign_off = "bool" }

[types.service]
folder = "services"
required = { tier = "enum:0|1|2|3", language = "string" }
optional = { depends_on = "ref-list", runbooks = "ref-list", endpoints = "string-list", \
slo = "any", repo = "url" }

[types.incident]
folder = "incidents"
required = { severity = "enum:sev1|sev2|sev3|sev4", started = "datetime" }
optional = { affects = "ref-list", caused_by = "ref", resolved = "bool", \
timeline = "list", followups = "ref-list" }

[types.runbook]
folder = "runbooks"
required = { service = "ref" }
optional = { steps = "string-list", related = "ref-list", last_drill = "date" }

[types.team]
folder = "teams"
required = { charter = "string" }
optional = { owns = "ref-list", oncall = "string", size = "number" }
""".replace("\\\n", "")

# A nested overlay may only tighten: this subtree requires sign-off on its specs.
OVERLAY = """\
[types.spec]
required = { sign_off = "bool" }
"""

KINDS = ("spec", "service", "incident", "runbook", "team")
SHARES = (0.34, 0.14, 0.3, 0.16, 0.06)
ORGS = ("platform", "payments", "identité", "data", "edge", "mobile", "infra", "ml")
UNITS = ("core", "ingest", "ledger", "graph", "auth", "search", "storage", "billing", "sync",
         "routing", "notify", "export")
WORDS = ("latency", "budget", "retry", "shard", "quorum", "replica", "ledger", "token", "cache",
         "backfill", "cutover", "drain", "canary", "rollback", "schema", "index", "queue",
         "Überlauf", "coût", "延迟", "データ", "réseau", "скорость", "límite")
TITLE_WORDS = ("Überprüfung", "der", "Zahlungsflüsse", "migración", "du", "réseau", "数据",
               "同步", "rollout", "plan", "for", "the", "ledger", "cutover", "Ωmega", "quorum",
               "façade", "naïve", "résumé", "backpressure", "review", "🚦", "→", "v2")
LANGS = ("go", "rust", "python", "kotlin", "typescript", "c++")


def _id(kind: str, i: int) -> str:
    """The document's id, which is its file name (ids derive from paths)."""
    return f"{kind[:3]}-{i:05d}-{UNITS[i * 7 % len(UNITS)]}"


def _title(rng: random.Random) -> str:
    return " ".join(rng.choice(TITLE_WORDS) for _ in range(rng.randint(3, 8))).capitalize()


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS + TITLE_WORDS) for _ in range(words)) + "."


def _body(rng: random.Random, title: str) -> str:
    """A long body: headings, paragraphs, a code fence with a ``#`` line, a table."""
    parts = [f"# {title}", ""]
    for section in range(rng.randint(3, 9)):
        parts += [f"## Section {section}: {rng.choice(WORDS)}", "", _prose(rng, rng.randint(30, 110)), ""]
        if rng.random() < 0.4:
            parts += ["```sh", "# not a title: a shell comment", f"make {rng.choice(UNITS)} -j4",
                      "```", ""]
        if rng.random() < 0.3:
            parts += ["| metric | before | after |", "|---|---:|---:|"]
            parts += [f"| {rng.choice(WORDS)} | {rng.randint(1, 999)} | {rng.randint(1, 999)} |"
                      for _ in range(rng.randint(2, 8))]
            parts.append("")
    return "\n".join(parts)


def _folder(rng: random.Random, kind: str, nested: bool) -> str:
    """Six to nine folders deep, the type's folder somewhere in the middle."""
    org = "platform" if nested else rng.choice(ORGS[1:])
    head = [org, rng.choice(UNITS), f"area-{rng.randint(0, 11):02d}"]
    tail = [str(2020 + rng.randint(0, 6)), f"q{rng.randint(1, 4)}"]
    if rng.random() < 0.5:
        tail.append(rng.choice(("archive", "current", "drafts")))
    return "/".join([*head, f"{kind}s", *tail])


def _reflist(rng: random.Random, key: str, ids: list[str], lo: int, hi: int) -> list[str]:
    chosen = sorted({ids[min(len(ids) - 1, int(len(ids) * rng.random() ** 2))]
                     for _ in range(rng.randint(lo, hi))})
    if rng.random() < 0.15:
        return [f"{key}: [{', '.join(chosen)}]"]
    return [f"{key}:", *(f"  - {target}" for target in chosen)]


def _frontmatter(rng: random.Random, kind: str, i: int, ids: dict[str, list[str]], nested: bool) -> list[str]:
    lines = [f"owner: {rng.choice(('team-' + rng.choice(UNITS), 'ops', 'Zoë Ång', 'sre-oncall'))}"]
    if rng.random() < 0.2:
        lines.append("# reviewed by the architecture group")
    if kind == "spec":
        lines += [f"status: {rng.choice(('draft', 'review', 'final', 'final', 'retired'))}",
                  f"version: {rng.choice(('1', '2', '1.5', '3.25', '10'))}"]
        lines += _reflist(rng, "depends_on", ids["spec"], 2, 20)
        if rng.random() < 0.5:
            lines += _reflist(rng, "implements", ids["service"], 1, 8)
        if nested or rng.random() < 0.3:
            lines.append(f"sign_off: {'yes' if rng.random() < 0.02 else rng.choice(('true', 'false'))}")
        if rng.random() < 0.25:
            lines += ["budget:", f"  cpu: {rng.randint(1, 64)}", f"  memory: {rng.randint(1, 256)}Gi",
                      "  regions:", "    - eu-west", "    - ap-south"]
        if rng.random() < 0.2:
            lines += ["links:", f"  - \"https://example.invalid/{rng.choice(UNITS)}#{i}\"",
                      f"  - ticket {rng.randint(100, 999)} (open)"]
    elif kind == "service":
        lines += [f"tier: {rng.randint(0, 3)}", f"language: {rng.choice(LANGS)}"]
        lines += _reflist(rng, "depends_on", ids["service"], 1, 12)
        lines += _reflist(rng, "runbooks", ids["runbook"], 1, 6)
        lines.append(f"endpoints: [/v1/{rng.choice(UNITS)}, /v2/{rng.choice(UNITS)}, /healthz]")
        if rng.random() < 0.4:
            lines += ["slo:", f"  availability: 99.{rng.randint(5, 99)}", f"  p99_ms: {rng.randint(50, 900)}"]
        lines.append(f"repo: https://example.invalid/{rng.choice(UNITS)}/{i}")
    elif kind == "incident":
        lines += [f"severity: sev{rng.randint(1, 4)}",
                  f"started: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                  f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"]
        lines += _reflist(rng, "affects", ids["service"], 1, 15)
        lines.append(f"resolved: {rng.choice(('true', 'false'))}")
        if rng.random() < 0.3:
            lines += ["timeline:", *(f"  - {rng.randint(0, 23):02d}h{rng.randint(0, 59):02d} "
                                     f"{rng.choice(WORDS)}" for _ in range(rng.randint(2, 9)))]
        lines.append(f'notes: "Root cause: {rng.choice(WORDS)} at {rng.randint(1, 9)}:{rng.randint(10, 59)}"')
    elif kind == "runbook":
        lines.append(f"service: {rng.choice(ids['service'])}")
        lines += ["steps:", *(f"  - {rng.choice(('drain', 'page', 'rollback', 'restart'))} "
                             f"{rng.choice(UNITS)}" for _ in range(rng.randint(2, 10)))]
        lines += _reflist(rng, "related", ids["runbook"], 0, 5)
        lines.append(f"last_drill: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
    else:
        lines += [f"charter: '{_title(rng)}'", f"size: {rng.randint(2, 40)}"]
        lines += _reflist(rng, "owns", ids["service"], 3, 30)
    if rng.random() < 0.3:
        lines.append(f"tags: [{', '.join(rng.sample(UNITS, rng.randint(1, 4)))}]")
    if rng.random() < 0.1:
        lines += ["meta:", "  source: import", f"  batch: {rng.randint(1, 50)}", "  flags: [a, b]"]
    if rng.random() < 0.05:
        lines.append(f"reviewed: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
    return lines


BROKEN = (
    lambda fm: [*fm, 'notes: "an unclosed quote'],  # invalid YAML
    lambda fm: [*fm, fm[0]],  # a duplicate key
    lambda fm: [*fm, "meta:", "\tsource: tab"],  # a tab in the indentation
    lambda fm: [*fm, "aliases:", "  - name: x", "    kind: y"],  # an item that holds a mapping
)


def documents(nodes: int, seed: int) -> dict[str, bytes]:
    """Every document, by path (the config files included)."""
    rng = random.Random(seed)
    counts = [max(2, int(nodes * share)) for share in SHARES]
    counts[0] += nodes - sum(counts)
    ids = {kind: [_id(kind, i) for i in range(n)] for kind, n in zip(KINDS, counts, strict=True)}
    files = {"tropo.toml": TOML.encode(), "platform/tropo.toml": OVERLAY.encode(),
             "README.md": b"# Held-out workspace\n\nNot a document of any type? It is: untyped.\n"}
    for kind, n in zip(KINDS, counts, strict=True):
        for i in range(n):
            nested = rng.random() < 0.1
            fm = _frontmatter(rng, kind, i, ids, nested)
            roll = rng.random()
            if roll < 0.004:
                fm = rng.choice(BROKEN)(fm)
            elif roll < 0.014 and kind in ("spec", "incident"):  # a ref to nothing
                fm.append(f"{'supersedes' if kind == 'spec' else 'caused_by'}: {_id(kind, n + i)}")
            elif roll < 0.02:  # a required field missing
                fm = fm[1:]
            title = _title(rng)
            text = "\n".join(["---", *fm, "---", "", _body(rng, title), ""])
            if rng.random() < 0.01:
                text = text.replace("\n", "\r\n")
            if roll > 0.9995:
                text = text.replace("\n---\n\n#", "\n\n#", 1)  # the block never closes
            data = text.encode()
            if 0.9990 < roll <= 0.9995:
                data = data.replace(b"\n# ", b"\n# \xff\xfe ", 1)  # not UTF-8
            folder = _folder(rng, kind, nested)
            files[f"{folder}/{ids[kind][i]}.md"] = data
    files["platform/notes/loose.md"] = b"No frontmatter, no title, untyped.\n"
    return files


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_AUTHOR_DATE": "2026-03-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-03-01T00:00:00Z"}
    subprocess.run(["git", "-c", "gc.auto=0", *args], cwd=cwd, check=True, env=env,
                   stdout=subprocess.DEVNULL)


def _write(out: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def build(out: Path, nodes: int, seed: int = 7) -> Path:
    """Create the workspace repository at ``out`` (absent or empty): three commits, packed."""
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    _git(out, "init", "-q", "-b", "main")
    files = documents(nodes, seed)
    first = {rel: data.replace(b"status: final", b"status: review") for rel, data in files.items()}
    _write(out, first)
    _git(out, "add", "-A")
    _git(out, "commit", "-q", "-m", "Import")
    rng = random.Random(seed + 1)
    rewritten = {rel: data for rel, data in files.items() if rng.random() < 0.33}
    _write(out, {**rewritten, **{rel: files[rel] for rel in files if first[rel] != files[rel]}})
    _git(out, "add", "-A")
    _git(out, "commit", "-q", "-m", "Rewrite a third")
    _write(out, files)
    _git(out, "add", "-A")
    _git(out, "commit", "-q", "--allow-empty", "-m", "Sweep")
    _git(out, "gc", "-q")
    time.sleep(1.1)  # past the racily-clean second of the index, as bench.generate does
    _git(out, "update-index", "-q", "--really-refresh")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.heldout",
        description="Build the held-out benchmark workspace (a git repository).",
        epilog="example: python -m bench.heldout --nodes 20000 /tmp/heldout-20k")
    parser.add_argument("out", type=Path, help="directory to create (must be absent or empty)")
    parser.add_argument("--nodes", type=int, default=1000, help="documents to generate (>= 50)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (same seed, same repo)")
    args = parser.parse_args(argv)
    if args.nodes < 50:
        print("bench.heldout: a benchmark workspace needs at least 50 nodes", file=sys.stderr)
        return 2
    try:
        started = time.perf_counter()
        build(args.out, args.nodes, args.seed)
    except FileExistsError as exc:
        print(f"bench.heldout: {exc}", file=sys.stderr)
        return 2
    print(f"bench.heldout: {args.nodes} nodes in {args.out} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
