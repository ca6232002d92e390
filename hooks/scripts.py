"""The hook scripts we write: pure text, so "current" is a byte comparison."""

from __future__ import annotations

import shlex

MARKER = "# vivary-hook 1"
# post-commit (the heartbeat) runs shell builtins only for a commit in a burst (bench.heartbeat)
DEFAULT_HOOKS = ("pre-commit", "pre-merge-commit", "pre-push", "post-commit")
CHAINED_SUFFIX = ".vivary-chained"
FIX = "run `vivary hooks install` (or bypass once with --no-verify)"


# The post-commit fast path, in shell builtins (no Python, no other program for a commit
# in a burst): a mark (`pending` in .git/vivary/heartbeat) that names a runner still
# alive is seen by that runner, and the hook is done. Otherwise it checks the switch and
# starts the background half, appending its pid to the mark (the Python side marks again
# itself, safely, when the sidecar is new). The repository's common directory: git's
# GIT_DIR (a linked worktree's names it in `commondir`), else `.git` where git runs the
# hook (the top of the work tree), else `git rev-parse`. `git` only from an absolute PATH
# entry (git puts its own exec path first); no other program. A mark that is not a plain
# file (a link, a FIFO someone planted) is never written through here: $m becomes
# /dev/null and the Python side, which replaces such a file, writes the mark.
HEARTBEAT = (
    "case ${VIVARY_HEARTBEAT-} in 0|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|[Oo][Ff][Ff]) exit 0;; esac\n"
    'git_() { g=$(command -v git) && [ "${g#/}" != "$g" ] && "$g" "$@"; }\n'
    'if [ -n "${GIT_DIR-}" ]; then d=$GIT_DIR\n'
    '  if [ -f "$d/commondir" ] && read -r c <"$d/commondir"; then\n'
    '    case $c in /*) d=$c;; *) d=$d/$c;; esac\n'
    '  fi\n'
    'elif [ -d .git ] && [ ! -L .git ]; then d=.git\n'
    'else d=$(git_ rev-parse --git-common-dir 2>/dev/null); fi\n'
    'd=$d/vivary m=/dev/null\n'
    'if [ -n "${d%/vivary}" ] && [ -d "$d/heartbeat" ] && [ ! -L "$d" ] && [ ! -L "$d/heartbeat" ]; then\n'
    '  m=$d/heartbeat/pending\n'
    '  if [ -f "$m" ] && [ ! -L "$m" ]; then\n'
    '    p=; while read -r q; do p=$q; done <"$m"\n'
    '    case $p in ""|0*|*[!0-9]*) ;; *) kill -0 "$p" 2>/dev/null && exit 0;; esac\n'
    '  elif [ -e "$m" ] || [ -L "$m" ]; then m=/dev/null; fi\n'
    "fi\n"
    'case $(git_ config --get vivary.heartbeat 2>/dev/null) in\n'
    "  0|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|[Oo][Ff][Ff]) exit 0;; esac\n"
)

# The shell itself lets go of git's stdout and stderr first: git (and whoever reads its
# output through a pipe) waits for every holder of those pipes, and a shell running a
# function in the background keeps saved copies of the descriptors it redirects.
BACKGROUND = 'exec </dev/null >/dev/null 2>&1\nrun post-commit-actions "$0" &\necho $! >>"$m"\nexit 0\n'


def render(name: str, python: str) -> str:
    """The script for hook ``name`` that runs our code through ``python``.

    It passes its own path so the runner finds the chained hook next to it, whatever
    directory git took it from. ``-I`` keeps the repository's own files (a ``hooks/``
    or ``tropo/`` folder, a ``bisect.py``) off ``sys.path``: hooks run in the work tree.
    git waits for a hook, and a commit must not wait for the heartbeat, so post-commit
    runs a chained hook (if there is one) in the foreground and our actions in the
    background, without waiting even for the interpreter to start, and starts none at
    all while the runner its mark names is alive (``HEARTBEAT``).

    When the interpreter is gone (its virtualenv removed), the hook runs the ``vivary`` on
    PATH instead (``vivary hooks run``), as pre-commit's own hooks do: the checks outlive
    the venv that installed them. Only one found through an absolute PATH entry: a
    relative one (``.``) would run a file of the repository being committed. Only when
    neither exists does it say so in one line with what to run, and refuse: a missing
    checker must not pass a strict check silently (post-commit only reports it: the
    commit is made by then).
    """
    py = shlex.quote(python)
    gone = shlex.quote(f"vivary: {name} hook: its Python {python} is gone and no `vivary` is on PATH; {FIX}")
    head = (
        "#!/bin/sh\n"
        f"{MARKER}: installed by `vivary hooks install`; "
        "`vivary hooks uninstall` restores any hook it replaced\n"
        f'if [ -x {py} ]; then run() {{ {py} -I -m hooks.run "$@"; }}\n'
        # only an absolute PATH entry: `.` in PATH would run a `vivary` the work tree holds
        'elif v=$(command -v vivary) && [ "${v#/}" != "$v" ]; then run() { "$v" hooks run "$@"; }\n'
        f"else echo {gone} >&2; exit {0 if name == 'post-commit' else 1}; fi\n"
    )
    if name == "post-commit":
        return (head + f'[ -e "$0{CHAINED_SUFFIX}" ] && run post-commit-chained "$0" "$@"\n'
                + HEARTBEAT + BACKGROUND)
    return head + f'run {name} "$0" "$@"\n'


def interpreter(text: str) -> str | None:
    """The Python an installed hook of ours runs (the path its ``[ -x`` test names, or the
    word after ``exec`` in hooks written before that test), if any."""
    for line in text.splitlines():
        for prefix, at in (("if [ -x ", 3), ("[ -x ", 2), ("exec ", 1)):
            if line.startswith(prefix):
                words = shlex.split(line.partition(" ||")[0])
                return words[at] if len(words) > at else None
    return None


def is_ours(text: str) -> bool:
    """Whether a hook file was written by some version of our installer."""
    lines = text.splitlines()
    return len(lines) > 1 and lines[1].startswith("# vivary-hook ")
