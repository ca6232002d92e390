"""The git object types the rest of the toolkit may name, and the small questions about
them that need the bindings.

Everything above the repository layer types its values with these names, never with
``pygit2`` itself, so the bindings stay behind one door (docs/architecture.md).
"""

from __future__ import annotations

import pygit2

Repository = pygit2.Repository
Commit = pygit2.Commit
Tree = pygit2.Tree
Blob = pygit2.Blob
Oid = pygit2.Oid
Signature = pygit2.Signature
GitError = pygit2.GitError


def hash_blob(data: bytes) -> str:
    """The object id git gives ``data`` as a blob (``git hash-object``), stored nowhere."""
    return str(pygit2.hash(data))


def valid_ref_name(name: str) -> bool:
    """Whether git accepts ``name`` as a full ref name (``git check-ref-format``)."""
    return bool(pygit2.reference_is_valid_name(name))


def oid(hex_id: str) -> Oid:
    """An object id from its 40 hex digits (ValueError otherwise)."""
    return pygit2.Oid(hex=hex_id)


# The guard builds its ledger trees itself (one blob per line, strato.guard.store).
Object = pygit2.Object
TreeBuilder = pygit2.TreeBuilder
FILEMODE_BLOB = pygit2.GIT_FILEMODE_BLOB
FILEMODE_TREE = pygit2.GIT_FILEMODE_TREE
