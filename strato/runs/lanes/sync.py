"""Lanes between clones: `refs/vivary/lanes` is fetched from a remote, taken in (a
fast-forward, or a merge of the two logs when the clones diverged: see
`LaneStore.absorb`), and the result pushed back with a lease, so evidence another clone
pushed meanwhile is merged in turn rather than overwritten. The pre-push hook runs this
for every push; `strato lanes --sync REMOTE` runs it by hand."""

from __future__ import annotations

from pathlib import Path

from strato.runs.lanes.store import REF, LanesCorrupt, LaneStore
from tropo.git.refs import cas_ref, read_ref
from tropo.git.remote import RemoteError, fetch_ref, push_ref, remote_oid
from tropo.git.repo import require

INCOMING = "refs/vivary/lanes-incoming"  # where the remote's tip is fetched to, for the merge
MAX_PUSHES = 5


class LanesSyncError(Exception):
    """The lanes could not be brought in line with the remote (one line why)."""


def sync(root: Path, remote: str) -> str:
    """Bring this clone's lanes and `remote`'s into one; a one-line summary of what
    happened. `LanesSyncError` when the remote cannot be reached or its lanes read."""
    repo = require(root)
    store = LaneStore(repo)
    try:
        for _ in range(MAX_PUSHES):
            theirs = remote_oid(root, remote, REF)
            if theirs is not None and theirs != read_ref(repo, REF):
                fetched = fetch_ref(root, remote, REF, INCOMING)
                try:
                    if fetched is not None:
                        store.absorb(fetched)
                finally:
                    if (left := read_ref(repo, INCOMING)) is not None:
                        cas_ref(repo, INCOMING, None, left, "vivary: lanes fetched")
                theirs = fetched
            ours = read_ref(repo, REF)
            if ours is None:
                return "no lanes here or there"
            if ours == theirs:
                return f"{REF} up to date with {remote} ({ours[:12]})"
            result = push_ref(root, remote, REF, REF, theirs)
            if result.ok:
                return f"{REF} pushed to {remote} ({ours[:12]})"
            if not result.rejected:
                raise LanesSyncError(f"{REF} not pushed to {remote}: {result.detail}")
    except RemoteError as exc:
        raise LanesSyncError(str(exc)) from None
    except LanesCorrupt as exc:
        raise LanesSyncError(f"refusing to merge {remote}'s {REF}: {exc}") from None
    raise LanesSyncError(f"{REF} on {remote} kept moving; try again")
