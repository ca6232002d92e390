"""What `vivary serve` starts, and the one-line errors when it cannot: the serve extra
missing, the port taken, a bad address. Starlette and uvicorn load only here, so the
front door works without the extra."""

from __future__ import annotations

from pathlib import Path

import click

from tropo.distribution import extra_command
from workbench.server import Announce
from workbench.source import Source


class LaunchError(Exception):
    """The workbench cannot start (exit 2)."""


def _require_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise LaunchError(f"the workbench needs {exc.name or 'starlette and uvicorn'}: "
                          f"{extra_command('serve')}") from None


def repo_source(root: Path) -> Source:
    from workbench.repo import RepoSource

    return RepoSource(root)


def demo_source() -> Source:
    from workbench.demo import DemoSource

    return DemoSource.recorded()


def run(source: Source, host: str, port: int, open_browser: bool, announce: Announce) -> None:
    _require_extra()
    from workbench.server import serve

    try:
        serve(source, host, port, open_browser, announce, lambda text: click.echo(text, err=True))
    except OSError as exc:
        raise LaunchError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        return
