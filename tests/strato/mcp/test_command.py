"""`strato mcp` as a command: where it refuses to start, and strato without the SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.requirements import editable_extra_command

WITHOUT_SDK = "import sys; sys.modules['mcp'] = None; from strato.cli import main; main(sys.argv[1:])"


def strato(*args: str, block_sdk: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = ["-c", WITHOUT_SDK] if block_sdk else ["-m", "strato.cli"]
    return subprocess.run([sys.executable, *prefix, *args], capture_output=True, text=True, check=False)


def test_without_the_sdk_strato_works_and_mcp_says_how_to_install(repo_dir: Path) -> None:
    assert strato("flow", "list", "--root", str(repo_dir), "--json", block_sdk=True).returncode == 0
    proc = strato("mcp", "--root", str(repo_dir), block_sdk=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: strato mcp needs the MCP SDK: {editable_extra_command('mcp')}"
    assert proc.stdout == ""


def test_importing_strato_does_not_import_the_sdk() -> None:
    code = "import sys, strato.cli; print('mcp' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_outside_a_repository_it_refuses_with_one_line(tmp_path: Path) -> None:
    proc = strato("mcp", "--root", str(tmp_path), "--json")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--root" in proc.stderr
    assert '"code": "not_a_repository"' in proc.stdout


def test_help_has_an_example() -> None:
    proc = strato("mcp", "--help")
    assert proc.returncode == 0 and "mcpServers" in proc.stdout


HIDE = """\
import sys
HIDDEN = {hidden!r}
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
"""


def _console_strato(tmp_path: Path, hidden: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `strato` script, in a process where `hidden` cannot be imported (a
    sitecustomize on PYTHONPATH installs the import hook before anything else runs)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE.format(hidden=hidden))
    env = {**os.environ, "PYTHONPATH": str(site)}
    script = Path(sys.executable).parent / "strato"
    return subprocess.run([str(script), *args], capture_output=True, text=True, check=False, env=env)


@pytest.mark.parametrize(
    ("hidden", "detail"),
    [(("mcp", "mcp_types"), ""), (("anyio",), " (it cannot import anyio)")],
    ids=["sdk missing", "a dependency of the sdk missing"],
)
def test_the_console_script_without_the_sdk_exits_2_with_the_install_command(
    tmp_path: Path, repo_dir: Path, hidden: tuple[str, ...], detail: str
) -> None:
    proc = _console_strato(tmp_path, hidden, "mcp", "--root", str(repo_dir))
    shebang = (Path(sys.executable).parent / "strato").read_text().splitlines()[0].removeprefix("#!")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: strato mcp needs the MCP SDK: {editable_extra_command('mcp', shebang)}{detail}\n"
