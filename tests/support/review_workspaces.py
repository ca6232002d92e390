"""Seeded workspaces with planted review findings, for the review packs' parity with the
suite: nodes in every review folder linked (and mislinked, and broken) at random, and
routing surfaces that are too large, tell agents to bulk-load, repeat a block, or use
the encodings and line endings a reader can get wrong.

Each workspace is a dict of relative path -> bytes; ``plant`` says which pack it aims at.
"""

from __future__ import annotations

import random

STRUCTURE_FOLDERS = ("modules", "changes", "decisions", "verification", "gates", "notes")
EDITORIAL_FOLDERS = ("drafts", "manuscripts", "reviews", "editorial-reviews", "edits",
                     "revisions", "outlines", "structures", "beats", "notes")
STRUCTURE_FIELDS = ("verification", "gates", "related_modules", "related_changes", "supersedes")
EDITORIAL_FIELDS = ("review", "reviews", "editorial_review", "critique", "edit", "edits",
                    "revision", "revisions", "copyedit", "outline", "structure", "beat_sheet",
                    "beats", "brief", "draft", "drafts", "manuscript", "work", "target", "targets",
                    "related")
SURFACES = ("AGENTS.md", "CLAUDE.md", "STRATO.md", "SOUL.md", "STATE.md", "README.md")
CUES = ("Read the whole repo before you start.", "Load everything into context.",
        "Scan the docs-tree first", "Please OPEN all files.", "Do not read the entire repo.",
        "Never load everything.", "Avoid scanning the whole folder", "Read modules/index.md first.",
        "open the full docs and read them", "scan the entire-repository")
BLOCK = ("Routing rule: every agent starts at modules/index.md, picks one module, reads its "
         "index, and only then opens the files that module names as its sources of truth.")


def _toml(fields: tuple[str, ...], folders: tuple[str, ...], exclude: list[str]) -> str:
    optional = ", ".join(f"{name} = \"ref-list\"" for name in fields)
    lines = ["version = 1", f"exclude = {exclude!r}".replace("'", '"'), "", "[base]",
             'derive = ["id", "title"]', "allow_untyped = true", ""]
    for folder in folders:
        if folder == "notes":
            continue
        lines += [f"[types.{folder.replace('-', '_')}]", f'folder = "{folder}"',
                  f"optional = {{ {optional} }}", ""]
    return "\n".join(lines)


def _doc(rng: random.Random, links: dict[str, list[str]], title: str) -> str:
    front = "".join(f"{field}: [{', '.join(targets)}]\n" for field, targets in links.items())
    body = f"# {title}\n" + ("\nSome prose.\n" if rng.random() < 0.5 else "")
    return f"---\n{front}---\n{body}" if front or rng.random() < 0.8 else body


def _graph_files(rng: random.Random, folders: tuple[str, ...], fields: tuple[str, ...]) -> dict[str, str]:
    count = rng.randint(2, 22)
    placed: list[tuple[str, str]] = []  # (id, path)
    for n in range(count):
        folder = rng.choice(folders)
        nid = rng.choice([f"n{n}", f"node-{n}", f"item{n}"])
        if folder == "modules" and rng.random() < 0.4:
            path = f"modules/{nid}/index.md"
        elif rng.random() < 0.08:
            path = f"{folder}/sub/{nid}.md"
        else:
            path = f"{folder}/{nid}.md"
        placed.append((nid, path))
    if rng.random() < 0.15 and len(placed) > 2:  # two documents with one id
        nid, path = placed[0]
        other = rng.choice(folders)
        placed.append((nid, f"{other}/{nid}.md" if not path.startswith(f"{other}/") else f"{other}/z/{nid}.md"))
    if rng.random() < 0.2:
        placed.append(("root-note", "root-note.md"))
    ids = [nid for nid, _ in placed]
    out: dict[str, str] = {}
    for nid, path in placed:
        links: dict[str, list[str]] = {}
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            field = rng.choice(fields)
            targets = [rng.choice(ids) if rng.random() < 0.85 else rng.choice(["missing-1", "missing-2", "gone-é"])
                       for _ in range(rng.randint(1, 3))]
            links[field] = sorted(set(targets))
        out[path] = _doc(rng, links, nid)
    return out


def _surface_text(rng: random.Random, name: str, shared: str) -> str:
    lines = [f"# {name[:-3]}", ""]
    for _ in range(rng.randint(0, 6)):
        lines.append(rng.choice(CUES) if rng.random() < 0.6 else "Plain routing prose.")
    if rng.random() < 0.4:
        lines += ["", shared, ""]
    if rng.random() < 0.25:  # too many lines
        lines += [f"line {k}" for k in range(rng.choice([79, 81, 121, 161, 251]))]
    if rng.random() < 0.15:  # too many characters on few lines
        lines.append("x" * rng.choice([3999, 4001, 8001, 10001, 15001]))
    text = "\n".join(lines) + "\n"
    if rng.random() < 0.15:
        text = text.replace("\n", "\r\n")
    if rng.random() < 0.1:
        text = text.replace("Plain", "Plain\u2028split\x0cfeed", 1)
    return text


def _encode(rng: random.Random, text: str) -> bytes:
    data = text.encode()
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.08:
        data += b"bad \xff\xfe bytes\n"
    return data


def _routing_files(rng: random.Random) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    shared = BLOCK if rng.random() < 0.7 else BLOCK.upper().replace(" ", "  \n ")
    for name in SURFACES:
        if rng.random() < 0.6:
            out[name] = _encode(rng, _surface_text(rng, name, shared))
    if rng.random() < 0.7:
        out["modules/index.md"] = _encode(rng, _surface_text(rng, "modules/index.md", shared))
    for k in range(rng.randint(0, 5)):
        name = rng.choice(["alpha", "beta", "gamma", "delta", f"m{k}"])
        choice = rng.random()
        if choice < 0.35:
            out[f"modules/{name}/index.md"] = _encode(rng, _surface_text(rng, f"{name}.md", shared))
        elif choice < 0.6:
            out[f"modules/{name}/notes.txt"] = b"no index here\n"
        elif choice < 0.8:
            out[f"modules/{name}.md"] = b"# legacy\n"
            out[f"modules/{name}/index.md"] = b"# current\n"
        else:
            out[f"modules/{name}.md"] = b"# only the legacy file\n"
    if rng.random() < 0.2:
        out["MEMORY.md"] = b"Read the whole repo.\n"  # private memory: never reviewed
        out["memory/AGENTS.md"] = b"Load everything.\n"
    return out


def workspace(seed: int, plant: str) -> dict[str, bytes]:
    """One generated workspace aimed at ``plant`` (a pack name, or ``all``)."""
    rng = random.Random(f"{plant}-{seed}")
    files: dict[str, bytes] = {}
    if plant in ("structure", "all"):
        files.update({k: v.encode() for k, v in
                      _graph_files(rng, STRUCTURE_FOLDERS, STRUCTURE_FIELDS).items()})
    if plant in ("editorial", "all"):
        files.update({k: v.encode() for k, v in
                      _graph_files(rng, EDITORIAL_FOLDERS, EDITORIAL_FIELDS).items()})
    if plant in ("context-budget", "all") or rng.random() < 0.2:
        files.update(_routing_files(rng))
    exclude = [name for name in SURFACES if rng.random() < 0.5] + ["MEMORY.md", "memory"]
    folders = tuple(dict.fromkeys((*STRUCTURE_FOLDERS, *EDITORIAL_FOLDERS)))
    fields = tuple(dict.fromkeys((*STRUCTURE_FIELDS, *EDITORIAL_FIELDS)))
    files["tropo.toml"] = _toml(fields, folders, exclude).encode()
    return files
