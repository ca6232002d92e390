"""Runs stored in the repository: `refs/vivary/runs/<id>/head` is a chain of commits,
one per transition. Each commit's tree holds the state (laid out by
:mod:`strato.runs.layout`, so a transition writes what it changed) and `spec.yaml` (the
spec frozen at plan time); its message is the transition as JSON. The ref moves
by compare-and-swap (a chain store, :mod:`tropo.git.chain`), so the ref is the lock:
two writers starting from the same head can never both land, and a lost race decides
again from the winner's head. Checkpoints are refs to past heads."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from strato.runs import layout
from strato.runs.layout import Change, Live
from tropo.git import chain
from tropo.git.log import commits_since, message_of
from tropo.git.objects import blob_at, commit_tree, edit_tree, tree_entries
from tropo.git.refs import read_ref, ref_names, ref_targets, ref_tips
from tropo.git.types import Oid, Repository, valid_ref_name

PREFIX = "refs/vivary/runs/"
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}\Z")
T = TypeVar("T")
Transition = tuple[dict[str, Any], dict[str, Any]]  # a run's next state, and the message saying why
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
CACHED_RUNS = 16  # runs whose last-seen commit a store keeps in memory
_Written = tuple[Live, Oid, Change]  # the view a commit was written from, its tree, what it changed


class RunNotFound(LookupError):
    """No run with that id in this repository."""


class AmbiguousRunId(RunNotFound):
    """A prefix that more than one run id starts with."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        shown = ", ".join(candidates[:10]) + (", ..." if len(candidates) > 10 else "")
        super().__init__(f"run id prefix {prefix!r} is ambiguous: {shown}")
        self.candidates = candidates


class CheckpointNotFound(LookupError):
    def __init__(self, label: str, available: list[str]) -> None:
        super().__init__(f"no checkpoint {label!r} (available: {', '.join(available) or 'none'})")
        self.available = available


@dataclass(frozen=True)
class RunSnapshot:
    """One run as of one commit."""

    run_id: str
    head: str
    state: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """What one operation did: the run after it and the events it emitted."""

    snap: RunSnapshot
    events: list[dict[str, Any]]


def head_ref(run_id: str) -> str:
    return f"{PREFIX}{run_id}/head"


def checkpoint_ref(run_id: str, label: str) -> str:
    return f"{PREFIX}{run_id}/checkpoints/{label}"


def valid_label(run_id: str, label: str) -> bool:
    """A checkpoint label is one component of a git ref name (`a..b`, `x.lock` and `a.`
    are not, though they pass the character rule)."""
    return bool(LABEL.match(label)) and valid_ref_name(checkpoint_ref(run_id, label))


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id):
        raise RunNotFound(f"not a run id: {run_id!r}")
    return run_id


@dataclass(frozen=True)
class _Append(chain.Append):
    """A run's next commit, with what it changes from the commit it follows."""

    live: Live | None = None
    change: Change | None = None


class RunStore:
    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        # per run, the commit last written or read here, parsed: the next transition of
        # a run this process is driving starts from it without reading git again
        self._live: dict[str, Live] = {}
        self._lock = threading.RLock()  # fanout workers share a store

    def create(self, run_id: str, state: dict[str, Any], spec_yaml: str, message: dict[str, Any]) -> str:
        """Write the first commit and create the head ref (it must not exist)."""
        live = Live("", None, None, b"", {}, 0)
        change = live.diff(state)
        tree = edit_tree(self.repo, None, {**change.edit, "spec.yaml": spec_yaml.encode()})
        assert tree is not None
        name = head_ref(check_run_id(run_id))
        first = chain.Append({}, _message(message), tree=tree)
        commit = chain.append(self.repo, name, None, first, "vivary: plan")
        live.spec = tree_entries(self.repo, tree)["spec.yaml"][0]
        with self._lock:
            live.apply(commit, tree, change)
            self._remember(run_id, live)
        return commit

    def resolve(self, run_id: str) -> str:
        """The run id that `run_id` names: itself, or the one run id it is a prefix of
        (as git takes a unique prefix of a commit id)."""
        if read_ref(self.repo, head_ref(check_run_id(run_id))) is not None:
            return run_id
        matches = [r for r in self.run_ids() if r.startswith(run_id)]
        if len(matches) > 1:
            raise AmbiguousRunId(run_id, matches)
        if not matches:
            raise RunNotFound(f"no run {run_id!r}")
        return matches[0]

    def load(self, run_id: str) -> RunSnapshot:
        run_id = self.resolve(run_id)
        return self.at(run_id, self.head(run_id))

    def at(self, run_id: str, commit: str) -> RunSnapshot:
        """The run as of ``commit``: its own copy of the state (what it changes shows in
        no other snapshot)."""
        with self._lock:
            return RunSnapshot(run_id, commit, self._read(run_id, commit).state())

    def _read(self, run_id: str, commit: str) -> Live:
        """One commit of a run (from memory when it was the last seen)."""
        live = self._live.get(run_id)
        if live is not None and live.commit == commit:
            return live
        live = layout.read(self.repo, commit)
        if live is None:
            raise RunNotFound(f"run {run_id!r}: commit {commit[:12]} has no run state")
        self._remember(run_id, live)
        return live

    def _remember(self, run_id: str, live: Live) -> None:
        self._live.pop(run_id, None)
        self._live[run_id] = live
        while len(self._live) > CACHED_RUNS:
            del self._live[next(iter(self._live))]

    def spec_text(self, snap: RunSnapshot) -> str:
        data = blob_at(self.repo, snap.head, "spec.yaml")
        return "" if data is None else data.decode()

    def spec_key(self, snap: RunSnapshot) -> str:
        """The frozen spec's blob id: parsed specs are cached by it."""
        with self._lock:
            return str(self._read(snap.run_id, snap.head).spec)

    def transition(self, snap: RunSnapshot, state: dict[str, Any], message: dict[str, Any]) -> RunSnapshot:
        """Commit `state` on top of `snap.head` and move the ref only if it still points
        there (RefRaceError otherwise: the caller reloads and decides again)."""
        change = self._next(snap, state, message)
        commit = chain.append(self.repo, head_ref(snap.run_id), snap.head, change, _reason(message))
        self._wrote(snap.run_id, snap.head, commit, *_parts(change))
        return RunSnapshot(snap.run_id, commit, state)

    def update(
        self, run_id: str, op: str, decide: Callable[[RunSnapshot], Iterable[Transition]]
    ) -> RunSnapshot:
        """Load the run and commit each transition `decide` yields on the one before (a
        decision that changes the snapshot's state in place and yields it as it stands
        writes only the entries it took), then move the ref once, from the head read to
        the last, by compare-and-swap: all land or none. On a lost race load the winner's
        head and decide again (at most `chain.MAX_RACE_RETRIES` times, then
        `chain.ChainConflict`). The run after it."""

        def step(
            head: str | None,
        ) -> tuple[str | None, tuple[str, RunSnapshot, _Written | None, Live | None]]:
            if head is None:
                raise RunNotFound(f"no run {run_id!r}")
            tip, first, ahead, snap = head, None, None, self.at(run_id, head)
            for state, message in decide(snap):
                if first is not None and ahead is None:  # a second one: on a copy moved to the first
                    was, then, change = first
                    with self._lock:  # (another thread may have moved the shared one on)
                        ahead = (was if was.commit == head else self._read(run_id, head)).fork()
                    ahead.apply(tip, then, change)
                    layout.restamp(state, (was, head), (ahead, tip))
                with self._lock:  # the first on the shared view of the head, which moves once it lands
                    live = ahead or self._read(run_id, head)
                    change = live.diff(state)
                written = edit_tree(self.repo, live.tree, change.edit)
                assert written is not None  # a run's tree holds its spec
                tree = written
                commit = str(commit_tree(self.repo, tree, [Oid(hex=tip)], _message(message)))
                if ahead is None:
                    first = live, tree, change
                else:
                    ahead.apply(commit, tree, change)
                    layout.restamp(state, (ahead, tip), (ahead, commit))
                tip, snap = commit, RunSnapshot(run_id, commit, state)
            return (tip if tip != head else None), (head, snap, first, ahead)

        ref = head_ref(check_run_id(run_id))
        tip, (parent, snap, first, ahead) = chain.update(self.repo, ref, step, _reason({"op": op}))
        if ahead is not None:
            with self._lock:
                self._remember(run_id, ahead)
        elif first is not None and tip is not None:
            self._wrote(run_id, parent, tip, *first)
        return snap

    def _next(self, snap: RunSnapshot, state: dict[str, Any], message: dict[str, Any]) -> _Append:
        """The commit after `snap`: the tree of `snap.head` with what `state` changed in
        it (the run's frozen spec and every unchanged entry reused by id)."""
        with self._lock:
            live = self._read(snap.run_id, snap.head)
            change = live.diff(state)
        tree = edit_tree(self.repo, live.tree, change.edit)
        return _Append({}, _message(message), tree=tree, live=live, change=change)

    def _wrote(self, run_id: str, parent: str, commit: str, live: Live, tree: Oid, change: Change) -> None:
        """Remember the commit this store just wrote on ``parent``, so the next
        transition of the run reads nothing from git."""
        with self._lock:
            if live.commit == parent:
                live.apply(commit, tree, change)
                self._remember(run_id, live)
            elif self._live.get(run_id) is live:
                del self._live[run_id]

    def history(self, run_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(commit, transition) from the first transition to the head."""
        return iter(self.since(self.load(run_id).head, None))

    def since(self, head: str, seen: str | None) -> list[tuple[str, dict[str, Any]]]:
        """(commit, transition) after `seen` up to `head`, oldest first: what a follower
        that has read up to `seen` has not read yet (only the new commits are walked)."""
        chain = [(commit, parse_message(message)) for commit, message in commits_since(self.repo, head, seen)]
        return chain[::-1]

    def transition_at(self, commit: str) -> dict[str, Any]:
        """The transition one commit recorded (its message)."""
        return parse_message(message_of(self.repo, commit))

    def head(self, run_id: str) -> str:
        """The run's head commit: one ref read, the cheap way to see if it moved."""
        head = read_ref(self.repo, head_ref(check_run_id(run_id)))
        if head is None:
            raise RunNotFound(f"no run {run_id!r}")
        return head

    def run_ids(self) -> list[str]:
        names = ref_names(self.repo, PREFIX)
        return sorted(name[len(PREFIX) : -len("/head")] for name in names if name.endswith("/head"))

    def heads(self) -> dict[str, str]:
        """Every run's head commit, from one pass over the refs: what moved since the
        last look, without reading any object."""
        return _by_run(ref_targets(self.repo, PREFIX))

    def tips(self) -> dict[str, tuple[str, int]]:
        """Every run's head commit and its time: which runs were active last, without
        loading a state."""
        return _by_run(ref_tips(self.repo, PREFIX))

    # --- checkpoints

    def checkpoints(self, run_id: str) -> list[str]:
        prefix = f"{PREFIX}{run_id}/checkpoints/"
        return [name[len(prefix) :] for name in ref_names(self.repo, prefix)]

    def save_checkpoint(self, snap: RunSnapshot, label: str) -> None:
        name = checkpoint_ref(snap.run_id, label)
        old = read_ref(self.repo, name)
        chain.move(self.repo, name, snap.head, old, f"vivary: checkpoint {label}")

    def checkpoint(self, run_id: str, label: str) -> RunSnapshot:
        commit = read_ref(self.repo, checkpoint_ref(run_id, label)) if valid_label(run_id, label) else None
        if commit is None:
            raise CheckpointNotFound(label, self.checkpoints(run_id))
        return self.at(run_id, commit)


def _parts(append: _Append) -> _Written:
    """The view a commit was written from, its tree, and what it changed."""
    assert append.live is not None and append.tree is not None and append.change is not None
    return append.live, append.tree, append.change


def _by_run(refs: dict[str, T]) -> dict[str, T]:
    """`refs/vivary/runs/<id>/head` -> value, keyed by run id (checkpoints left out)."""
    return {name[len(PREFIX) : -len("/head")]: v for name, v in refs.items() if name.endswith("/head")}


def _reason(message: dict[str, Any]) -> str:
    """The reflog line of a transition."""
    return f"vivary: {message.get('op', '')}"


def _message(message: dict[str, Any]) -> str:
    """A readable subject for `git log --oneline`, then the transition as JSON."""
    subject = " ".join(str(message[k]) for k in ("op", "stepId", "decision", "label") if k in message)
    return f"run: {subject}\n\n{json.dumps(message, sort_keys=True, separators=(',', ':'))}\n"


def parse_message(text: str) -> dict[str, Any]:
    body = text.split("\n\n", 1)[1] if "\n\n" in text else text
    parsed: dict[str, Any] = json.loads(body)
    return parsed
