"""vivary-git as a user gets it: the sdist and the wheel built from it as a release builds
them, installed into a fresh virtualenv with the project's dependencies only (no dev
extra, no clone on sys.path), then the README's tour run there. One build and one venv
per session (a module fixture); pip's cache keeps the installs quick, and a machine that
cannot reach the package index skips, saying so (CI fails instead)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import CHANGE, break_ref
from tests.support.layout import PACKAGES as CODE
from tests.support.layout import ROOT
from tests.support.repos import git
from tests.support.requirements import missing
from tests.support.tour import assert_the_tour_ran, run_lines, tour_lines

SCRIPTS = ("strato", "tropo", "exo", "create-vivary", "vivary")
PACKAGES = (*CODE, "templates")
# what pip and build print when the index cannot be reached (a machine without network)
OFFLINE = ("Could not find a version", "No matching distribution", "NewConnectionError",
           "Temporary failure in name resolution", "Network is unreachable")
# every module of ours the console scripts load, and where it was loaded from
WHERE = "import sys, importlib; print('\\n'.join(importlib.import_module(m).__file__ for m in sys.argv[1:]))"

# `make test` keeps this module on one worker; the slow tier (-m "not slow" leaves it out)
pytestmark = [pytest.mark.xdist_group("wheel"), pytest.mark.slow]


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


def _with_index(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """A step that fetches from the package index: it passes, or the machine is offline."""
    if proc.returncode and any(sign in proc.stdout + proc.stderr for sign in OFFLINE):
        missing(f"{what} needs the package index, which cannot be reached (pip's cache lacks it)")
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _user_env(bin_dir: Path) -> dict[str, str]:
    """A user's shell with this installation first on PATH and no other `vivary`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    kept = [d for d in env["PATH"].split(os.pathsep) if d and not (Path(d) / "vivary").exists()]
    env["PATH"] = os.pathsep.join([str(bin_dir), *kept])
    return env


def _copy_of_the_tree(dest: Path) -> Path:
    """The files of the work tree git would see (committed or not, never ignored), so the
    build writes its egg-info and build/ there, not into the clone the other tests read."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@dataclass(frozen=True)
class Installed:
    dist: Path  # the sdist and the wheel
    venv: Path
    outside: Path  # a folder outside the clone, where the commands ran
    bare: dict[str, subprocess.CompletedProcess[str]]  # what ran before any extra was installed
    extras: dict[str, subprocess.CompletedProcess[str]]  # the install lines those runs printed, run

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build, install without extras, record what the bare install does, then install the
    extras with the very lines `vivary serve` and `strato mcp` print. (A module fixture is
    set up before the per-test HOME of conftest, so pip uses the user's own cache.)"""
    dist = tmp_path_factory.mktemp("dist")
    outside = tmp_path_factory.mktemp("outside")
    source = _copy_of_the_tree(outside / "source")
    _with_index(_run([sys.executable, "-m", "build", "--outdir", str(dist), str(source)], outside),
                "building the sdist and the wheel")
    venv = outside / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], outside).returncode == 0
    (wheel,) = dist.glob("*.whl")
    env = _user_env(venv / "bin")
    _with_index(_run([str(venv / "bin" / "python"), "-m", "pip", "install", str(wheel)], outside, env),
                "installing the wheel's dependencies")
    repo = outside / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    bare = {name: _run([str(venv / "bin" / name), "--help"], outside, env) for name in SCRIPTS}
    bare["serve"] = _run([str(venv / "bin" / "vivary"), "serve", "--demo"], outside, env)
    bare["mcp"] = _run([str(venv / "bin" / "strato"), "mcp", "--root", str(repo)], outside, env)
    bare["where"] = _run([str(venv / "bin" / "python"), "-c", WHERE, *PACKAGES], outside, env)
    bare["installed"] = _run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], outside, env)
    # run as printed (asserted by the test that reads them: a line naming a source no index
    # has must fail there, not skip as if the machine were offline)
    extras = {name: _run(["bash", "-c", bare[name].stderr.strip().partition(marker)[2]], outside, env)
              for name, marker in (("serve", "needs starlette: "), ("mcp", "needs the MCP SDK: "))}
    return Installed(dist, venv, outside, bare, extras)


def test_the_sdist_and_the_wheel_hold_the_package_data_and_no_tests(installed: Installed) -> None:
    tracked = subprocess.run(["git", "ls-files", "--", *PACKAGES], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    data = {path for path in tracked if not path.endswith(".py")}
    assert {"workbench/static/index.html", "workbench/demo/sample-run.json", "tropo/packs/coordination.toml",
            "templates/base/tropo.toml", "templates/presets/coding.toml"} <= data
    (wheel,) = installed.dist.glob("*.whl")
    (sdist,) = installed.dist.glob("*.tar.gz")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    with tarfile.open(sdist) as archive:
        in_sdist = {name.partition("/")[2] for name in archive.getnames()}
    assert sorted(data - in_wheel) == [] and sorted(data - in_sdist) == []
    assert [n for n in in_wheel | in_sdist if n.startswith(("tests/", "bench/"))] == []
    assert "LICENSE" in in_sdist and any(n.endswith(".dist-info/licenses/LICENSE") for n in in_wheel)
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], installed.outside)
    assert twine.returncode == 0, twine.stdout + twine.stderr
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata and "Classifier: Programming Language :: Python :: 3" in metadata


def test_every_console_script_runs_without_the_dev_extra(installed: Installed) -> None:
    for name in SCRIPTS:
        proc = installed.bare[name]
        assert proc.returncode == 0 and "Usage:" in proc.stdout, (name, proc.stderr)
    names = {line.partition("==")[0].lower() for line in installed.bare["installed"].stdout.split()}
    assert "vivary-git" in names and not names & {"pytest", "mypy", "ruff", "starlette", "uvicorn", "mcp"}


def test_serve_and_mcp_without_their_extra_print_one_line_that_installs_it(installed: Installed) -> None:
    """Issue 26: the line named `pip install 'vivary-git[serve]'`, which no index has. Now
    it names this install's source (the wheel file) and interpreter: run as printed, it
    installs the extra (the fixture ran it), and the command then works."""
    (wheel,) = installed.dist.glob("*.whl")
    python = shlex.quote(str(installed.bin / "python"))
    for name, prefix in (("serve", "vivary: the workbench needs starlette: "),
                         ("mcp", "error: strato mcp needs the MCP SDK: ")):
        proc = installed.bare[name]
        assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
        assert proc.stderr == (f"{prefix}{python} -m pip install "
                               f"{shlex.quote(f'vivary-git[{name}] @ file://{wheel}')}\n")
        assert installed.extras[name].returncode == 0, installed.extras[name].stderr[-3000:]
    imports = _run([str(installed.bin / "python"), "-c", "import starlette, uvicorn, mcp"], installed.outside)
    assert imports.returncode == 0, imports.stderr


def test_no_module_is_imported_from_the_source_tree(installed: Installed) -> None:
    proc = installed.bare["where"]
    assert proc.returncode == 0, proc.stderr
    files = proc.stdout.split()
    assert len(files) == len(PACKAGES)
    assert all(Path(f).is_relative_to(installed.venv) for f in files), files


def test_the_readme_tour_runs_from_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    run_lines(tmp_path, tour_lines(), installed.bin)
    assert_the_tour_ran(tmp_path)


def test_hooks_installed_from_a_removed_venv_run_the_vivary_on_path(installed: Installed, tmp_path: Path) -> None:
    """Issue 26: install hooks from venv A, delete A, put venv B (the wheel's) on PATH: a
    broken ref is still refused and a clean commit goes through. A is a real virtualenv
    whose site-packages reach B's (a .pth line), so its Python is the one the hooks record."""
    env = _user_env(installed.bin)
    ws = tmp_path / "ws"
    assert _run([str(installed.bin / "create-vivary"), "init", str(ws), "--auto", "--yes", "--commit"],
                tmp_path, env).returncode == 0
    venv_a = tmp_path / "venv-a"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv_a)], tmp_path).returncode == 0
    site_a = next((venv_a / "lib").glob("python3*/site-packages"))
    site_b = next((installed.venv / "lib").glob("python3*/site-packages"))
    (site_a / "wheel-venv.pth").write_text(f"{site_b}\n")
    install = _run([str(venv_a / "bin" / "python"), "-c", "from vivary.cli import main; main()", "hooks", "install",
                    "--root", str(ws)], tmp_path, env)
    assert install.returncode == 0, install.stderr
    assert str(venv_a / "bin" / "python") in (ws / ".git/hooks/pre-commit").read_text()
    shutil.rmtree(venv_a)

    def commit() -> subprocess.CompletedProcess[str]:
        return _run(["git", "commit", "-q", "-m", "after the venv"], ws, env)

    break_ref(ws)
    git(ws, "add", "-A")
    refused = commit()
    assert refused.returncode == 1 and "no-such-module" in refused.stderr, refused.stderr
    git(ws, "checkout", "HEAD", "--", CHANGE)
    (ws / "notes.txt").write_text("clean\n")
    git(ws, "add", "-A")
    clean = commit()
    assert clean.returncode == 0, clean.stderr
