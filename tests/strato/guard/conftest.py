"""Guard fixtures: a workspace with one commit, real ssh-keygen keys and signatures."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest

from strato.agents import trust
from strato.guard import pin, store
from tests.conftest import commit_all, git, write_files
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

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


@pytest.fixture
def ws(repo_dir: Path, tmp_path: Path) -> Workspace:
    space = Workspace(repo_dir, tmp_path)
    space.commit({"README.md": "# ws\n"}, "initial")
    return space


@pytest.fixture
def key(tmp_path: Path) -> Key:
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    return make_key(keys)


STRATO = str(Path(sys.executable).parent / "strato")


def approve_policy(ws: Workspace, resource_id: str) -> None:
    """Approve the policy in force for ``resource_id`` as a person does after reading it:
    ``strato guard trust RESOURCE`` (its command predicates may run from then on)."""
    proc = subprocess.run(
        [STRATO, "guard", "trust", resource_id, "--root", str(ws.root)],
        capture_output=True, text=True, check=False,
    )
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
    return store.stored(repo, notes.tree_of(repo, tip), anchor, note).data.decode()


def put_ledger(ws: Workspace, anchor: str, text: str) -> str:
    """Replace a ledger's bytes wholesale in a new notes commit, as anyone who can push
    the notes ref can; returns the new notes tip."""
    repo = ws.repo
    tip = gitrefs.read_ref(repo, store.REF)
    tree = store.replace_tree(repo, tip, anchor, text.encode())
    return notes.commit(repo, store.REF, tip, tree, "hand-edited ledger\n")


def drop_ledger(ws: Workspace, anchor: str) -> str:
    """Delete a ledger (its note and its lines) in new notes commits, as anyone who can
    push the notes ref can; returns the new notes tip."""
    git(ws.root, "notes", "--ref=vivary/guard", "remove", anchor)
    repo = ws.repo
    tip = gitrefs.read_ref(repo, store.REF)
    tree = notes.tree_of(repo, tip)
    assert tree is not None
    lines = repo.TreeBuilder(tree[store.LEDGERS])
    lines.remove(anchor)
    top = repo.TreeBuilder(tree)
    top.insert(store.LEDGERS, lines.write(), pygit2.GIT_FILEMODE_TREE)
    staged = repo[top.write()]
    assert isinstance(staged, pygit2.Tree)
    return notes.commit(repo, store.REF, tip, store.without_state(repo, staged, anchor), "deleted ledger\n")
