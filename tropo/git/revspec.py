"""A revision as a person types it (gitrevisions(7)), resolved so that a pushed name
cannot choose what it means.

git reads a short name by the first of ``refs/tags/``, ``refs/heads/``, ``refs/remotes/``
that exists and only warns when several do, so a pushed tag ``origin/main`` silently
takes the place of the remote-tracking branch a CI recipe meant. Here a full ref
(``refs/...``) or an object id is taken as given, a short name more than one ref answers
to is refused (naming them all), and only then does git's own parser read the rest
(``~2``, ``^{tree}``, ``@{u}``). Every ``--base``/``--rev``/``--head``/``--since`` of
every command resolves through :func:`resolve_commit`.
"""

from __future__ import annotations

import re

import pygit2

from tropo.git.gitcli import RevisionError

# git's (and libgit2's) order for a short name: a tag beats a branch beats a remote one
_RULES = ("refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")
_SUFFIX = re.compile(r"[~^:]|@\{")
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
# HEAD, FETCH_HEAD, ORIG_HEAD...: when one exists git reads it before any ref, so no pushed
# name shadows it (when it does not, the name is read by the rules, like any other)
_ROOT_REF = re.compile(r"[A-Z_]*HEAD")


class AmbiguousRevision(RevisionError):
    """A short name that more than one ref (or a ref and an object id) answers to; a
    usage error, since only the person can say which one they meant."""


def _ref(repo: pygit2.Repository, name: str) -> bool:
    try:
        return repo.references.get(name) is not None
    except (ValueError, pygit2.GitError):  # not a valid ref name: no such ref
        return False


def _object(repo: pygit2.Repository, name: str) -> bool:
    try:
        return repo.get(name) is not None
    except pygit2.AmbiguousError:
        return True  # several objects: libgit2 refuses it below, with its own reason
    except (ValueError, pygit2.GitError):
        return False


def spelled(repo: pygit2.Repository, rev: str) -> str:
    """``rev`` with its name part spelled as the one full ref it means (unchanged when
    it is already a full ref, an object id, ``HEAD`` or has no name, as in ``@{u}``).

    Raises :class:`AmbiguousRevision` when the name means several refs, or both a ref
    and an abbreviated object id, and :class:`RevisionError` when a full ref is missing."""
    if not rev or rev.startswith("-") or "\0" in rev:
        raise RevisionError(f"not a revision: {rev!r}")
    cut = _SUFFIX.search(rev)
    name, rest = (rev[: cut.start()], rev[cut.start():]) if cut else (rev, "")
    if not name or (_ROOT_REF.fullmatch(name) and _ref(repo, name)):
        return rev
    if name.startswith("refs/"):
        if not _ref(repo, name):
            raise RevisionError(f"{name!r} names no ref here (fetch it first?)")
        return rev
    hexa = _HEX.fullmatch(name) is not None
    if hexa and len(name) in (40, 64):
        if not _object(repo, name):  # libgit2 would go on to read it as a ref name
            raise RevisionError(f"{name!r} names no object here (fetch it first?)")
        return rev
    found = [ref for ref in (rule.format(name) for rule in _RULES) if _ref(repo, ref)]
    what = "full ref"
    if hexa and found and _object(repo, name):
        found.append(f"object {name}")
        what = "full ref or object id"
    if len(found) > 1:
        raise AmbiguousRevision(f"{name!r} is ambiguous ({', '.join(found)}): pass the {what} you mean")
    return found[0] + rest if found else rev


def resolve_commit(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    """The commit ``rev`` names; :class:`AmbiguousRevision` for a short name several
    refs answer to, :class:`RevisionError` when it names no commit."""
    full = spelled(repo, rev)
    try:
        obj = repo.revparse_single(full)
        commit = obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        if repo.head_is_unborn:
            raise RevisionError(f"{rev!r}: the repository has no commits yet") from exc
        raise RevisionError(f"{rev!r} names no commit") from exc
    assert isinstance(commit, pygit2.Commit)
    return commit
