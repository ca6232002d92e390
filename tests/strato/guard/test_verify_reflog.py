"""What verify reads of this clone's notes reflog: the ref's earlier values are checked
for a rewind only when the ref's own tip is judged, and only from the entry that set that
tip on (a newer entry is another writer's append, not a rewind)."""

from __future__ import annotations

from pathlib import Path

from strato.guard import store
from strato.guard.verify import verify_repository
from tests.support.guard import Workspace, grown
from tests.support.repos import git


def _notes_history(ws: Workspace) -> list[str]:
    """The notes commits of a grown ledger, oldest first (its register and two transitions)."""
    return git(ws.root, "rev-list", "--reverse", store.REF).split()


def test_verify_at_notes_from_elsewhere_judges_them_not_this_clones_reflog(ws: Workspace) -> None:
    grown(ws)
    first, second, third = _notes_history(ws)
    # the notes a pull request pins, made on another clone: the same ledger line as the
    # second commit here, in a commit this clone's notes ref never held
    elsewhere = git(ws.root, "commit-tree", f"{second}^{{tree}}", "-p", first, "-m", "notes elsewhere").strip()
    assert elsewhere != second
    report = verify_repository(ws.repo, at=elsewhere)
    assert report.ok, [str(b) for b in report.breaks]
    assert report.entries == 2
    # the reflog still counts when the ref's own tip is judged: back at the second
    # commit after the third, the ref was rewound
    git(ws.root, "update-ref", store.REF, second)
    rewound = verify_repository(ws.repo)
    assert not rewound.ok and any(third[:12] in str(b) for b in rewound.breaks)


def test_an_append_after_the_tip_was_read_is_not_a_rewind(ws: Workspace) -> None:
    grown(ws)
    _, second, third = _notes_history(ws)
    # verify read the ref at the second commit, and another writer's transition then
    # appended the third (its reflog entry is there, the value verify read is not): the
    # ref file says what was read, the reflog what happened since
    loose = Path(ws.repo.path) / store.REF
    assert loose.read_text().strip() == third  # a loose ref, written by the last transition
    loose.write_text(second + "\n")
    report = verify_repository(ws.repo)
    assert report.ok, [str(b) for b in report.breaks]
