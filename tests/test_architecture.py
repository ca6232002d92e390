"""The layering rules of docs/architecture.md, read from the imports themselves.

Every import counts, including those inside functions (a deferred import is still a
dependency); only ``if TYPE_CHECKING:`` blocks are left out, since they never run.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.layout import PACKAGES, ROOT

# Who may import whom: the arrows of docs/architecture.md, transitively closed.
MAY_IMPORT = {
    "tropo": set(),
    "strato": {"tropo"},
    "exo": {"tropo"},
    "workbench": {"strato", "exo", "tropo"},
    "hooks": {"workbench", "strato", "exo", "tropo"},
    "create_vivary": {"hooks", "workbench", "strato", "exo", "tropo"},
    "vivary": {"create_vivary", "hooks", "workbench", "strato", "exo", "tropo"},
}
REPOSITORY_LAYER = "tropo.git"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except the bodies of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules (and outside top-level names) that ``name`` imports."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                found.add(full if full in known else module)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle between project modules (a package's own ``__init__`` aside), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in graph or node.startswith(dep + "."):
                continue
            if state.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles_between_modules() -> None:
    cycle = _cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_packages_import_only_downwards() -> None:
    upward = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph().items()
        for dep in deps
        if (top := dep.split(".")[0]) in PACKAGES
        and top != name.split(".")[0]
        and top not in MAY_IMPORT[name.split(".")[0]]
    )
    assert upward == []


def test_only_the_repository_layer_imports_pygit2() -> None:
    outside = sorted(
        name
        for name, deps in import_graph().items()
        if any(d == "pygit2" or d.startswith("pygit2.") for d in deps)
        and not (name == REPOSITORY_LAYER or name.startswith(REPOSITORY_LAYER + "."))
    )
    assert outside == []


def _runs_git(path: Path) -> list[int]:
    """Lines that build a command line starting with the ``git`` program."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                lines.append(node.lineno)
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and first.value.split(" ")[0] == "git" and "subprocess" in ast.unparse(node.func):
                lines.append(node.lineno)
    return lines


def test_only_the_repository_layer_runs_git() -> None:
    outside = sorted(
        f"{path.relative_to(ROOT)}:{line}"
        for name, path in modules().items()
        if not name.startswith(REPOSITORY_LAYER)
        for line in _runs_git(path)
    )
    assert outside == []


def package_node(name: str, depth: int) -> str:
    """What `name` counts as at `depth`: its package of `depth` parts when that is a
    folder (everything below it included), else the module itself (a module beside
    subpackages is a node of its own)."""
    parts = name.split(".")
    if len(parts) > depth and ROOT.joinpath(*parts[:depth]).is_dir():
        return ".".join(parts[:depth])
    return name


def package_graph(graph: dict[str, set[str]], depth: int) -> dict[str, set[str]]:
    nodes: dict[str, set[str]] = {}
    for name, deps in graph.items():
        mine = package_node(name, depth)
        edges = nodes.setdefault(mine, set())
        edges.update(
            theirs for dep in deps
            if dep in graph and not name.startswith(dep + ".")
            and (theirs := package_node(dep, depth)) != mine
        )
    return nodes


@pytest.mark.parametrize("depth", [2, 3])
def test_subpackages_form_a_dag(depth: int) -> None:
    """`strato.runs` may use `strato.flow` or the reverse, never both (at depth 2 a
    subpackage counts with everything below it; at depth 3 its own subpackages do)."""
    cycle = _cycle(package_graph(import_graph(), depth))
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


# inside tropo, each layer imports only layers below it; review and governed are
# siblings (neither imports the other); tropo's own top-level modules are the base
TROPO_RANK = {"cli": 0, "review": 1, "governed": 1, "check": 2, "git": 3, "fs": 4}
TROPO_BASE = 5


def _tropo_layer(name: str) -> tuple[str, int]:
    part = name.split(".")[1] if name.count(".") >= 1 else ""
    if part in TROPO_RANK:
        return part, TROPO_RANK[part]
    return name, TROPO_BASE


def test_tropo_layers_import_only_downwards() -> None:
    wrong = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph().items()
        if name.startswith("tropo.") and name != "tropo.__main__"
        for dep in deps
        if dep.startswith("tropo.") and dep in modules()
        and (mine := _tropo_layer(name))[0] != (theirs := _tropo_layer(dep))[0]
        and not theirs[1] > mine[1]
        and not (mine[1] == theirs[1] == TROPO_BASE)
    )
    assert wrong == []


def test_package_init_files_import_nothing() -> None:
    """A warm `tropo check` must not load pygit2 or PyYAML through a package's `__init__`."""
    importing = sorted(
        str(path.relative_to(ROOT))
        for path in modules().values()
        if path.name == "__init__.py"
        and any(isinstance(node, ast.Import | ast.ImportFrom)
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    )
    assert importing == []


# where a program may be started from: git through the repository layer's one door,
# everything else through strato/agents
STARTS_PROGRAMS = ("tropo.git.gitcli", "strato.agents")


def test_only_gitcli_and_strato_agents_start_programs() -> None:
    starting = sorted(
        name
        for name, deps in import_graph().items()
        if any(d == "subprocess" or d.startswith("subprocess.") for d in deps)
        and not any(name == owner or name.startswith(owner + ".") for owner in STARTS_PROGRAMS)
    )
    assert starting == []


def test_the_repository_layer_is_small() -> None:
    assert len(list((ROOT / "tropo" / "git").glob("*.py"))) <= 14


def test_no_module_is_over_500_lines() -> None:
    long = sorted(
        f"{path.relative_to(ROOT)}: {count}"
        for path in modules().values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 500
    )
    assert long == []


TESTS = ROOT / "tests"
SUPPORT = "tests.support"


def test_tests_import_helpers_only_from_the_support_package() -> None:
    """No test module imports another test module or a conftest: shared helpers live in
    `tests/support/`, fixtures in conftest files."""
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                wrong.append(f"{rel}: relative import")
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{rel} imports {n}" for n in names
                      if n.split(".")[0] == "tests" and not (n == SUPPORT or n.startswith(SUPPORT + "."))]
    assert wrong == []


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"p": {"p.x"}, "p.x": {"p"}}, None),  # a package's __init__ re-exporting its module
    ],
)
def test_the_cycle_finder_itself(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert _cycle(graph) == cycle
