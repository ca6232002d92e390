"""One background dispatch with a real agent process: what it keeps on disk is bounded
whatever the agent writes."""

from __future__ import annotations

import sys
from pathlib import Path

from strato.agents.process import MAX_KEPT, Finished
from strato.runs.background import dispatch as bgdispatch

FLOOD = """
import json, sys
line = b"x" * 1023 + b"\\n"
for _ in range(100 * 1024):
    sys.stdout.buffer.write(line)
print(json.dumps({"text": "the end"}))
"""


def test_an_agent_that_writes_100_mb_leaves_its_last_mib_and_no_more(tmp_path: Path) -> None:
    folder = tmp_path / "dispatch" / "token"
    folder.mkdir(parents=True)  # the runner makes it (background.bg_dir, which refuses planted links)
    done = bgdispatch.run(folder, [sys.executable, "-c", FLOOD], tmp_path, 300, lambda: None, lambda: False)
    assert isinstance(done, Finished) and done.returncode == 0
    assert done.stdout.endswith('{"text": "the end"}\n') and len(done.stdout) <= MAX_KEPT
    on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    assert on_disk <= 2 * MAX_KEPT < 100 * 1024 * 1024, sorted((f.name, f.stat().st_size) for f in folder.iterdir())
    assert bgdispatch.finished(folder) == done  # what the next runner would be handed back
