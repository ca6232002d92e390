"""The guard's pre-push check: every ledger must verify before it leaves this clone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strato.guard import store
from strato.guard.verify import verify_repository
from tropo.git import push as gitpush
from tropo.git import repo as gitrepo

if TYPE_CHECKING:
    from tropo.git.push import Push


def check(push: Push) -> list[str]:
    """The breaks ``strato guard verify`` would report; the remote's notes tip, when this
    clone has it, must still be an ancestor (a rewound ledger is a break)."""
    repo = gitrepo.require(push.root)
    if gitrepo.read_ref(repo, store.REF) is None:
        return []
    since = []
    try:
        remote_tip = gitpush.remote_oid(push.root, push.remote, store.REF)
    except gitpush.RemoteError:
        remote_tip = None
    if remote_tip is not None and remote_tip in repo:
        since.append(remote_tip)
    return [str(b) for b in verify_repository(repo, since=since).breaks]
