"""Issue 27's scenario: 20 pull requests with guard entries from five clones of one bare
remote, pushed in random interleavings and merged in random order (merge commit, squash,
rebase), one closed unmerged and one forging an entry. Every legitimate PR's review (the
documented CI recipe, in a fresh clone per PR) shows exactly its own entries and passes;
the forged one fails; the closed one's entries never reach what main pins; main's pinned
ledgers end with every merged entry and verify. The only re-pin is the documented
`strato guard reappend` after a same-ledger conflict. Three seeds, each printed.

The PRs go in rounds of five, pushed in random order and merged in random order; in the
last round the closed PR is opened from the same clone as a legitimate one (docs/guard.md,
"Several pull requests from one clone"), whose review still shows only its own entries.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from hooks import install as installer
from strato.guard import engine, pin, store
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Key, Workspace, ci, forge, ledger, make_key, run, ssh_sign
from tests.support.repos import git
from tropo.git import notes

PEOPLE = ("alice", "bob", "carol")
SHARED = [f"shared:{n}" for n in range(4)]


@dataclass
class PR:
    number: int
    resource: str
    size: int  # guard entries it writes
    role: str = "legit"  # legit | closed | forged
    clone: Workspace | None = None
    written: int = 0
    merged_by: str | None = None
    reappended: bool = False

    @property
    def branch(self) -> str:
        return f"pr-{self.number}"


def _git(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ws.root, capture_output=True, text=True, check=False)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _override(ws: Workspace, key: Key, who: str, rid: str) -> None:
    ask = {"resource_id": rid, "from_state": "review", "to_state": "released", "rationale": f"{who} approves"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    _ok(run(ws, "override", stdin={**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)}))


def _synced(ws: Workspace) -> None:
    """`strato guard sync`: the remote's guard notes and every pushed branch's pinned notes
    fetched. Merging this clone's notes into the shared ref may meet another open PR's
    fork of a shared ledger: one line naming reappend, settled when one of them lands."""
    proc = run(ws, "sync")
    assert proc.returncode == 0 or "strato guard reappend" in proc.stderr, proc.stderr


def _write(pr: PR, keys: dict[str, Key], rng: random.Random) -> None:
    """The PR's guard steps, through the CLI (each write moves the work tree's pin)."""
    ws = pr.clone
    assert ws is not None
    if pr.resource.startswith("shared:"):  # registered on main and at `review`: refusals
        for _ in range(pr.size):
            move = {"resource_id": pr.resource, "from_state": "review", "to_state": "released"}
            assert json.loads(run(ws, "transition", stdin=move).stdout)["status"] == "refused"
        pr.written = pr.size
        return
    _ok(run(ws, "register", stdin={"resource_id": pr.resource, **copy.deepcopy(POLICY)}))
    if pr.size >= 2:
        move = {"resource_id": pr.resource, "from_state": "draft", "to_state": "review"}
        _ok(run(ws, "transition", stdin=move))
    if pr.size >= 3:
        who = rng.choice(PEOPLE)
        _override(ws, keys[who], who, pr.resource)
    pr.written = pr.size
    if pr.role == "forged":  # the attacker rewrites its own signed line and pins it by hand
        entries = ledger(ws, pr.resource)
        entries[-1]["rationale"] = "approved by nobody"
        forge(ws, entries, pr.resource)
        pin.write(ws.repo)


def _open(pr: PR, keys: dict[str, Key], rng: random.Random) -> None:
    ws = pr.clone
    assert ws is not None
    _ok(_git(ws, "fetch", "-q", "origin"))
    _synced(ws)
    _ok(_git(ws, "checkout", "-q", "-B", pr.branch, "origin/main"))
    ws.commit({f"work-{pr.number}.txt": f"{pr.number}\n"}, f"{pr.branch}: work")
    _write(pr, keys, rng)
    _ok(_git(ws, "commit", "-q", "-am", f"{pr.branch}: guard steps"))
    if pr.role == "forged":  # past the hooks' own verify, notes where a review looks for them
        forged = (ws.root / pin.PIN_PATH).read_text().strip()
        spec = f"{forged}:refs/notes/vivary/branches/{pr.branch}"
        _ok(_git(ws, "push", "-q", "--no-verify", "origin", pr.branch, spec))
        return
    _ok(_git(ws, "push", "-q", "origin", pr.branch))


def _review(pr: PR, remote: Path, where: Path) -> tuple[int, list[tuple[str, int]], str]:
    """The documented CI recipe in a fresh clone, then the same review as JSON there."""
    proc = ci(remote, pr.branch, where)
    raw = run(where, "review", "--base", "refs/remotes/origin/main", "--json").stdout
    doc = json.loads(raw)
    return proc.returncode, [(row["resource_id"], row["line"]) for row in doc["entries"]], proc.stdout + raw


def _update_after_conflict(pr: PR, message: str) -> None:
    """The contributor's side of a same-ledger conflict: the one documented command."""
    ws = pr.clone
    assert ws is not None
    _ok(_git(ws, "merge", "--abort"))
    command = message.split("`strato guard reappend ", 1)[1].split("`", 1)[0].split()
    done = json.loads(_ok(run(ws, "reappend", *command, "--json")))
    assert done["status"] == "reappended", done
    pr.reappended = True
    _ok(_git(ws, "commit", "-q", "-am", f"{pr.branch}: re-derived after main"))
    _ok(_git(ws, "merge", "-q", "-m", "merge main", "origin/main"))
    _ok(_git(ws, "push", "-q", "origin", pr.branch))


def _merge(main: Workspace, pr: PR, how: str, remote: Path, tmp: Path) -> None:
    """CI reviews ``pr`` against main as it is now; a same-ledger conflict goes back to the
    contributor (one command), then the maintainer lands it by ``how``."""
    code, rows, text = _review(pr, remote, tmp / f"ci-{pr.branch}")
    if code != 0 and "strato guard reappend" in text:
        assert pr.clone is not None
        _ok(_git(pr.clone, "checkout", "-q", pr.branch))  # its clone may have another PR open
        _ok(_git(pr.clone, "fetch", "-q", "origin"))
        _synced(pr.clone)
        conflicted = _git(pr.clone, "merge", "-q", "-m", "merge main", "origin/main")
        assert conflicted.returncode != 0
        _update_after_conflict(pr, conflicted.stdout + conflicted.stderr)
        code, rows, text = _review(pr, remote, tmp / f"ci-{pr.branch}-again")
    assert code == 0, text
    assert {rid for rid, _ in rows} == {pr.resource} and len(rows) == pr.written, (rows, pr)
    _ok(_git(main, "fetch", "-q", "origin"))
    _synced(main)
    _ok(_git(main, "checkout", "-q", "main"))
    _ok(_git(main, "reset", "-q", "--hard", "origin/main"))
    theirs = f"origin/{pr.branch}"
    if how == "rebase":
        _ok(_git(main, "checkout", "-q", "-B", "landing", theirs))
        _ok(_git(main, "rebase", "-q", "main"))
        _ok(_git(main, "checkout", "-q", "main"))
        _ok(_git(main, "merge", "-q", "--ff-only", "landing"))
    elif how == "squash":
        _ok(_git(main, "merge", "-q", "--squash", theirs))
        _ok(_git(main, "commit", "-q", "-m", f"{pr.branch} (squashed)"))
    else:
        _ok(_git(main, "merge", "-q", "--no-ff", "-m", f"merge {pr.branch}", theirs))
    _ok(_git(main, "push", "-q", "origin", "main"))
    pr.merged_by = how


def _plan(rng: random.Random) -> list[PR]:
    distinct = [PR(n, f"svc:{n}", rng.randint(1, 3)) for n in range(12)]
    pairs = [PR(12 + n, SHARED[n // 2], rng.randint(1, 2)) for n in range(8)]
    prs = distinct + pairs
    rng.shuffle(prs)
    for n, pr in enumerate(prs):
        pr.number = n
    last = prs[15:]  # the closed and the forged PR open in the last round (their clones stop there)
    closed, forged = [p for p in last if not p.resource.startswith("shared:")][:2]
    closed.role = "closed"
    forged.role, forged.size = "forged", 3
    return prs


def _setup(ws: Workspace, tmp: Path, keys: dict[str, Key]) -> tuple[Path, list[Workspace]]:
    remote = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    git(ws.root, "branch", "-M", "main")
    signers = "".join(keys[p].signers_line(f"{p}@example.com") for p in PEOPLE)
    ws.commit({".vivary/guard/allowed_signers": signers, "NOTES.md": "n\n", pin.PIN_PATH: "none\n"},
              "main: three signers")
    for rid in SHARED:
        _ok(run(ws, "register", stdin={"resource_id": rid, **copy.deepcopy(POLICY)}))
        _ok(run(ws, "transition", stdin={"resource_id": rid, "from_state": "draft", "to_state": "review"}))
    git(ws.root, "commit", "-q", "-am", "main: four shared resources under review")
    installer.install(ws.root, ("pre-push",))
    _ok(_git(ws, "push", "-q", "origin", "main"))
    clones = []
    for n in range(5):
        where = tmp / f"clone-{n}"
        git(tmp, "clone", "-q", str(remote), str(where))
        installer.install(where, ("pre-push",))
        clones.append(Workspace(where, where.parent))
    return remote, clones


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2701, 1127, 31337])
def test_twenty_pull_requests_from_five_clones(ws: Workspace, tmp_path: Path, seed: int) -> None:
    print(f"seed {seed}")
    rng = random.Random(seed)
    keys = {p: make_key(tmp_path, "ed25519", p) for p in PEOPLE}
    remote, clones = _setup(ws, tmp_path, keys)
    prs = _plan(rng)
    for start in range(0, 20, 5):
        batch = prs[start : start + 5]
        for pr, clone in zip(batch, clones, strict=True):
            pr.clone = clone
        for closed in (p for p in batch if p.role == "closed"):  # two open PRs in one clone
            closed.clone = next(p for p in batch if p.role == "legit").clone
        for pr in rng.sample(batch, len(batch)):  # pushed in a random interleaving
            _open(pr, keys, rng)
        for pr in rng.sample(batch, len(batch)):  # merged in a random order
            if pr.role != "legit":
                continue
            _merge(ws, pr, rng.choice(["merge", "squash", "rebase"]), remote, tmp_path)
    for pr in prs:
        if pr.role == "forged":
            code, _, text = _review(pr, remote, tmp_path / f"ci-{pr.branch}-final")
            assert code == 1 and "**failed**" in text, text
    _final(ws, prs)
    landed = sorted(str(p.merged_by) for p in prs)
    print(f"seed {seed}: landed by {landed}, {sum(p.reappended for p in prs)} re-appended")


def _final(ws: Workspace, prs: list[PR]) -> None:
    _ok(_git(ws, "fetch", "-q", "origin"))
    _synced(ws)
    _ok(_git(ws, "checkout", "-q", "main"))
    _ok(_git(ws, "reset", "-q", "--hard", "origin/main"))
    pinned = (ws.root / pin.PIN_PATH).read_text().strip()
    report = verify_repository(ws.repo, at=pinned)
    assert report.ok, report.breaks
    held = {kept.anchor: kept for kept in store.ledgers(ws.repo, pinned)}
    for pr in prs:
        anchor = notes.anchor_id(store.anchor_content(pr.resource))
        if pr.role != "legit":
            assert anchor not in held, f"{pr.role} PR {pr.branch}'s entries reached main"
            continue
        assert anchor in held, pr
    for rid in SHARED:  # every merged refusal of the pair, after the two of main
        kept = held[notes.anchor_id(store.anchor_content(rid))]
        want = 2 + sum(p.written for p in prs if p.resource == rid and p.merged_by)
        assert kept.lines == want, (rid, kept.lines, want)
