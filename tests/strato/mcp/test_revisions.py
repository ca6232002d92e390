"""Over MCP too, a revision goes through the one resolver: a short name a tag shares
with a branch is the tool's error naming both refs; the full ref is read."""

from __future__ import annotations

from pathlib import Path

from tests.support.mcp import Session, run_server
from tests.support.repos import git


def test_an_ambiguous_revision_is_the_tools_error_and_the_full_ref_is_read(workspace: Path) -> None:
    git(workspace, "commit", "-q", "--allow-empty", "-m", "second")
    git(workspace, "tag", "main", "HEAD~1")

    async def scenario(s: Session) -> None:
        for tool, args in (("tropo_check", {"rev": "main"}), ("tropo_graph", {"rev": "main"}),
                           ("strato_guard_verify", {"since": ["main"]})):
            message, _ = await s.error(tool, args)
            assert "'main' is ambiguous (refs/tags/main, refs/heads/main)" in message, (tool, message)
        checked = await s.ok("tropo_check", {"rev": "refs/heads/main"})
        assert checked["checked"] == 3
        verified = await s.ok("strato_guard_verify", {"since": ["refs/heads/main"]})
        assert "ok" in verified  # a report, not a refusal

    run_server(workspace, scenario)
