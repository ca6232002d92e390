"""The ``vivary`` front door: every verb reaches the command that owns it (the same bytes
and exit status as calling that command), verbs not built yet refuse in one line, and,
side by side with the suite's ``vivary`` 0.2.0, the same verbs, exit codes and outputs
on generated workspaces and requests (skipped loudly without the oracle)."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import break_ref
from tests.support.console import run  # every verb runs in the front door's process
from tests.support.control_requests import OPERATIONS, documents
from tests.support.decisions import corpus
from tests.support.sides import served  # the suite's `vivary` from one long-lived interpreter
from vivary.frontdoor import ROUTES, Route, dispatch

DRIVER = Path(__file__).with_name("frontdoor_driver.py")
AVAILABLE = [route.verb for route in ROUTES if route.missing is None]
MISSING = [route.verb for route in ROUTES if route.missing is not None]
IN_PROCESS = [route.verb for route in ROUTES if route.missing is None]
PRESETS = ("coding", "second-brain", "knowledge-work", "writing")
# The suite's verbs, from its help; `logs`/`email` are its receipt helpers.
SUITE_VERBS = {"create", "adopt", "doctor", "capabilities", "check", "find", "decide",
               "review", "impact", "control", "logs"}
# Ours beyond the suite's front door: `verify` is the suite's `ozone verify`, which its
# `vivary` does not route (compared with ozone in tests/tropo/review/test_verify_governed.py).
OURS_ONLY = {"verify"}


def _drive(python: Path | str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(cases),
                          capture_output=True, text=True, check=True)
    result: list[dict[str, Any]] = json.loads(proc.stdout)
    return result


def _oracle(upstream: Callable[[str], Path]) -> Path:
    """The suite's `vivary` (the `vivary` 0.2.0 meta-package's front door)."""
    return upstream("vivary")


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("presets")
    made = {}
    for preset in PRESETS:
        target = base / preset
        assert run("create-vivary", "init", str(target), "--preset", preset).returncode == 0
        made[preset] = target
    return made


def _planted(workspaces: dict[str, Path], base: Path, count: int) -> list[Path]:
    """`count` copies of the preset workspaces, most with one planted finding."""
    rng = random.Random(18)
    plants: list[Callable[[str], str]] = [
        lambda t: t,
        lambda t: t.replace("\n---\n", "\n", 1),  # unterminated frontmatter
        lambda t: re.sub(r"^status: .*$", "status: bogus-status", t, count=1, flags=re.M),
        lambda t: re.sub(r"^project: .*\n", "", t, count=1, flags=re.M),
        lambda t: re.sub(r"^(related_\w+|verification): \[", r"\1: [no-such-node, ", t,
                         count=1, flags=re.M),
    ]
    out = []
    for n in range(count):
        preset = PRESETS[n % len(PRESETS)]
        root = base / f"ws-{n:02d}"
        shutil.copytree(workspaces[preset], root, symlinks=True)
        if preset == "coding" and n % 7 == 3:
            break_ref(root)
        else:
            _edit(root, rng, rng.choice(plants))
        out.append(root)
    return out


def _edit(root: Path, rng: random.Random, change: Callable[[str], str]) -> None:
    docs = sorted(p for p in root.rglob("*.md")
                  if ".git" not in p.parts and p.read_text().startswith("---\n"))
    path = rng.choice(docs)
    path.write_text(change(path.read_text()))


# --- our own front door: a dispatch, not a second implementation ------------------------


@pytest.mark.parametrize("verb", AVAILABLE)
def test_separator_ends_the_front_doors_options(verb: str) -> None:
    plain = run("vivary", verb, "--help")
    assert plain.returncode == 0 and plain.stdout
    assert run("vivary", "--", verb, "--help").stdout == plain.stdout


def test_every_suite_verb_is_built_and_an_unbuilt_one_would_refuse_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert MISSING == []
    unbuilt = Route("later", "Review", "Not yet", "tropo", ("later",), None, missing="not yet")
    assert dispatch(unbuilt, ["--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "not available yet" in out.err
    assert "issue 18" in out.err


def test_help_lists_every_verb_and_keeps_hooks() -> None:
    bare = run("vivary")
    assert bare.returncode == 0
    assert bare.stdout.strip() == run("vivary", "--help").stdout.strip()
    listed = set(re.findall(r"^  (\S+)\s", bare.stdout, flags=re.M))
    assert {route.verb for route in ROUTES} | {"hooks"} <= listed
    assert run("vivary", "hooks", "status", "--help").returncode == 0


def test_same_answers_as_the_owning_commands(workspaces: dict[str, Path], tmp_path: Path) -> None:
    roots = _planted(workspaces, tmp_path, 8)
    requests = []
    for n, data in enumerate(documents("claim", seed=3, count=4)):
        requests.append(tmp_path / f"control-{n}.json")
        requests[-1].write_bytes(data)
    pairs = []
    for root in roots:
        pairs += [(["vivary", "check", "--json"], ["tropo", "check", "--json"], root),
                  (["vivary", "check"], ["tropo", "check"], root),
                  (["vivary", "find", "agent", "--json"], ["tropo", "find", "agent", "--json"],
                   root),
                  (["vivary", "doctor", ".", "--json"],
                   ["create-vivary", "doctor", ".", "--json"], root)]
    for path in requests:
        pairs.append((["vivary", "control", "--governed", "--json", str(path)],
                      ["exo", "control", "--governed", "--json", str(path)], tmp_path))
        pairs.append((["vivary", "decide", "--governed", "--json", str(path)],
                      ["strato", "decide", "--governed", "--json", str(path)], tmp_path))
    codes = set()
    for front, own, cwd in pairs:
        mine, theirs = run(*front, cwd=cwd), run(*own, cwd=cwd)
        assert (mine.returncode, mine.stdout) == (theirs.returncode, theirs.stdout), front
        codes.add((front[1], mine.returncode))
    # The planted findings and the refusals are reached, not only clean runs.
    assert {("check", 0), ("check", 1), ("decide", 2)} <= codes


def test_create_lays_down_what_init_does(tmp_path: Path) -> None:
    front = run("vivary", "create", str(tmp_path / "a"), "--preset", "writing", "--json")
    own = run("create-vivary", "init", str(tmp_path / "b"), "--preset", "writing", "--json")
    assert front.returncode == own.returncode == 0

    def files(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                      if ".git" not in p.relative_to(root).parts)

    assert files(tmp_path / "a") == files(tmp_path / "b")
    refused = run("vivary", "create", str(tmp_path / "a"))
    assert refused.returncode == run("create-vivary", "init", str(tmp_path / "a")).returncode
    assert refused.returncode != 0


# --- side by side with the suite's `vivary` ----------------------------------------------


def test_suite_verbs_are_all_served(upstream: Callable[[str], Path]) -> None:
    proc = served(_oracle(upstream), ["--help"], Path.cwd())
    assert proc.returncode == 0, proc.stderr
    theirs = proc.stdout
    task = theirs.split("Task verbs:", 1)[1].split("positional arguments", 1)[0]
    suite = set(re.findall(r"^    (\S+)\s", task, flags=re.M)) | {"logs"}
    assert suite == SUITE_VERBS
    assert suite <= {route.verb for route in ROUTES} | {"logs"}  # logs: vivary.logs, a command of its own
    assert {route.verb for route in ROUTES} - suite == OURS_ONLY


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["no-such-verb"], ["--", "no-such-verb"],
    *([verb, "--help"] for verb in AVAILABLE if verb in SUITE_VERBS),
    *(["--", verb, "--help"] for verb in AVAILABLE if verb in SUITE_VERBS),
    ["control", "/nonexistent.json"], ["decide", "/nonexistent.json"],
    ["check", "--no-such-option"],
])
def test_exit_codes_as_the_suite(argv: list[str], tmp_path: Path,
                                 upstream: Callable[[str], Path]) -> None:
    mine = run("vivary", *argv, cwd=tmp_path)
    theirs = served(_oracle(upstream), argv, tmp_path)
    assert mine.returncode == theirs.returncode, (mine.stderr, theirs.stderr)
    assert "Traceback" not in mine.stderr


@pytest.mark.slow  # the slow tier: a parity corpus against the suite's front door
def test_check_and_find_on_generated_workspaces(workspaces: dict[str, Path], tmp_path: Path,
                                                upstream: Callable[[str], Path]) -> None:
    roots = _planted(workspaces, tmp_path, 52)
    cases = []
    for n, root in enumerate(roots):
        cases += [{"cwd": str(root), "argv": ["check", "--json"]},
                  {"cwd": str(root), "argv": ["check"]},
                  {"cwd": str(root), "argv": ["find", ["agent", "change", "note"][n % 3],
                                              "--json"]}]
    ours = _drive(sys.executable, cases)
    theirs = _drive(_oracle(upstream).parent / "python", cases)
    for case, mine, oracle in zip(cases, ours, theirs, strict=True):
        assert mine == oracle, case
    assert {r["code"] for r in ours} >= {0, 1}


@pytest.mark.parametrize("operation", OPERATIONS)
def test_control_requests_as_the_suite(operation: str, tmp_path: Path,
                                       upstream: Callable[[str], Path]) -> None:
    cases = []
    for n, data in enumerate(documents(operation, seed=180, count=50)):
        path = tmp_path / f"request-{n}.json"
        path.write_bytes(data)
        for mode in (["--json", "--strict"], []):
            cases.append({"cwd": str(tmp_path), "argv": ["control", "--governed", *mode,
                                                         str(path)]})
    ours = _drive(sys.executable, cases)
    theirs = _drive(_oracle(upstream).parent / "python", cases)
    for case, mine, oracle in zip(cases, ours, theirs, strict=True):
        assert mine == oracle, case


def test_decide_requests_as_the_suite(tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    cases = []
    for n, (_, text) in enumerate(corpus()[:120]):
        path = tmp_path / f"decide-{n}.json"
        path.write_text(text, encoding="utf-8")
        cases += [{"cwd": str(tmp_path), "argv": ["decide", "--governed", "--json", str(path)]},
                  {"cwd": str(tmp_path), "argv": ["decide", "--governed", "--strict", str(path)]}]
    ours = _drive(sys.executable, cases)
    theirs = _drive(_oracle(upstream).parent / "python", cases)
    for case, mine, oracle in zip(cases, ours, theirs, strict=True):
        assert mine == oracle, case
    assert {r["code"] for r in ours} >= {0, 1, 2}
