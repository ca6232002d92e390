"""docs/security.md lists every place the code starts a process, with where its argv
comes from and what guards it: read from the source, as tests/test_architecture.py reads
the imports, so a new process start without its row fails here, and so does a row whose
code is gone."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.support.layout import PACKAGES, ROOT

# module -> the names in it that start a process (or hand a command line to one)
STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp",
           "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp",
           "spawnlpe", "posix_spawn", "posix_spawnp", "fork", "forkpty"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
    "webbrowser": {"open", "open_new", "open_new_tab"},
}
ROW = re.compile(r"^\|\s*`([\w/.]+\.py):([\w.<>]+)`\s*\|")


def _starter(call: ast.Call, aliases: dict[str, tuple[str, str]]) -> str | None:
    """``module.name`` when ``call`` starts a process, through ``import m`` or
    ``from m import name`` (under any alias)."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module = aliases.get(func.value.id, (func.value.id, ""))[0]
        if func.attr in STARTERS.get(module, ()):
            return f"{module}.{func.attr}"
    if isinstance(func, ast.Name) and func.id in aliases:
        module, name = aliases[func.id]
        if name in STARTERS.get(module, ()):
            return f"{module}.{name}"
    return None


def _aliases(tree: ast.Module) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name] = (alias.name, "")
        elif isinstance(node, ast.ImportFrom) and node.module in STARTERS and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = (node.module, alias.name)
    return found


def _calls(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.Call]]:
    """Each call under ``node`` with the qualified name of the function holding it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _calls(child, f"{scope}.{child.name}" if scope else child.name)
            continue
        if isinstance(child, ast.Call):
            yield scope or "<module>", child
        yield from _calls(child, scope)


def process_starts() -> dict[str, set[str]]:
    """``path:function`` -> the starters it calls, over every package of the project."""
    found: dict[str, set[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            aliases = _aliases(tree)
            rel = path.relative_to(ROOT).as_posix()
            for scope, call in _calls(tree, ""):
                if (what := _starter(call, aliases)) is not None:
                    found.setdefault(f"{rel}:{scope}", set()).add(what)
    return found


def table_rows() -> list[str]:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    return [m.group(1) + ":" + m.group(2) for line in text.splitlines() if (m := ROW.match(line))]


def test_every_process_start_has_its_row_in_docs_security() -> None:
    rows = table_rows()
    missing = sorted(set(process_starts()) - set(rows))
    assert not missing, f"process starts without a row in docs/security.md: {missing}"


def test_every_row_of_the_table_names_code_that_starts_a_process() -> None:
    rows = table_rows()
    stale = sorted(set(rows) - set(process_starts()))
    assert not stale, f"rows of docs/security.md whose code starts no process (any more): {stale}"
    assert len(rows) == len(set(rows)), "a row is listed twice"


def test_the_reader_finds_each_kind_of_start(tmp_path: Path) -> None:
    """The scan itself: every spelling of a start is seen, a look-alike is not."""
    source = (
        "import subprocess as sp\nimport os\nfrom subprocess import Popen as P\nimport webbrowser\n"
        "def a():\n    sp.run(['x'])\n"
        "class K:\n    def b(self):\n        P(['y'])\n"
        "def c():\n    os.execvp('z', ['z'])\n    webbrowser.open('u')\n"
        "def d():\n    run(['no'])\n    os.path.join('a')\n"
    )
    tree = ast.parse(source)
    seen = {(scope, _starter(call, _aliases(tree))) for scope, call in _calls(tree, "")}
    seen.discard(("d", None))
    assert {s for s in seen if s[1]} == {("a", "subprocess.run"), ("K.b", "subprocess.Popen"),
                                         ("c", "os.execvp"), ("c", "webbrowser.open")}


def test_every_test_the_table_names_exists() -> None:
    """The last column names the tests that show each guard: each file (or folder), and
    each ``file::test`` function, must be there."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    named = re.findall(r"`(tests/[\w/.]+?)(?:::(\w+))?`", text)
    assert named
    for path, function in named:
        where = ROOT / path
        assert where.exists(), f"docs/security.md names {path}, which is not there"
        if function:
            assert f"def {function}(" in where.read_text(encoding="utf-8"), f"{path} has no {function}"
