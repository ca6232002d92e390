"""Guard helpers: a workspace with one commit, real ssh-keygen keys and signatures, and
ledgers edited by hand as anyone who can push the notes ref can."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from strato.agents import trust
from strato.guard import engine, layout, ledgertrees, pin, signedops, signers, sshsig, store
from strato.guard.canonical import seal
from tests.support import console
from tests.support.repos import commit_all, git, write_files
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.notes import anchor_id

POLICY: dict[str, Any] = {
    "graph": {"draft": ["review"], "review": ["released", "draft"]},
    "initial": "draft",
    "terminal": ["released"],
    "edge_predicates": {
        "draft->review": [{"id": "notes", "statement": 'server_file_exists("NOTES.md")'}],
        "review->released": [
            {"id": "tests", "type": "deterministic", "statement": 'server_file_exists("PASSED")'}
        ],
    },
    "stakes": {"review->released": "paranoid"},
}


@dataclass
class Key:
    path: Path
    public: str  # "<type> <base64>"

    def signers_line(self, principal: str, options: str = "") -> str:
        return f"{principal} {options + ' ' if options else ''}{self.public}\n"


def make_key(directory: Path, kind: str = "ed25519", name: str = "id") -> Key:
    path = directory / f"{name}_{kind}"
    bits = {"ecdsa": ["-b", "256"], "rsa": ["-b", "2048"]}.get(kind, [])
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, *bits, "-N", "", "-C", name, "-f", str(path)], check=True
    )
    public = " ".join(Path(str(path) + ".pub").read_text().split()[:2])
    return Key(path, public)


def copy_key(template: Path, directory: Path) -> Key:
    """The key made once (``id_ed25519`` below ``template``) as this test's own files."""
    directory.mkdir(exist_ok=True)
    for made in template.iterdir():
        shutil.copy2(made, directory / made.name)
    path = directory / "id_ed25519"
    return Key(path, " ".join(Path(str(path) + ".pub").read_text().split()[:2]))


def ssh_sign(
    key: Key, namespace: str, message: bytes, tmp: Path, hashalg: str | None = None
) -> str:
    """Sign with the real ssh-keygen and return the armored signature."""
    msg = tmp / "message"
    msg.write_bytes(message)
    sig = Path(str(msg) + ".sig")
    sig.unlink(missing_ok=True)
    extra = ["-O", f"hashalg={hashalg}"] if hashalg else []
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key.path), "-n", namespace, *extra, str(msg)],
        check=True,
        capture_output=True,
    )
    return sig.read_text()


def outside_code(markdown: str) -> str:
    """``markdown`` without its code spans: what a renderer would interpret."""
    return re.sub(r"(`+) .*? \1(?!`)", "", markdown)


@dataclass
class Workspace:
    root: Path
    tmp: Path

    @property
    def repo(self) -> pygit2.Repository:
        return gitrepo.require(self.root)

    def commit(self, files: dict[str, str], message: str = "change") -> str:
        write_files(self.root, files)
        return commit_all(self.root, message)

    def trust(self, *lines: str) -> str:
        return self.commit({".vivary/guard/allowed_signers": "".join(lines)}, "trust signers")

    def pin(self, message: str = "guard: pin notes") -> str:
        """Pin the notes commit in the tree and commit it, as a change under review does."""
        pin.write(self.repo)
        return commit_all(self.root, message)


def approve_policy(ws: Workspace, resource_id: str) -> None:
    """Approve the policy in force for ``resource_id`` as a person does after reading it:
    ``strato guard trust RESOURCE`` (its command predicates may run from then on)."""
    proc = console.run("strato", "guard", "trust", resource_id, "--root", ws.root)
    assert proc.returncode == 0, proc.stderr


def approve_file(ws: Workspace, rel: str) -> None:
    """Approve the workspace file ``rel`` as it is now, as ``vivary trust FILE`` records
    it (a judge in ``.vivary/agents.toml`` runs only then)."""
    trust.approve(ws.root, "file", rel, (ws.root / rel).read_bytes())


def ledger_text(ws: Workspace, anchor: str) -> str:
    """The bytes of ``anchor``'s ledger at the notes tip, whichever layout keeps them."""
    repo = ws.repo
    tip = gitrefs.read_ref(repo, store.REF)
    note = notes.note_blob(repo, tip, anchor)
    return layout.stored(repo, notes.tree_of(repo, tip), anchor, note).data.decode()


def put_ledger(ws: Workspace, anchor: str, text: str) -> str:
    """Replace a ledger's bytes wholesale in a new notes commit, as anyone who can push
    the notes ref can; returns the new notes tip."""
    repo = ws.repo
    tip = gitrefs.read_ref(repo, store.REF)
    tree = ledgertrees.replace_tree(repo, tip, anchor, text.encode())
    return notes.commit(repo, store.REF, tip, tree, "hand-edited ledger\n")


def drop_ledger(ws: Workspace, anchor: str) -> str:
    """Delete a ledger (its note and its lines) in new notes commits, as anyone who can
    push the notes ref can; returns the new notes tip."""
    git(ws.root, "notes", "--ref=vivary/guard", "remove", anchor)
    repo = ws.repo
    tip = gitrefs.read_ref(repo, store.REF)
    tree = notes.tree_of(repo, tip)
    assert tree is not None
    lines = repo.TreeBuilder(tree[layout.LEDGERS])
    lines.remove(anchor)
    top = repo.TreeBuilder(tree)
    top.insert(layout.LEDGERS, lines.write(), pygit2.GIT_FILEMODE_TREE)
    staged = repo[top.write()]
    assert isinstance(staged, pygit2.Tree)
    return notes.commit(repo, store.REF, tip, ledgertrees.without_state(repo, staged, anchor), "deleted ledger\n")


def reseal(entries: list[dict[str, Any]]) -> str:
    """Recompute every digest so that the chain itself holds (a careful forger)."""
    out, prev = [], ""
    for entry in entries:
        body = {k: v for k, v in entry.items() if k != "entry_digest"}
        body["prev_digest"] = prev
        sealed, line = seal(body)
        prev = sealed["entry_digest"]
        out.append(line)
    return "".join(out)


RID = "release:9"


def anchor(rid: str = RID) -> str:
    return anchor_id(store.anchor_content(rid))


def ledger(ws: Workspace, rid: str = RID) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ledger_text(ws, anchor(rid)).splitlines()]


def forge(ws: Workspace, entries: list[dict[str, Any]], rid: str = RID) -> None:
    """Write ``entries`` as the ledger's lines with every digest recomputed, in an
    ordinary notes commit on top of the current one (the bytes review reads)."""
    put_ledger(ws, anchor(rid), reseal(entries))


def sign_override(ws: Workspace, key: Key, rationale: str) -> dict[str, Any]:
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": rationale}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    return {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)}


def at_review(ws: Workspace) -> None:
    (ws.root / "NOTES.md").write_text("n\n")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, move)["status"] == "applied"


def run(
    ws: Workspace | Path, *args: str, stdin: str | dict[str, Any] = ""
) -> subprocess.CompletedProcess[str]:
    """`strato guard ARGS --root ROOT` in process, `stdin` (a dict as JSON) on its input;
    a traceback would raise here, so a crash fails the test loudly."""
    root = ws.root if isinstance(ws, Workspace) else ws
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return console.run("strato", "guard", *args, "--root", root, input=text)


def out(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    return dict(json.loads(lines[0]))


def resign(ws: Workspace, key: Key | None, since: str | None) -> None:
    """Re-create every notes commit after ``since`` with the same trees, signed by
    ``key`` with the real git (unsigned when ``key`` is None)."""
    revs = ["rev-list", "--reverse", store.REF, *([f"^{since}"] if since else [])]
    parent = since
    for sha in git(ws.root, *revs).split():
        tree = git(ws.root, "rev-parse", f"{sha}^{{tree}}").strip()
        sign = ["-S"] if key else []
        cfg = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key.path}"] if key else []
        args = [*cfg, "commit-tree", *sign, tree, *(["-p", parent] if parent else []), "-m", "guard"]
        parent = git(ws.root, *args).strip()
    assert parent is not None
    git(ws.root, "update-ref", store.REF, parent)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")  # a rewrite, on purpose


def git_verifies(ws: Workspace, sha: str, allowed: str) -> bool:
    path = ws.tmp / "allowed_for_git"
    path.write_text(allowed)
    proc = subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={path}", "verify-commit", sha],
        cwd=ws.root,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def notes_commit(ws: Workspace, extra: str, parents: list[str] | None = None) -> str:
    """A notes commit whose tree is the current one plus ``extra`` ls-tree lines, made
    with git's own plumbing and set as the notes ref (what a force-push delivers)."""
    tip = git(ws.root, "rev-parse", store.REF).strip()
    listing = git(ws.root, "ls-tree", tip) + extra
    tree = subprocess.run(
        ["git", "mktree"], cwd=ws.root, input=listing, capture_output=True, text=True, check=True
    ).stdout.strip()
    flags = [f for p in (parents if parents is not None else [tip]) for f in ("-p", p)]
    sha = git(ws.root, "commit-tree", tree, *flags, "-m", "notes").strip()
    git(ws.root, "update-ref", store.REF, sha)
    return sha


def keygen_verifies(key: Key, namespace: str, message: bytes, armor: str, tmp: Path) -> bool:
    allowed = tmp / "allowed"
    allowed.write_text(key.signers_line("alice@example.com"))
    sig = tmp / "verify.sig"
    sig.write_text(armor)
    proc = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(allowed),
            "-I",
            "alice@example.com",
            "-n",
            namespace,
            "-s",
            str(sig),
        ],
        input=message,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def ours_verifies(key: Key, namespace: str, message: bytes, armor: str) -> bool:
    try:
        sig = sshsig.parse_armor(armor)
        trusted = signers.parse(key.signers_line("alice@example.com"))
        if signers.find(trusted, sig.key, namespace, 0) is None:
            return False
        sshsig.check(sig, namespace, message)
    except sshsig.SignatureError:
        return False
    return True


DOCS = Path(__file__).resolve().parents[2] / "docs" / "guard.md"


def recipe() -> str:
    text = DOCS.read_text()
    found = re.search(r"CI recipe \(any CI.*?```sh\n(.*?)```", text, re.DOTALL)
    assert found, "docs/guard.md has no CI recipe block"
    return found.group(1)


def ci(remote: Path, branch: str, where: Path) -> subprocess.CompletedProcess[str]:
    git(where.parent, "clone", "-q", str(remote), str(where))
    git(where, "checkout", "-q", branch)
    env = {
        **os.environ,
        "BASE_BRANCH": "main",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("PR", None)
    return subprocess.run(
        ["bash", "-c", recipe()], cwd=where, env=env, capture_output=True, text=True, check=False
    )


def pull_request(
    ws: Workspace, key: Key, branch: str, rid: str, files: dict[str, str] | None = None
) -> None:
    git(ws.root, "checkout", "-q", "-b", branch, "main")
    ws.commit({"NOTES.md": "n\n", **(files or {})}, f"{branch}: work")
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, {"resource_id": rid, "from_state": "draft", "to_state": "review"})
    ask = {"resource_id": rid, "from_state": "review", "to_state": "released", "rationale": "go"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
    ws.pin(f"{branch}: pin guard notes")


def origin_with_main(ws: Workspace, key: Key, tmp_path: Path) -> Path:
    """A bare remote whose main trusts alice and pins no ledgers yet."""
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    ws.trust(key.signers_line("alice@example.com"))
    ws.pin("main: trust alice, no ledgers yet")
    git(ws.root, "push", "-q", "origin", "main")
    return remote


WINDOW_RID = "window:1"  # the signer-window tests' resource and the override they ask for
WINDOW_ASK = {
    "resource_id": WINDOW_RID,
    "from_state": "review",
    "to_state": "released",
    "rationale": "shipped by hand",
}


def migrate_cli(ws: Workspace) -> tuple[int, dict[str, object]]:
    """`strato guard migrate-store --json`, in process: (exit code, its JSON)."""
    proc = console.run("strato", "guard", "migrate-store", "--root", ws.root, "--json")
    return proc.returncode, json.loads(proc.stdout)


def register_tip(ws: Workspace, rid: str) -> str:
    """``rid`` registered under :data:`POLICY` (one ledger line); the new notes tip."""
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    return git(ws.root, "rev-parse", store.REF).strip()


def refused_tip(ws: Workspace, rid: str) -> str:
    """One more line on ``rid``'s ledger (a refused step: NOTES.md is missing); the new
    notes tip."""
    move = {"resource_id": rid, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, move)["status"] == "refused"
    return git(ws.root, "rev-parse", store.REF).strip()


GROWN_RID = "svc:grow"  # the resource `grown` registers
GROWN_FORTH = {"resource_id": GROWN_RID, "from_state": "draft", "to_state": "review"}


def grown(ws: Workspace) -> Workspace:
    """A three-line ledger (its register, a transition and one back) on ``GROWN_RID``,
    each transition verifying the ledger before it appends (1 line, then 2)."""
    (ws.root / "NOTES.md").write_text("n\n")
    engine.register(ws.repo, {"resource_id": GROWN_RID, **copy.deepcopy(POLICY)})
    assert engine.transition(ws.repo, GROWN_FORTH)["status"] == "applied"
    back = {"resource_id": GROWN_RID, "from_state": "review", "to_state": "draft"}
    assert engine.transition(ws.repo, back)["status"] == "applied"
    return ws
