"""Install, remove and inspect our hooks in a repository, keeping the user's own.

A hook that is already there and not ours is moved aside to ``<name>.vivary-chained``;
our runner calls it first, and ``uninstall`` moves it back.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from hooks.scripts import CHAINED_SUFFIX, FIX, interpreter, is_ours, render
from tropo.fs.rooted import write_within
from tropo.git import gitcli


class HookConflict(Exception):
    """Installing would lose a hook: both the slot and the chain slot hold foreign ones."""


@dataclass(frozen=True)
class HookState:
    name: str
    state: str  # installed | stale | foreign | absent
    chained: bool
    path: str
    problem: str | None = None  # why a stale hook cannot run, with the fix

    def as_json(self) -> dict[str, object]:
        return {"hook": self.name, "state": self.state, "chained": self.chained, "path": self.path,
                "problem": self.problem}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None


def state_of(hooks: Path, name: str, python: str = sys.executable) -> HookState:
    path = hooks / name
    text = _read(path)
    problem = None
    if text is None:
        state = "absent"
    elif not is_ours(text):
        state = "foreign"
    elif text == render(name, python) and os.access(path, os.X_OK):
        state = "installed"
    else:
        state = "stale"
        runs = interpreter(text)
        if runs is not None and not os.access(runs, os.X_OK):
            fallback = shutil.which("vivary")  # as the hook looks: an absolute PATH entry only
            instead = (f"it runs {fallback} instead" if fallback and os.path.isabs(fallback)
                       else "no `vivary` is on PATH either")
            problem = f"its Python {runs} is gone; {instead}; {FIX}"
    chained = (hooks / (name + CHAINED_SUFFIX)).exists()
    return HookState(name, state, chained, str(path), problem)


def status(root: Path, names: tuple[str, ...]) -> list[HookState]:
    hooks = gitcli.hooks_dir(root)
    return [state_of(hooks, name) for name in names]


def install(root: Path, names: tuple[str, ...], python: str = sys.executable) -> list[str]:
    """Install each hook; returns one action per hook (written, unchanged, chained)."""
    hooks = gitcli.hooks_dir(root)
    before = [state_of(hooks, name, python) for name in names]
    for st in before:
        if st.state == "foreign" and st.chained:
            raise HookConflict(
                f"{st.path} and {st.path}{CHAINED_SUFFIX} both hold hooks that are not ours; "
                "merge them by hand, then rerun"
            )
    hooks.mkdir(parents=True, exist_ok=True)
    register_pin_driver(root, python)
    actions = []
    for st in before:
        path = hooks / st.name
        if st.state == "installed":
            actions.append("unchanged")
            continue
        action = "written"
        if st.state == "foreign":
            path.replace(hooks / (st.name + CHAINED_SUFFIX))
            action = "chained"
        write_within(hooks, st.name, render(st.name, python).encode(), mode=0o755)
        actions.append(action)
    return actions


PIN_DRIVER = "vivary-guard-pin"
PIN_ATTRIBUTE = f"/.vivary/guard/notes-tip merge={PIN_DRIVER}\n"


def register_pin_driver(root: Path, python: str = sys.executable) -> None:
    """The guard pin's merge driver (docs/guard.md, "A team"): git config names the
    command, and ``.git/info/attributes`` declares it for the pin path, so a merge of
    two branches that each pinned their notes resolves to the pin of their union."""
    # the interpreter that installs it, isolated (-I): never a `strato` that PATH finds,
    # which a relative entry could make the work tree's own, nor the work tree's modules
    command = f"{shlex.quote(python)} -I -m strato.cli guard merge-pins %O %A %B"
    gitcli.run(root, "config", f"merge.{PIN_DRIVER}.name", "guard notes pin: the union of both sides' notes")
    gitcli.run(root, "config", f"merge.{PIN_DRIVER}.driver", command)
    info = Path(gitcli.run(root, "rev-parse", "--git-path", "info").strip())
    info = info if info.is_absolute() else root / info
    info.mkdir(parents=True, exist_ok=True)
    attributes = info / "attributes"
    kept = attributes.read_text() if attributes.exists() else ""
    if PIN_ATTRIBUTE not in kept:
        attributes.write_text(kept + ("" if kept.endswith("\n") or not kept else "\n") + PIN_ATTRIBUTE)


def uninstall(root: Path, names: tuple[str, ...]) -> list[str]:
    """Remove our hooks and put back any hook they chained; a foreign hook stays."""
    hooks = gitcli.hooks_dir(root)
    actions = []
    for name in names:
        st = state_of(hooks, name)
        path = hooks / name
        chained = hooks / (name + CHAINED_SUFFIX)
        if st.state == "foreign" or (st.state == "absent" and not st.chained):
            actions.append("kept" if st.state == "foreign" else "absent")
            continue
        if st.chained:
            chained.replace(path)
            actions.append("restored")
        else:
            path.unlink()
            actions.append("removed")
    return actions
