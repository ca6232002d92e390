"""The notes history only ever appended: checked as one tree diff per notes commit.

Every notes commit is compared with each of its parents by a single streaming
``git diff-tree --stdin`` process (:mod:`tropo.git.log`), so the check reads
what each commit changed and never a whole ledger: ledger lines are entry blobs (see
:mod:`strato.guard.layout`), and an append adds exactly the next line names. A line that
was changed or removed, a line inserted anywhere but at the end, or a marker note
rewritten is a break. Ledgers still kept as one note (the older layout) are compared as
before, prefix against prefix; the commit that moves one to entry blobs must keep its
bytes as their prefix.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Callable, Container
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from strato.guard import cache, layout, ledger
from tropo.git import log as gitlog
from tropo.git import notes
from tropo.git.refs import is_ancestor
from tropo.git.types import Blob, Repository

_HEX = frozenset(string.hexdigits.lower())
Found = tuple[str | None, str, str]  # (resource id if known, anchor, why)


@dataclass
class _Change:
    """What one notes commit did, relative to one parent."""

    commit: str
    parent: str | None
    notes: dict[str, list[str | None]] = field(default_factory=dict)  # target -> [old, new]
    added: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    bad: list[tuple[str, str]] = field(default_factory=list)  # (anchor, why)


def _note_target(path: str) -> str | None:
    """The annotated object a notes-tree path names (fan-out undone), if it is a note."""
    flat = path.replace("/", "")
    return flat if len(flat) == 40 and set(flat) <= _HEX else None


# an appended line's path: ledgers/<anchor>/aa/bb/cc (see layout.entry_path)
_LINE = re.compile(rf"{layout.LEDGERS}/([^/]*)/" + "/".join(["([0-9a-f]{2})"] * layout.LEVELS))


def _record(change: _Change, diff: gitlog.Change) -> None:
    path, old, new, status = diff
    if path.partition("/")[0] == layout.LEDGERS:
        line = _LINE.fullmatch(path) if status == "A" else None
        if line is not None:
            change.added[line[1]].append(int("".join(line.groups()[1:]), 16))
        else:
            parts = path.split("/")
            anchor = parts[1] if len(parts) > 1 else ""
            what = {"A": "an entry added out of place", "D": "a line removed"}.get(status, "a line changed")
            change.bad.append((anchor, f"{what} ({path})"))
        return
    target = _note_target(path)
    if target is None:
        return  # anchors/ and other non-note entries: git notes keeps them, so do we
    seen = change.notes.setdefault(target, [None, None])
    if status in ("D", "M"):
        seen[0] = old
    if status in ("A", "M"):
        seen[1] = new


def _changes(pairs: list[tuple[str, str | None]], diffs: list[list[gitlog.Change]]) -> list[_Change]:
    """What each (commit, parent) pair did, from git's diff of each."""
    found: list[_Change] = []
    for (commit, parent), paths in zip(pairs, diffs, strict=True):
        change = _Change(commit, parent)
        for diff in paths:
            _record(change, diff)
        found.append(change)
    return found


class _Counts:
    """How many lines each ledger has at the parent of the commit being judged.

    Commits are judged oldest first, so along a linear history the counts after one
    commit are the counts at its child's parent: carried over, not read from trees."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.at: str | None = None
        self.counts: dict[str, int] = {}

    def start(self, parent: str | None, anchor: str) -> int:
        if parent is not None and parent == self.at and anchor in self.counts:
            return self.counts[anchor]
        found = layout.line_count(notes.tree_of(self.repo, parent), anchor)
        if parent is not None and parent == self.at:
            self.counts[anchor] = found
        return found

    def advance(self, change: _Change, starts: dict[str, int]) -> None:
        if change.parent is None or change.parent != self.at:
            self.counts = {}
        self.at = change.commit
        for anchor, lines in change.added.items():
            self.counts[anchor] = starts[anchor] + len(lines)


def _judge(repo: Repository, change: _Change, counts: _Counts) -> list[Found]:
    """Why this commit did more than append to its parent's ledgers (empty if it did not)."""
    sha = change.commit[:12]
    found: list[Found] = []
    starts = {anchor: counts.start(change.parent, anchor) for anchor in change.added}
    counts.advance(change, starts)
    if (
        not change.bad
        and not change.notes
        and all(
            sorted(lines) == list(range(starts[a], starts[a] + len(lines)))
            for a, lines in change.added.items()
        )
    ):
        return found  # the common case: appends only, no tree read
    after = notes.tree_of(repo, change.commit)
    before = notes.tree_of(repo, change.parent)

    def rid(anchor: str) -> str | None:  # only to name a break: the first line either side
        for tree in (before, after):
            lines = layout.lines_tree(tree, anchor)
            first = "/".join(layout.entry_path(anchor, 0)[2:])
            try:
                blob = lines[first] if lines is not None else None
            except KeyError:
                continue
            if isinstance(blob, Blob):
                return ledger.resource_of(blob.data)
        return None

    for anchor, why in change.bad:
        found.append(
            (rid(anchor), anchor, f"ledger rewritten, not appended to, in notes commit {sha}: {why}")
        )
    for anchor, lines in change.added.items():
        start = starts[anchor]
        if sorted(lines) != list(range(start, start + len(lines))):
            found.append((rid(anchor), anchor, f"ledger lines not appended at the end in notes commit {sha}"))
    for target, (old, new) in change.notes.items():
        if old is None or old == new:
            continue
        old_data = notes.blob_data(repo, old)
        was_marker = old_data == layout.marker(target)
        name = rid(target) if was_marker else ledger.resource_of(old_data)
        if new is None:
            found.append((name, target, f"ledger deleted in notes commit {sha}"))
        elif was_marker:
            found.append((name, target, f"ledger note rewritten in notes commit {sha}"))
        else:
            grown = layout.stored(repo, after, target, new)  # legacy, or moved to lines
            if grown.problem is not None or not grown.data.startswith(old_data):
                found.append((name, target, f"ledger rewritten, not appended to, in notes commit {sha}"))
    return found


class Reach(Container[str]):
    """The notes commits ``tip`` descends from (itself included), asked of git one at a
    time instead of listed."""

    def __init__(
        self, repo: Repository, tip: str, known: cache.GuardCache, listed: set[str] | None = None
    ) -> None:
        self.repo, self.tip, self.known = repo, tip, known
        self._listed = listed

    def __contains__(self, sha: object) -> bool:
        if sha == self.tip:
            return True
        if self._listed is None:  # one rev-list, however many are asked about
            self._listed = self.known.reached(self.tip)
            if self._listed is None:
                self._listed = {row[0] for row in gitlog.graph(self.repo, self.tip)}
                self.known.save_reached(self.tip, self._listed)
        return sha in self._listed


Checked = Callable[[], tuple[Container[str], list[Found]]]


def check(repo: Repository, tip: str, known: cache.GuardCache) -> tuple[Container[str], list[Found]]:
    """Every notes commit reachable from ``tip``, and why any of them did more than append.

    Commits whose history was checked before are not compared again."""
    return start(repo, tip, known)()


def start(repo: Repository, tip: str, known: cache.GuardCache) -> Checked:
    """:func:`check` in two halves: git lists and diffs the commits in a thread from now
    on (one ``rev-list``, one ``diff-tree``; nothing else happens there), and the commits
    are judged when the result is asked for. ``verify`` checks the ledgers meanwhile, so
    on a second core git's half costs no wall time.

    When the last tip whose ancestors were recorded was checked and ``tip`` descends from
    it, only the commits since are listed, its ancestors being those plus the recorded
    ones (a commit fixes its history); else every commit is listed."""
    checked = known.checked_history()
    if tip in checked:  # its whole history was checked: nothing to run
        reach = Reach(repo, tip, known)
        return lambda: (reach, [])
    last = known.last_reached()
    since = last if last is not None and last[0] in checked and is_ancestor(repo, last[0], tip) else None

    def listed() -> tuple[list[list[str]], list[tuple[str, str | None]], list[list[gitlog.Change]]]:
        graph = gitlog.graph(repo, tip, since[0] if since is not None else None)
        pairs: list[tuple[str, str | None]] = []
        for commit, *parents in graph:
            if commit not in checked:
                pairs += [(commit, p) for p in parents] if parents else [(commit, None)]
        return graph, pairs, gitlog.changes(repo, pairs)

    pool = ThreadPoolExecutor(1)
    running = pool.submit(listed)
    pool.shutdown(wait=False)  # the thread ends with its one task

    def judged() -> tuple[Container[str], list[Found]]:
        graph, pairs, diffs = running.result()
        ancestors = {row[0] for row in graph} | (since[1] if since is not None else set())
        counts = _Counts(repo)
        found = [why for change in reversed(_changes(pairs, diffs)) for why in _judge(repo, change, counts)]
        if not found:
            known.add_history([row[0] for row in graph if row[0] not in checked])
            known.save_reached(tip, ancestors)
        return Reach(repo, tip, known, ancestors), found

    return judged
